"""The text formatter's label sets and span markers (papers/003 §3): the constants that the formatter's
datasets, its rewriter tokenizer and its labelling code share. They live in this bottom layer so that
:mod:`nemo_pc.data` and :mod:`nemo_pc.formatter` both import them and neither imports the other's code for them."""

from __future__ import annotations

from nemo_pc.parts.text import CASE_CLASSES

PUNCT_LABELS = ("O", "PERIOD", "COMMA", "QUESTION")
"""Punctuation head classes (papers/003 §3.1): the mark that follows a word."""

CASE_LABELS = CASE_CLASSES
"""Truecasing head classes: LOWER, CAPITAL, ACRONYM, MIXED."""

ITN_LABELS = ("O", "ITN")
"""ITN span head classes."""

MARK_OF_LABEL = {"PERIOD": ".", "COMMA": ",", "QUESTION": "?"}
LABEL_OF_MARK = {mark: label for label, mark in MARK_OF_LABEL.items()}

SPAN_OPEN = "<span>"
SPAN_CLOSE = "</span>"
EDGE_SYMBOLS = "$£€¥₹%°#@&+=/§"
"""Symbols that stay at the edges of a span's written form ("$12", "5%"); quotes and brackets there are dropped."""
