"""Whether two clean runs of the same default demo agree: every default row within a tolerance (2 points).

Where ``quality_demo_parity.py`` asks whether a refactor changed any figure at all, this asks how far two
independent runs of the same settings drift apart (threads and timing make training on CPU nondeterministic):
for every system the README's demo block shows, the held-out test figures (N-output WER, WER-PC, PER, punctuation
F1, CER), test_seen's N-output WER and ``real_test``'s N-output WER, in percentage points; and the minutes of
each run's steps. Each folder is a demo output folder or a kept copy of one (``benchmarks/results/demo_clean*``):
``config.json``, ``eval/*.json`` and ``timings.json``. Their settings must be equal (``out_dir`` aside).

    .venv/bin/python benchmarks/quality_demo_repeat.py benchmarks/results/demo_clean \
        benchmarks/results/demo_clean_repeat --json benchmarks/results/demo_repeat.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from quality_demo_parity import settings
from suite import write_results

METRICS = ("n_wer", "wer_pc", "per", "punct_micro_f1", "cer")
"""The test table's columns (README's demo block), in its order; ``n_wer`` is the N-output WER (the normalized
output's WER), the others are figures of the written output."""
SPLIT_METRICS = {"test_seen": ("n_wer",), "real_test": ("n_wer", "wer")}
"""The other splits' figures: test_seen's N-output WER (the test table's last column), and real_test's N-output WER
and written output's WER (the real table's first two columns)."""
ANCHOR = "whisper_tiny_en"


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a readable JSON file ({err})") from err


def _metrics(folder: Path, name: str) -> dict | None:
    """An evaluation's figures, the normalized output's WER as ``n_wer``; ``None`` when the run has none."""
    path = folder / "eval" / f"{name}.json"
    if not path.is_file():
        return None
    report = _json(path)
    return {**report.get("metrics", {}), "n_wer": (report.get("normalized_output") or {}).get("wer")}


def systems(folder: Path, config: dict) -> list[str]:
    """The systems of a demo folder's test table: each trained system, its ``_lm`` row when there is one, then
    the formatted and anchor rows, as the README's demo block lists them."""
    names = []
    for system in config.get("systems", []):
        names += [system] + ([f"{system}_lm"] if (folder / "eval" / f"{system}_lm.json").is_file() else [])
    return names + [
        name for name in ("cascade", "lm_cascade", "hybrid", ANCHOR) if (folder / "eval" / f"{name}.json").is_file()
    ]


def last_run(folder: Path) -> dict:
    """The last invocation's record of ``timings.json``: command, revision, dates, machine, seconds per step."""
    runs = _json(folder / "timings.json").get("runs") or []
    if not runs:
        raise ValueError(f"{folder / 'timings.json'}: no runs")
    return runs[-1]


def compare(a: Path, b: Path, tolerance: float = 0.02, ignore: tuple[str, ...] = ()) -> dict:
    """``{"rows": [...], "max_difference", "outside": [...], "minutes": {...}}`` of two demo folders.

    A row is one system's figure on one split in both runs: ``{"system", "split", "metric", "a", "b", "difference"}``
    (fractions; ``difference`` is ``b - a``). A figure that one run has and the other lacks is a row with ``None``
    on the missing side and counts as outside the tolerance.
    """
    config = settings(a, b, ignore)
    names = systems(a, config)
    for name in systems(b, config):
        if name not in names:
            names.append(name)
    rows = []
    for name in names:
        for split, metrics in (("test", METRICS), *SPLIT_METRICS.items()):
            key = name if split == "test" else f"{name}@{split}"
            figures = _metrics(a, key), _metrics(b, key)
            if figures == (None, None):
                continue
            for metric in metrics:
                one, two = ((figure or {}).get(metric) for figure in figures)
                difference = None if one is None or two is None else two - one
                rows.append(
                    {"system": name, "split": split, "metric": metric, "a": one, "b": two, "difference": difference}
                )
    measured = [abs(row["difference"]) for row in rows if row["difference"] is not None]
    outside = [row for row in rows if row["difference"] is None or abs(row["difference"]) > tolerance + 1e-12]
    runs = {"a": last_run(a), "b": last_run(b)}
    minutes = {
        side: {
            "total": sum(run["seconds"].values()) / 60,
            "without_anchor": sum(s for step, s in run["seconds"].items() if ANCHOR not in step) / 60,
            "steps": {step: seconds / 60 for step, seconds in run["seconds"].items()},
        }
        for side, run in runs.items()
    }
    return {
        "tolerance": tolerance,
        "settings_ignored": list(ignore),
        "rows": rows,
        "max_difference": max(measured, default=None),
        "outside": outside,
        "runs": {side: {k: v for k, v in run.items() if k != "seconds"} for side, run in runs.items()},
        "minutes": minutes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="the first demo folder (or a kept copy of one)")
    parser.add_argument("b", type=Path, help="the second, same settings")
    parser.add_argument(
        "--tolerance", type=float, default=0.02, help="largest difference of a figure (0.02: 2 points)"
    )
    parser.add_argument(
        "--ignore", action="append", default=[], help="a setting of config.json left out of the equality check"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the comparison here")
    args = parser.parse_args(argv)
    if args.tolerance < 0:
        print("quality_demo_repeat: error: --tolerance must be >= 0", file=sys.stderr)
        return 2
    for folder in (args.a, args.b):
        if not (folder / "eval").is_dir():
            print(f"quality_demo_repeat: error: {folder}: not a demo folder (no eval/)", file=sys.stderr)
            return 2
    try:
        result = compare(args.a, args.b, args.tolerance, tuple(args.ignore))
    except ValueError as err:
        print(f"quality_demo_repeat: error: {err}", file=sys.stderr)
        return 2
    result = {"a": str(args.a), "b": str(args.b), **result}
    largest = result["max_difference"]
    print(
        f"{len(result['rows'])} figures compared, largest difference "
        f"{'-' if largest is None else f'{100 * largest:.1f} points'}, {len(result['outside'])} outside "
        f"{100 * args.tolerance:g} points; minutes {result['minutes']['a']['total']:.1f} and "
        f"{result['minutes']['b']['total']:.1f}"
    )
    for row in result["outside"]:
        print(f"  {row}")
    if args.json:
        write_results(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
