"""One P&C batch and what builds it: the training texts of a manifest line, their token ids and the collate
function. Both loaders (:mod:`~nemo_pc.data.datasets.pc_dataset` and :mod:`~nemo_pc.data.datasets.pc_lhotse`)
import this module, and the models read :class:`PCBatch`."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import torch

from nemo_pc.parts.manifest import PC_SOURCES, ManifestError, require_text
from nemo_pc.parts.styles import compose_mixed
from nemo_pc.parts.text import normalize, preprocess_punctuated


class PCBatch(NamedTuple):
    """A padded batch: audio, both token sequences and the P-available mask."""

    audio: torch.Tensor
    audio_len: torch.Tensor
    tokens_n: torch.Tensor
    tokens_n_len: torch.Tensor
    tokens_p: torch.Tensor
    tokens_p_len: torch.Tensor
    p_mask: torch.Tensor
    utt_ids: tuple[str, ...] = ()
    """Where each row comes from (manifest path:line, or the lhotse cut id), for messages about the batch."""


def keeps_p_label(key: str, pc_fraction: float, seed: int = 0) -> bool:
    """Whether an utterance keeps its P label under ``pc_fraction``; a fixed function of ``key`` and ``seed``."""
    if pc_fraction >= 1.0:
        return True
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < pc_fraction


def prepare_pc_text(
    fields: Mapping, key: str, marks: str, pc_fraction: float, pc_seed: int, path: str | Path, line: int | None
) -> tuple[str, str, bool]:
    """The training texts of one utterance from its manifest fields: ``(punctuated, normalized, p_available)``.

    ``text`` is reduced to ``marks`` (the normalized text where it has no word left), ``text_normalized`` is
    normalized, and P is available unless ``pc_source`` is ``"none"`` or ``key`` falls outside ``pc_fraction``.

    Raises:
        ManifestError: no ``text_normalized``, an empty one, or an unknown ``pc_source`` (naming ``path`` and
            ``line``).
    """
    normalized = normalize(require_text(fields, "text_normalized", path, line))
    if not normalized:
        raise ManifestError(path, line, "empty transcript ('text_normalized' has no word)", "empty text")
    source = fields.get("pc_source", "book")
    if source not in PC_SOURCES:
        raise ManifestError(path, line, f"pc_source must be one of {PC_SOURCES}, got {source!r}")
    punctuated = preprocess_punctuated(fields.get("text") or normalized, marks) or normalized
    return punctuated, normalized, source != "none" and keeps_p_label(key, pc_fraction, pc_seed)


def pc_token_ids(tokenizer, punctuated: str, normalized: str, mixed_format: str | None = None) -> tuple[list, list]:
    """The N token ids and the P token ids (those of the mixed-style transcript with ``mixed_format``)."""
    if mixed_format is not None:
        punctuated = compose_mixed(normalized, punctuated, mixed_format)
    return tokenizer.text_to_ids(normalized), tokenizer.text_to_ids(punctuated)


def collate_pc_batch(
    audio: torch.Tensor,
    audio_len: torch.Tensor,
    targets: Sequence[tuple[list[int], list[int], bool]],
    utt_ids: Sequence[str] = (),
) -> PCBatch:
    """A :class:`PCBatch` from padded audio and each utterance's ``(tokens_n, tokens_p, p_available)``."""
    tokens_n, tokens_n_len = _pad_tokens([target[0] for target in targets])
    tokens_p, tokens_p_len = _pad_tokens([target[1] for target in targets])
    p_mask = torch.tensor([target[2] for target in targets], dtype=torch.bool)
    return PCBatch(audio, audio_len, tokens_n, tokens_n_len, tokens_p, tokens_p_len, p_mask, tuple(utt_ids))


def _pad_tokens(sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(tokens) for tokens in sequences], dtype=torch.long)
    padded = torch.zeros(len(sequences), max(1, int(lengths.max())), dtype=torch.long)
    for row, tokens in enumerate(sequences):
        padded[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
    return padded, lengths
