"""The text formatter against its baselines on held-out documents (papers/003 Table 2), in one run.

Quality: PER, case CER, M-WER and I-WER of every system on the test documents of ``nemo-pc formatter-data``
(references are the documents' written forms, I-WER regions come from their spoken forms). Speed: wall time of
every system on the same short (~400-word) and long (~5,000-word) texts cut from the test documents' spoken
words, measured one after the other in this process. Prints a table and writes JSON.

    .venv/bin/python benchmarks/quality_formatter.py --data-dir formatter_data --tagger PCTagger.nemo \
        --rewriter SpanRewriter.nemo --seq2seq FullSeq2Seq.nemo \
        --separate PCTagger_punct.nemo,PCTagger_case.nemo,PCTagger_itn.nemo --wfst --json bench.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from suite import Stopwatch, write_results

from nemo_pc.metrics.accumulator import Totals, build_metrics, utterance_counts
from nemo_pc.metrics.itn import ITN_KINDS, itn_kind, itn_outcomes
from nemo_pc.parts.manifest import read_manifest

METRICS = ("per", "cer", "m_wer", "i_wer")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True, help="output of nemo-pc formatter-data")
    parser.add_argument("--tagger", required=True)
    parser.add_argument("--rewriter", required=True)
    parser.add_argument("--seq2seq", default=None, help="full seq2seq baseline .nemo (task=full)")
    parser.add_argument("--separate", default=None, help="punct,case,itn single-head tagger .nemo files")
    parser.add_argument("--wfst", action="store_true", help="include NeMo WFST ITN")
    parser.add_argument("--max-docs", type=int, default=250, help="test documents, spread over all (default 250)")
    parser.add_argument("--short-words", type=int, default=400)
    parser.add_argument("--long-words", type=int, default=5000)
    parser.add_argument("--short-texts", type=int, default=5)
    parser.add_argument("--cost", action="store_true", help="also count FLOPs and decoder steps on the long text")
    parser.add_argument("--cache-dir", default=None, help="WFST grammar cache")
    parser.add_argument("--json", default=None)
    return parser.parse_args(argv)


def systems(args: argparse.Namespace) -> dict:
    from nemo_pc.formatter.baselines import SeparateTaggers, Seq2SeqFormatter, WfstItn
    from nemo_pc.formatter.pipeline import TextFormatter
    from nemo_pc.models.rewriter import SpanRewriterModel
    from nemo_pc.pipelines.demo.claims import CASCADE_FORMATTER

    # papers/003's formatter, as the claims (C5) state it: the pure neural path, no WFST
    formatter = TextFormatter.from_files(args.tagger, args.rewriter, span_itn="neural", detect_spans=False)
    # the same models as the demo's cascade and `nemo-pc format` run them: the library's default span ITN
    out = {"formatter": formatter, CASCADE_FORMATTER: TextFormatter(formatter.tagger, formatter.rewriter)}
    if args.separate:
        paths = dict(zip(("punct", "case", "itn"), args.separate.split(","), strict=True))
        out["separate taggers"] = TextFormatter(
            SeparateTaggers.from_files(paths), formatter.rewriter, span_itn="neural", detect_spans=False
        )
    if args.seq2seq:
        out["full seq2seq"] = Seq2SeqFormatter(SpanRewriterModel.restore_from(args.seq2seq, map_location="cpu"))
    if args.wfst:
        out["NeMo WFST ITN"] = WfstItn(args.cache_dir)
    return out


class Fixed:
    """A system whose outputs are already known (one ``format`` call over the same documents)."""

    def __init__(self, outputs: list[str]) -> None:
        self.outputs = outputs

    def format(self, texts):
        return self.outputs


def quality(system, docs: list[dict], metrics: tuple[str, ...] = METRICS) -> dict:
    outputs = system.format([doc["spoken"] for doc in docs])
    totals = Totals()
    by_kind = {kind: {"words": 0, "wrong": 0} for kind in ITN_KINDS}
    wrong: list[list] = []
    for doc, hyp in zip(docs, outputs, strict=True):
        for key, value in utterance_counts(doc["written"], hyp, spoken=doc["spoken"]).items():
            totals[key] += value
        for outcome in itn_outcomes(doc["written"], hyp, doc["spoken"]):
            kind = by_kind[itn_kind(outcome.word)]
            kind["words"] += 1
            kind["wrong"] += not outcome.correct
            if not outcome.correct:
                wrong.append([outcome.word, outcome.hypothesis])
    values = {m.name: float(m.value(totals)) for m in build_metrics() if m.name in metrics}
    return {**values, "itn_by_kind": by_kind, "itn_wrong": wrong, "example": outputs[0][:300]}


def print_cost(results: dict) -> None:
    """FLOPs and serial steps on the long text, and their ratios to the formatter's."""
    base = results["formatter"]["cost_long"]
    print("\nWork on the long text (FLOPs from torch's FlopCounterMode; decoder steps run one after another)")
    print(f"{'system':<18} {'GFLOP':>9} {'x':>6} {'encoder passes':>15} {'decoder steps':>14} {'x':>6}")
    for name, row in results.items():
        cost = row["cost_long"]
        flops = cost["gflop"] / base["gflop"] if base["gflop"] else float("nan")
        steps = cost["decoder_steps"] / base["decoder_steps"] if base["decoder_steps"] else float("nan")
        print(
            f"{name:<18} {cost['gflop']:9.1f} {flops:6.1f} {cost['encoder_passes']:15d} "
            f"{cost['decoder_steps']:14d} {steps:6.1f}"
        )


def print_itn_breakdown(results: dict) -> None:
    """Wrong / all ITN words per kind and system (aligned word by word, insertions not counted)."""
    print("\nITN words wrong / all, by kind (aligned word by word; I-WER also counts insertions)")
    print(f"{'system':<18} " + " ".join(f"{kind:>13}" for kind in ITN_KINDS))
    for name, row in results.items():
        cells = [f"{row['itn_by_kind'][kind]['wrong']}/{row['itn_by_kind'][kind]['words']}" for kind in ITN_KINDS]
        print(f"{name:<18} " + " ".join(f"{cell:>13}" for cell in cells))


def timing_texts(docs: list[dict], words: int, count: int) -> list[str]:
    """``count`` texts of ``words`` spoken words, consecutive words of the documents (repeated if too few)."""
    pool = " ".join(doc["spoken"] for doc in docs).split()
    pool = pool * (count * words // max(len(pool), 1) + 1)
    return [" ".join(pool[k * words : (k + 1) * words]) for k in range(count)]


def _torch_modules(system) -> list:
    """The neural models inside a system: a formatter's tagger(s) and rewriter, a seq2seq baseline's model."""
    import torch

    parts = [getattr(system, name, None) for name in ("tagger", "rewriter", "model")]
    parts += list(getattr(getattr(system, "tagger", None), "models", {}).values())
    return [part for part in parts if isinstance(part, torch.nn.Module)]


def compute_cost(system, texts: list[str]) -> dict:
    """Work done while formatting ``texts``: FLOPs (torch's ``FlopCounterMode``), encoder passes, and decoder
    steps. Greedy decoding runs its steps one after another, so on an accelerator that is not compute-bound
    (papers/003 times on a T4 GPU) decoder steps, not FLOPs, set the time."""
    from torch.utils.flop_counter import FlopCounterMode

    calls = {"encoder_passes": 0, "decoder_steps": 0}
    kinds = {"BertModel": "encoder_passes", "BartEncoder": "encoder_passes", "BartDecoder": "decoder_steps"}

    def hook(key: str):
        return lambda *_: calls.__setitem__(key, calls[key] + 1)

    subs = [sub for module in _torch_modules(system) for sub in module.modules() if type(sub).__name__ in kinds]
    handles = [sub.register_forward_hook(hook(kinds[type(sub).__name__])) for sub in subs]
    try:
        with FlopCounterMode(display=False) as counter:
            system.format(texts)
    finally:
        for handle in handles:
            handle.remove()
    return {"gflop": counter.get_total_flops() / 1e9, **calls}


def timed(system, texts: list[str]) -> float:
    """Seconds of one ``system.format(texts)``."""
    with Stopwatch() as watch:
        system.format(texts)
    return watch.seconds


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    docs = read_manifest(Path(args.data_dir) / "test_documents.json")
    docs = [docs[int(k * len(docs) / args.max_docs)] for k in range(min(args.max_docs, len(docs)))]
    short = timing_texts(docs, args.short_words, args.short_texts)
    long = timing_texts(docs, args.long_words, 1)
    results = {}
    for name, system in systems(args).items():
        row = quality(system, docs)
        row["time_short_s"] = timed(system, short)
        row["time_long_s"] = timed(system, long)
        if args.cost:
            row["cost_long"] = compute_cost(system, long)
        results[name] = row
        print(name, json.dumps({k: v for k, v in row.items() if k in METRICS or k.startswith("time")}), flush=True)
    base = results["formatter"]
    for row in results.values():
        row["long_time_vs_formatter"] = row["time_long_s"] / base["time_long_s"]
    print(
        f"\n{len(docs)} test documents; short: {len(short)} x {args.short_words} words; long: {args.long_words} words"
    )
    print(f"{'system':<18} {'PER':>7} {'CER':>7} {'M-WER':>7} {'I-WER':>7} {'short s':>8} {'long s':>8} {'x long':>7}")
    for name, r in results.items():
        print(
            f"{name:<18} {r['per']:7.1%} {r['cer']:7.1%} {r['m_wer']:7.1%} {r['i_wer']:7.1%} "
            f"{r['time_short_s']:8.2f} {r['time_long_s']:8.2f} {r['long_time_vs_formatter']:7.1f}"
        )
    print_itn_breakdown(results)
    if args.cost:
        print_cost(results)
    if args.json:
        write_results(args.json, {"documents": len(docs), "results": results})


if __name__ == "__main__":
    main()
