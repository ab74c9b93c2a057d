"""Leave one source out: how the demo's text formatter does on text of a source it never saw (papers/003).

Test documents of a source the formatter was trained on overstate its quality. This benchmark builds the demo's
formatter data without one source (``--leave-out``, default ``wiki``), trains a tagger and a span rewriter on it with
the demo's step counts, and scores, on the held-out test documents of the left-out source from the demo's own
formatter data:

* the left-out formatter (never saw the source),
* the demo's formatter (trained on all sources, these documents held out),
* NeMo WFST ITN,

with PER, case CER, M-WER and I-WER, and each formatter's I-WER as a multiple of WFST's.

    .venv/bin/python benchmarks/quality_formatter_loso.py --demo-dir demo_out --leave-out wiki \
        --json benchmarks/results/formatter_loso.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import quality_formatter
from suite import Stopwatch, pct, write_results

from nemo_pc.parts.manifest import read_manifest
from nemo_pc.pipelines.demo.config import DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", default="demo_out", help="a finished demo output (formatter_data, models)")
    parser.add_argument("--leave-out", default="wiki", help="the source the extra formatter never sees")
    parser.add_argument("--work", default=None, help="where the left-out data and models go (default D/loso_<src>)")
    parser.add_argument("--max-docs", type=int, default=250, help="test documents of the left-out source scored")
    parser.add_argument("--no-wfst", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    from nemo_pc.formatter.build import build_formatter_data
    from nemo_pc.formatter.pipeline import TextFormatter
    from nemo_pc.pipelines.train import train_model

    demo_dir = Path(args.demo_dir)
    if not (demo_dir / "config.json").is_file():
        parser.error(f"{demo_dir}: no config.json (run examples/demo_pc.py --out {demo_dir} first)")
    saved = json.loads((demo_dir / "config.json").read_text())
    fields = {f.name for f in dataclasses.fields(DemoConfig)}
    saved = {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items() if k in fields}
    cfg = DemoConfig(**{**saved, "out_dir": str(demo_dir)})  # the folder as it is now, wherever it was made
    if args.leave_out not in cfg.formatter_sources:
        parser.error(
            f"--leave-out {args.leave_out!r} is not a source of the demo's formatter: {cfg.formatter_sources}"
        )
    docs = [
        d for d in read_manifest(demo_dir / "formatter_data" / "test_documents.json") if d["source"] == args.leave_out
    ]
    if not docs:
        parser.error(f"no test documents of source {args.leave_out!r} in {demo_dir / 'formatter_data'}")
    docs = docs[: args.max_docs]
    work = Path(args.work or demo_dir / f"loso_{args.leave_out}")
    sources = tuple(s for s in cfg.formatter_sources if s != args.leave_out)
    demo = Demo(cfg)
    with Stopwatch() as watch:
        build_formatter_data(work / "formatter_data", demo.formatter_data_config(sources), num_jobs=cfg.num_jobs)
    seconds = {"data": round(watch.seconds, 1)}
    for name, steps in (("tagger", cfg.tagger_steps), ("rewriter", cfg.rewriter_steps)):
        target = work / f"{name}.nemo"
        if not target.is_file():
            overrides = demo.formatter_overrides(name, work / "formatter_data")  # the demo's recipe, tagger_lr too
            stats = train_model(name, overrides, target, steps, seed=cfg.seed)
            seconds[name] = stats["seconds"]
    neural = {"span_itn": "neural", "detect_spans": False}  # the pure neural formatter; the hybrid: *_loso_all.py
    without = TextFormatter.from_files(work / "tagger.nemo", work / "rewriter.nemo", **neural)
    systems = {
        f"formatter without {args.leave_out}": without,
        "demo formatter (all sources)": TextFormatter.from_files(*demo.formatter(), **neural),
    }
    if not args.no_wfst:
        from nemo_pc.formatter.baselines import WfstItn

        systems["NeMo WFST ITN"] = WfstItn()
    results = {name: quality_formatter.quality(system, docs) for name, system in systems.items()}
    wfst = results.get("NeMo WFST ITN", {}).get("i_wer")
    print(f"\n{len(docs)} test documents of source {args.leave_out!r}; training seconds {seconds}\n")
    print("| system | PER | CER | M-WER | I-WER | I-WER / WFST's |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, row in results.items():
        ratio = f"{row['i_wer'] / wfst:.2f}x" if wfst else "-"
        print(f"| {name} | " + " | ".join(pct(row[m]) for m in quality_formatter.METRICS) + f" | {ratio} |")
    out = {"leave_out": args.leave_out, "documents": len(docs), "seconds": seconds, "results": results}
    if args.json:
        write_results(args.json, out)
    return out


if __name__ == "__main__":
    main()
