"""scripts/gpu_recipe.sh run at toy size on CPU: every phase of benchmarks/run_gpu_recipe.py, split over invocations
as on a machine with a time limit per command, writes the one JSON and the curve, and a rerun redoes nothing."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOY = [
    "--hours",
    "0.02",
    "--num-jobs",
    "2",
    "--vocab-size",
    "64",
    "--layers",
    "2",
    "--d-model",
    "32",
    "--heads",
    "2",
    "--batch-duration",
    "20",
    "--train-minutes",
    "0.05",
    "--probe-steps",
    "2",
    "--curve-points",
    "2",
    "--dev-utterances",
    "4",
    "--batch-size",
    "8",
    "--override",
    "model.encoder.ff_expansion_factor=2",
]

pytestmark = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("espeak-ng", "sox", "bible")),
    reason="the corpus phase needs the Debian packages of apt-packages.txt (espeak-ng, sox, bible-kjv)",
)


def _run(tmp_path: Path, *phases: str) -> None:
    # no carry folder: the script installs nothing and runs this interpreter on the checkout
    env = {**os.environ, "PYTHON": sys.executable, "GPU_CARRY": str(tmp_path / "none"), "OUT": str(tmp_path / "out")}
    command = [str(ROOT / "scripts" / "gpu_recipe.sh"), "run", *phases, "--work", str(tmp_path / "work"), *TOY]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_gpu_recipe_runs_in_resumable_phases_and_writes_one_json(tmp_path):
    _run(tmp_path, "corpus")
    assert not (tmp_path / "out" / "gpu_recipe.json").exists()  # written by the evaluate phase
    _run(tmp_path, "train", "evaluate")
    result = json.loads((tmp_path / "out" / "gpu_recipe.json").read_text())
    assert (tmp_path / "out" / "gpu_recipe_curve.png").stat().st_size > 0
    assert set(result) == {"device", "splits", "model", "training", "dev_curve", "seconds", "test", "provenance"}
    assert result["device"] in ("cpu", "cuda")
    assert {"train", "dev", "test", "dev_curve"} <= set(result["splits"])
    assert 0 < result["splits"]["train"]["hours"] < 0.03 and result["splits"]["test"]["utterances"] > 0
    model = result["model"]
    assert model["layers"] == 2 and model["subsampling"] == 8 and model["parameters"] > 0
    assert model["loss"] == ("default" if result["device"] == "cuda" else "scan")
    training = result["training"]
    assert training["steps"] >= 2 and training["step_seconds"] > 0 and training["probe"]["step_seconds"] > 0
    # a batch holds at most --batch-duration (20) seconds of audio: at most 20 s per step, per step_seconds
    assert 0 < training["audio_seconds_per_second"] * training["step_seconds"] <= 20.5
    assert training["probe"]["loss"] == "auto" and training["probe"]["failed_losses"] == {}
    assert result["dev_curve"] and all(0 <= point["val_wer_punctuated"] <= 5 for point in result["dev_curve"])
    assert set(result["seconds"]) == {"corpus", "train", "evaluate"} and all(s > 0 for s in result["seconds"].values())
    for output in ("punctuated_output", "normalized_output"):
        scores = result["test"][output]
        assert {"wer", "per", "wer_pc"} <= set(scores) and all(0 <= scores[k] <= 5 for k in ("wer", "wer_pc"))
    assert result["test"]["utterances"] == result["splits"]["test"]["utterances"]
    nemo = tmp_path / "work" / "models" / "rnnt_conditioned.nemo"
    trained = nemo.stat().st_mtime_ns
    _run(tmp_path)  # every phase again: all finished, nothing is redone
    assert nemo.stat().st_mtime_ns == trained
    assert json.loads((tmp_path / "out" / "gpu_recipe.json").read_text())["training"] == training
