"""What the learning curves cost a demo run: the minutes its CTC and RNN-T trainings spent validating.

Every CTC and RNN-T system of ``make demo`` validates ``curve_points`` times on ``dev`` (and ``real_dev``) while it
trains, for the report's learning curves. Runs since the validation clock (``validation_seconds`` of
``models/<name>.json``) say it directly; for older runs this estimates it from the TensorBoard log the run kept
(``logs/<name>/version_0/events.*``): the training loss is logged every few steps with its wall time, so the gap that
holds a validation, less the gaps around it, is that validation's cost (a validation after the last logged loss is
not seen, and the row's ``validations`` counts those it saw). Minutes are wall-clock on the machine of the run.

    .venv/bin/python benchmarks/speed_demo_validation.py --demo-dir demo_out --json demo_validation.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from suite import write_results

LOSS = "train_loss"
VALIDATION = "val_loss"


def gap_estimate(loss: list[tuple[int, float]], validated: list[int], near: int = 3) -> dict:
    """``loss``: ``(step, wall time)`` of each logged training loss; ``validated``: the steps a validation ran at.
    The seconds of each gap between two logged losses that holds a validation, less the median of the ``near``
    validation-free gaps on each side of it (a recipe's steps change speed, e.g. when a frozen encoder starts to
    train)."""
    gaps = [(loss[k - 1][0], step, wall - loss[k - 1][1]) for k, (step, wall) in enumerate(loss) if k]
    holds = [any(first <= v < last for v in validated) for first, last, _ in gaps]
    plain = [k for k, hold in enumerate(holds) if not hold]
    if not plain:
        raise ValueError("no gap without a validation to measure a training interval by")
    extra = []
    for k in (k for k, hold in enumerate(holds) if hold):
        before = [j for j in plain if j < k][-near:]
        after = [j for j in plain if j > k][:near]
        base = statistics.median(gaps[j][2] for j in [*before, *after])
        extra.append(max(0.0, gaps[k][2] - base))
    median = statistics.median(gaps[j][2] for j in plain)
    return {"validations": len(extra), "seconds": round(sum(extra), 1), "median_gap_seconds": round(median, 2)}


def read_events(folder: Path) -> tuple[list[tuple[int, float]], list[int]]:
    """The ``(step, wall time)`` of each logged training loss and the steps of the validations in ``folder``'s
    TensorBoard event files."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    events.Reload()
    tags = events.Tags()["scalars"]
    if LOSS not in tags or VALIDATION not in tags:
        raise ValueError(f"{folder}: no {LOSS} or {VALIDATION} in its event files")
    loss = [(event.step, event.wall_time) for event in events.Scalars(LOSS)]
    return loss, [event.step for event in events.Scalars(VALIDATION)]


def model_row(demo_dir: Path, name: str) -> dict:
    """One model's training seconds and the part its validations took: recorded, or estimated from its log."""
    path = demo_dir / "models" / f"{name}.json"
    try:
        stats = json.loads(path.read_text())
        row = {"model": name, "steps": int(stats["steps"]), "seconds": float(stats["seconds"])}
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a model's training stats ({type(error).__name__}: {error})") from None
    if "validation_seconds" in stats:
        return row | {"validations": stats["validations"], "validation_seconds": stats["validation_seconds"],
                      "how": "recorded"}  # fmt: skip
    # an AED's training run is its fine-tune's (``<name>_finetuned``; ``<name>`` may be its interpolation)
    logs = sorted((demo_dir / "logs" / name).glob("version_*")) or sorted(
        (demo_dir / "logs" / f"{name}_finetuned").glob("version_*")
    )
    if not logs:
        return row | {"validations": None, "validation_seconds": None, "how": "no log"}
    estimate = gap_estimate(*read_events(logs[-1]))
    return row | {
        "validations": estimate["validations"],
        "validation_seconds": estimate["seconds"],
        "median_gap_seconds": estimate["median_gap_seconds"],
        "how": "estimated from the log",
    }


def table(rows: list[dict]) -> list[str]:
    lines = ["| model | steps | training min | validations | of which validating (min) | share | how |"]
    lines.append("|---|---:|---:|---:|---:|---:|---|")
    for row in rows:
        seconds = row["validation_seconds"]
        share = "-" if seconds is None else f"{100 * seconds / row['seconds']:.0f}%"
        minutes = "-" if seconds is None else f"{seconds / 60:.1f}"
        cells = [f"`{row['model']}`", row["steps"], f"{row['seconds'] / 60:.1f}", row["validations"] or "-"]
        lines.append("| " + " | ".join(map(str, [*cells, minutes, share, row["how"]])) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo-dir", required=True, help="a finished demo folder (models/, logs/)")
    parser.add_argument("--models", default="aed_prompt,ctc_inter,rnnt_conditioned,rnnt_dual", help="comma-separated")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    demo_dir = Path(args.demo_dir)
    rows = []
    for name in args.models.split(","):
        if not (demo_dir / "models" / f"{name}.json").is_file():
            print(f"error: {demo_dir / 'models' / name}.json: no such model stats", file=sys.stderr)
            return 2
        try:
            rows.append(model_row(demo_dir, name))
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    try:
        config = json.loads((demo_dir / "config.json").read_text()) if (demo_dir / "config.json").is_file() else {}
    except ValueError as error:
        print(f"error: {demo_dir / 'config.json'}: not JSON ({error})", file=sys.stderr)
        return 2
    settings = {key: config.get(key) for key in ("curve_points", "curve_dev_utterances", "real_speech")}
    write_results(args.json, {"demo_dir": demo_dir.name, "settings": settings, "rows": rows})
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
