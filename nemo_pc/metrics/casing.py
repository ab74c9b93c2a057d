"""Casing metrics: truecasing F1 per class (papers/003 Table 5), CER after removing punctuation (papers/003 §5.1,
after papers/002) and mixed-case WER, M-WER (papers/003 §5.1)."""

from __future__ import annotations

from rapidfuzz.distance import Levenshtein

from nemo_pc.metrics.align import align_pairs, region_errors
from nemo_pc.parts.text import CASE_CLASSES, case_class, fold_case, strip_marks, words


def case_f1_counts(ref: str, hyp: str) -> dict[str, int]:
    """Per-class truecasing counts ``case|<CLASS>|tp|fp|fn`` over words that the recognizer got right.

    Words are aligned case-insensitively; only matched words are scored, so recognition errors do not count as
    casing errors (they are in WER). A word's class is :func:`nemo_pc.parts.text.case_class`.
    """
    counts = {f"case|{c}|{kind}": 0 for c in CASE_CLASSES for kind in ("tp", "fp", "fn")}
    ref_words, hyp_words = words(ref), words(hyp)
    for i, j in align_pairs([fold_case(w) for w in ref_words], [fold_case(w) for w in hyp_words]):
        if i is None or j is None or fold_case(ref_words[i]) != fold_case(hyp_words[j]):
            continue
        ref_class, hyp_class = case_class(ref_words[i]), case_class(hyp_words[j])
        if ref_class == hyp_class:
            counts[f"case|{ref_class}|tp"] += 1
        else:
            counts[f"case|{ref_class}|fn"] += 1
            counts[f"case|{hyp_class}|fp"] += 1
    return counts


def cer_counts(ref: str, hyp: str) -> dict[str, int]:
    """Character edits between the cased texts without marks, and the reference length in characters."""
    ref_text = strip_marks(ref)
    return {"cer_E": Levenshtein.distance(ref_text, strip_marks(hyp)), "cer_N": len(ref_text)}


def mwer_counts(ref: str, hyp: str) -> dict[str, int]:
    """M-WER counts: errors on reference words of class MIXED (McDonald's, iPhone), compared with their case.

    Words are aligned without case and without marks, as for I-WER; a MIXED word is right only if the hypothesis
    writes it with exactly the same letters and case.
    """
    ref_words, hyp_words = words(ref), words(hyp)
    region = [i for i, word in enumerate(ref_words) if case_class(word) == "MIXED"]
    errors = region_errors(
        [fold_case(w) for w in ref_words],
        [fold_case(w) for w in hyp_words],
        region,
        same=lambda i, j: ref_words[i] == hyp_words[j],
    )
    return {"mwer_E": errors, "mwer_N": len(region)}
