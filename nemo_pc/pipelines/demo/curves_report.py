"""REPORT.md's learning curves: each ASR model's WER after each validation (``curve`` of ``models/<name>.json``,
written by :func:`nemo_pc.pipelines.train.train_model`) on the synthetic ``dev`` split and, where the run validated
there too, on the real recordings of ``real_dev`` (``real_dev_val_*``); stats without those keys render as before."""

from __future__ import annotations

import json
from pathlib import Path

from nemo_pc.parts.manifest import atomic_open
from nemo_pc.pipelines.demo.layout import REAL_DEV, model_stats

DEV_SETS = (("dev", ""), (REAL_DEV, f"{REAL_DEV}_"))
"""``(set, key prefix)`` of the validation sets, in order: ``val_wer`` is dev's, ``real_dev_val_wer`` real_dev's."""
WER_KEYS = ("val_wer_normalized", "val_wer_punctuated", "val_wer")
"""The WERs a curve may hold: each mode's, then the main output's."""


def read_curves(out_dir: Path) -> dict[str, list[dict]]:
    """``{model: curve}`` of every model in ``out_dir/models`` that recorded one."""
    curves = {}
    for stats_path in model_stats(out_dir):
        points = json.loads(stats_path.read_text()).get("curve") or []
        if points:
            curves[stats_path.stem] = points
    return curves


def set_points(points: list[dict], key: str, prefix: str) -> list[tuple[int, float]]:
    """``(step, WER %)`` of one WER key on one validation set (``prefix`` from :data:`DEV_SETS`)."""
    return [(point["step"], 100 * point[prefix + key]) for point in points if prefix + key in point]


def curve_table(out_dir: Path) -> list[str]:
    """The learning curves as numbers: a row per model and validation, a column per WER and validation set (only
    the sets and WERs some model recorded; ``-`` where a model has none)."""
    curves = read_curves(out_dir)
    columns = [
        (key, dev_set, prefix)
        for key in WER_KEYS
        for dev_set, prefix in DEV_SETS
        if any(prefix + key in point for points in curves.values() for point in points)
    ]
    if not columns:
        return []
    header = ["model", "step", *(f"{key.removeprefix('val_')} ({dev_set})" for key, dev_set, _ in columns)]
    lines = ["| " + " | ".join(header) + " |", "|---|---:|" + "---:|" * len(columns)]
    for name, points in curves.items():
        for point in points:
            values = [point.get(prefix + key) for key, _, prefix in columns]
            cells = ["-" if value is None else f"{100 * value:.1f}" for value in values]
            lines.append(f"| `{name}` | {point['step']} | " + " | ".join(cells) + " |")
    return lines


def plot_curves(out_dir: Path) -> Path | None:
    """``curves.png``: WER against training step of every ASR model that recorded a learning curve (its normalized
    output's where it has one), on dev as a solid line and on real_dev dashed in the same colour; ``None`` when no
    model recorded one."""
    lines = []
    for index, (name, points) in enumerate(read_curves(out_dir).items()):
        key = "val_wer_normalized" if any("val_wer_normalized" in p for p in points) else "val_wer"
        for (dev_set, prefix), style in zip(DEV_SETS, ("-", "--"), strict=True):
            found = set_points(points, key, prefix)
            if found:
                lines.append((f"{name} ({key.removeprefix('val_')}, {dev_set})", found, f"C{index % 10}", style))
    if not lines:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(7.5, 4.2))
    for label, points, colour, style in lines:
        axis.plot(*zip(*points, strict=True), marker="o", color=colour, linestyle=style, label=label)
    axis.set_xlabel("optimizer step")
    axis.set_ylabel("WER (%)")
    axis.set_ylim(0, min(110, max(y for _, points, _, _ in lines for _, y in points) + 5))
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)
    real = any(style == "--" for *_, style in lines)
    axis.set_title(
        "Learning curves: dev (voices unseen in training)" + (f", {REAL_DEV} dashed (real recordings)" if real else "")
    )
    fig.tight_layout()
    path = out_dir / "curves.png"
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=110)
    plt.close(fig)
    return path
