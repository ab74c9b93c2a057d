"""NeMo's :class:`WER` once per transcription mode over a duplicated P&C batch (the RNN-T P&C model's metric).

Unlike the rest of :mod:`nemo_pc.metrics`, this module imports NeMo ASR; the package does not import it.
"""

from __future__ import annotations

from typing import Any

import torch
from nemo.collections.asr.metrics.wer import WER


class MultiModeWER(torch.nn.Module):
    """NeMo's :class:`WER` once per mode over a duplicated batch; ``compute`` sums errors and words over modes.

    Args:
        decodings: the decoding object of each mode (built on that mode's predictor and joint).
    """

    def __init__(
        self,
        decodings: dict[int, Any],
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
        self.use_cer, self.log_prediction, self.batch_dim_index = use_cer, log_prediction, batch_dim_index
        self._last: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def update(
        self,
        predictions: torch.Tensor,
        predictions_lengths: torch.Tensor,
        targets: torch.Tensor,
        targets_lengths: torch.Tensor,
        modes: torch.Tensor,
        active: torch.Tensor | None = None,
    ) -> None:
        """Decodes and scores the active rows of each mode with that mode's decoding.

        Args:
            predictions, predictions_lengths: encoder output (R, D, T) and lengths, one row per (utterance, mode).
            targets, targets_lengths: token ids (R, U) and counts.
            modes: (R,) the mode of every row.
            active: (R,) whether a row is scored (None: all).
        """
        self._last = {}
        if active is None:
            active = torch.ones_like(modes, dtype=torch.bool)
        for key, wer in self.wers.items():
            mode = int(key)
            rows = torch.nonzero(active & (modes == mode)).squeeze(1)
            if rows.numel() == 0:
                continue
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
