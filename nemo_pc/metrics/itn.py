"""ITN word error rate, I-WER (papers/003 §5.1).

The words that need inverse text normalization are found by aligning the written reference ("on March 15th")
with its spoken form ("on march fifteenth"): written words that do not match a spoken word one to one ("15th")
need ITN. The written reference is then aligned with the hypothesis, both lower-cased and without marks, and the
errors on those words are counted.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from nemo_pc.metrics.align import align_pairs, region_errors
from nemo_pc.parts.text import fold_case, normalize, words


def itn_positions(written: str, spoken: str) -> list[int]:
    """Positions of the words of ``written`` (as :func:`nemo_pc.parts.text.words`) that need ITN."""
    written_words = [fold_case(w) for w in words(written)]
    spoken_words = normalize(spoken).split()
    matched = {
        i
        for i, j in align_pairs(written_words, spoken_words)
        if i is not None and j is not None and written_words[i] == spoken_words[j]
    }
    return [i for i in range(len(written_words)) if i not in matched]


def iwer_counts(ref: str, hyp: str, spoken: str) -> dict[str, int]:
    """I-WER counts ``iwer_E`` / ``iwer_N`` for one utterance, given the spoken form of the reference."""
    region = itn_positions(ref, spoken)
    ref_words = [fold_case(w) for w in words(ref)]
    hyp_words = [fold_case(w) for w in words(hyp)]
    return {"iwer_E": region_errors(ref_words, hyp_words, region), "iwer_N": len(region)}


# What a word that needs ITN looks like, for a per-kind breakdown of I-WER errors (years, plain numbers, numbers with
# letters or signs such as 15th, 12.3 or km2, and words without digits such as Jr or km).
ITN_KINDS = ("year", "number", "number+text", "word")


def itn_kind(word: str) -> str:
    """The kind (:data:`ITN_KINDS`) of a written word that needs ITN."""
    if re.fullmatch(r"1\d{3}s?|20\d{2}s?", word):
        return "year"
    if re.fullmatch(r"\d{1,3}(,\d{3})*|\d+", word):
        return "number"
    return "number+text" if any(ch.isdigit() for ch in word) else "word"


class ItnOutcome(NamedTuple):
    """One reference word that needs ITN: the word, the hypothesis word aligned to it (None: deleted), and whether
    they are equal (case and marks ignored, as in I-WER)."""

    word: str
    hypothesis: str | None
    correct: bool


def itn_outcomes(ref: str, hyp: str, spoken: str) -> list[ItnOutcome]:
    """Word by word view of :func:`iwer_counts` without insertions: every ITN word of ``ref`` and what became of it."""
    ref_words = [fold_case(w) for w in words(ref)]
    hyp_words = [fold_case(w) for w in words(hyp)]
    aligned = {i: j for i, j in align_pairs(ref_words, hyp_words) if i is not None}
    outcomes = []
    for i in itn_positions(ref, spoken):
        j = aligned.get(i)
        got = hyp_words[j] if j is not None else None
        outcomes.append(ItnOutcome(ref_words[i], got, got == ref_words[i]))
    return outcomes
