"""What the heads on the AED share (:mod:`nemo_pc.modules.aed_transducer`, :mod:`nemo_pc.modules.aed_decoder_ctc`):
output rows over the AED's whole vocabulary with a blank, the set of tokens a head may write (those counted in its
training targets and those of its texts), the reading of a text's tokens, and the reading of a head's options.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn


class TokenRows(nn.Module):
    """A head's output rows (``token_out``, ``token_bias``, ``blank_out``) and its token set (``token_counts``,
    ``extra_tokens``). A subclass calls :meth:`_add_token_rows` in its ``__init__``."""

    def _add_token_rows(self, vocab_size: int, width: int) -> None:
        self.token_out = nn.Parameter(torch.randn(vocab_size, width) * width**-0.5)
        self.token_bias = nn.Parameter(torch.zeros(vocab_size))
        self.blank_out = nn.Linear(width, 1)
        self.register_buffer("token_counts", torch.zeros(vocab_size))
        self.register_buffer("extra_tokens", torch.zeros(vocab_size, dtype=torch.bool))

    @property
    def vocab_size(self) -> int:
        return self.token_out.shape[0]

    def kept(self) -> torch.Tensor:
        """``(V,)`` bool: the tokens the head may write (learned in training, or in its texts)."""
        return (self.token_counts > 0) | self.extra_tokens

    def count(self, targets: Sequence[Sequence[int]]) -> None:
        """Adds a batch's targets to ``token_counts``."""
        flat = [token for row in targets for token in row]
        if flat:
            ids = torch.tensor(flat, device=self.token_counts.device)
            self.token_counts.index_add_(0, ids, torch.ones(len(flat), device=ids.device))

    def allow(self, ids: set[int]) -> None:
        """The tokens ``ids`` join those the head may write."""
        if ids:
            self.extra_tokens[torch.tensor(sorted(ids), device=self.extra_tokens.device)] = True


def text_token_ids(tokenizer, marks: str, path: str) -> tuple[set[int], int]:
    """The ids ``tokenizer`` gives a JSON-lines text's lines (``text``), normalized and punctuated (with ``marks``),
    and the number of lines."""
    from nemo_pc.parts.manifest import read_manifest
    from nemo_pc.parts.text import normalize, preprocess_punctuated

    lines = read_manifest(path)
    ids: set[int] = set()
    for line in lines:
        for text in (normalize(line["text"]), preprocess_punctuated(line["text"], marks)):
            ids.update(tokenizer.text_to_ids(text))
    return ids, len(lines)


def as_paths(value) -> list[str]:
    """A config value that names no file, one, or a list of them, as a list."""
    if not value:
        return []
    return [str(value)] if isinstance(value, str) else [str(path) for path in value]


def head_options(group: str, cfg, defaults: Mapping[str, object]) -> dict | None:
    """A head's config group ``group`` (``cfg``: a DictConfig, a dict, or None) with its ``defaults`` filled in;
    None when absent.

    Raises:
        ValueError: an unknown key (the message lists the known ones).
    """
    if not cfg:
        return None
    from omegaconf import DictConfig, OmegaConf

    given = OmegaConf.to_container(cfg) if isinstance(cfg, DictConfig) else dict(cfg)
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ValueError(f"{group}: unknown key(s) {unknown}; known: {sorted(defaults)}")
    return dict(defaults) | given
