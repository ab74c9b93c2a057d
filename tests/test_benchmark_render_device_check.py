"""benchmarks/render_device_check.py: the one JSON of scripts/device_check.sh, from pytest's real JUnit report and
the GPU recipe's JSON, written even when a stage left no file."""

import json
import subprocess
import sys
from pathlib import Path

from benchmark_loader import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
device_check = load_benchmark("render_device_check")

CASES = """
import pytest

def test_passes():
    assert 1 + 1 == 2

def test_fails():
    assert "gpu" == "cpu"

@pytest.mark.skip(reason="no device")
def test_skipped():
    pass
"""


def _junit(tmp_path: Path) -> Path:
    (tmp_path / "test_cases.py").write_text(CASES)
    report = tmp_path / "report.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(tmp_path / "test_cases.py"),
            "-q",
            "-p",
            "no:cacheprovider",
            "--junitxml",
            str(report),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and report.is_file(), done.stdout[-2000:]
    return report


def test_outcomes_and_throughput_of_a_check(tmp_path):
    recipe = {
        "model": {"layers": 17, "d_model": 256},
        "training": {
            "steps": 900,
            "step_seconds": 0.25,
            "audio_seconds_per_second": 2200.0,
            "batch_duration": 600.0,
            "probe": {"steps": 25, "step_seconds": 0.2, "audio_seconds_per_second": 2500.0},
        },
    }
    (tmp_path / "gpu_recipe.json").write_text(json.dumps(recipe))
    arguments = ["--tests", str(_junit(tmp_path)), "--recipe", str(tmp_path / "gpu_recipe.json"), "--seconds", "12"]
    out = device_check.main([*arguments, "--revision", "abc1234", "--out", str(tmp_path / "check.json")])
    result = json.loads(out.read_text())
    assert result["revision"] == "abc1234" and result["seconds"] == 12.0
    assert result["tests"]["counts"] == {"passed": 1, "failed": 1, "skipped": 1}
    tests = result["tests"]["tests"]
    failed = next(value for name, value in tests.items() if name.endswith("::test_fails"))
    assert failed["outcome"] == "failed" and "gpu" in failed["message"]
    throughput = result["throughput"]
    assert throughput["training"] == {"steps_per_second": 4.0, "audio_seconds_per_second": 2200.0, "steps": 900}
    assert throughput["probe"]["steps_per_second"] == 5.0 and throughput["batch_duration"] == 600.0
    assert result["recipe"] == recipe and "torch" in result["machine"]


def test_a_stage_that_left_no_file_is_recorded_as_missing(tmp_path):
    out = device_check.main(
        [
            "--tests",
            str(tmp_path / "none.xml"),
            "--recipe",
            str(tmp_path / "none.json"),
            "--out",
            str(tmp_path / "check.json"),
        ]
    )
    result = json.loads(out.read_text())
    assert result["tests"] == {"missing": str(tmp_path / "none.xml")}
    assert result["throughput"] == {"missing": str(tmp_path / "none.json")} == result["recipe"]
