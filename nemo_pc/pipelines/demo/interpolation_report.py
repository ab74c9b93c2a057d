"""REPORT.md's lines on the AEDs' weight interpolation, read from each sweep's table
(``models/<name>.interpolation.json``, which :meth:`~nemo_pc.pipelines.demo.aed_steps.AedSteps.interpolate_aed`
writes)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from nemo_pc.metrics.report import pct
from nemo_pc.pipelines.demo.layout import FINETUNED, interpolation_path


def interpolation_section(out_dir: Path, systems: Sequence[str]) -> list[str]:
    """For each system with a sweep table: the weight kept and each weight's N-output WER on each dev set; nothing
    when no system was swept (no AED, or ``aed_interpolation_weights`` of 1 alone)."""
    lines = []
    for system in systems:
        path = interpolation_path(out_dir, system)
        if path.is_file():
            lines += sweep_table(system, json.loads(path.read_text()))
    return lines


def sweep_table(system: str, sweep: dict) -> list[str]:
    """One sweep (:func:`~nemo_pc.pipelines.interpolate.sweep_interpolation`'s table) as a caption and a table of
    weights by dev sets, the mean over the sets last and the weight kept in bold."""
    rows = sweep["rows"]
    sets = list(dict.fromkeys(row["set"] for row in rows))
    weights = list(dict.fromkeys(row["weight"] for row in rows))
    wer = {(row["weight"], row["set"]): row["normalized"]["wer"] for row in rows}
    sizes = {row["set"]: row["utterances"] for row in rows}
    named = [f"`{name}` ({sizes[name]} utterances)" for name in sets]
    dev_sets = " and ".join([", ".join(named[:-1]), named[-1]] if len(named) > 1 else named)
    lines = [
        "",
        f"`{system}` is its fine-tune (`models/{system}{FINETUNED}.nemo`) interpolated with its zero-shot start "
        f"(the pretrained Whisper weights it was fine-tuned from, weight 0) at weight {sweep['chosen']:g}, the lowest "
        f"mean N-output WER over {dev_sets} (ties: the higher weight; `models/{system}.interpolation.json`, as "
        "`nemo-pc interpolate` chooses):",
        "",
        "| weight | " + " | ".join(f"{name} N-output WER" for name in sets) + " | mean |",
        "|---:|" + "---:|" * (len(sets) + 1),
    ]
    for weight in weights:
        label = f"**{weight:g}** (kept)" if weight == sweep["chosen"] else f"{weight:g}"
        cells = [pct(wer.get((weight, name))) for name in sets]
        mean = pct(sweep["mean_normalized_wer"][str(weight)])
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {mean} |")
    return lines
