import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nemo_pc.testing.asr import SCRIPT_VARIANTS, script_overrides

ROOT = Path(__file__).resolve().parents[1]


def test_hydra_evaluate_example_writes_a_report(tmp_path):
    out = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "evaluate_pc.py"),
            f"manifest={ROOT / 'manifests' / 'sample_predictions.json'}",
            f"json={out}",
            "progress=false",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "PER by mark" in done.stdout
    report = json.loads(out.read_text())
    assert report["num_utterances"] == 5 and 0 < report["metrics"]["per"] < 1


@pytest.mark.parametrize("script", sorted(SCRIPT_VARIANTS))
def test_training_script_runs_two_steps_with_exp_manager(tiny_script_data, script, tmp_path):
    """The Hydra training scripts a NeMo user runs: 2 steps, a validation, exp_manager's logs and checkpoint."""
    manifest, tokenizer = tiny_script_data
    overrides = script_overrides(script, manifest, tokenizer, tmp_path / "exp", "smoke",
                                 "model.train_ds.batch_size=4", "model.validation_ds.batch_size=4",
                                 "trainer.devices=1")  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(ROOT / "examples" / script), *overrides]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = tmp_path / "exp" / "smoke"
    assert list(runs.rglob("events.out.tfevents.*")), "no TensorBoard log"
    assert list(runs.rglob("*.nemo")) or list(runs.rglob("*.ckpt")), "no checkpoint"
