"""Every benchmark of a demo output folder in one process, side by side, and the README's claims table.

Sections (each reports "not measured" when its models or data are missing):

a. RTF with ONNX Runtime on CPU, batch 1, on the test utterances (``benchmarks/run_all_rtf.py``: medians of
   interleaved rounds, their spread, paired ratios; ``--rtf-previous`` checks that two runs agree): the cascade
   (``rnnt_conditioned`` normalized mode + ``TextFormatter.format``), ``rnnt_dual`` (punctuated output from a
   punctuated-head-only export, and both outputs) and ``rnnt_conditioned`` (punctuated, both).
b. The text formatter against the full seq2seq formatter and NeMo WFST ITN (``benchmarks/quality_formatter.py``)
   on the test documents of the formatter data, with paired significance tests per document.
c. LibriSpeech-PC manifest restoration throughput on a text-only synthetic KJV corpus, one process.
d. The claims, computed by ``nemo_pc.pipelines.demo.claims`` from the demo folder, section b and
   ``--lm-fusion``'s report.

Everything lands in the JSON; ``benchmarks/render_results.py`` makes every table of it (``run_all.md``, and the
README's ``claims`` block with ``--readme``).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/run_all.py --demo-dir demo_out --readme README.md
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import quality_formatter
import render_results
import run_all_rtf
from suite import Stopwatch, results_path, shown_path, write_results

from nemo_pc.parts.manifest import read_manifest, write_text_atomic
from nemo_pc.pipelines.demo.claims import compute_claims
from nemo_pc.pipelines.demo.layout import model_path

FORMATTER_METRICS = render_results.FORMATTER_METRICS


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", required=True, help="output folder of examples/demo_pc.py")
    parser.add_argument("--json", default=str(results_path(__file__)))
    parser.add_argument("--markdown", default=str(results_path(__file__, ".md")))
    parser.add_argument("--readme", default=None, help="render this README's claims block from --json")
    parser.add_argument("--rtf-utterances", type=int, default=0, help="first N test utterances timed (0: all)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timing rounds (medians count)")
    parser.add_argument("--rtf-previous", default=None, help="an earlier run's JSON: report how far each RTF moved")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime and torch threads")
    parser.add_argument("--formatter-data", default=None, help="default D/formatter_data")
    parser.add_argument("--tagger", default=None, help="default D/models/tagger.nemo (or the demo's formatter_dir)")
    parser.add_argument("--rewriter", default=None, help="default D/models/rewriter.nemo (or formatter_dir)")
    parser.add_argument("--seq2seq", default=None, help="default D/models/seq2seq.nemo")
    parser.add_argument("--formatter-docs", type=int, default=60, help="test documents scored")
    parser.add_argument("--long-words", type=int, default=5000, help="words of the long timing text")
    parser.add_argument("--short-words", type=int, default=400)
    parser.add_argument("--short-texts", type=int, default=5)
    parser.add_argument("--no-wfst", action="store_true", help="leave NeMo WFST ITN out")
    parser.add_argument("--wfst-cache-dir", default=None)
    parser.add_argument("--restore-utterances", type=int, default=2000, help="utterances of the restoration corpus")
    parser.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the significance tests")
    parser.add_argument(
        "--lm-fusion", default=None, help="benchmarks/quality_lm_fusion.py's JSON of this demo folder (C7)"
    )
    parser.add_argument("--skip", default="", help="comma-separated sections to skip: rtf,formatter,restore,m2")
    return parser.parse_args(argv)


# paths of the demo folder


def _demo_config(demo_dir: Path) -> dict:
    path = demo_dir / "config.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def formatter_paths(args: argparse.Namespace, demo_dir: Path) -> dict[str, Path | None]:
    """Tagger, rewriter, seq2seq and data folder: the options, else the demo folder, else its ``formatter_dir``."""
    shared = _demo_config(demo_dir).get("formatter_dir")

    def pick(option: str | None, name: str, fallback: bool) -> Path | None:
        candidates = [option] if option else [demo_dir / "models" / f"{name}.nemo"]
        if not option and fallback and shared:
            candidates.append(Path(shared) / f"{name}.nemo")
        return next((Path(c) for c in candidates if Path(c).is_file()), None)

    data = Path(args.formatter_data) if args.formatter_data else demo_dir / "formatter_data"
    return {
        "tagger": pick(args.tagger, "tagger", True),
        "rewriter": pick(args.rewriter, "rewriter", True),
        "seq2seq": pick(args.seq2seq, "seq2seq", False),
        "data": data if (data / "test_documents.json").is_file() else None,
    }


def rtf_section(demo_dir: Path, paths: dict, args: argparse.Namespace, work: Path) -> dict:
    """Section a (``benchmarks/run_all_rtf.py``)."""
    return run_all_rtf.rtf_section(demo_dir, paths, args, work, model_path)


# b. formatter


def formatter_section(paths: dict, args: argparse.Namespace) -> dict:
    """Section b: quality per document (with paired tests against the formatter) and long/short text timings."""
    if paths["data"] is None:
        return {"not_measured": "no formatter data (D/formatter_data or --formatter-data)"}
    if not (paths["tagger"] and paths["rewriter"]):
        return {"not_measured": "no tagger.nemo / rewriter.nemo"}
    from nemo_pc.metrics.accumulator import PCMetrics
    from nemo_pc.metrics.significance import compare_systems

    bench = quality_formatter
    docs = read_manifest(paths["data"] / "test_documents.json")
    docs = [docs[int(k * len(docs) / args.formatter_docs)] for k in range(min(args.formatter_docs, len(docs)))]
    short = bench.timing_texts(docs, args.short_words, args.short_texts)
    long = bench.timing_texts(docs, args.long_words, 1)
    options = SimpleNamespace(
        tagger=paths["tagger"],
        rewriter=paths["rewriter"],
        seq2seq=paths["seq2seq"],
        separate=None,
        wfst=not args.no_wfst,
        cache_dir=args.wfst_cache_dir,
    )
    results, scored = {}, {}
    for name, system in bench.systems(options).items():
        outputs = system.format([doc["spoken"] for doc in docs])
        metrics = PCMetrics()
        for k, (doc, hyp) in enumerate(zip(docs, outputs, strict=True)):
            metrics.update(doc["written"], hyp, spoken=doc["spoken"], utt_id=str(k))
        values = metrics.compute()["metrics"]
        row = {m: values[m] for m in FORMATTER_METRICS}
        row["time_short_s"] = bench.timed(system, short)
        row["time_long_s"] = bench.timed(system, long)
        row["example"] = outputs[0][:300]
        results[name], scored[name] = row, metrics
        print(f"  {name}: " + json.dumps({k: v for k, v in row.items() if k != "example"}), flush=True)
    for row in results.values():
        row["long_time_vs_formatter"] = row["time_long_s"] / results["formatter"]["time_long_s"]
    compare = {}
    for name, metrics in scored.items():
        if name != "formatter":
            rows = compare_systems(scored["formatter"], metrics, args.resamples)
            compare[name] = {m: rows[m] for m in FORMATTER_METRICS}
    return {
        "documents": len(docs),
        "long_words": args.long_words,
        "short_words": args.short_words,
        "short_texts": len(short),
        "models": {k: shown_path(v) if v else None for k, v in paths.items()},
        "results": results,
        "compare": compare,
    }


# c. restoration


def restoration_section(work: Path, utterances: int, seed: int = 0) -> dict:
    """Section c: LibriSpeech-PC restoration of a text-only KJV corpus with 1% reading deviations, one process."""
    from nemo_pc.data.recipes.librispeech_pc import RestoreOptions, prepare_librispeech_pc
    from nemo_pc.data.recipes.synth import SynthConfig, load_sources, synthesize_corpus

    corpus = work / f"restore_corpus_{utterances}_{seed}"
    hours = utterances * 17 / 2.6 / 3600 * 1.1  # ~17 words per utterance at 2.6 words/s, 10% spare
    config = SynthConfig(hours=hours, audio=False, tn="none", deviation_rate=0.01, seed=seed, seen_test_share=0)
    synthesize_corpus(corpus, load_sources(["kjv"]), config)
    reference = {line["utt_id"]: line for line in read_manifest(corpus / "SYNTH.jsonl")}
    out = work / "restore_out"
    shutil.rmtree(out, ignore_errors=True)
    with Stopwatch() as watch:
        manifests = prepare_librispeech_pc(
            corpus, None, out, num_jobs=1, options=RestoreOptions(tn="none"), durations=corpus / "SYNTH.jsonl"
        )
    seconds = watch.seconds
    kept = [entry for path in manifests.values() for entry in read_manifest(path)]
    exact = sum(entry["text"] == reference[entry["utt_id"]]["text"] for entry in kept)
    audio_hours = sum(line["duration"] for line in reference.values()) / 3600
    return {
        "utterances": len(reference),
        "seconds": seconds,
        "utterances_per_second": len(reference) / seconds,
        "audio_hours": audio_hours,
        "audio_hours_per_second": audio_hours / seconds,
        "retention_pct": 100.0 * len(kept) / max(len(reference), 1),
        "exact_pct": 100.0 * exact / max(len(kept), 1),
    }


# report


def lm_fusion_report(path: str | None, demo_dir: Path) -> dict | None:
    """``benchmarks/quality_lm_fusion.py``'s JSON for claim C7, or ``None`` without one. A report of another demo
    folder is refused: its models are not the ones the other claims measure."""
    if not path:
        return None
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise SystemExit(
            f"--lm-fusion {path}: not a readable benchmarks/quality_lm_fusion.py report ({err})"
        ) from None
    measured_on = Path(report.get("settings", {}).get("demo_dir", "")).resolve()
    if measured_on != demo_dir.resolve():
        raise SystemExit(f"--lm-fusion {path}: measured on {measured_on}, not on --demo-dir {demo_dir.resolve()}")
    return report


def _run(name: str, skip: set[str], func) -> dict:
    if name in skip:
        return {"not_measured": "skipped (--skip)"}
    print(f"== {name}", flush=True)
    with Stopwatch() as watch:
        try:
            section = func()
        except (FileNotFoundError, ImportError, RuntimeError, ValueError) as err:
            section = {"not_measured": f"{type(err).__name__}: {err}"}
    print(f"   {name} done in {watch.seconds:.1f} s", flush=True)
    return section


SECTIONS = {"rtf", "formatter", "restore", "m2"}


def _previous_rtf(path: str | None) -> dict | None:
    """The ``rtf`` section of an earlier run's JSON (``--rtf-previous``), read before any timing starts."""
    if not path:
        return None
    try:
        previous = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise SystemExit(f"--rtf-previous {path}: not a readable run_all JSON ({err})") from None
    if not isinstance(previous, dict) or not isinstance(previous.get("rtf"), dict):
        raise SystemExit(f"--rtf-previous {path}: has no 'rtf' section")
    return previous["rtf"]


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    demo_dir = Path(args.demo_dir).resolve()
    if not demo_dir.is_dir():
        raise SystemExit(f"--demo-dir {demo_dir}: no such folder")
    skip = {part for part in args.skip.split(",") if part}
    unknown = sorted(skip - SECTIONS)
    if unknown:
        raise SystemExit(f"--skip: unknown section(s) {', '.join(unknown)}; choose from {', '.join(sorted(SECTIONS))}")
    previous_rtf = _previous_rtf(args.rtf_previous)
    paths = formatter_paths(args, demo_dir)
    command = "python benchmarks/run_all.py " + " ".join(sys.argv[1:] if argv is None else argv)
    results: dict = {
        "demo_dir": shown_path(demo_dir),
        "command": command.strip(),
        "demo_config": _demo_config(demo_dir),
        "markdown": str(args.markdown),
    }
    with tempfile.TemporaryDirectory(prefix="run_all_") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        results["rtf"] = _run("rtf", skip, lambda: rtf_section(demo_dir, paths, args, work))
        if args.rtf_previous and "not_measured" not in results["rtf"]:
            results["rtf"]["agreement"] = run_all_rtf.agreement(results["rtf"], previous_rtf)
            results["rtf"]["agreement"]["previous"] = args.rtf_previous
        results["formatter"] = _run("formatter", skip, lambda: formatter_section(paths, args))
        results["restoration"] = _run("restore", skip, lambda: restoration_section(work, args.restore_utterances))
        print("== claims", flush=True)
        results["claims"] = compute_claims(
            demo_dir,
            results["formatter"],
            measure_one_pass="m2" not in skip,
            num_resamples=args.resamples,
            lm_report=lm_fusion_report(args.lm_fusion, demo_dir),
        )
    write_results(args.json, results)
    markdown = render_results.run_all_markdown(results, args.json)
    write_text_atomic(args.markdown, markdown)
    print(markdown)
    if args.readme:
        render_results.render_file(args.readme, {"claims": render_results.source_name(args.json)})
        print(f"rendered the results blocks of {args.readme}")
    print(f"wrote {args.json} and {args.markdown}")
    return results


if __name__ == "__main__":
    main()
