"""The WER family on the four text variants of papers/000 eq. 8 and papers/002 §6.2, plus TER (papers/001 §3.1).

The variants of a text, each a token list (marks are separate tokens, papers/002 §5):
    * ``np_nc``: no punctuation, no case (the classic WER input);
    * ``np_c``: no punctuation, case kept (WER-C);
    * ``p_nc``: punctuation kept, case folded;
    * ``p_c``: punctuation and case kept (WER-PC, PC-WER).
"""

from __future__ import annotations

from collections.abc import Iterable

from nemo_pc.metrics.align import edit_distance
from nemo_pc.parts.text import DEFAULT_MARKS, fold_case, has_upper, tokenize

VARIANTS = ("np_nc", "np_c", "p_nc", "p_c")


def text_variants(text: str, marks: str | Iterable[str] = DEFAULT_MARKS) -> dict[str, list[str]]:
    """The four token lists of ``text`` (see the module docstring)."""
    p_c = tokenize(text, marks)
    mark_set = set(marks)
    np_c = [token for token in p_c if not (len(token) == 1 and token in mark_set)]
    return {
        "np_nc": [fold_case(token) for token in np_c],
        "np_c": np_c,
        "p_nc": [fold_case(token) for token in p_c],
        "p_c": p_c,
    }


def wer_counts(ref: str, hyp: str, marks: str | Iterable[str] = DEFAULT_MARKS) -> dict[str, int]:
    """Edit errors ``E_<variant>`` and reference lengths ``N_<variant>`` for each variant, plus ``N_p`` and ``N_c``.

    ``N_p`` counts reference marks and ``N_c`` reference words that contain an upper-case letter (papers/000).
    """
    ref_v = text_variants(ref, marks)
    hyp_v = text_variants(hyp, marks)
    counts = {}
    for variant in VARIANTS:
        counts[f"E_{variant}"] = edit_distance(ref_v[variant], hyp_v[variant])
        counts[f"N_{variant}"] = len(ref_v[variant])
    counts["N_p"] = len(ref_v["p_c"]) - len(ref_v["np_c"])
    counts["N_c"] = sum(1 for word in ref_v["np_c"] if has_upper(word))
    return counts


def ter_counts(ref: str, hyp: str) -> dict[str, int]:
    """Token error rate counts: whitespace tokens of the raw texts, no normalization at all (papers/001 §3.1)."""
    ref_tokens = ref.split()
    return {"ter_E": edit_distance(ref_tokens, hyp.split()), "ter_N": len(ref_tokens)}
