"""Greedy decoding of the AED's transducer head with the decoder stepped for the whole batch and for each
utterance alone, side by side in one run.

:func:`nemo_pc.modules.aed_transducer.greedy_batch` gives the utterances that write a token in a step one decoder
step together (:class:`nemo_pc.modules.decoder_cache.DecoderCache`, each prefix at its own length). Before, each
utterance took its own decoder call per written token; ``per_utterance`` here does that with the same cache (one row
per call), and ``per_utterance_projecting`` also projects the cross-attention's keys and values of the encoder states
at every step, as the decoding before the cache did. This script transcribes the same utterances in both modes each
way, in alternating rounds, and writes the seconds, the ratios and whether every output is the same.

    .venv/bin/python benchmarks/speed_transducer_decoding.py --model demo_out/models/rnnt_conditioned.nemo \\
        --manifest demo_out/manifests/test.json --utterances 64 \\
        --json benchmarks/results/transducer_decoding_speed.json
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
def per_utterance_steps():
    """:meth:`DecoderCache.step` one utterance at a time for the block: a decoder call per written token."""
    import torch

    from nemo_pc.modules.decoder_cache import DecoderCache

    batched = DecoderCache.step

    def one_by_one(self, rows, tokens):
        return torch.cat([batched(self, rows[k : k + 1], tokens[k : k + 1]) for k in range(len(rows))])

    DecoderCache.step = one_by_one
    try:
        yield
    finally:
        DecoderCache.step = batched


@contextmanager
def projecting_each_step():
    """Each step's cross-attention projects the encoder states' keys and values again, as the decoder's own forward
    does (no ``_projected`` patch): with :func:`per_utterance_steps`, the decoding before the cache."""
    from nemo_pc.modules import decoder_cache

    projected = decoder_cache._projected

    @contextmanager
    def unpatched(attention, keys, values):
        yield

    decoder_cache._projected = unpatched
    try:
        yield
    finally:
        decoder_cache._projected = projected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="an AED .nemo with a transducer head (the demo's RNN-Ts)")
    parser.add_argument("--manifest", required=True, help="a NeMo manifest of the utterances to transcribe")
    parser.add_argument("--utterances", type=int, default=64, help="that many, spread over the manifest (0: all)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2, help="timed rounds of each (after one warm-up of each)")
    parser.add_argument("--json", default=str(results_path(__file__)))
    args = parser.parse_args(argv)
    for path in (args.model, args.manifest):
        if not Path(path).is_file():
            parser.error(f"{path}: no such file")

    import torch

    from nemo_pc.pipelines.inference import load_asr_model, transcribe_both

    model = load_asr_model(args.model)
    if getattr(model, "transducer_joint", None) is None:
        raise SystemExit(f"error: {args.model}: not an AED with a transducer head (model.transducer)")
    rows = spread_subset(read_manifest(args.manifest), args.utterances)
    with tempfile.TemporaryDirectory() as tmp:
        manifest = write_manifest(Path(tmp) / "subset.json", rows)

        def batched():
            return transcribe_both(model, manifest, batch_size=args.batch_size)

        def per_utterance():
            with per_utterance_steps():
                return transcribe_both(model, manifest, batch_size=args.batch_size)

        def per_utterance_projecting():
            with per_utterance_steps(), projecting_each_step():
                return transcribe_both(model, manifest, batch_size=args.batch_size)

        runs = (
            ("batched", batched),
            ("per_utterance", per_utterance),
            ("per_utterance_projecting", per_utterance_projecting),
        )
        timings, outputs = {name: [] for name, _ in runs}, {}
        for name, run in runs:  # warm-up of each (it also fills the head's cache of encoder states)
            outputs[name] = run()
        for _ in range(max(1, args.repeats)):  # alternating rounds: a slower spell of the machine hits both
            for name, run in runs:
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
        "seconds": {name: [round(value, 2) for value in values] for name, values in timings.items()},
        "best_seconds": {name: round(min(values), 2) for name, values in timings.items()},
        "speedup": round(min(timings["per_utterance"]) / min(timings["batched"]), 2),
        "speedup_over_projecting": round(min(timings["per_utterance_projecting"]) / min(timings["batched"]), 2),
        "rtf_batched": round(min(timings["batched"]) / audio, 4),
        "same_outputs": all(outputs[name] == outputs["batched"] for name, _ in runs),
    }
    path = write_results(args.json, results, sys.argv if argv is None else ["speed_transducer_decoding.py", *argv])
    best = results["best_seconds"]
    print(
        f"batched {best['batched']} s, per utterance {best['per_utterance']} s: {results['speedup']}x; "
        f"per utterance projecting each step {best['per_utterance_projecting']} s: "
        f"{results['speedup_over_projecting']}x; same outputs: {results['same_outputs']} -> {path}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
