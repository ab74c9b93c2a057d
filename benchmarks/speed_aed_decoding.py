"""The AED's greedy transcription with and without its fast search steps, side by side in one run.

:func:`nemo_pc.modules.aed_search.fast_steps` computes each cross-attention's keys and values of the encoder states
once per search (NeMo's steps project them again at every token) and gives the vocabulary projection a contiguous
input. This script transcribes the same utterances in both modes with and without it, in alternating rounds, and
writes the seconds, the ratio and whether every output is the same.

    .venv/bin/python benchmarks/speed_aed_decoding.py --model demo_out/models/aed_prompt.nemo \\
        --manifest demo_out/manifests/test.json --utterances 64
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from suite import results_path, time_runs, write_results

from nemo_pc.parts.manifest import read_manifest, spread_subset, write_manifest


@contextmanager
def _plain_steps():
    """NeMo's search steps as they are: :func:`fast_steps` switched off for the block."""
    import nemo_pc.modules.aed_search as aed_search

    fast = aed_search.fast_steps

    @contextmanager
    def off(search):
        yield 0

    aed_search.fast_steps = off
    try:
        yield
    finally:
        aed_search.fast_steps = fast


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="an AED .nemo (nemo_pc's EncDecAEDPCModel)")
    parser.add_argument("--manifest", required=True, help="a NeMo manifest of the utterances to transcribe")
    parser.add_argument("--utterances", type=int, default=64, help="that many, spread over the manifest (0: all)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2, help="timed rounds of each (after one warm-up of each)")
    parser.add_argument("--json", default=str(results_path(__file__)))
    args = parser.parse_args(argv)

    import torch

    from nemo_pc.pipelines.inference import load_asr_model, transcribe_both

    model = load_asr_model(args.model)
    rows = spread_subset(read_manifest(args.manifest), args.utterances)
    with tempfile.TemporaryDirectory() as tmp:
        manifest = write_manifest(Path(tmp) / "subset.json", rows)

        def fast():
            return transcribe_both(model, manifest, batch_size=args.batch_size)

        def plain():
            with _plain_steps():
                return transcribe_both(model, manifest, batch_size=args.batch_size)

        timings, outputs = {"fast": [], "plain": []}, {}
        for name, run in (("fast", fast), ("plain", plain)):  # warm-up of each
            outputs[name] = run()
        for _ in range(max(1, args.repeats)):  # alternating rounds: a slower spell of the machine hits both
            for name, run in (("fast", fast), ("plain", plain)):
                timing, outputs[name] = time_runs(run, repeats=1, warmup=0)
                timings[name].extend(timing.runs)
    audio = sum(float(row["duration"]) for row in rows)
    results = {
        "model": Path(args.model).name,
        "utterances": len(rows),
        "audio_seconds": round(audio, 1),
        "batch_size": args.batch_size,
        "threads": torch.get_num_threads(),
        "modes": ["normalized", "punctuated"],
        "seconds": {name: [round(value, 2) for value in runs] for name, runs in timings.items()},
        "best_seconds": {name: round(min(runs), 2) for name, runs in timings.items()},
        "speedup": round(min(timings["plain"]) / min(timings["fast"]), 2),
        "rtf_fast": round(min(timings["fast"]) / audio, 4),
        "same_outputs": outputs["fast"] == outputs["plain"],
    }
    path = write_results(args.json, results, sys.argv if argv is None else ["speed_aed_decoding.py", *argv])
    print(f"fast {results['best_seconds']['fast']} s, plain {results['best_seconds']['plain']} s: "
          f"{results['speedup']}x, same outputs: {results['same_outputs']} -> {path}", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
