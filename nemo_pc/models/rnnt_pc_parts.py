"""Batch duplication of :class:`~nemo_pc.models.rnnt_pc.EncDecRNNTPCBPEModel` (its per-mode WER is
:class:`nemo_pc.metrics.mode_wer.MultiModeWER`).

Batch duplication (the idea of the paper 000 implementation): a batch of B utterances becomes R = B × (number of
trained modes) rows, one per (utterance, mode), each with the token ids of its mode. The encoder still runs once on
the B utterances; its output is gathered to the R rows, and each row's mode is passed to the predictor, joint, loss
and metric (``docs/rnnt_pc.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from nemo_pc.data.datasets.pc_batch import PCBatch


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
