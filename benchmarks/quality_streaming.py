"""Cache-aware streaming of a P&C transducer (``encoder=streaming``) on the demo's test split, for several lookaheads.

For each ``att_context_size`` of ``--contexts`` (a multi-lookahead model serves all of its own), the test split is
decoded offline (``model.transcribe(mode="both")``) and streamed one utterance at a time, both modes from one encoder
step per chunk (:mod:`nemo_pc.parts.streaming`), with:

* ``torch``: the PyTorch encoder step, the first chunk unpadded as in NeMo's script (the same text as offline);
* ``onnx``: the encoder step exported with NeMo's ``cache_support`` and run on ONNX Runtime CPU, every chunk padded
  (``pad_and_drop_preencoded``, which the exported step needs); decoding stays in PyTorch;
* ``torch_padded`` (not run by default): the PyTorch step with every chunk padded as for ``onnx``, which separates
  what the padding changes from what ONNX Runtime changes.

It reports WER of the normalized output and PER (with WER-PC) of the punctuated output against ``text`` with nemo_pc's
metrics, how many streamed texts equal the offline ones, the wall time of one stream step (encoder + both modes'
decoding; median and p90, ms), the chunk and lookahead durations, and the RTF (features + every step, over the audio
duration). Torch and ONNX Runtime use ``--threads`` threads. ``--reference`` scores an offline model (e.g. the demo's
full-context ``rnnt_conditioned.nemo``) the same way, for what streaming costs.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/quality_streaming.py --demo-dir demo_out \\
        --model demo_out/models/rnnt_streaming.nemo --json benchmarks/results/streaming.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from suite import CallTimer, Stopwatch, results_path, write_results

DEFAULT_CONTEXTS = ("70,0", "70,1", "70,6")
BACKENDS = ("torch", "onnx", "torch_padded")


def _percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(values, q)) if values else float("nan")


def score(entries: list[dict], texts: dict[str, list[str]], marks: str) -> dict:
    """WER (normalized output) and PER / WER-PC (punctuated output) against each entry's ``text``."""
    from nemo_pc.metrics import PCMetrics

    normalized, punctuated = PCMetrics(marks=marks), PCMetrics(marks=marks)
    for entry, n_text, p_text in zip(entries, texts["normalized"], texts["punctuated"], strict=True):
        normalized.update(entry["text"], n_text, utt_id=entry.get("utt_id"))
        punctuated.update(entry["text"], p_text, utt_id=entry.get("utt_id"))
    n_metrics, p_metrics = normalized.compute()["metrics"], punctuated.compute()["metrics"]
    return {
        "wer_normalized": n_metrics["wer"],
        "per_punctuated": p_metrics["per"],
        "wer_pc_punctuated": p_metrics["wer_pc"],
    }


def stream_split(model, entries: list[dict], step, pad_and_drop_preencoded: bool) -> dict:
    """Streams every entry alone (one stream); texts of both modes, step times and total seconds."""
    from nemo_pc.parts.modes import MODES
    from nemo_pc.parts.streaming import stream_buffer, streaming_buffer

    buffer = streaming_buffer(model, pad_and_drop_preencoded)
    timer = CallTimer(step)
    texts = {name: [] for name in MODES}
    with Stopwatch() as watch:
        for entry in entries:
            buffer.reset_buffer()
            buffer.append_audio_file(entry["audio_filepath"], stream_id=-1)
            for mode, batch in stream_buffer(model, buffer, [0, 1], pad_and_drop_preencoded, step_fn=timer).items():
                texts[MODES[mode]].extend(batch)
    return {"texts": texts, "step_seconds": timer.seconds, "seconds": watch.seconds}


def decode_offline(model, entries: list[dict], args: argparse.Namespace) -> tuple[dict, dict]:
    """Both modes' texts of ``model.transcribe`` and their scores with the RTF of the whole pass."""
    audio_seconds = sum(float(entry["duration"]) for entry in entries)
    with Stopwatch() as watch:
        texts = model.transcribe(
            [e["audio_filepath"] for e in entries], batch_size=args.batch_size, verbose=False, mode="both"
        )
        texts = {name: [getattr(hyp, "text", hyp) for hyp in hyps] for name, hyps in texts.items()}
        scores = score(entries, texts, args.marks)
    return texts, {**scores, "rtf": watch.seconds / audio_seconds}


def run_context(model, entries: list[dict], context: list[int], args: argparse.Namespace) -> dict:
    from nemo_pc.parts.streaming import stream_step

    model.encoder.set_default_att_context_size(context)
    audio_seconds = sum(float(entry["duration"]) for entry in entries)
    frame_ms = model.encoder.subsampling_factor * float(model.cfg.preprocessor.window_stride) * 1000
    offline, offline_scores = decode_offline(model, entries, args)
    result = {
        "att_context_size": context,
        "chunk_ms": (context[1] + 1) * frame_ms,
        "lookahead_ms": context[1] * frame_ms,
        "offline": offline_scores,
    }
    for backend in args.backends:
        if backend == "onnx":
            step = onnx_step(model, args.work / f"encoder_{context[0]}_{context[1]}.onnx", args.threads)
            if isinstance(step, str):
                result["onnx"] = {"skipped": step}
                continue
        else:
            step = stream_step
        run = stream_split(model, entries, step, pad_and_drop_preencoded=backend in ("onnx", "torch_padded"))
        ms = [1000 * s for s in run["step_seconds"]]
        same = {name: sum(a == b for a, b in zip(run["texts"][name], offline[name], strict=True)) for name in offline}
        result[backend] = {
            **score(entries, run["texts"], args.marks),
            "same_text_as_offline": same,
            "chunks": len(ms),
            "step_ms_median": statistics.median(ms),
            "step_ms_p90": _percentile(ms, 90),
            "rtf": run["seconds"] / audio_seconds,
        }
    return result


def onnx_step(model, path: Path, threads: int):
    """The ONNX Runtime encoder step (:class:`~nemo_pc.pipelines.onnx_rnnt.OnnxStreamingEncoder`), or why not."""
    try:
        from nemo_pc.pipelines.onnx_rnnt import OnnxStreamingEncoder, export_streaming_encoder

        return OnnxStreamingEncoder(export_streaming_encoder(model, path), threads=threads)
    except Exception as error:  # noqa: BLE001  (any export or runtime failure is reported, and torch still runs)
        return f"cache-aware ONNX export or ONNX Runtime failed: {type(error).__name__}: {error}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from nemo_pc.parts.text import DEFAULT_MARKS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", type=Path, default=Path("demo_out"), help="a `make demo` output folder")
    parser.add_argument("--model", type=Path, required=True, help="a .nemo trained with encoder=streaming")
    parser.add_argument(
        "--reference",
        type=Path,
        default=None,
        help="an offline (full-context) .nemo scored the same way on the same split",
    )
    parser.add_argument("--split", default="test", help="manifests/<split>.json of the demo folder")
    parser.add_argument("--contexts", nargs="+", default=list(DEFAULT_CONTEXTS), help="att_context_size as left,right")
    parser.add_argument("--backends", default="torch,onnx", help=f"encoder steps, comma-separated: {BACKENDS}")
    parser.add_argument("--limit", type=int, default=0, help="first N utterances only (0: all)")
    parser.add_argument("--threads", type=int, default=1, help="torch and ONNX Runtime threads")
    parser.add_argument("--batch-size", type=int, default=8, help="offline decoding batch")
    parser.add_argument("--marks", default=DEFAULT_MARKS, help="mark set")
    parser.add_argument("--work", type=Path, default=None, help="exported encoders (default DEMO/streaming)")
    parser.add_argument("--json", type=Path, default=results_path(__file__))
    args = parser.parse_args(argv)
    try:
        args.contexts = [[int(part) for part in item.split(",")] for item in args.contexts]
    except ValueError:
        args.contexts = []
    if not args.contexts or any(len(context) != 2 for context in args.contexts):
        parser.error("--contexts: each one is left,right (e.g. 70,1)")
    args.backends = [name.strip() for name in args.backends.split(",") if name.strip()]
    if not args.backends or set(args.backends) - set(BACKENDS):
        parser.error(f"--backends: a comma-separated subset of {BACKENDS}")
    args.work = args.work or args.demo_dir / "streaming"
    return args


def main(argv: list[str] | None = None) -> dict:
    import torch

    from nemo_pc.parts.manifest import read_manifest
    from nemo_pc.pipelines.inference import load_asr_model

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    entries = read_manifest(args.demo_dir / "manifests" / f"{args.split}.json")
    entries = entries[: args.limit] if args.limit else entries
    model = load_asr_model(args.model)
    supported = [list(map(int, context)) for context in model.encoder.att_context_size_all]
    settings = {key: str(value) if isinstance(value, Path) else value for key, value in vars(args).items()}
    results = {
        "settings": settings,
        "trained_contexts": supported,
        "num_utterances": len(entries),
        "audio_seconds": sum(float(entry["duration"]) for entry in entries),
        "contexts": [],
    }
    for context in args.contexts:
        row = run_context(model, entries, context, args)
        row["trained"] = context in supported
        results["contexts"].append(row)
        print(json.dumps(row), flush=True)
    if args.reference is not None:
        reference = load_asr_model(args.reference)
        results["reference"] = {"model": str(args.reference), **decode_offline(reference, entries, args)[1]}
        print(json.dumps(results["reference"]), flush=True)
    write_results(args.json, results)
    print(f"report: {args.json}")
    return results


if __name__ == "__main__":
    main()
