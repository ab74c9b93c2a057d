import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


TINY_ENCODER = ["model.encoder.d_model=32", "model.encoder.n_heads=2", "model.encoder.n_layers=2",
                "model.encoder.subsampling_conv_channels=32", "model.encoder.ff_expansion_factor=2"]  # fmt: skip
SCRIPTS = {
    "speech_to_text_rnnt_pc.py": ["decoders=conditioned", "model.model_defaults.pred_hidden=32"],
    "speech_to_text_ctc_pc.py": ["variant=inter"],
}


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest

    folder = tmp_path_factory.mktemp("scripts")
    manifest = write_pc_manifest(folder / "data")
    return manifest, train_tokenizer(manifest, folder / "tokenizer")


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_training_script_runs_two_steps_with_exp_manager(tiny_data, script, tmp_path):
    """The Hydra training scripts a NeMo user runs: 2 steps, a validation, exp_manager's logs and checkpoint."""
    manifest, tokenizer = tiny_data
    overrides = [
        *SCRIPTS[script], *TINY_ENCODER, f"model.tokenizer.dir={tokenizer}",
        f"model.train_ds.manifest_filepath={manifest}", f"model.validation_ds.manifest_filepath={manifest}",
        "model.train_ds.batch_size=4", "model.validation_ds.batch_size=4",
        "trainer.max_steps=2", "trainer.max_epochs=-1", "trainer.val_check_interval=1.0", "trainer.devices=1",
        "trainer.accelerator=cpu", "trainer.enable_progress_bar=false", f"exp_manager.exp_dir={tmp_path / 'exp'}",
        "name=smoke",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(ROOT / "examples" / script), *overrides]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = tmp_path / "exp" / "smoke"
    assert list(runs.rglob("events.out.tfevents.*")), "no TensorBoard log"
    assert list(runs.rglob("*.nemo")) or list(runs.rglob("*.ckpt")), "no checkpoint"
