"""Training through the Hydra script, SIGKILLed while a checkpoint is being written, resumes from the last whole
checkpoint (NeMo exp_manager's ``resume_if_exists``) and its step count goes on from there."""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from nemo_pc.testing.asr import script_overrides

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "speech_to_text_ctc_pc.py"


def _train(spec: str, overrides: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "nemo_pc.testing.faults", spec, str(ROOT / "examples" / SCRIPT), *overrides]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_training_killed_inside_a_checkpoint_write_resumes_from_the_last_whole_checkpoint(tiny_script_data, tmp_path):
    import torch

    manifest, tokenizer = tiny_script_data  # 4 utterances: 2 steps an epoch, a validation and checkpoints each
    overrides = script_overrides(
        SCRIPT,
        manifest,
        tokenizer,
        tmp_path / "exp",
        "resume",
        "model.train_ds.batch_size=2",
        "model.validation_ds.batch_size=4",
        "trainer.devices=1",
        "trainer.max_steps=6",
        "exp_manager.resume_if_exists=true",
        "exp_manager.resume_ignore_no_checkpoint=true",
    )
    killed = _train("before:2:*-last.ckpt", overrides, tmp_path)  # the step-4 checkpoint written, not renamed
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    checkpoints = tmp_path / "exp" / "resume" / "checkpoints"
    last = [p.name for p in checkpoints.glob("*-last.ckpt")]
    assert len(last) == 1 and last[0].endswith("epoch=0-last.ckpt")  # step 2's; step 4's is only a temporary

    resumed = _train(f"count:{tmp_path / 'renames.txt'}", overrides, tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = resumed.stdout + resumed.stderr
    assert re.search(r"Resuming training from checkpoint: \S*epoch=0-last\.ckpt", log)
    steps = [int(step) for step in re.findall(r"global step (\d+):", log)]
    # the count goes on from step 2 (Lightning reopens the epoch that a validation-end checkpoint closes, so the
    # first validation after the resume may land on step 3, 4 or 5) and stops at max_steps: steps 1-2 are not redone
    assert steps and 2 < steps[0] < 6
    last = list(checkpoints.glob("*-last.ckpt"))
    assert len(last) == 1 and torch.load(last[0], map_location="cpu", weights_only=False)["global_step"] == 6
    assert not any("epoch=0" in name for name in (tmp_path / "renames.txt").read_text().split())
