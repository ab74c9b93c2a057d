"""The variants' loss weights and the batch duplication of :class:`~nemo_pc.models.rnnt_pc.EncDecRNNTPCBPEModel` (its
per-mode WER is :class:`nemo_pc.metrics.mode_wer.MultiModeWER`).

The variant is what the model's ``decoder`` and ``joint`` are (``configs/rnnt/variant/``); :func:`mode_weights` is
the one place that reads it, for the modes a model trains and the weight of each one's loss term.

Batch duplication (the idea of the paper 000 implementation): a batch of B utterances becomes R = B × (number of
trained modes) rows, one per (utterance, mode), each with the token ids of its mode. The encoder still runs once on
the B utterances; its output is gathered to the R rows, and each row's mode is passed to the predictor, joint, loss
and metric (``docs/rnnt_pc.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from omegaconf import DictConfig

from nemo_pc.data.datasets.pc_batch import PCBatch
from nemo_pc.modules import DualRNNTDecoder, DualRNNTJoint, ModeConditioningMixin
from nemo_pc.parts.modes import NORMALIZED_ID, PUNCTUATED_ID, mode_id

VARIANTS = ("single", "dual", "conditioned")
"""The variant names of ``configs/rnnt/variant/`` (what ``pc.decoders`` of a config names)."""


def mode_weights(decoder: torch.nn.Module, joint: torch.nn.Module, pc: DictConfig) -> dict[int, float]:
    """The modes an RNN-T trains, in id order, and the weight of each one's loss term, from its modules:

    * a predictor and joint per mode (``DualRNNTDecoder`` + ``DualRNNTJoint``, paper 000 §III-A): L = L_N + L_P;
    * one mode-conditioned predictor (§III-C): L = (1 − α) L_N + α L_P, α = ``pc.alpha``;
    * a stock predictor: ``pc.target`` alone.

    ``pc.decoders``, when a config names the variant, must name this one.

    Raises:
        ValueError: per-mode heads on one of the two modules only, or a ``pc.decoders`` that names another variant.
    """
    if isinstance(decoder, DualRNNTDecoder) != isinstance(joint, DualRNNTJoint):
        raise ValueError(
            f"a DualRNNTDecoder needs a DualRNNTJoint and the other way round; got decoder "
            f"{type(decoder).__name__} and joint {type(joint).__name__}"
        )
    if isinstance(decoder, DualRNNTDecoder):
        variant, weights = "dual", {NORMALIZED_ID: 1.0, PUNCTUATED_ID: 1.0}
    elif isinstance(decoder, ModeConditioningMixin):
        alpha = float(pc.alpha)
        variant, weights = "conditioned", {NORMALIZED_ID: 1.0 - alpha, PUNCTUATED_ID: alpha}
    else:
        variant, weights = "single", {mode_id(pc.target, "pc.target"): 1.0}
    named = pc.get("decoders")
    if named is not None and named != variant:
        raise ValueError(f"pc.decoders={named} does not match decoder {type(decoder).__name__} (a {variant} model)")
    return weights


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
        if mode == NORMALIZED_ID:
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


def sample_one_mode(rows: ModeRows) -> ModeRows:
    """One row per utterance: the mode of each utterance drawn uniformly among its active rows (an utterance without a
    P transcript keeps its normalized row), with the global random stream.

    The joint, the loss and their backward pass then work on B rows instead of B x modes (the joint's
    ``(R, T, U + 1, V + 1)`` tensor halves), while the encoder still runs once per utterance. Each mode's loss term
    stays the mean over the rows of that mode (:class:`~nemo_pc.losses.mode_weighted.ModeWeightedRNNTLoss`), here the
    utterances that drew it: an unbiased estimate of the term over the whole batch, from half the rows. Utterances with
    no active row (a single-output model's P rows without a P transcript) keep none.
    """
    noise = torch.where(rows.active, torch.rand(rows.active.shape, device=rows.active.device), -1.0)
    size = int(rows.utt_index.max()) + 1 if rows.utt_index.numel() else 0
    best = noise.new_full((size,), -2.0).scatter_reduce(0, rows.utt_index, noise, reduce="amax")
    keep = torch.nonzero(rows.active & (noise == best[rows.utt_index])).squeeze(1)
    lengths = rows.target_len.index_select(0, keep)
    width = max(int(lengths.max()) if lengths.numel() else 0, 1)
    return ModeRows(
        utt_index=rows.utt_index.index_select(0, keep),
        modes=rows.modes.index_select(0, keep),
        active=rows.active.index_select(0, keep),
        targets=rows.targets.index_select(0, keep)[:, :width],
        target_len=lengths,
    )
