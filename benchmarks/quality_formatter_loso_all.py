"""Leave one source out, for every text source: how the formatter does on text of a source it never saw.

Test documents of a source the formatter was trained on overstate its quality (papers/003 trains and tests on one
distribution). For every source S of ``nemo_pc.formatter.sources.SOURCES`` this benchmark builds formatter data
without S, trains a tagger and a span rewriter on it, and scores on S's held-out documents (the dev and test
documents of S in a build with every source: the left-out formatter saw no document of S at all):

* the formatter's span ITN policies (``nemo_pc.formatter.hybrid.POLICIES``: the pure neural path, WFST for every
  span, and the hybrids that choose per span by the rewriter's confidence, by agreement, by semiotic class), each
  on the tagger's spans and, as ``<policy>+detect``, on the tagger's spans joined with those WFST ITN finds,
* NeMo WFST ITN over the whole text,

with PER, case CER, M-WER and I-WER, and each system's I-WER as a multiple of WFST's. Stages: ``train`` (data and
models, skipped where their files exist), ``score`` (needs the models), ``all``. Models and data go under
``--work``; a rerun reuses them. docs/formatter.md gives the commands of the measured run (data, then taggers and
rewriters in two processes, then the scores).

    .venv/bin/python benchmarks/quality_formatter_loso_all.py --work .bench/loso \
        --json benchmarks/results/formatter_loso_all.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import quality_formatter
from suite import Stopwatch, write_results

from nemo_pc.parts.manifest import write_text_atomic

METRICS = (*quality_formatter.METRICS, "per[.]", "per[,]", "per[?]", "punct_micro_f1", "case_er")
"""PER and I-WER as before, and the PER of each mark, punctuation F1 and the case error rate."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from nemo_pc.formatter.sources import SOURCES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=".bench/loso", help="data and models, one folder per left-out source")
    parser.add_argument(
        "--sources",
        default=",".join(SOURCES),
        help="sources to leave out in turn (comma list); a+b leaves a and b out together and scores each",
    )
    parser.add_argument(
        "--train-sources", default=",".join(SOURCES), help="the sources of every build, less the left-out ones"
    )
    parser.add_argument("--stage", choices=("data", "train", "score", "all"), default="all")
    parser.add_argument(
        "--models",
        default="tagger,rewriter",
        help="models the train stage trains (comma list); "
        "after --stage data, two processes can train taggers and rewriters side by side",
    )
    parser.add_argument("--max-documents", type=int, default=400, help="documents per source")
    parser.add_argument("--synthetic", type=int, default=1200, help="synthetic entity sentences")
    parser.add_argument("--numbers", type=int, default=1200, help="number-dense sentences")
    parser.add_argument("--tagger-steps", type=int, default=250)
    parser.add_argument("--tagger-layers", type=int, default=3, help="MiniLM layers of the tagger's encoder")
    parser.add_argument("--tagger-lr", type=float, default=5e-4)
    parser.add_argument("--rewriter-steps", type=int, default=1000)
    parser.add_argument("--max-docs", type=int, default=60, help="held-out documents of each source scored")
    parser.add_argument("--threshold", type=float, default=0.9, help="the confidence policy's threshold")
    parser.add_argument("--num-jobs", type=int, default=2, help="NeMo TN processes of the data builds")
    parser.add_argument("--asr-like", type=float, default=0.0, help="ASR-like tagger examples per clean one (words)")
    parser.add_argument(
        "--asr-confusions", default=None, help="ConfusionStats JSON of the ASR-like examples (needed by --asr-like)"
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    args.sources = [s for s in args.sources.split(",") if s]
    args.train_sources = [s for s in args.train_sources.split(",") if s]
    for option, names in (("--sources", members(args.sources)), ("--train-sources", args.train_sources)):
        unknown = [s for s in names if s not in SOURCES]
        if unknown:
            parser.error(f"{option}: unknown {unknown}; known: {', '.join(SOURCES)}")
    if args.asr_like and not args.asr_confusions:
        parser.error("--asr-like needs --asr-confusions")
    args.models = [m for m in args.models.split(",") if m]
    if not set(args.models) <= {"tagger", "rewriter"}:
        parser.error(f"--models: tagger and/or rewriter, got {args.models}")
    return args


def members(folds: list[str]) -> list[str]:
    """The sources of the folds (``a+b`` is a fold that leaves ``a`` and ``b`` out together)."""
    return [source for fold in folds for source in fold.split("+")]


def data_config(args: argparse.Namespace, sources: tuple[str, ...], asr_like: bool = True):
    """The formatter data of ``sources``; the all-source build that only gives held-out documents has no
    ASR-like examples (``asr_like=False``): they go to the train split only."""
    from nemo_pc.formatter.build import FormatterDataConfig

    return FormatterDataConfig(
        sources=sources,
        max_documents=args.max_documents,
        synthetic=args.synthetic,
        numbers=args.numbers,
        example_words=48,
        asr_like=args.asr_like if asr_like else 0.0,
        asr_confusions=args.asr_confusions if asr_like and args.asr_like else None,
    )


def train(args: argparse.Namespace, work: Path, source: str) -> dict:
    """Data without ``source`` (a fold: ``a+b`` leaves both out), then its tagger and rewriter (each skipped when its
    files exist, the data too once built: a second process may be training the other model); seconds of each."""
    from nemo_pc.formatter.build import build_formatter_data
    from nemo_pc.pipelines.train import train_model

    folder = work / f"without_{source}"
    data = folder / "formatter_data"
    with Stopwatch() as watch:
        if not (data / "summary.json").is_file():
            sources = tuple(s for s in args.train_sources if s not in source.split("+"))
            build_formatter_data(data, data_config(args, sources), num_jobs=args.num_jobs)
    times = {"data": round(watch.seconds, 1)}
    if args.stage == "data":
        return times
    tagger = [f"model.optim.lr={args.tagger_lr}", f"model.encoder.num_layers={args.tagger_layers}"]
    for name, steps, overrides in (
        ("tagger", args.tagger_steps, [*tagger, f"data_dir={data}"]),
        ("rewriter", args.rewriter_steps, [f"data_dir={data}"]),
    ):
        if name not in args.models:
            continue
        target = folder / f"{name}.nemo"
        stats_path = target.with_suffix(".json")
        if not (target.is_file() and stats_path.is_file()):
            stats = train_model(name, overrides, target, steps, seed=0)
            write_text_atomic(stats_path, json.dumps(stats, indent=2, default=str) + "\n")
        times[name] = json.loads(stats_path.read_text()).get("seconds")
        print(f"without {source}: {name} done ({times[name]} s)", file=sys.stderr, flush=True)
    return times


def held_out(work: Path, source: str, limit: int) -> list[dict]:
    """Dev and test documents of ``source`` in the all-source build, spread evenly, at most ``limit``."""
    from nemo_pc.parts.manifest import read_manifest

    data = work / "all" / "formatter_data"
    docs = [d for split in ("test", "dev") for d in read_manifest(data / f"{split}_documents.json")]
    docs = sorted((d for d in docs if d["source"] == source), key=lambda d: d["doc_id"])
    if len(docs) > limit:
        docs = [docs[int(k * len(docs) / limit)] for k in range(limit)]
    return docs


def iwer_counts(outputs: list[str], docs: list[dict]) -> list[list[int]]:
    """``[errors, words]`` of I-WER for each document (for the pooled paired bootstrap)."""
    from nemo_pc.metrics.itn import iwer_counts as counts

    rows = [counts(doc["written"], hyp, doc["spoken"]) for doc, hyp in zip(docs, outputs, strict=True)]
    return [[row["iwer_E"], row["iwer_N"]] for row in rows]


def pooled(per_source: dict, baseline: str = "NeMo WFST ITN", num_resamples: int = 2000) -> dict:
    """Every system against ``baseline`` over the held-out documents of all sources together: I-WER of each, the
    difference and its paired-bootstrap 95% interval and p (documents resampled)."""
    import numpy as np

    from nemo_pc.metrics.accumulator import build_metrics
    from nemo_pc.metrics.significance import paired_bootstrap

    i_wer = [m for m in build_metrics() if m.name == "i_wer"]
    keys = ("iwer_E", "iwer_N")
    stacked = {
        name: np.array([row for e in per_source.values() for row in e["iwer_documents"][name]], dtype=float)
        for name in next(iter(per_source.values()))["iwer_documents"]
    }
    base = stacked[baseline]
    out = {}
    for name, counts in stacked.items():
        test = paired_bootstrap(keys, counts, base, i_wer, num_resamples=num_resamples)["i_wer"]
        out[name] = {
            "i_wer": counts[:, 0].sum() / max(counts[:, 1].sum(), 1),
            "documents": len(counts),
            "delta_vs_wfst": test["delta"],
            "ci95": test["ci95"],
            "p": test["p"],
        }
    return out


class Scorer:
    """Scores one left-out formatter under every policy, and NeMo WFST ITN, on the source's held-out documents."""

    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        from nemo_pc.formatter.baselines import WfstItn
        from nemo_pc.formatter.hybrid import WfstSpans

        self.bench = quality_formatter
        self.args, self.work = args, work
        self.wfst_text = WfstItn()
        self.wfst_spans = WfstSpans(self.wfst_text.normalizer)

    def __call__(self, fold: str, source: str) -> dict:
        from nemo_pc.formatter.hybrid import POLICIES
        from nemo_pc.formatter.pipeline import TextFormatter

        folder = self.work / f"without_{fold}"
        docs = held_out(self.work, source, self.args.max_docs)
        formatter = TextFormatter.from_files(
            folder / "tagger.nemo", folder / "rewriter.nemo", wfst=self.wfst_spans, threshold=self.args.threshold
        )
        with Stopwatch() as watch:
            labeled, candidates = formatter.span_candidates([d["spoken"] for d in docs])
        seconds = {"candidates": round(watch.seconds, 1)}
        with Stopwatch() as watch:
            detected = formatter.span_candidates([d["spoken"] for d in docs], detect=True)[1]
        seconds["candidates_detect"] = round(watch.seconds, 1)
        rows, picked, per_document = {}, {}, {}
        for policy in (*POLICIES, *(f"{p}+detect" for p in POLICIES)):
            name = policy.removesuffix("+detect")
            items, chosen = formatter.compose_policy(labeled, detected if policy != name else candidates, name)
            texts = [item.reference() for item in items]
            rows[policy] = self.bench.quality(self.bench.Fixed(texts), docs, METRICS)
            per_document[policy] = iwer_counts(texts, docs)
            picked[policy] = {"wfst": sum(c == "wfst" for c in chosen), "spans": len(chosen)}
        sweep = {}
        for threshold in (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99):
            formatter.threshold = threshold
            texts = [item.reference() for item in formatter.compose_policy(labeled, candidates, "confidence")[0]]
            sweep[str(threshold)] = self.bench.quality(self.bench.Fixed(texts), docs)["i_wer"]
        with Stopwatch() as watch:
            wfst_outputs = self.wfst_text.format([d["spoken"] for d in docs])
        seconds["wfst_text"] = round(watch.seconds, 1)
        rows["NeMo WFST ITN"] = self.bench.quality(self.bench.Fixed(wfst_outputs), docs, METRICS)
        per_document["NeMo WFST ITN"] = iwer_counts(wfst_outputs, docs)
        return {
            "left_out": fold.split("+"),
            "documents": len(docs),
            "results": rows,
            "wfst_spans_chosen": picked,
            "confidence_sweep_i_wer": sweep,
            "seconds": seconds,
            "iwer_documents": per_document,
        }


def print_source(source: str, entry: dict) -> None:
    rows = entry["results"]
    wfst = rows["NeMo WFST ITN"]["i_wer"]
    print(f"\nwithout {source}: {entry['documents']} held-out documents of {source}", flush=True)
    print("| system | PER | CER | I-WER | I-WER / WFST's |")
    for name, row in rows.items():
        ratio = f"{row['i_wer'] / wfst:.2f}x" if wfst else "-"
        print(f"| {name} | {row['per']:.1%} | {row['cer']:.1%} | {row['i_wer']:.1%} | {ratio} |", flush=True)


def summary(per_source: dict) -> dict:
    """Mean of each metric over the sources, per system, and the I-WER ratio to WFST (mean of ratios)."""
    systems = next(iter(per_source.values()))["results"].keys()
    out = {}
    for name in systems:
        rows = [entry["results"][name] for entry in per_source.values()]
        mean = {m: sum(r[m] for r in rows) / len(rows) for m in METRICS if all(m in r for r in rows)}
        ratios = [
            e["results"][name]["i_wer"] / e["results"]["NeMo WFST ITN"]["i_wer"]
            for e in per_source.values()
            if e["results"]["NeMo WFST ITN"]["i_wer"]
        ]
        mean["i_wer_vs_wfst"] = sum(ratios) / len(ratios) if ratios else None
        mean["sources_worse_than_wfst"] = sum(
            e["results"][name]["i_wer"] > e["results"]["NeMo WFST ITN"]["i_wer"] for e in per_source.values()
        )
        out[name] = mean
    return out


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    work = Path(args.work)
    from nemo_pc.formatter.build import build_formatter_data

    result: dict = {
        "config": {k: v for k, v in vars(args).items() if k not in ("json", "stage")},
        "train_seconds": {},
        "sources": {},
    }
    if not (work / "all" / "formatter_data" / "summary.json").is_file():  # built once: several processes read it
        every = tuple(dict.fromkeys([*args.train_sources, *members(args.sources)]))
        build_formatter_data(work / "all" / "formatter_data", data_config(args, every, False), num_jobs=args.num_jobs)
    scorer = Scorer(args, work) if args.stage in ("score", "all") else None
    for fold in args.sources:  # each fold scored as soon as its models are there: a partial table is kept
        if args.stage != "score":
            result["train_seconds"][fold] = train(args, work, fold)
        else:  # trained by earlier runs: their seconds and steps from the models' stats files
            stats = {
                name: json.loads((work / f"without_{fold}" / f"{name}.json").read_text())
                for name in ("tagger", "rewriter")
            }
            result["train_seconds"][fold] = {
                name: {k: row.get(k) for k in ("seconds", "steps", "curve")} for name, row in stats.items()
            }
        if scorer is not None:
            for source in fold.split("+"):
                result["sources"][source] = scorer(fold, source)
                print_source(source, result["sources"][source])
            result["mean"] = summary(result["sources"])
            result["pooled"] = pooled(result["sources"])
            result["complete"] = len(result["sources"]) == len(members(args.sources))
            if args.json:
                write_results(args.json, result)
    if scorer is not None:
        print("\nmean over sources:", json.dumps(result["mean"], indent=1))
        print("\npooled over sources, against WFST:", json.dumps(result["pooled"], indent=1))
    return result


if __name__ == "__main__":
    main()
