"""The joint loss of the P&C RNN-T models over a batch whose rows are (utterance, mode) pairs.

For mode weights λ_m, the loss is Σ_m λ_m · (Σ of the per-row RNN-T losses of the active rows of mode m) / N_m,
where N_m counts the active rows of mode m over all processes. λ = (1, 1) gives the 2-Decoder loss L_N + L_P and
λ = (1 − α, α) the conditioned-predictor loss (paper 000 eqs. 5 and 7). A row is inactive when its utterance has no
P transcript (``pc_source: none`` or removed by ``pc_fraction``); it adds nothing, not even through its gradient.

Under DDP the per-process loss is multiplied by the world size, so that DDP's gradient averaging yields the
gradient of the global mean; single-process training is unaffected.

``loss_name: scan`` selects :func:`nemo_pc.losses.rnnt_scan.rnnt_loss_scan` (exact, vectorized per frame, by far the
fastest on CPU, but a Python loop over frames), ``tdt_scan`` its TDT counterpart
:func:`nemo_pc.losses.tdt_scan.tdt_loss_scan` (NeMo's TDT losses run on CUDA only); any other name is passed to
NeMo's :class:`RNNTLoss` (``default`` is numba, fastest on GPU). ``loss_name: auto`` (the packaged configs) applies
that rule: ``scan`` (``tdt_scan``) when training runs on CPU, NeMo's ``default`` (``tdt``) when it runs on a GPU
(:func:`resolve_loss_name`).
"""

from __future__ import annotations

import torch
from nemo.collections.asr.losses.rnnt import RNNTLoss

from nemo_pc.losses.rnnt_scan import rnnt_loss_scan
from nemo_pc.losses.tdt_scan import tdt_loss_scan

SCAN = "scan"
TDT_SCAN = "tdt_scan"
AUTO = "auto"


def resolve_loss_name(name: str | None, trainer=None, tdt: bool = False) -> str:
    """The RNN-T loss to build for ``loss_name``: ``auto`` is ``scan`` on CPU and NeMo's ``default`` on GPU, and
    for a TDT model (``tdt``) ``tdt_scan`` on CPU and NeMo's ``tdt`` on GPU.

    The device is the trainer's accelerator; without a trainer, a visible CUDA device means GPU.
    """
    if name != AUTO:
        return name or "default"
    if trainer is not None:
        from lightning.pytorch.accelerators import CPUAccelerator

        on_gpu = not isinstance(trainer.accelerator, CPUAccelerator)
    else:
        on_gpu = torch.cuda.is_available()
    if tdt:
        return "tdt" if on_gpu else TDT_SCAN
    return "default" if on_gpu else SCAN


def _global_sum(value: torch.Tensor) -> torch.Tensor:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        value = value.clone()
        torch.distributed.all_reduce(value)
    return value


def _world_size() -> int:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_world_size()
    return 1


class ModeWeightedRNNTLoss(torch.nn.Module):
    """Wraps NeMo's :class:`RNNTLoss` (with ``reduction=None``) and reduces per mode; see the module docstring.

    Args:
        num_classes: as for :class:`RNNTLoss`.
        mode_weights: λ per mode id.
        loss_name, loss_kwargs: as for :class:`RNNTLoss`.
    """

    def __init__(
        self, num_classes: int, mode_weights: dict[int, float], loss_name: str = "default", loss_kwargs=None
    ) -> None:
        super().__init__()
        self.blank = num_classes
        self.tdt = None
        if loss_name == TDT_SCAN:
            kwargs = dict(loss_kwargs or {})
            self.tdt = {
                "durations": list(kwargs["durations"]),
                "sigma": float(kwargs.get("sigma", 0.0)),
                "omega": float(kwargs.get("omega", 0.0)),
            }
        self.rnnt = (
            None
            if loss_name in (SCAN, TDT_SCAN)
            else RNNTLoss(num_classes=num_classes, reduction=None, loss_name=loss_name, loss_kwargs=loss_kwargs)
        )
        self.mode_weights = {int(mode): float(weight) for mode, weight in mode_weights.items()}

    def forward(
        self,
        log_probs: torch.Tensor,
        targets: torch.Tensor,
        input_lengths: torch.Tensor,
        target_lengths: torch.Tensor,
        modes: torch.Tensor | None = None,
        active: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[int, torch.Tensor]]:
        """The weighted loss and each mode's term (detached).

        Args:
            log_probs, targets, input_lengths, target_lengths: as for NeMo's :class:`RNNTLoss`, one row each.
            modes: (R,) the mode of every row (None: every row has the first weighted mode).
            active: (R,) whether a row takes loss (None: all).
        """
        if self.tdt is not None:
            per_row = self._tdt_scan(log_probs, targets, input_lengths, target_lengths)
        elif self.rnnt is None:
            per_row = rnnt_loss_scan(log_probs, targets, input_lengths, target_lengths, self.blank)
        else:
            per_row = self.rnnt(
                log_probs=log_probs, targets=targets, input_lengths=input_lengths, target_lengths=target_lengths
            )
        if modes is None:
            modes = torch.full_like(per_row, next(iter(self.mode_weights)), dtype=torch.long)
        if active is None:
            active = torch.ones_like(per_row, dtype=torch.bool)
        modes, active = modes.to(per_row.device), active.to(per_row.device)
        total = per_row.new_zeros(())
        terms = {}
        for mode, weight in self.mode_weights.items():
            selected = active & (modes == mode)
            count = _global_sum(selected.sum().to(per_row.dtype)).clamp(min=1.0)
            term = torch.where(selected, per_row, torch.zeros_like(per_row)).sum() * _world_size() / count
            terms[mode] = term.detach()
            total = total + weight * term
        return total, terms

    def _tdt_scan(self, log_probs, targets, input_lengths, target_lengths) -> torch.Tensor:
        """The TDT loss; with probability ``omega`` (as NeMo's TDT loss samples it) the RNN-T loss of the token
        outputs instead."""
        durations, sigma, omega = self.tdt["durations"], self.tdt["sigma"], self.tdt["omega"]
        if omega > 0 and float(torch.rand(())) < omega:
            tokens = log_probs[..., : -len(durations)]
            return rnnt_loss_scan(tokens, targets, input_lengths, target_lengths, self.blank)
        return tdt_loss_scan(log_probs, targets, input_lengths, target_lengths, self.blank, durations, sigma)
