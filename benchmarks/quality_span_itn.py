"""Every span ITN policy of the demo's formatter, on its own test documents and on speech.

The leave-one-source-out benchmark (``quality_formatter_loso_all.py``) scores the policies on text of sources the
formatter never saw. This one scores them on what a demo run gives it, with the demo's tagger and span rewriter:

* the formatter's clean test documents (written text of its own training sources, spread over all of them): PER,
  case error rate, M-WER and I-WER, with NeMo WFST ITN over the whole text beside them;
* the normalized output of ASR systems on the demo's test split (the cascade's input; ``--systems``): PER,
  punctuation micro F1, WER-PC and case error rate against the punctuated references.

Each policy of ``nemo_pc.formatter.hybrid.POLICIES`` runs on the tagger's spans and, as ``<policy>+detect``, on the
tagger's spans joined with those WFST ITN finds; the tagger and the rewriter run once per input.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/quality_span_itn.py --demo-dir demo_out \\
        --json benchmarks/results/span_itn_demo.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import quality_formatter
from suite import Stopwatch, write_results

from nemo_pc.parts.manifest import read_manifest

DOCUMENT_METRICS = ("per", "case_er", "m_wer", "i_wer")
SPEECH_METRICS = ("per", "punct_micro_f1", "wer_pc", "case_er")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", default="demo_out", help="a finished demo output (models, formatter_data)")
    parser.add_argument(
        "--systems",
        default="rnnt_conditioned,rnnt_conditioned_lm",
        help="ASR systems whose normalized test output is formatted (comma list; predictions/<system>.json)",
    )
    parser.add_argument("--max-docs", type=int, default=60, help="test documents, spread over all (default 60)")
    parser.add_argument("--threshold", type=float, default=0.9, help="the confidence policy's threshold")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    demo = Path(args.demo_dir)
    missing = [
        str(path)
        for path in (
            demo / "models" / "tagger.nemo",
            demo / "models" / "rewriter.nemo",
            demo / "formatter_data" / "test_documents.json",
            *(demo / "predictions" / f"{system}.json" for system in args.systems),
        )
        if not path.is_file()
    ]
    if missing:
        parser.error(f"not in the demo folder: {', '.join(missing)}")
    if args.max_docs < 1:
        parser.error(f"--max-docs must be 1 or more, got {args.max_docs}")
    return args


def spread(rows: list[dict], limit: int) -> list[dict]:
    """At most ``limit`` of ``rows``, evenly spread."""
    if len(rows) <= limit:
        return rows
    return [rows[int(k * len(rows) / limit)] for k in range(limit)]


def policy_outputs(formatter, texts: list[str]) -> dict[str, list[str]]:
    """The formatter's output of ``texts`` under every policy, without and with WFST span detection."""
    from nemo_pc.formatter.hybrid import POLICIES

    labeled, candidates = formatter.span_candidates(texts)
    detected = formatter.span_candidates(texts, detect=True)[1]
    out = {}
    for policy in (*POLICIES, *(f"{p}+detect" for p in POLICIES)):
        name = policy.removesuffix("+detect")
        items, _ = formatter.compose_policy(labeled, detected if policy != name else candidates, name)
        out[policy] = [item.reference() for item in items]
    return out


def speech_scores(references: list[str], outputs: list[str]) -> dict:
    from nemo_pc.metrics.accumulator import PCMetrics

    metrics = PCMetrics()
    for k, (reference, hypothesis) in enumerate(zip(references, outputs, strict=True)):
        metrics.update(reference, hypothesis, utt_id=str(k))
    values = metrics.compute()["metrics"]
    return {name: values[name] for name in SPEECH_METRICS}


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    from nemo_pc.formatter.baselines import WfstItn
    from nemo_pc.formatter.hybrid import WfstSpans
    from nemo_pc.formatter.pipeline import TextFormatter

    demo = Path(args.demo_dir)
    wfst_text = WfstItn()
    formatter = TextFormatter.from_files(
        demo / "models" / "tagger.nemo",
        demo / "models" / "rewriter.nemo",
        wfst=WfstSpans(wfst_text.normalizer),
        threshold=args.threshold,
    )
    docs = spread(read_manifest(demo / "formatter_data" / "test_documents.json"), args.max_docs)
    result: dict = {"config": {k: v for k, v in vars(args).items() if k != "json"}, "seconds": {}}
    with Stopwatch() as watch:
        outputs = policy_outputs(formatter, [doc["spoken"] for doc in docs])
    result["seconds"]["documents"] = round(watch.seconds, 1)
    outputs["NeMo WFST ITN"] = wfst_text.format([doc["spoken"] for doc in docs])
    result["documents"] = {
        "count": len(docs),
        "sources": sorted({doc["source"] for doc in docs}),
        "results": {
            name: quality_formatter.quality(quality_formatter.Fixed(texts), docs, DOCUMENT_METRICS)
            for name, texts in outputs.items()
        },
    }
    result["speech"] = {}
    for system in args.systems:
        rows = read_manifest(demo / "predictions" / f"{system}.json")
        with Stopwatch() as watch:
            outputs = policy_outputs(formatter, [row["pred_text_normalized"] for row in rows])
        result["seconds"][system] = round(watch.seconds, 1)
        references = [row["text"] for row in rows]
        result["speech"][system] = {
            "utterances": len(rows),
            "results": {name: speech_scores(references, texts) for name, texts in outputs.items()},
        }
    print_tables(result)
    if args.json:
        write_results(args.json, result)
    return result


def print_tables(result: dict) -> None:
    docs = result["documents"]
    print(f"{docs['count']} test documents ({', '.join(docs['sources'])})")
    for name, row in docs["results"].items():
        print(f"  {name:<20}" + "".join(f" {m} {row[m]:7.1%}" for m in DOCUMENT_METRICS), flush=True)
    for system, entry in result["speech"].items():
        print(f"{system}: {entry['utterances']} test utterances")
        for name, row in entry["results"].items():
            print(f"  {name:<20}" + "".join(f" {m} {row[m]:7.1%}" for m in SPEECH_METRICS), flush=True)


if __name__ == "__main__":
    main()
