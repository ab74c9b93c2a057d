"""Shared building blocks. The text rules live in :mod:`nemo_pc.parts.text`."""

from nemo_pc.parts.text import (
    CASE_CLASSES,
    DEFAULT_MARK_MAP,
    DEFAULT_MARKS,
    SEGMENT_MARKS,
    canonicalize,
    case_class,
    fold_case,
    join_word_marks,
    map_marks,
    normalize,
    preprocess_punctuated,
    strip_marks,
    tokenize,
    word_marks,
    words,
)

__all__ = [
    "CASE_CLASSES",
    "DEFAULT_MARK_MAP",
    "DEFAULT_MARKS",
    "SEGMENT_MARKS",
    "canonicalize",
    "case_class",
    "fold_case",
    "join_word_marks",
    "map_marks",
    "normalize",
    "preprocess_punctuated",
    "strip_marks",
    "tokenize",
    "word_marks",
    "words",
]
