"""A training step whose loss is not finite is named (step and utterances), then skipped or the run stopped.

``model.nonfinite_loss`` chooses, in both model families: ``skip`` (the default: the step leaves the weights, the
batch norms' running statistics and the optimizer state as they were, and training goes on) or ``stop``
(:class:`NonFiniteLossError`). Under DDP every rank skips together when any rank's loss is not finite, so that no
rank waits for the others' gradients.
"""

from __future__ import annotations

import logging

import torch

POLICIES = ("skip", "stop")
KEY = "nonfinite_loss"

_LOG = logging.getLogger(__name__)


class NonFiniteLossError(RuntimeError):
    """A training loss was NaN or infinite and ``model.nonfinite_loss`` is ``stop``."""


def nonfinite_policy(cfg) -> str:
    """``cfg.nonfinite_loss`` checked (``skip`` when absent); a bad value is a ``ValueError`` naming the key."""
    value = cfg.get(KEY, "skip") if cfg is not None else "skip"
    if value not in POLICIES:
        raise ValueError(f"model.{KEY} must be one of {', '.join(POLICIES)}, got {value!r}")
    return value


def global_step(module) -> int:
    """The Lightning module's global step, or -1 when no trainer is attached (a step called by hand)."""
    trainer = getattr(module, "_trainer", None)
    return int(trainer.global_step) if trainer is not None else -1


def norm_statistics(module: torch.nn.Module) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each running statistic that a training forward pass of ``module`` updates (batch norms), with a copy: what
    :func:`loss_is_finite` puts back when it skips a step (a NaN input poisons them before any loss is seen)."""
    saved = []
    for child in module.modules():
        if isinstance(child, torch.nn.modules.batchnorm._NormBase) and child.track_running_stats and child.training:
            for buffer in (child.running_mean, child.running_var, child.num_batches_tracked):
                if buffer is not None:
                    saved.append((buffer, buffer.detach().clone()))
    return saved


def loss_is_finite(loss: torch.Tensor, batch, step: int, policy: str, saved=()) -> bool:
    """Whether the step may go on with ``loss``; otherwise logs (``skip``, after putting back the ``saved``
    statistics of :func:`norm_statistics`) or raises (``stop``) a message that names the step and the batch's
    utterances (``batch.utt_ids``, where the batch carries them)."""
    bad = ~torch.isfinite(loss.detach()).all()
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        flag = bad.to(torch.float32).reshape(1)
        torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
        bad = flag[0] > 0
    if not bool(bad):
        return True
    ids = tuple(getattr(batch, "utt_ids", ()) or ())
    where = ", ".join(ids) if ids else "not recorded by this loader"
    message = f"non-finite training loss ({float(loss.detach())}) at step {step}; this rank's utterances: {where}"
    if policy == "stop":
        raise NonFiniteLossError(f"{message} (model.{KEY}=stop)")
    with torch.no_grad():
        for buffer, copy in saved:
            buffer.copy_(copy)
    _LOG.warning("%s; the step is skipped (model.%s=skip)", message, KEY)
    return False
