"""The one JSON of ``scripts/device_check.sh``: the machine, the outcome of each device test, the training
throughput of the conditioned RNN-T at FastConformer size, and the GPU recipe's test scores.

    python benchmarks/render_device_check.py --tests OUT/device_tests.xml --recipe OUT/gpu_recipe.json \
        --out OUT/device_check.json

Either input may be missing (a stage that did not finish): its part of the JSON says so, and the rest is written.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

from suite import write_results


def test_outcomes(path: Path) -> dict:
    """Counts and per-test outcome of a pytest JUnit XML report (``{"missing": path}`` when there is none)."""
    if not path.is_file():
        return {"missing": str(path)}
    tests = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                outcome, message = {"failure": "failed"}.get(tag, tag), (found.get("message") or "")[:300]
                break
        tests[name] = {"outcome": outcome, "seconds": round(float(case.get("time", 0.0)), 2)}
        if message:
            tests[name]["message"] = message
    counts = {}
    for result in tests.values():
        counts[result["outcome"]] = counts.get(result["outcome"], 0) + 1
    return {"counts": counts, "tests": tests}


def throughput(recipe: dict) -> dict:
    """Steps/s and audio-seconds/s of the recipe's training run and of its probe."""
    training = recipe.get("training") or {}
    result = {"model": recipe.get("model"), "batch_duration": training.get("batch_duration")}
    for name, stats in (("training", training), ("probe", training.get("probe") or {})):
        seconds = stats.get("step_seconds")
        result[name] = {
            "steps_per_second": round(1.0 / seconds, 3) if seconds else None,
            "audio_seconds_per_second": stats.get("audio_seconds_per_second"),
            "steps": stats.get("steps"),
        }
    return result


def machine() -> dict:
    info = {"python": platform.python_version(), "host": platform.node()}
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
            info["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    except ImportError as err:
        info["torch"] = f"missing: {err}"
    try:
        from importlib.metadata import version

        info["nemo_toolkit"] = version("nemo_toolkit")
        info["lightning"] = version("lightning")
    except Exception as err:  # noqa: BLE001 -- a version that cannot be read is recorded, not fatal
        info["versions"] = f"unreadable: {err}"
    return info


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=Path, required=True, help="pytest's JUnit XML of the device tests")
    parser.add_argument("--recipe", type=Path, required=True, help="benchmarks/run_gpu_recipe.py's gpu_recipe.json")
    parser.add_argument("--seconds", type=float, default=None, help="the check's wall clock, recorded")
    parser.add_argument("--revision", default=os.environ.get("NEMO_PC_REVISION"), help="the checkout's commit")
    parser.add_argument("--json", "--out", type=Path, required=True, help="the JSON written")
    args = parser.parse_args(argv)
    recipe = json.loads(args.recipe.read_text()) if args.recipe.is_file() else {}
    payload = {
        "command": "scripts/device_check.sh",
        "revision": args.revision,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": args.seconds,
        "machine": machine(),
        "tests": test_outcomes(args.tests),
        "throughput": throughput(recipe) if recipe else {"missing": str(args.recipe)},
        "recipe": recipe or {"missing": str(args.recipe)},
    }
    return write_results(args.json, payload)


if __name__ == "__main__":
    main()
