"""Punctuated CTC variants side by side: parameters and decode time, and with trained models, accuracy.

Cost (always): each variant of ``configs/ctc/variant`` is built from the base config (16-layer d=176 Conformer)
with the given tokenizer and timed in one run on the same synthetic audio. The figures are decode times for
``mode="punctuated"``, ``"normalized"`` and ``"both"``, and ratios to the ``punctuated`` variant. The weights are
random: decode time does not depend on them.

Accuracy (with ``--models``): each trained ``.nemo`` transcribes ``--manifest`` in both styles. WER, PER and
per-mark F1 come from :mod:`nemo_pc.metrics`, with paired bootstrap and MAPSSWE p-values against the first model.

    .venv/bin/python benchmarks/speed_ctc_variants.py --tokenizer tok/tokenizer_spe_bpe_v256_styles \
        --clips 16 --seconds 8
    .venv/bin/python benchmarks/speed_ctc_variants.py --tokenizer ... --manifest test.json \
        --models punctuated=p.nemo inter=i.nemo mixed_m2=m2.nemo
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from suite import Stopwatch, results_path, time_runs, write_results

from nemo_pc.parts.manifest import write_text_atomic
from nemo_pc.pipelines.demo.claim_rules import empty_share

ROOT = Path(__file__).resolve().parents[1]
STYLES = ("punctuated", "normalized", "both")


def build_variant(variant: str, tokenizer: Path):
    from hydra import compose, initialize_config_dir

    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel

    with initialize_config_dir(config_dir=str(ROOT / "configs" / "ctc"), version_base=None):
        cfg = compose(config_name="ctc_pc", overrides=[f"variant={variant}", f"model.tokenizer.dir={tokenizer}"])
    cfg.model.train_ds.manifest_filepath = None
    torch.manual_seed(0)
    return EncDecCTCPCBPEModel(cfg.model).eval()


def time_decode(model, audio: torch.Tensor, lengths: torch.Tensor, style: str, repeats: int) -> float:
    """Seconds per decode of the batch in ``style`` (median of ``repeats`` runs, after one warm-up run)."""
    from nemo_pc.models.mixins.transcription import PCTranscribeConfig

    trcfg = PCTranscribeConfig(mode=style)

    def decode() -> None:
        model._transcribe_output_processing(model._transcribe_forward((audio, lengths), trcfg), trcfg)

    with torch.inference_mode():
        timing, _ = time_runs(decode, repeats, warmup=1)
    return timing.median


def cost_table(tokenizer: Path, clips: int, seconds: float, repeats: int) -> dict:
    torch.manual_seed(0)
    audio = 0.1 * torch.randn(clips, int(seconds * 16000))
    lengths = torch.full((clips,), audio.shape[1], dtype=torch.long)
    variants = sorted(p.stem for p in (ROOT / "configs" / "ctc" / "variant").glob("*.yaml"))
    table = {}
    for variant in variants:
        model = build_variant(variant, tokenizer)
        row = {"parameters": sum(p.numel() for p in model.parameters())}
        # a normalized-only model (the plain ASR baseline) has one style
        styles = ("normalized",) if model.cfg.pc.target == "normalized" else STYLES
        for style in styles:
            row[f"decode_s_{style}"] = time_decode(model, audio, lengths, style, repeats)
        table[variant] = row
    base = table["punctuated"]
    for row in table.values():
        row["parameter_ratio"] = row["parameters"] / base["parameters"]
        for style in STYLES:
            if f"decode_s_{style}" in row:
                row[f"decode_ratio_{style}"] = row[f"decode_s_{style}"] / base["decode_s_punctuated"]
    return table


def accuracy_table(models: dict[str, Path], manifest: Path, out_dir: Path) -> dict:
    from nemo_pc.metrics.evaluate import EvalConfig, evaluate
    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel
    from nemo_pc.parts.manifest import read_manifest, write_manifest

    entries = read_manifest(manifest)
    predictions, seconds, parameters = {}, {}, {}
    for name, path in models.items():
        model = EncDecCTCPCBPEModel.restore_from(str(path), map_location="cpu").eval()
        parameters[name] = sum(p.numel() for p in model.parameters())
        with Stopwatch() as watch:
            both = model.transcribe([e["audio_filepath"] for e in entries], batch_size=8, mode="both", verbose=True)
        seconds[name] = watch.seconds
        rows = [
            {**e, "pred_text": p.text, "pred_text_normalized": n.text}
            for e, p, n in zip(entries, both["punctuated"], both["normalized"], strict=True)
        ]
        predictions[name] = write_manifest(out_dir / f"pred_{name}.json", rows)
    baseline = next(iter(predictions.values()))
    config = EvalConfig(progress=False)
    reports = {}
    for name, path in predictions.items():
        report = evaluate(path, config, compare=baseline if path != baseline else None)
        report["empty_share"] = empty_share(path)
        normalized = evaluate(path, EvalConfig(pred_field="pred_text_normalized", progress=False))
        report["normalized_output"] = {"wer": normalized["metrics"]["wer"], "support": normalized["support"]["wer"]}
        report["parameters"] = parameters[name]
        report["transcribe_both_s"] = seconds[name]
        reports[name] = report
    return reports


ACCURACY_COLUMNS = [
    # (header, metric key, is an error rate whose p-value against the baseline is shown)
    ("WER (P out)", "wer", True),
    ("PER", "per", True),
    ("F1 .", "punct[.]_f1", False),
    ("F1 ,", "punct[,]_f1", False),
    ("F1 ?", "punct[?]_f1", False),
    ("case ER", "case_er", True),
]


def _percent(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def accuracy_markdown(reports: dict) -> str:
    """The accuracy table: each metric in %, with the MAPSSWE p-value against the first (baseline) model."""
    names = list(reports)
    head = ["model", "parameters", "WER (N out)", *(h for h, _, _ in ACCURACY_COLUMNS), "empty", "both styles, s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        report = reports[name]
        metrics, compare = report["metrics"], report.get("compare", {}).get("metrics", {})
        cells = [name, f"{report['parameters'] / 1e6:.2f}M", _percent(report["normalized_output"]["wer"])]
        for _, key, with_p in ACCURACY_COLUMNS:
            cell = _percent(metrics.get(key))
            p = compare.get(key, {}).get("p_mapsswe" if with_p else "p")
            if p is not None:
                cell += " (p<0.001)" if p < 0.001 else f" (p={p:.3f})"
            cells.append(cell)
        cells += [_percent(report["empty_share"]), f"{report['transcribe_both_s']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    base = names[0]
    lines.append(f"\np: MAPSSWE (error rates) or paired bootstrap (F1) against `{base}` on the same utterances.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", type=Path, required=True, help="tokenizer folder with the style tags")
    parser.add_argument("--clips", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--manifest", type=Path, help="test manifest for the accuracy table")
    parser.add_argument("--models", nargs="*", default=[], help="name=path.nemo; the first is the baseline")
    parser.add_argument("--json", "--out", type=Path, default=results_path(__file__), help="the results JSON")
    args = parser.parse_args(argv)

    import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)

    report = {"clips": args.clips, "seconds": args.seconds, "threads": torch.get_num_threads()}
    report["cost"] = cost_table(args.tokenizer, args.clips, args.seconds, args.repeats)
    if args.models:
        if args.manifest is None:
            parser.error("--models needs --manifest")
        models = dict(item.split("=", 1) for item in args.models)
        report["accuracy"] = accuracy_table(models, args.manifest, args.json.parent)
    write_results(args.json, report)
    print(json.dumps(report["cost"], indent=2))
    if "accuracy" in report:
        table = accuracy_markdown(report["accuracy"])
        write_text_atomic(args.json.with_suffix(".md"), table + "\n")
        print(table)


if __name__ == "__main__":
    main()
