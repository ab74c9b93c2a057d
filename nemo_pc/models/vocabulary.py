"""Token-indexed rows carried from one tokenizer to another (``nemo-pc adapt`` and ``change_vocabulary``).

A model's token embeddings and output layers have one row per token, then blank (and TDT's duration outputs). When
the tokenizer changes, each new piece's rows come from the old model: the same piece's rows where the old tokenizer
has it, otherwise the mean of its related old pieces' rows (its lower-case spelling without marks, as the old
tokenizer writes it; all old token rows for a mark alone). A carried output row of a piece the old tokenizer lacked
starts with its bias :data:`NEW_PIECE_MARGIN` below the mean of its sources', so that it never outscores them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from nemo_pc.data.tokenizers.extension import related_pieces
from nemo_pc.parts.text import DEFAULT_MARKS

NEW_PIECE_MARGIN = 1.0
"""How far (in logits) a new piece's output bias starts below the mean bias of its related pieces."""


@dataclass
class RowSources:
    """Where each new token's rows come from.

    Attributes:
        old_vocab: the old number of tokens (blank is the next row).
        sources: per new token, the old token ids whose rows it starts from (empty: all old tokens).
        kept: per new token, whether it is an old piece (its rows are copied unchanged).
    """

    old_vocab: int
    sources: list[list[int]]
    kept: list[bool]

    @property
    def new_vocab(self) -> int:
        return len(self.sources)


def pieces(tokenizer) -> list[str]:
    """The pieces of a NeMo SentencePiece tokenizer, in id order."""
    processor = tokenizer.tokenizer
    return [processor.id_to_piece(i) for i in range(tokenizer.vocab_size)]


def row_sources(old_tokenizer, new_pieces: Sequence[str], marks: str = DEFAULT_MARKS) -> RowSources:
    """The :class:`RowSources` from an old NeMo SentencePiece tokenizer to the pieces of a new one."""
    old = {piece: index for index, piece in enumerate(pieces(old_tokenizer))}
    sources, kept = [], []
    for piece in new_pieces:
        if piece in old:
            sources.append([old[piece]])
            kept.append(True)
        else:
            sources.append(related_pieces(piece, old_tokenizer.tokenizer, marks))
            kept.append(False)
    return RowSources(len(old), sources, kept)


def gather_rows(tensor: torch.Tensor, rows: RowSources, is_bias: bool) -> torch.Tensor:
    """An old token-indexed tensor (``old_vocab`` token rows, then blank and any duration rows) laid out for the new
    tokens, the rows after the tokens kept as they are."""
    old_rows = tensor[: rows.old_vocab].float()
    new = []
    for ids, kept in zip(rows.sources, rows.kept, strict=True):
        row = (old_rows[ids] if ids else old_rows).mean(dim=0)
        new.append(row if kept or not is_bias else row - NEW_PIECE_MARGIN)
    gathered = torch.stack(new).to(tensor.dtype) if new else tensor[:0]
    return torch.cat([gathered, tensor[rows.old_vocab :]]).contiguous()


def vocabulary_tensors(module: torch.nn.Module, vocab: int, extra: int = 0) -> set[str]:
    """The names of ``module``'s token-indexed tensors for a vocabulary of ``vocab`` tokens: embeddings of
    ``vocab + 1`` rows, and linear or 1-D convolution outputs of ``vocab + 1 (+ extra)`` channels."""
    names = set()
    for name, sub in module.named_modules():
        prefix = f"{name}." if name else ""
        if isinstance(sub, torch.nn.Embedding) and sub.num_embeddings == vocab + 1:
            names.add(prefix + "weight")
        elif isinstance(sub, torch.nn.Linear) and sub.out_features in (vocab + 1, vocab + 1 + extra):
            names.update(prefix + key for key in ("weight", "bias") if getattr(sub, key) is not None)
        elif isinstance(sub, torch.nn.Conv1d) and sub.out_channels == vocab + 1:
            names.update(prefix + key for key in ("weight", "bias") if getattr(sub, key) is not None)
    return names


def carry_rows(module: torch.nn.Module, old_state: dict[str, torch.Tensor], rows: RowSources, extra: int = 0) -> None:
    """Loads ``old_state`` (the same module's weights under the old tokenizer) into ``module``, rebuilt for the new
    tokenizer: token-indexed tensors through :func:`gather_rows`, the rest as they are.

    Raises:
        ValueError: the states do not match apart from the token-indexed tensors.
    """
    state = module.state_dict()
    token_indexed = vocabulary_tensors(module, rows.new_vocab, extra)
    if set(state) != set(old_state):
        raise ValueError(f"{type(module).__name__}: the rebuilt module's weights differ from the old ones")
    for name, value in old_state.items():
        if name in token_indexed:
            value = gather_rows(value, rows, is_bias=name.endswith("bias"))
        if value.shape != state[name].shape:
            raise ValueError(
                f"{type(module).__name__}.{name}: {tuple(value.shape)} does not fit {tuple(state[name].shape)}"
            )
        state[name] = value
    module.load_state_dict(state)
