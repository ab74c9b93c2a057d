"""Whether two demo runs (`examples/demo_pc.py --out A` and `--out B`, same settings) give the same figures.

For a change that must not alter behaviour (a refactor): run the same scaled-down demo from the old and the new
checkout, then compare every validation-curve point of every model (``models/*.json``), every metric of every
evaluation (``eval/*.json``) and every transcript (``predictions/*.json``, the ``pred_text*`` fields; run-time files
``*.rtf.json`` are timings and are left out). A figure missing on one side counts as a difference. The two runs'
settings (``config.json``, the output folder aside) must be equal, and are recorded with the result.

    .venv/bin/python benchmarks/quality_demo_parity.py OLD_DIR NEW_DIR --json benchmarks/results/demo_parity.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from suite import write_results

CURVE_KEYS = ("val_loss", "val_wer", "val_wer_normalized", "val_wer_punctuated")


def _same(a, b, tolerance: float) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(float(a), float(b), rel_tol=tolerance, abs_tol=tolerance)


def _read(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a readable JSON file ({err})") from err


def _lines(path: Path) -> list[dict]:
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        try:
            rows.append(json.loads(line))
        except ValueError as err:
            raise ValueError(f"{path}:{number}: not a JSON line ({err})") from err
    return rows


def settings(old: Path, new: Path, ignore: tuple[str, ...] = ()) -> dict:
    """The demo settings both runs share (``config.json`` without ``out_dir``). ``ignore``: settings left out of
    the check, such as one that a later revision added with the earlier behaviour as its default.

    Raises:
        ValueError: the settings differ (the message names the keys), or a run has no ``config.json``.
    """
    configs = []
    for folder in (old, new):
        path = folder / "config.json"
        if not path.is_file():
            raise ValueError(f"{path}: missing; is {folder} a demo folder?")
        configs.append({key: value for key, value in _read(path).items() if key not in ("out_dir", *ignore)})
    differing = sorted(
        key for key in configs[0].keys() | configs[1].keys() if configs[0].get(key) != configs[1].get(key)
    )
    if differing:
        raise ValueError(f"the two runs have different settings: {', '.join(differing)}")
    return configs[0]


def compare(old: Path, new: Path, tolerance: float = 0.0) -> dict:
    """``{"figures", "transcripts", "differences": [...]}`` of two demo folders (see the module docstring)."""
    differences, figures, transcripts = [], 0, 0
    for path in sorted((old / "models").glob("*.json")):
        other = new / "models" / path.name
        if not other.is_file():
            differences.append({"file": f"models/{path.name}", "what": "missing in the new run"})
            continue
        curve_new = {point["step"]: point for point in _read(other).get("curve", [])}
        for point in _read(path).get("curve", []):
            for key in CURVE_KEYS:
                if key not in point:
                    continue
                figures += 1
                theirs = curve_new.get(point["step"], {}).get(key)
                if not _same(point[key], theirs, tolerance):
                    differences.append(
                        {
                            "file": f"models/{path.name}",
                            "step": point["step"],
                            "key": key,
                            "old": point[key],
                            "new": theirs,
                        }
                    )
    for path in sorted((old / "eval").glob("*.json")):
        other = new / "eval" / path.name
        if not other.is_file():
            differences.append({"file": f"eval/{path.name}", "what": "missing in the new run"})
            continue
        theirs = _read(other).get("metrics", {})
        for key, value in _read(path).get("metrics", {}).items():
            figures += 1
            if not _same(value, theirs.get(key), tolerance):
                differences.append({"file": f"eval/{path.name}", "key": key, "old": value, "new": theirs.get(key)})
    for path in sorted((old / "predictions").glob("*.json")):
        if path.name.endswith(".rtf.json"):
            continue
        other = new / "predictions" / path.name
        if not other.is_file():
            differences.append({"file": f"predictions/{path.name}", "what": "missing in the new run"})
            continue
        rows_old, rows_new = _lines(path), _lines(other)
        if len(rows_old) != len(rows_new):
            differences.append(
                {"file": f"predictions/{path.name}", "what": f"{len(rows_old)} vs {len(rows_new)} lines"}
            )
            continue
        for line, (a, b) in enumerate(zip(rows_old, rows_new, strict=True), 1):
            for key in sorted(k for k in a if k.startswith("pred_text")):
                transcripts += 1
                if a[key] != b.get(key):
                    differences.append(
                        {
                            "file": f"predictions/{path.name}",
                            "line": line,
                            "key": key,
                            "old": a[key],
                            "new": b.get(key),
                        }
                    )
    return {"figures": figures, "transcripts": transcripts, "differences": differences}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="the demo folder of the old checkout")
    parser.add_argument("new", type=Path, help="the demo folder of the new checkout, same settings")
    parser.add_argument("--tolerance", type=float, default=0.0, help="relative and absolute, per figure (0: equal)")
    parser.add_argument("--json", type=Path, default=None, help="write the comparison here")
    args = parser.parse_args(argv)
    for folder in (args.old, args.new):
        if not (folder / "models").is_dir():
            print(f"quality_demo_parity: error: {folder}: not a demo folder (no models/)", file=sys.stderr)
            return 2
    try:
        shared = settings(args.old, args.new)
        result = compare(args.old, args.new, args.tolerance)
    except ValueError as err:
        print(f"quality_demo_parity: error: {err}", file=sys.stderr)
        return 2
    result = {"old": str(args.old), "new": str(args.new), "settings": shared, "tolerance": args.tolerance, **result}
    print(
        f"{result['figures']} figures and {result['transcripts']} transcripts compared: "
        f"{len(result['differences'])} differences"
    )
    for difference in result["differences"][:20]:
        print(f"  {difference}")
    if args.json:
        write_results(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
