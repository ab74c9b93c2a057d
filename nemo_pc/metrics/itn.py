"""ITN word error rate, I-WER (papers/003 §5.1).

The words that need inverse text normalization are found by aligning the written reference ("on March 15th")
with its spoken form ("on march fifteenth"): written words that do not match a spoken word one to one ("15th")
need ITN. The written reference is then aligned with the hypothesis, both lower-cased and without marks, and the
errors on those words are counted.
"""

from __future__ import annotations

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
