"""Presenting an evaluation report: a terminal table, a JSON file and a PNG of the per-mark PER breakdown."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from nemo_pc.parts.manifest import atomic_open
from nemo_pc.parts.text import CASE_CLASSES

HEADLINE = (
    ("wer", "WER", "002 §6.2"),
    ("wer_c", "WER-C", "002 §6.2"),
    ("wer_pc", "WER-PC (= PC-WER)", "002 §6.2, 000 eq. 8"),
    ("per", "PER", "002 eq. 2"),
    ("punc_er", "PuncER", "000 eq. 8"),
    ("case_er", "CaseER", "000 eq. 8"),
    ("cer", "CER, marks removed", "003 §5.1"),
    ("i_wer", "I-WER", "003 §5.1"),
    ("m_wer", "M-WER", "003 §5.1"),
    ("ter", "TER", "001 §3.1"),
    ("punct_micro_f1", "punctuation F1 (micro)", "004 §5.3"),
    ("punct_macro_f1", "punctuation F1 (macro)", "004 Table 2"),
    ("seg_f1", "segmentation F1", "001 §3.1"),
)


def pct(value: float | None) -> str:
    """A rate as a percentage with two decimals; ``-`` when undefined."""
    return "-" if value is None else f"{100.0 * value:.2f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Plain-text columns: the first left-aligned, the others right-aligned."""
    cells = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[k]) for row in cells) for k in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(row, widths, strict=True))
        )

    return [line(cells[0]), "  ".join("-" * w for w in widths), *(line(row) for row in cells[1:])]


def format_report(report: dict) -> str:
    """The terminal view of a report from :func:`nemo_pc.metrics.evaluate.evaluate`. Rates are in %."""
    metrics, support, marks = report["metrics"], report["support"], report["marks"]
    out = [f"{report.get('manifest', '')}: {report['num_utterances']} utterances, marks {marks!r}", ""]
    out += _table(
        ("metric", "%", "over", "paper"),
        [(label, pct(metrics[name]), support[name], src) for name, label, src in HEADLINE],
    )
    out += ["", "PER by mark, % of that mark's operations (papers/002 Table 4)"]
    per_mark = report["per_mark"]
    rows = [(op, *(pct(per_mark[m][op.lower()]) for m in marks)) for op in ("Correct", "Deletions", "Insertions")]
    rows.append(("Substitutions", *(pct(per_mark[m]["substitutions"]) for m in marks)))
    rows += [(f"  to {o!r}", *(pct(per_mark[m]["substitutions_to"].get(o)) for m in marks)) for o in marks]
    rows.append(("PER", *(pct(per_mark[m]["per"]) for m in marks)))
    out += _table(("", *marks), rows)
    out += ["", "Punctuation after alignment (papers/004 §5.3) and segmentation (papers/001 §3.1)"]
    groups = [(f"{m!r}", f"punct[{m}]") for m in marks] + [("segmentation", "seg")]
    out += _table(("mark", "P", "R", "F1", "ref count"), [_prf(metrics, support, label, key) for label, key in groups])
    out += ["", "Truecasing F1 on correctly recognized words (papers/003 Table 5)"]
    out += _table(
        ("class", "P", "R", "F1", "ref count"),
        [_prf(metrics, support, c.lower(), f"case[{c.lower()}]") for c in CASE_CLASSES],
    )
    wer0 = report["counts"].get("wer0|utts", 0)
    out += ["", f"Utterances with WER = 0: {wer0} of {report['num_utterances']} (papers/002 Table 2)"]
    out += _table(
        ("", "P", "R", "F1", "ref count"),
        [_prf(metrics, support, "capital letters", "wer0_cap"), _prf(metrics, support, "punctuation", "wer0_punct")],
    )
    if report.get("compare"):
        out += ["", *format_comparison(report["compare"])]
    dropped = report.get("dropped", {})
    if dropped.get("total"):
        out += ["", f"Dropped lines: {dropped['total']} {dropped['by_reason']} (first: {dropped['first_example']})"]
    return "\n".join(out)


def _prf(metrics: dict, support: dict, label: str, key: str) -> tuple:
    return (
        label,
        pct(metrics[f"{key}_precision"]),
        pct(metrics[f"{key}_recall"]),
        pct(metrics[f"{key}_f1"]),
        support[f"{key}_f1"],
    )


def format_comparison(compare: dict) -> list[str]:
    """Rows of A vs B with the paired tests, for the headline metrics."""
    rows = []
    for name, label, _ in HEADLINE:
        row = compare["metrics"][name]
        p_mp = row.get("p_mapsswe")
        rows.append(
            (
                label,
                pct(row["a"]),
                pct(row["b"]),
                pct(row["delta"]),
                "-" if row["p"] is None else f"{row['p']:.4f}",
                "-" if p_mp is None else f"{p_mp:.4f}",
            )
        )
    head = f"A vs B ({compare['manifest']}), paired bootstrap ({compare['num_resamples']} resamples) and MAPSSWE"
    out = [head, *_table(("metric", "A %", "B %", "A-B", "p boot", "p MAPSSWE"), rows)]
    inter = compare.get("wer0_intersection")
    if inter:
        out += [
            "",
            f"F1 on the {inter['utterances']} of {inter['of']} utterances with WER = 0 for both (papers/002 §6.1)",
        ]
        out += _table(
            ("", "A P", "A R", "A F1", "B P", "B R", "B F1"),
            [
                (label, *(pct(inter[s][f"wer0_{key}_{v}"]) for s in ("a", "b") for v in ("precision", "recall", "f1")))
                for label, key in (("capital letters", "cap"), ("punctuation", "punct"))
            ],
        )
    return out


def write_json(report: dict, path: str | Path) -> Path:
    """Writes the report as indented JSON, atomically."""
    with atomic_open(path) as handle:
        json.dump(report, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
    return Path(path)


def plot_per(report: dict, path: str | Path) -> Path:
    """A PNG with the per-mark operation bars (correct / deletions / insertions / substitutions) and the mark
    substitution matrix (row: reference mark, column: hypothesis mark, % of the row mark's operations)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    marks, per_mark = report["marks"], report["per_mark"]
    ops = ("correct", "deletions", "insertions", "substitutions")
    fig, (bars, matrix) = plt.subplots(1, 2, figsize=(11, 4.2))
    bottom = np.zeros(len(marks))
    for op, color in zip(ops, ("#4c9a2a", "#d1495b", "#edae49", "#00798c"), strict=True):
        heights = np.array([100 * (per_mark[m][op] or 0.0) for m in marks])
        bars.bar([repr(m) for m in marks], heights, bottom=bottom, label=op, color=color)
        bottom += heights
    bars.set_ylabel("% of the mark's operations")
    bars.set_title(f"PER by mark (overall PER {pct(report['metrics']['per'])}%)")
    bars.legend(loc="lower right", fontsize=8)
    grid = np.array(
        [[100 * (per_mark[r]["substitutions_to"].get(h) or 0.0) if r != h else np.nan for h in marks] for r in marks]
    )
    image = matrix.imshow(grid, cmap="Oranges", vmin=0)
    matrix.set_xticks(range(len(marks)), [repr(m) for m in marks])
    matrix.set_yticks(range(len(marks)), [repr(m) for m in marks])
    matrix.set_xlabel("hypothesis mark")
    matrix.set_ylabel("reference mark")
    matrix.set_title("substitutions, %")
    for r in range(len(marks)):
        for h in range(len(marks)):
            if r != h:
                matrix.text(h, r, f"{grid[r, h]:.1f}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=matrix)
    fig.tight_layout()
    path = Path(path)
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=110)
    plt.close(fig)
    return path
