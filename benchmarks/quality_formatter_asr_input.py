"""The cascade's text formatter with a tagger trained on ASR-like input (:mod:`nemo_pc.formatter.asr_noise`).

The demo's tagger trains on clean whole-sentence windows; in the cascade it reads an ASR system's normalized output:
short segments that start and end mid-sentence, with misrecognized words. This benchmark

1. transcribes the demo's DEV split with ``--asr-system`` (normalized output) and measures its errors against the
   references (:func:`~nemo_pc.formatter.asr_noise.estimate_confusions`; the test split is where it is scored);
   ``--no-errors`` sets the word error rates to 0, which leaves the fragments alone (an ablation);
2. builds the demo's formatter data (``config.json``'s ``formatter_*`` values) with ``asr_like`` fragments drawn
   from those errors, and trains a tagger with the demo's recipe (steps, learning rate, overrides);
3. scores the demo's tagger and the ASR-like tagger, each with the demo's span rewriter (``--span-itn``: the
   library's default span ITN unless named): on the demo's test transcripts (the system's normalized output, and the
   reference words as a no-error check) with PER, punctuation micro F1, WER-PC, case error rate and the share of
   outputs ending in a mark (the references' share beside it), and on the formatter's clean test documents with PER,
   CER, M-WER and I-WER.

Whisper tiny.en's test PER (the demo's ``eval/whisper_tiny_en.json``) is the bar.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/quality_formatter_asr_input.py --demo-dir demo_out \
        --work demo_out/asr_like --json benchmarks/results/formatter_asr_input.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import quality_formatter
from suite import RESULTS_DIR, Stopwatch, pct, write_results

from nemo_pc.parts.manifest import read_manifest, write_manifest
from nemo_pc.pipelines.demo.config import DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo

TRANSCRIPT_METRICS = ("per", "punct_micro_f1", "wer_pc", "case_er")


def demo_config(demo_dir: Path) -> DemoConfig:
    """The finished demo's settings, with ``out_dir`` the folder as it is now."""
    saved = json.loads((demo_dir / "config.json").read_text())
    fields = {f.name for f in dataclasses.fields(DemoConfig)}
    saved = {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items() if k in fields}
    return DemoConfig(**{**saved, "out_dir": str(demo_dir)})


def dev_transcripts(demo: Demo, system: str, target: Path) -> Path:
    """The system's outputs on the demo's dev split (``text`` and ``pred_text_normalized`` per line)."""
    if target.is_file():
        return target
    from nemo_pc.pipelines.inference import transcribe_both

    outputs = transcribe_both(demo.model_path(system), demo.manifest("dev"), batch_size=demo.cfg.batch_size)
    rows = [
        {**entry, "pred_text": outputs["punctuated"][k], "pred_text_normalized": outputs["normalized"][k]}
        for k, entry in enumerate(read_manifest(demo.manifest("dev")))
    ]
    return write_manifest(target, rows)


def end_mark_share(texts: list[str]) -> float:
    return sum(bool(t.strip()) and t.strip()[-1] in ".,?!;:" for t in texts) / max(len(texts), 1)


def score_transcripts(formatter, rows: list[dict], field: str, target: Path) -> dict:
    """Formats ``rows[field]`` and scores the output against ``text`` as ``nemo-pc evaluate`` does."""
    from nemo_pc.metrics.evaluate import EvalConfig, evaluate_manifest

    outputs = formatter.format([row[field] for row in rows])
    write_manifest(target, [{**row, "pred_text": out} for row, out in zip(rows, outputs, strict=True)])
    metrics = evaluate_manifest(target, EvalConfig(progress=False)).metrics.compute()["metrics"]
    scores = {name: metrics[name] for name in TRANSCRIPT_METRICS}
    return {**scores, "end_mark_share": end_mark_share(outputs), "example": outputs[0]}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", default="demo_out", help="a finished demo output (formatter_data, models)")
    parser.add_argument("--work", default=None, help="where the data, statistics and tagger go (default D/asr_like)")
    parser.add_argument("--asr-system", default="rnnt_conditioned", help="the cascade's ASR system")
    parser.add_argument(
        "--cascade-input",
        default=None,
        help="the demo's predictions the cascade formats (default: --asr-system's own; e.g. rnnt_conditioned_lm, "
        "its output with the n-gram LM)",
    )
    parser.add_argument("--asr-like", type=float, default=1.0, help="FormatterDataConfig.asr_like")
    parser.add_argument(
        "--error-scale",
        type=float,
        default=1.0,
        help="the measured word error rates times this (0 to 1; --no-errors is 0)",
    )
    parser.add_argument(
        "--no-errors",
        action="store_true",
        help="fragments only: the measured error rates set to 0 (which part of the change matters)",
    )
    parser.add_argument(
        "--span-itn",
        default="default",
        help="the formatter's span ITN policy (nemo_pc.formatter.hybrid): 'default' (TextFormatter's own, what the "
        "demo's cascade uses) or a policy on the tagger's spans alone (neural: the rewriter alone)",
    )
    parser.add_argument("--json", default=str(RESULTS_DIR / "formatter_asr_input.json"))
    args = parser.parse_args(argv)

    from nemo_pc.formatter.asr_noise import estimate_confusions
    from nemo_pc.formatter.build import build_formatter_data
    from nemo_pc.formatter.pipeline import TextFormatter
    from nemo_pc.pipelines.train import train_model

    demo_dir = Path(args.demo_dir)
    if not (demo_dir / "config.json").is_file():
        parser.error(f"{demo_dir}: no config.json (run examples/demo_pc.py --out {demo_dir} first)")
    cfg = demo_config(demo_dir)
    demo = Demo(cfg)
    work = Path(args.work or demo_dir / "asr_like")
    work.mkdir(parents=True, exist_ok=True)
    dev = read_manifest(dev_transcripts(demo, args.asr_system, work / f"dev_{args.asr_system}.json"))
    confusions = estimate_confusions(
        [r["text"] for r in dev],
        [r["pred_text_normalized"] for r in dev],
        source=f"{args.asr_system} on the demo's dev split",
    )
    if not 0.0 <= args.error_scale <= 1.0:
        parser.error(f"--error-scale must be in [0, 1], got {args.error_scale}")
    scale = 0.0 if args.no_errors else args.error_scale
    confusions = dataclasses.replace(
        confusions,
        substitution=confusions.substitution * scale,
        deletion=confusions.deletion * scale,
        insertion=confusions.insertion * scale,
    )
    confusions.save(work / "confusions.json")
    data_config = dataclasses.replace(
        demo.formatter_data_config(), asr_like=args.asr_like, asr_confusions=str(work / "confusions.json")
    )
    seconds = {}
    with Stopwatch() as watch:
        paths = build_formatter_data(work / "formatter_data", data_config, num_jobs=cfg.num_jobs)
    seconds["data"] = round(watch.seconds, 1)
    tagger = work / "tagger.nemo"
    if not tagger.is_file():
        overrides = demo.formatter_overrides("tagger", work / "formatter_data")  # the demo's recipe, tagger_lr too
        seconds["tagger"] = train_model("tagger", overrides, tagger, cfg.tagger_steps, seed=cfg.seed)["seconds"]
    demo_tagger, rewriter = demo.formatter()
    policy = {} if args.span_itn == "default" else {"span_itn": args.span_itn, "detect_spans": False}
    systems = {"demo tagger (clean text)": demo_tagger, "ASR-like tagger": tagger}
    cascade_input = args.cascade_input or args.asr_system
    test = read_manifest(demo.path("predictions", f"{cascade_input}.json"))
    docs = read_manifest(demo.path("formatter_data", "test_documents.json"))
    results = {}
    for k, (name, path) in enumerate(systems.items()):
        formatter = TextFormatter.from_files(path, rewriter, **policy)
        results[name] = {
            "asr_output": score_transcripts(formatter, test, "pred_text_normalized", work / f"cascade_{k}.json"),
            "reference_words": score_transcripts(formatter, test, "text_normalized", work / f"oracle_{k}.json"),
            "clean_documents": {
                m: v for m, v in quality_formatter.quality(formatter, docs).items() if m in quality_formatter.METRICS
            },
        }
    whisper = json.loads(demo.path("eval", "whisper_tiny_en.json").read_text())["metrics"]["per"]
    summary = json.loads(paths["summary"].read_text())
    out = {
        "demo_dir": str(demo_dir),
        "asr_system": args.asr_system,
        "cascade_input": cascade_input,
        "span_itn": args.span_itn,
        "asr_like": args.asr_like,
        "recognition_errors": scale > 0,
        "error_scale": scale,
        "confusions": dataclasses.asdict(confusions),
        "train_tagger_examples": summary["counts"]["train_tagger"],
        "test_utterances": len(test),
        "test_documents": len(docs),
        "reference_end_mark_share": end_mark_share([row["text"] for row in test]),
        "whisper_tiny_en_per": whisper,
        "seconds": seconds,
        "results": results,
    }
    print_table(out)
    write_results(args.json, out, argv)
    return out


def print_table(out: dict) -> None:
    print(f"\nbar: Whisper tiny.en test PER {pct(out['whisper_tiny_en_per'])}")
    print("| tagger | input | PER | punct F1 | WER-PC | case ER | ends with a mark |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, row in out["results"].items():
        for kind in ("asr_output", "reference_words"):
            r = row[kind]
            cells = " | ".join(pct(r[m]) for m in (*TRANSCRIPT_METRICS, "end_mark_share"))
            print(f"| {name} | {kind} | {cells} |")
    print("\n| tagger | PER | CER | M-WER | I-WER (clean test documents) |")
    print("|---|---:|---:|---:|---:|")
    for name, row in out["results"].items():
        print(f"| {name} | " + " | ".join(pct(row["clean_documents"][m]) for m in quality_formatter.METRICS) + " |")


if __name__ == "__main__":
    main()
