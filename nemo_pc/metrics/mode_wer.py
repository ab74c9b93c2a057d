"""NeMo's :class:`WER` once per transcription mode over a duplicated P&C batch (the RNN-T P&C model's metric).

Unlike the rest of :mod:`nemo_pc.metrics`, this module imports NeMo ASR; the package does not import it.
"""

from __future__ import annotations

from typing import Any

import torch
from nemo.collections.asr.metrics.wer import WER

from nemo_pc.metrics.align import edit_distance


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
        # NeMo's WER keeps the counts of its last update only; the sums since the last reset are kept here
        self._counts: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def update(
        self,
        predictions: torch.Tensor,
        predictions_lengths: torch.Tensor,
        targets: torch.Tensor,
        targets_lengths: torch.Tensor,
        modes: torch.Tensor,
        active: torch.Tensor | None = None,
    ) -> None:
        """Decodes and scores the active rows of each mode with that mode's decoding; the errors and words add to
        those of the earlier updates since the last :meth:`reset`.

        Args:
            predictions, predictions_lengths: encoder output (R, D, T) and lengths, one row per (utterance, mode).
            targets, targets_lengths: token ids (R, U) and counts.
            modes: (R,) the mode of every row.
            active: (R,) whether a row is scored (None: all).
        """
        if active is None:
            active = torch.ones_like(modes, dtype=torch.bool)
        for key, wer in self.wers.items():
            rows = torch.nonzero(active & (modes == int(key))).squeeze(1)
            if rows.numel() == 0:
                continue
            wer.update(
                predictions=predictions[rows],
                predictions_lengths=predictions_lengths[rows],
                targets=targets[rows],
                targets_lengths=targets_lengths[rows],
            )
            _, scores, words = wer.compute()
            old_scores, old_words = self._counts.get(int(key), (0.0, 0.0))
            self._counts[int(key)] = (old_scores + scores, old_words + words)

    def per_mode(self) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
        """(errors, words) of each mode since the last :meth:`reset`; every mode of the model is present."""
        counts = {}
        for key, wer in self.wers.items():
            zero = wer.scores.new_zeros((), dtype=torch.float32)  # on the metric's device
            counts[int(key)] = self._counts.get(int(key), (zero, zero))
        return counts

    def compute(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(WER, errors, words) over every mode since the last :meth:`reset`, as a torchmetrics metric's compute."""
        counts = list(self.per_mode().values())
        scores = torch.stack([scores for scores, _ in counts]).sum()
        words = torch.stack([words for _, words in counts]).sum()
        return scores / words.clamp(min=1.0), scores, words

    def reset(self) -> None:
        """Clears the errors and words of every mode."""
        self._counts = {}
        for wer in self.wers.values():
            wer.reset()


def text_errors(hypotheses: list[str], references: list[str], use_cer: bool = False) -> tuple[int, int]:
    """(edit errors, reference words) summed over pairs of texts, words split on spaces (characters with
    ``use_cer``), as NeMo's :class:`WER` counts them after decoding."""
    errors = words = 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        hyp, ref = (list(hypothesis), list(reference)) if use_cer else (hypothesis.split(), reference.split())
        errors += edit_distance(ref, hyp)
        words += len(ref)
    return errors, words
