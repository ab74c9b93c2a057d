"""A CPU trainer for tiny models and a callback that records each step's loss, for tests that train a few steps."""

from __future__ import annotations

import lightning.pytorch as pl


class LossRecorder(pl.Callback):
    """Records the loss of every training step in :attr:`values`."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        self.values.append(float(outputs["loss"]))


def tiny_trainer(steps: int, *callbacks: pl.Callback) -> pl.Trainer:
    """A CPU trainer for ``steps`` steps: no logger, checkpoints, progress bar or validation; gradients clipped at 1;
    NeMo's training WER logged once, on the last step."""
    return pl.Trainer(
        max_steps=steps, gradient_clip_val=1.0, accelerator="cpu", logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0,
        log_every_n_steps=steps, callbacks=list(callbacks),
    )  # fmt: skip
