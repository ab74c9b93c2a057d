"""The text formatter of papers/003: its data pipeline and the TextFormatter pipeline.

The two models live in :mod:`nemo_pc.models` (``PCTaggerModel``, ``SpanRewriterModel``); the baselines in
:mod:`nemo_pc.formatter.baselines`. Importing this package does not import torch or NeMo.
"""

from nemo_pc.formatter.build import FormatterDataConfig, build_formatter_data
from nemo_pc.formatter.entities import EntitySynthesizer
from nemo_pc.formatter.labels import LabeledText, compose, derive_labels, find_spans
from nemo_pc.formatter.pipeline import TextFormatter

__all__ = [
    "EntitySynthesizer",
    "FormatterDataConfig",
    "LabeledText",
    "TextFormatter",
    "build_formatter_data",
    "compose",
    "derive_labels",
    "find_spans",
]
