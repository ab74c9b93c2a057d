"""The P&C AED against the transducer and CTC systems of one demo run, over the CPU minutes each took to train.

Every ASR system of a demo run starts from Whisper tiny.en's encoder: the RNN-T and CTC systems through the base
encoder (normalized CTC, ``models/base.json``), whose minutes count toward theirs, the AED (``aed_*``) directly, with
Whisper's decoder too. For each system this reads the dev curve of its training run (``models/<system>.json``: dev
WER of each mode after each validation) and places each point at the training minutes spent up to it (the base's
included). An AED's training minutes also count its weight-interpolation sweep on the dev sets, which comes after its
last curve point (``interpolation_seconds`` of its stats; ``interpolation_minutes`` says how many). Then it reads the
test and test_seen figures of the run's evaluations (``eval/``: normalized-output WER, PER, punctuation F1, WER-PC)
and its transcription RTF (``predictions/<system>.rtf.json``), with Whisper tiny.en zero-shot on the same utterances
where the run has it. Minutes are wall-clock on the machine of the run (2 cores).

    .venv/bin/python benchmarks/quality_aed_minutes.py --demo-dir demo_out --json benchmarks/results/aed_minutes.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from suite import results_path, write_results

ANCHOR = "whisper_tiny_en"
SPLITS = ("test", "test_seen")


def _read(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def curve_minutes(stats: dict, offset_seconds: float = 0.0) -> list[dict]:
    """A training run's validation points with the minutes spent up to each: ``offset_seconds`` (a base run it
    started from) plus the run's seconds in proportion to the step."""
    seconds, steps = float(stats["seconds"]), max(1, int(stats["steps"]))
    points = []
    for point in stats.get("curve", []):
        minutes = (offset_seconds + seconds * point["step"] / steps) / 60.0
        entry = {"step": point["step"], "minutes": round(minutes, 2)}
        for key in ("val_wer_normalized", "val_wer_punctuated", "val_wer"):
            if key in point:
                entry[key] = point[key]
        points.append(entry)
    return points


def split_scores(demo_dir: Path, system: str, split: str) -> dict | None:
    """Normalized-output WER, PER, punctuation F1, WER-PC and CER of a system on a split (None when not run)."""
    name = system if split == "test" else f"{system}@{split}"
    report = _read(demo_dir / "eval" / f"{name}.json")
    if report is None:
        return None
    metrics = report["metrics"]
    return {
        "utterances": report["num_utterances"],
        "n_wer": report["normalized_output"]["wer"],
        "per": metrics["per"],
        "punct_f1": metrics["punct_micro_f1"],
        "wer_pc": metrics["wer_pc"],
        "cer": metrics["cer"],
    }


def system_summary(demo_dir: Path, system: str, base_seconds: float) -> dict:
    """A system's training minutes (the base's and the interpolation sweep's included), dev curve, test scores and
    RTF."""
    stats = _read(demo_dir / "models" / f"{system}.json")
    summary: dict = {"system": system}
    if stats is not None:
        offset = base_seconds if stats.get("init_from") else 0.0
        sweep = float(stats.get("interpolation_seconds", 0.0))
        summary.update(
            steps=stats["steps"],
            train_minutes=round((offset + float(stats["seconds"]) + sweep) / 60.0, 2),
            base_minutes=round(offset / 60.0, 2),
            interpolation_minutes=round(sweep / 60.0, 2),
            curve=curve_minutes(stats, offset),
        )
    summary["scores"] = {split: split_scores(demo_dir, system, split) for split in SPLITS}
    timing = _read(demo_dir / "predictions" / f"{system}.rtf.json")
    if timing is not None:
        summary["rtf"] = {key: timing[key] for key in ("rtf", "threads", "batch_size", "engine")}
    return summary


def compare(demo_dir: str | Path, systems: list[str]) -> dict:
    """The comparison of ``systems`` (and the Whisper anchor) in one demo run; see the module docstring."""
    demo_dir = Path(demo_dir)
    config = _read(demo_dir / "config.json")
    if config is None:
        raise FileNotFoundError(f"{demo_dir}: no config.json (not a demo output folder)")
    base = _read(demo_dir / "models" / "base.json")
    base_seconds = float(base["seconds"]) if base else 0.0
    found = [name for name in systems if (demo_dir / "models" / f"{name}.json").is_file()]
    if not found:
        raise FileNotFoundError(f"{demo_dir}/models: none of {', '.join(systems)} trained")
    return {
        "demo_dir": str(demo_dir),
        "config": {
            key: config.get(key)
            for key in (
                "hours",
                "seed",
                "backbone",
                "base_steps",
                "rnnt_steps",
                "asr_steps",
                "aed_steps",
                "aed_batch_size",
                "batch_size",
                "rnnt_batch_size",
                "precision",
            )
        },
        "base_minutes": round(base_seconds / 60.0, 2),
        "systems": [system_summary(demo_dir, name, base_seconds) for name in found],
        "anchor": {**system_summary(demo_dir, ANCHOR, 0.0), "note": "zero-shot, not trained on this corpus"},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", required=True, help="a demo output folder (examples/demo_pc.py --out)")
    parser.add_argument("--systems", default="aed_prompt,rnnt_conditioned,rnnt_dual,ctc_inter")
    parser.add_argument("--json", default=str(results_path(__file__).with_name("aed_minutes.json")))
    args = parser.parse_args(argv)
    try:
        results = compare(args.demo_dir, args.systems.split(","))
    except FileNotFoundError as err:
        parser.error(str(err))
    write_results(args.json, results, [Path(__file__).name, *(sys.argv[1:] if argv is None else argv)])
    for system in results["systems"]:
        test = system["scores"]["test"] or {}
        print(
            f"{system['system']:<20} {system.get('train_minutes', '-'):>6} min  test N-WER {test.get('n_wer')}  "
            f"PER {test.get('per')}  F1 {test.get('punct_f1')}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
