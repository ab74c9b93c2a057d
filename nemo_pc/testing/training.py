"""The one training loop of the tests: a Lightning trainer for tiny models, a loss recorder, and both together."""

from __future__ import annotations

import lightning.pytorch as pl


class LossRecorder(pl.Callback):
    """Records the loss of every training step in :attr:`values`."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        self.values.append(float(outputs["loss"]))


def tiny_trainer(
    steps: int,
    *callbacks: pl.Callback,
    accelerator: str = "cpu",
    precision: str = "32-true",
    gradient_clip_val: float | None = 1.0,
    **options,
) -> pl.Trainer:
    """A trainer for ``steps`` steps: no logger, checkpoints, progress bar or validation; gradients clipped at
    ``gradient_clip_val``; NeMo's training WER logged once, on the last step. ``options`` are further
    ``lightning.pytorch.Trainer`` arguments (e.g. ``limit_train_batches`` for a loader without a length)."""
    return pl.Trainer(
        max_steps=steps,
        gradient_clip_val=gradient_clip_val,
        accelerator=accelerator,
        devices=1,
        precision=precision,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
        log_every_n_steps=max(steps, 1),
        callbacks=list(callbacks),
        **options,
    )


def fit_steps(model, steps: int, **trainer_options) -> list[float]:
    """Trains ``model`` with its own optimizer config and training data for ``steps`` steps of :func:`tiny_trainer`
    (``trainer_options`` are its keyword arguments) and returns each step's loss; the model is left in eval mode.

    A model whose training data is one batch memorizes it: the overfit tests check that the loss drops and that the
    memorized utterances decode.
    """
    losses = LossRecorder()
    tiny_trainer(steps, losses, **trainer_options).fit(model)
    model.eval()
    return losses.values
