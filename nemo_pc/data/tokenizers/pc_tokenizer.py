"""The one SentencePiece tokenizer of the P&C ASR models: trained on cased, punctuated text.

It follows the conventions of NeMo's ``scripts/tokenizers/process_asr_text_tokenizer.py`` with ``--no_lower_case``:
the tokenizer lands in ``<output_dir>/tokenizer_spe_<type>_v<vocab_size>/`` (``tokenizer.model``,
``tokenizer.vocab``, ``vocab.txt``), which is what a model config's ``tokenizer.dir`` points to. The training text
is the manifest's ``text`` after :func:`nemo_pc.parts.text.preprocess_punctuated` (the mark set of the models), plus
its ``text_normalized`` (derived from ``text`` where a line has none, :mod:`nemo_pc.data.normalized_text`), so that
the lower-case spelling of every word is in the vocabulary too and normalized text is a subset of what the tokenizer
can write.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from nemo_pc.data.normalized_text import iter_pc_manifest
from nemo_pc.parts.manifest import ManifestError, require_text
from nemo_pc.parts.text import DEFAULT_MARKS, normalize, parse_marks, preprocess_punctuated

_LOG = logging.getLogger(__name__)


def tokenizer_dir_name(vocab_size: int, tokenizer_type: str = "bpe") -> str:
    """The folder name NeMo's tokenizer script uses, e.g. ``tokenizer_spe_bpe_v128``."""
    return f"tokenizer_spe_{tokenizer_type}_v{vocab_size}"


def tokenizer_training_lines(
    manifests: Iterable[str | Path],
    marks: str = DEFAULT_MARKS,
    mark_map: Mapping[str, str] | None = None,
    include_normalized: bool = True,
) -> list[str]:
    """The lines a tokenizer is trained on: each utterance's punctuated text, then its normalized text.

    Raises:
        ManifestError: a line without ``text`` (naming the file and line), or with ``text`` and ``text_normalized``
            both empty.
    """
    lines: list[str] = []
    for manifest in manifests:
        for number, entry in iter_pc_manifest(manifest):
            normalized = normalize(require_text(entry, "text_normalized", manifest, number))
            punctuated = preprocess_punctuated(require_text(entry, "text", manifest, number), marks, mark_map)
            if not punctuated and not normalized:
                raise ManifestError(manifest, number, "empty transcript ('text' and 'text_normalized')", "empty text")
            lines.append(punctuated or normalized)
            if include_normalized and normalized:
                lines.append(normalized)
    return lines


def build_tokenizer(
    manifests: Iterable[str | Path],
    output_dir: str | Path,
    vocab_size: int = 256,
    tokenizer_type: str = "bpe",
    marks: str = DEFAULT_MARKS,
    mark_map: Mapping[str, str] | None = None,
    include_normalized: bool = True,
    character_coverage: float = 1.0,
    user_defined_symbols: Sequence[str] = (),
    folder_suffix: str = "",
) -> Path:
    """Trains the cased, punctuated SentencePiece tokenizer and returns its folder.

    Args:
        manifests: NeMo manifests in the nemo_pc schema.
        output_dir: the parent folder; the tokenizer goes into ``tokenizer_spe_<type>_v<vocab_size>``.
        vocab_size: the number of pieces.
        tokenizer_type: ``bpe`` or ``unigram`` (SentencePiece model types).
        marks: the mark set kept in the punctuated text (:func:`nemo_pc.parts.text.parse_marks`); use the same set
            as the model's ``marks`` key. A mark of the set that the text never holds is logged as a warning: the
            tokenizer cannot write it.
        mark_map: how marks outside the set fold into it (default :data:`nemo_pc.parts.text.DEFAULT_MARK_MAP`; a
            mark of the set is never folded).
        include_normalized: also train on ``text_normalized``.
        character_coverage: SentencePiece's character coverage.
        user_defined_symbols: pieces that always stay one token (e.g. the style tags of mixed-style targets).
        folder_suffix: appended to the folder name, e.g. ``_styles``.

    Raises:
        ValueError: a bad argument (the message names it).
        ManifestError: a bad manifest line.
    """
    from nemo.collections.common.tokenizers.sentencepiece_tokenizer import create_spt_model

    if tokenizer_type not in ("bpe", "unigram"):
        raise ValueError(f"tokenizer_type must be 'bpe' or 'unigram', got {tokenizer_type!r}")
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be at least 2, got {vocab_size}")
    marks = parse_marks(marks)
    lines = tokenizer_training_lines(manifests, marks, mark_map, include_normalized)
    if not lines:
        raise ValueError("the manifests hold no utterance to train a tokenizer on")
    target = Path(output_dir) / (tokenizer_dir_name(vocab_size, tokenizer_type) + folder_suffix)
    target.parent.mkdir(parents=True, exist_ok=True)
    # built in a hidden folder next to the target and renamed into place whole: a run killed while SentencePiece
    # writes leaves no tokenizer.model that a rerun would take as done
    staging = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    staging.mkdir()
    try:
        corpus = staging / "text_corpus.txt"
        corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
        create_spt_model(
            data_file=str(corpus),
            vocab_size=vocab_size,
            sample_size=-1,
            do_lower_case=False,
            tokenizer_type=tokenizer_type,
            output_dir=str(staging),
            character_coverage=character_coverage,
            user_defined_symbols=list(user_defined_symbols) or None,
        )
        corpus.unlink()
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    unwritable = marks_without_pieces(target / "tokenizer.model", marks)
    if unwritable:
        _LOG.warning(
            "%s: the training text holds none of the marks %r; the tokenizer cannot write them", target, unwritable
        )
    return target


def marks_without_pieces(model_file: str | Path, marks: str) -> str:
    """The marks of ``marks`` that a SentencePiece model can only write as its unknown piece."""
    import sentencepiece

    model = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    return "".join(mark for mark in marks if model.unk_id() in model.encode(mark))
