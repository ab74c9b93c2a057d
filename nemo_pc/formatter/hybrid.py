"""Hybrid span ITN: for each span the tagger finds, the span rewriter's written form or NeMo WFST ITN's.

The span rewriter writes a span from a few words of context; NeMo's WFST grammars read number words into digits
by rule and need no training. On text of a kind it never saw the rewriter gets number values wrong that WFST
gets right, while WFST misses what needs context or a convention of the text (thousands separators, "17th-century",
names, e-mail addresses). :func:`choose_span` picks one of the two outputs for a span by a *policy*:

* ``neural``: always the rewriter (the pure neural path).
* ``wfst``: WFST's output wherever WFST changed the span's words, else the rewriter's.
* ``confidence``: the rewriter when its confidence (the lowest probability of a token it emitted) reaches
  ``threshold``, else as ``wfst``.
* ``agreement``: the rewriter when its digits are WFST's digits (the value agrees; the rewriter's layout is kept),
  else as ``wfst``.
* ``class``: by the span's semiotic class (:func:`span_class`): as ``wfst`` for number spans, the rewriter for
  every other span.

:func:`choose_span` is a pure function of a :class:`SpanCandidates`; :class:`WfstSpans` gives WFST's output of
spans, and :class:`~nemo_pc.formatter.pipeline.TextFormatter` runs both and applies the policy. The tagger misses
spans on text unlike its training text; with ``detect_spans`` the formatter also makes spans of the words WFST ITN
over the whole text changes (:meth:`WfstSpans.changed_spans`), and the policy chooses their written form too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nemo_pc.formatter.spoken_numbers import NUMBER_WORDS

POLICIES = ("neural", "wfst", "confidence", "agreement", "class")
"""Span ITN policies; ``neural`` is the pure neural formatter."""

DEFAULT_SPAN_ITN = "agreement"
"""The span ITN policy of :class:`~nemo_pc.formatter.pipeline.TextFormatter` and ``nemo-pc format``: on sources the
formatter never saw, the hybrid's I-WER is far below the pure neural formatter's (docs/formatter.md, "Text it never
saw")."""
DEFAULT_DETECT_SPANS = True
"""Whether the formatter adds the spans WFST ITN finds to the tagger's, by default (with :data:`DEFAULT_SPAN_ITN`)."""

NUMBER_CLASS_WORDS = NUMBER_WORDS | frozenset("minus negative pounds pound euros euro".split())
"""Spoken words of a number span (cardinals, ordinals, decimals, years, money, percentages)."""


@dataclass(frozen=True)
class SpanCandidates:
    """The two written forms of one spoken span.

    Args:
        spoken: the span's spoken words, space-separated.
        neural: the rewriter's written form.
        confidence: the rewriter's confidence in ``neural``, in [0, 1].
        wfst: WFST ITN's output of ``spoken``, or ``None`` when it was not run.
    """

    spoken: str
    neural: str
    confidence: float
    wfst: str | None = None


def digits(text: str) -> str:
    """The digits of ``text`` in order ("$6,440,120" -> "6440120")."""
    return re.sub(r"\D", "", text)


def wfst_converted(candidates: SpanCandidates) -> bool:
    """Whether WFST changed the span's words (it leaves words it has no rule for as they are)."""
    return candidates.wfst is not None and candidates.wfst.split() != candidates.spoken.split()


def span_class(spoken: str) -> str:
    """``number`` when every spoken word is a number word (:data:`NUMBER_CLASS_WORDS`), else ``other``."""
    words = spoken.split()
    return "number" if words and all(word in NUMBER_CLASS_WORDS for word in words) else "other"


def choose_span(candidates: SpanCandidates, policy: str, threshold: float = 0.9) -> str:
    """``neural`` or ``wfst``: whose written form the span takes under ``policy`` (see the module docstring).

    WFST is chosen only where it changed the span's words, so every policy keeps the rewriter's output where WFST
    had no rule.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown span ITN policy {policy!r}; known: {', '.join(POLICIES)}")
    if policy == "neural" or not wfst_converted(candidates):
        return "neural"
    if policy == "confidence":
        return "neural" if candidates.confidence >= threshold else "wfst"
    if policy == "agreement":
        return "neural" if digits(candidates.neural) == digits(candidates.wfst) else "wfst"
    if policy == "class":
        return "wfst" if span_class(candidates.spoken) == "number" else "neural"
    return "wfst"


def chosen_text(candidates: SpanCandidates, policy: str, threshold: float = 0.9) -> tuple[str, str]:
    """``(written form, "neural" or "wfst")`` of a span under ``policy``."""
    source = choose_span(candidates, policy, threshold)
    return (candidates.wfst if source == "wfst" else candidates.neural), source


class WfstSpans:
    """NeMo WFST ITN of single spans (each span's spoken words alone), with the outputs kept for repeated spans.
    A percent sign is joined to its number ("50 %" -> "50%").

    Args:
        normalizer: an ``InverseNormalizer``; default: English, grammars compiled once into ``cache_dir``.
        cache_dir: the grammar folder (default ``<nemo_pc cache>/itn_grammars``, shared with
            :class:`~nemo_pc.formatter.baselines.WfstItn`).
    """

    def __init__(self, normalizer=None, cache_dir: str | Path | None = None) -> None:
        if normalizer is None:
            from nemo_pc.formatter.baselines import WfstItn  # torch: kept out of `nemo-pc format --help`

            normalizer = WfstItn(cache_dir).normalizer
        self.normalizer = normalizer
        self._known: dict[str, str] = {}

    def changed_spans(self, texts: Sequence[str], chunk_words: int = 50) -> list[list[tuple[int, int]]]:
        """The word ranges ``(start, end)`` of each spoken text that WFST ITN over the whole text changes (found by
        the same alignment that labels the training data, :func:`~nemo_pc.formatter.labels.derive_labels`)."""
        from nemo_pc.formatter.baselines import WfstItn
        from nemo_pc.formatter.labels import derive_labels

        written = WfstItn(chunk_words=chunk_words, normalizer=self.normalizer).format(texts)
        return [
            [(start, end) for start, end, _ in derive_labels(out, text).spans] if text.strip() else []
            for out, text in zip(written, texts, strict=True)
        ]

    def convert(self, spans: Sequence[str]) -> list[str]:
        """WFST's written form of each spoken span."""
        for span in spans:
            if span not in self._known:
                written = " ".join(self.normalizer.inverse_normalize(span, verbose=False).split())
                self._known[span] = re.sub(r"(\d) %", r"\1%", written)  # "50 %" -> "50%", as text writes it
        return [self._known[span] for span in spans]
