"""What each AED fine-tune keeps of Whisper tiny.en: the synthetic held-out voices and real recordings side by side.

Trains ``aed_prompt`` again with the demo's recipe on a demo folder's data, once per fine-tune option (a Hydra
override of the AED, e.g. ``adapters=finetune=adapters``), and scores every model given (trained here, or already
there: ``--model NAME=PATH``, e.g. the demo's own ``aed_prompt.nemo`` and its weight interpolation) and Whisper
tiny.en zero-shot on the synthetic ``test`` split and on ``real_dev``/``real_test`` of ``nemo-pc real-speech``:
normalized WER of the normalized output, WER of the punctuated output, PER and punctuation F1 (synthetic test, and
real clips whose reference carries marks), and training minutes.

    .venv/bin/python benchmarks/quality_aed_finetune.py --demo-dir demo_out --real-dir demo_out/real_speech \
        --model full=demo_out/models/aed_prompt.nemo --train adapters=finetune=adapters \
        --json benchmarks/results/aed_finetune_options.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from suite import write_results


def _pairs(values: list[str], flag: str, parser: argparse.ArgumentParser, empty: bool = False) -> dict[str, str]:
    pairs = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not name or not (empty or (sep and rest)):
            parser.error(f"{flag} takes NAME=VALUE, got {value!r}")
        pairs[name] = rest
    return pairs


def train_option(
    demo_dir: Path, name: str, overrides: list[str], steps: int, work: Path, curve_points: int
) -> tuple[Path, float]:
    """``aed_prompt`` trained with the demo's recipe plus ``overrides``, validated ``curve_points`` times on the demo's
    dev split; its ``.nemo`` and training minutes (validations included)."""
    from nemo_pc.pipelines.demo.config import DemoConfig
    from nemo_pc.pipelines.demo.pipeline import Demo
    from nemo_pc.pipelines.train import train_model

    target = work / f"aed_prompt_{name}.nemo"
    stats_path = target.with_suffix(".json")
    if target.is_file() and stats_path.is_file():
        return target, json.loads(stats_path.read_text())["train_seconds"] / 60
    demo = Demo(DemoConfig(out_dir=str(demo_dir), systems=["aed_prompt"]), log=lambda _: None)
    start = time.perf_counter()
    stats = train_model(
        "aed",
        [*demo.asr_overrides("aed_prompt"), *overrides],
        target,
        steps,
        seed=demo.cfg.seed,
        val_every=max(1, steps // max(1, curve_points)),
    )
    stats["train_seconds"] = time.perf_counter() - start
    stats["overrides"] = overrides
    stats_path.write_text(json.dumps(stats, indent=2) + "\n")
    return target, stats["train_seconds"] / 60


def score_manifest(predictions: Path) -> dict:
    """N-WER, WER, PER and punctuation F1 of a prediction manifest (PER/F1 over lines whose reference has marks)."""
    from nemo_pc.metrics.evaluate import EvalConfig, evaluate
    from nemo_pc.parts.manifest import read_manifest, write_manifest

    rows = read_manifest(predictions)
    normalized = evaluate(predictions, EvalConfig(pred_field="pred_text_normalized", progress=False))
    written = evaluate(predictions, EvalConfig(progress=False))
    out = {
        "utterances": len(rows),
        "n_wer": normalized["metrics"]["wer"],
        "wer": written["metrics"]["wer"],
    }
    marked = [row for row in rows if row.get("has_marks", True)]
    if marked:
        subset = write_manifest(predictions.with_name(predictions.stem + "_marked.json"), marked)
        report = evaluate(subset, EvalConfig(progress=False))
        metrics = report["metrics"]
        out |= {
            "marked": len(marked),
            "wer_pc": metrics["wer_pc"],
            "per": metrics["per"],
            "f1": metrics["punct_micro_f1"],
        }
    return out


def transcribe(model_path: Path, manifest: Path, target: Path) -> Path:
    from nemo_pc.parts.manifest import read_manifest, write_manifest
    from nemo_pc.pipelines.inference import transcribe_both

    if target.is_file():
        return target
    rows = read_manifest(manifest)
    outputs = transcribe_both(model_path, manifest, batch_size=16, progress=False)
    for row, punctuated, normalized in zip(rows, outputs["punctuated"], outputs["normalized"], strict=True):
        row["pred_text"], row["pred_text_normalized"] = punctuated, normalized
    return write_manifest(target, rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", required=True, help="a make demo folder (its manifests and tokenizers)")
    parser.add_argument("--real-dir", required=True, help="the output folder of nemo-pc real-speech")
    parser.add_argument("--model", action="append", default=[], help="NAME=PATH, a trained AED to score")
    parser.add_argument(
        "--train", action="append", default=[], help="NAME[=OVERRIDE,...], trained here (no override: the demo's)"
    )
    parser.add_argument("--steps", type=int, default=300, help="training steps of each --train option")
    parser.add_argument("--curve-points", type=int, default=1, help="dev validations of each --train run")
    parser.add_argument("--splits", default="test,real_dev,real_test")
    parser.add_argument("--work", default=".bench/aed_finetune")
    parser.add_argument("--no-anchor", action="store_true")
    parser.add_argument("--json", default="benchmarks/results/aed_finetune_options.json")
    args = parser.parse_args(argv)
    demo_dir, real_dir, work = Path(args.demo_dir), Path(args.real_dir), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    models = {name: (Path(path), None) for name, path in _pairs(args.model, "--model", parser).items()}
    for name, path in models.items():
        if not path[0].is_file():
            parser.error(f"--model {name}={path[0]}: no such file")
    manifests = {
        split: (real_dir / f"{split}.json" if split.startswith("real_") else demo_dir / "manifests" / f"{split}.json")
        for split in args.splits.split(",")
    }
    missing = [str(path) for path in manifests.values() if not path.is_file()]
    if missing:
        parser.error(f"no such manifest: {missing[0]}")
    for name, overrides in _pairs(args.train, "--train", parser, empty=True).items():
        extra = [item for item in overrides.split(",") if item]
        models[name] = train_option(demo_dir, name, extra, args.steps, work, args.curve_points)
    results = {"rows": []}
    for name, (path, minutes) in models.items():
        for split, manifest in manifests.items():
            predictions = transcribe(path, manifest, work / f"{name}_{split}.json")
            row = {"system": name, "split": split, "train_minutes": minutes, **score_manifest(predictions)}
            results["rows"].append(row)
            print(json.dumps(row), file=sys.stderr)
    if not args.no_anchor:
        from nemo_pc.pipelines.anchor import WHISPER_SYSTEM, transcribe_whisper

        for split, manifest in manifests.items():
            predictions = work / f"{WHISPER_SYSTEM}_{split}.json"
            if not predictions.is_file():
                transcribe_whisper(manifest, predictions)
            row = {"system": WHISPER_SYSTEM, "split": split, "train_minutes": 0.0, **score_manifest(predictions)}
            results["rows"].append(row)
            print(json.dumps(row), file=sys.stderr)
    write_results(args.json, results, [Path(__file__).name, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
