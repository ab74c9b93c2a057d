"""NeMo's :class:`WER` once per transcription mode over a duplicated P&C batch (the RNN-T P&C model's metric).

Unlike the rest of :mod:`nemo_pc.metrics`, this module imports NeMo ASR; the package does not import it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import torch
from nemo.collections.asr.metrics.wer import WER

if TYPE_CHECKING:
    from nemo_pc.models.rnnt_pc_parts import ModeRows


class MultiModeWER(torch.nn.Module):
    """NeMo's :class:`WER` once per mode over a duplicated batch; ``compute`` sums errors and words over modes.

    Args:
        decodings: the decoding object of each mode.
        mode_context: ``mode_context(mode)`` sets the model's modules to one mode inside a ``with`` block.
        default_mode: the mode of every row when no rows are set.
    """

    def __init__(
        self,
        decodings: dict[int, Any],
        mode_context: Callable[[int], AbstractContextManager],
        default_mode: int,
        use_cer: bool = False,
        log_prediction: bool = True,
        batch_dim_index: int = 0,
    ) -> None:
        super().__init__()
        self.wers = torch.nn.ModuleDict(
            {
                # No collective calls here: a process may have no row of a mode; the model sums across processes.
                str(mode): WER(decoding, use_cer=use_cer, log_prediction=log_prediction, sync_on_compute=False)
                for mode, decoding in decodings.items()
            }
        )
        self.mode_context = mode_context
        self.default_mode = default_mode
        self.use_cer, self.log_prediction, self.batch_dim_index = use_cer, log_prediction, batch_dim_index
        self.rows: ModeRows | None = None
        self._last: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def update(self, predictions, predictions_lengths, targets, targets_lengths, **kwargs) -> None:
        self._last = {}
        for key, wer in self.wers.items():
            mode = int(key)
            if self.rows is None:
                if mode != self.default_mode:
                    continue
                rows = torch.arange(predictions.shape[0], device=predictions.device)
            else:
                rows = torch.nonzero(self.rows.active & (self.rows.modes == mode)).squeeze(1)
            if rows.numel() == 0:
                continue
            with self.mode_context(mode):
                wer.update(
                    predictions=predictions[rows],
                    predictions_lengths=predictions_lengths[rows],
                    targets=targets[rows],
                    targets_lengths=targets_lengths[rows],
                )
            _, scores, words = wer.compute()
            self._last[mode] = (scores, words)

    def per_mode(self) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
        """(errors, words) of each mode in the last update; every mode of the model is present."""
        zero = torch.tensor(0.0)
        return {int(key): self._last.get(int(key), (zero, zero)) for key in self.wers}

    def compute(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        scores = sum((scores for scores, _ in self._last.values()), torch.tensor(0.0))
        words = sum((words for _, words in self._last.values()), torch.tensor(0.0))
        return scores / words.clamp(min=1.0), scores, words

    def reset(self) -> None:
        """Resets the per-mode metrics; :meth:`per_mode` keeps the last update until the next one."""
        for wer in self.wers.values():
            wer.reset()
