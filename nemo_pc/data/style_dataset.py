"""Mixed-style targets on top of the shared P&C dataset and tokenizer.

:class:`~nemo_pc.data.pc_dataset.PCAudioTextDataset` yields both transcripts as token ids. For a model whose main
head learns a mixed-style transcript (papers/001 §2.3), :class:`MixedStyleDataset` puts the tokens of
``compose_mixed(N, P)`` where the P tokens go, so batches keep the :class:`~nemo_pc.data.pc_dataset.PCBatch`
layout. :func:`build_style_tokenizer` trains the shared tokenizer's SentencePiece model with the style tags as
user-defined symbols, so that each tag is one token.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import torch

from nemo_pc.data.pc_dataset import PCAudioTextDataset, pc_dataloader_from_config
from nemo_pc.data.tokenizer import build_tokenizer
from nemo_pc.parts.styles import STYLE_TAGS, check_format, compose_mixed
from nemo_pc.parts.text import DEFAULT_MARKS


class MixedStyleDataset(torch.utils.data.Dataset):
    """A :class:`PCAudioTextDataset` whose P tokens are those of the mixed-style transcript.

    Args:
        base: the shared dataset.
        mixed_format: ``"m0"``, ``"m1"`` or ``"m2"``.
    """

    collate_fn = staticmethod(PCAudioTextDataset.collate_fn)

    def __init__(self, base: PCAudioTextDataset, mixed_format: str = "m2") -> None:
        self.base = base
        self.mixed_format = check_format(mixed_format)

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, index: int):
        audio, tokens_n, _, p_available = self.base[index]
        item = self.base.items[index]
        mixed = compose_mixed(item.text_normalized, item.text, self.mixed_format)
        return audio, tokens_n, self.base.tokenizer.text_to_ids(mixed), p_available


def style_dataloader_from_config(config: Mapping, tokenizer, mixed_format: str | None = None):
    """The shared P&C data loader, or its mixed-style version when ``mixed_format`` is given."""
    if mixed_format is None:
        return pc_dataloader_from_config(config, tokenizer)
    plain = pc_dataloader_from_config({**config, "shuffle": False}, tokenizer)
    return torch.utils.data.DataLoader(
        MixedStyleDataset(plain.dataset, mixed_format),
        batch_size=plain.batch_size,
        shuffle=config.get("shuffle", False),
        collate_fn=MixedStyleDataset.collate_fn,
        num_workers=plain.num_workers,
        pin_memory=plain.pin_memory,
        drop_last=plain.drop_last,
    )


def check_style_tokenizer(tokenizer, tags: Iterable[str] = STYLE_TAGS) -> None:
    """Raises ``ValueError`` unless every style tag is a single token of ``tokenizer``."""
    for tag in tags:
        ids = tokenizer.text_to_ids(tag)
        pieces = [piece for piece in tokenizer.ids_to_tokens(ids) if piece not in ("▁", "")]
        if pieces != [tag]:
            raise ValueError(
                f"style tag {tag!r} is not one token of the tokenizer ({pieces}); train it with the style tags as "
                "user-defined symbols (nemo_pc.data.style_dataset.build_style_tokenizer)"
            )


def build_style_tokenizer(
    manifests: Iterable[str | Path],
    output_dir: str | Path,
    vocab_size: int = 256,
    tokenizer_type: str = "bpe",
    marks: str = DEFAULT_MARKS,
    mark_map: Mapping[str, str] | None = None,
) -> Path:
    """The shared cased, punctuated tokenizer, trained with :data:`STYLE_TAGS` as user-defined symbols.

    The folder is ``<output_dir>/tokenizer_spe_<type>_v<vocab_size>_styles``.
    """
    return build_tokenizer(
        manifests,
        output_dir,
        vocab_size,
        tokenizer_type,
        marks,
        mark_map,
        user_defined_symbols=STYLE_TAGS,
        folder_suffix="_styles",
    )
