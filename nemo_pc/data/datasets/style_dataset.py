"""The shared tokenizer of mixed-style targets.

A model whose main head learns a mixed-style transcript (papers/001 §2.3) gets its targets from the shared P&C
loader (:func:`~nemo_pc.data.datasets.pc_dataset.pc_dataloader_from_config` with ``mixed_format``).
:func:`build_style_tokenizer` trains the shared tokenizer's SentencePiece model with the style tags as user-defined
symbols, so that each tag is one token; :func:`check_style_tokenizer` checks that a tokenizer has them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nemo_pc.data.tokenizers.pc_tokenizer import build_tokenizer
from nemo_pc.parts.styles import STYLE_TAGS


def check_style_tokenizer(tokenizer, tags: Iterable[str] = STYLE_TAGS) -> None:
    """Raises ``ValueError`` unless every style tag is a single token of ``tokenizer``."""
    for tag in tags:
        ids = tokenizer.text_to_ids(tag)
        pieces = [piece for piece in tokenizer.ids_to_tokens(ids) if piece not in ("▁", "")]
        if pieces != [tag]:
            raise ValueError(
                f"style tag {tag!r} is not one token of the tokenizer ({pieces}); train it with the style tags as "
                "user-defined symbols (nemo_pc.data.datasets.style_dataset.build_style_tokenizer)"
            )


def build_style_tokenizer(manifests: Iterable[str | Path], output_dir: str | Path, **options: Any) -> Path:
    """The shared cased, punctuated tokenizer, trained with :data:`STYLE_TAGS` as user-defined symbols; ``options``
    are those of :func:`~nemo_pc.data.tokenizers.pc_tokenizer.build_tokenizer` (``vocab_size``, ``marks``, ...).

    The folder is ``<output_dir>/tokenizer_spe_<type>_v<vocab_size>_styles``.
    """
    return build_tokenizer(manifests, output_dir, user_defined_symbols=STYLE_TAGS, folder_suffix="_styles", **options)
