"""Pieces of :class:`~nemo_pc.models.rnnt_pc.EncDecRNNTPCBPEModel`: batch duplication and per-mode WER.

Batch duplication (the idea of the paper 000 implementation): a batch of B utterances becomes R = B × (number of
trained modes) rows, one per (utterance, mode), each with the token ids of its mode. The encoder still runs once on
the B utterances; its output is gathered to the R rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch
from nemo.collections.asr.metrics.wer import WER

from nemo_pc.data.pc_dataset import PCBatch


@dataclass
class ModeRows:
    """The rows of a duplicated batch.

    Attributes:
        utt_index: (R,) the utterance of each row.
        modes: (R,) the mode of each row.
        active: (R,) whether the row takes loss and WER (False for P rows without a P transcript).
        targets: (R, U) token ids, zero-padded.
        target_len: (R,) token counts.
    """

    utt_index: torch.Tensor
    modes: torch.Tensor
    active: torch.Tensor
    targets: torch.Tensor
    target_len: torch.Tensor


def build_mode_rows(batch: PCBatch, modes: Sequence[int]) -> ModeRows:
    """Duplicates a :class:`PCBatch` into one row per (utterance, mode), modes in the given order."""
    size = batch.audio.shape[0]
    device = batch.audio.device
    parts = []
    for mode in modes:
        if mode == 0:
            parts.append((batch.tokens_n, batch.tokens_n_len, torch.ones_like(batch.p_mask)))
        else:
            parts.append((batch.tokens_p, batch.tokens_p_len, batch.p_mask))
    width = max(tokens.shape[1] for tokens, _, _ in parts)
    targets = torch.cat([torch.nn.functional.pad(tokens, (0, width - tokens.shape[1])) for tokens, _, _ in parts])
    return ModeRows(
        utt_index=torch.arange(size, device=device).repeat(len(parts)),
        modes=torch.tensor(list(modes), device=device).repeat_interleave(size),
        active=torch.cat([active for _, _, active in parts]).bool(),
        targets=targets,
        target_len=torch.cat([lengths for _, lengths, _ in parts]),
    )


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
