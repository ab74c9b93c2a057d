"""Punctuation metrics: PER with its per-mark breakdown (papers/002 §3, Table 4), per-mark precision / recall / F1
after alignment (papers/004 §5.3), the F1-on-WER=0 view (papers/002 Table 2) and segmentation F1 (papers/001 §3.1).

PER itself is NeMo's ``nemo.collections.common.metrics.punct_er``; this module only feeds it tokens from the
project's tokenizer, so that apostrophes, hyphens and decimal points are treated the same way as everywhere else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from nemo_pc.metrics.align import align_pairs
from nemo_pc.parts.text import DEFAULT_MARKS, SEGMENT_MARKS, fold_case, map_marks, normalize, tokenize, word_marks

PER_OPERATIONS = ("Correct", "Deletions", "Insertions", "Substitutions")
SEGMENT_MARK = "."
# Words per piece of a long utterance in PER (NeMo's alignment is quadratic; see per_counts).
PER_CHUNK_WORDS = 64
_NOT_PER_WORD = re.compile(r"[^\w']")


@lru_cache(maxsize=16)
def _per_engine(marks: str):
    from nemo.collections.common.metrics.punct_er import OccurancePunctuationErrorRate

    return OccurancePunctuationErrorRate(punctuation_marks=list(marks))


def _per_text(text: str, marks: str) -> str:
    """Tokens joined by spaces, words rewritten so that NeMo's ``[\\w']+`` tokenizer sees each as one word."""
    mark_set = set(marks)
    tokens = tokenize(text, marks)
    return " ".join(t if (len(t) == 1 and t in mark_set) else _NOT_PER_WORD.sub("_", fold_case(t)) for t in tokens)


def per_counts(ref: str, hyp: str, marks: str | Iterable[str] = DEFAULT_MARKS) -> dict[str, int]:
    """PER operation counts per mark: ``per|<mark>|<Operation>`` and ``per|<mark>|to|<other mark>``.

    Words are compared case-insensitively, so a casing error does not move a mark. NeMo's PER aligns with a full
    dynamic-programming table in Python, quadratic in time and memory, so a long utterance is cut into pieces of
    about :data:`PER_CHUNK_WORDS` words at words that a linear-memory word alignment matches
    (:func:`per_chunks`), and the counts of the pieces are summed.
    """
    marks = "".join(dict.fromkeys(marks))
    if not marks:
        return {}
    counts = {}
    for mark in marks:
        for operation in PER_OPERATIONS:
            counts[f"per|{mark}|{operation}"] = 0
        for other in marks:
            if other != mark:
                counts[f"per|{mark}|to|{other}"] = 0
    ref_tokens, hyp_tokens = _per_text(ref, marks).split(), _per_text(hyp, marks).split()
    for ref_piece, hyp_piece in per_chunks(ref_tokens, hyp_tokens, set(marks)):
        amounts, substitutions = _per_engine(marks).compute_operation_amounts(" ".join(ref_piece), " ".join(hyp_piece))
        for mark in marks:
            for operation in PER_OPERATIONS:
                counts[f"per|{mark}|{operation}"] += amounts[mark][operation]
            for other in marks:
                if other != mark:
                    counts[f"per|{mark}|to|{other}"] += substitutions[mark][other]
    return counts


def per_chunks(ref: list[str], hyp: list[str], marks: set[str], size: int | None = None):
    """Pieces of two token lists (words and marks) that can be scored one by one.

    Both lists are cut before a word that the word alignment matches, once ``size`` aligned words have passed since
    the last cut; marks stay with the word before them. Where nothing matches for ``4 * size`` aligned words, both
    lists are cut at the alignment's position anyway, so a piece never grows past that. Texts of ``size`` words or
    fewer are one piece.
    """
    size = size or PER_CHUNK_WORDS
    ref_words = [k for k, token in enumerate(ref) if token not in marks]
    hyp_words = [k for k, token in enumerate(hyp) if token not in marks]
    if max(len(ref_words), len(hyp_words)) <= size:
        yield ref, hyp
        return
    ref_start = hyp_start = ref_done = hyp_done = since = 0
    for i, j in align_pairs([ref[k] for k in ref_words], [hyp[k] for k in hyp_words]):
        matched = i is not None and j is not None and ref[ref_words[i]] == hyp[hyp_words[j]]
        if (since >= size and matched) or since >= 4 * size:
            ref_cut = ref_words[ref_done] if ref_done < len(ref_words) else len(ref)
            hyp_cut = hyp_words[hyp_done] if hyp_done < len(hyp_words) else len(hyp)
            yield ref[ref_start:ref_cut], hyp[hyp_start:hyp_cut]
            ref_start, hyp_start, since = ref_cut, hyp_cut, 0
        ref_done += i is not None
        hyp_done += j is not None
        since += 1
    yield ref[ref_start:], hyp[hyp_start:]


def _score_marks(counts: dict, prefix: str, ref_mark: str | None, hyp_mark: str | None) -> None:
    """A matching mark is a true positive; otherwise the reference mark is missed and the hypothesis mark is false."""
    if ref_mark is not None and ref_mark == hyp_mark:
        counts[f"{prefix}|{ref_mark}|tp"] += 1
        return
    if ref_mark is not None:
        counts[f"{prefix}|{ref_mark}|fn"] += 1
    if hyp_mark is not None:
        counts[f"{prefix}|{hyp_mark}|fp"] += 1


def _pair_marks(ref: str, hyp: str, marks: str) -> tuple[list, list, list]:
    ref_pairs, hyp_pairs = word_marks(ref, marks), word_marks(hyp, marks)
    alignment = align_pairs([fold_case(w) for w, _ in ref_pairs], [fold_case(w) for w, _ in hyp_pairs])
    return ref_pairs, hyp_pairs, alignment


def mark_f1_counts(ref: str, hyp: str, marks: str | Iterable[str] = DEFAULT_MARKS, prefix: str = "f1") -> dict:
    """True positives, false positives and false negatives per mark after a word alignment (papers/004 §5.3).

    Each word carries the mark that follows it. Aligned words compare their marks; a deleted reference word's mark
    is a miss and an inserted hypothesis word's mark a false alarm. Keys: ``<prefix>|<mark>|tp|fp|fn``.
    """
    marks = "".join(dict.fromkeys(marks))
    counts = {f"{prefix}|{m}|{kind}": 0 for m in marks for kind in ("tp", "fp", "fn")}
    ref_pairs, hyp_pairs, alignment = _pair_marks(ref, hyp, marks)
    for i, j in alignment:
        ref_mark = ref_pairs[i][1] if i is not None else None
        hyp_mark = hyp_pairs[j][1] if j is not None else None
        _score_marks(counts, prefix, ref_mark, hyp_mark)
    return counts


def segmentation_counts(ref: str, hyp: str, segment_marks: str = SEGMENT_MARKS) -> dict[str, int]:
    """F1 counts of one segmentation mark after mapping every sentence-ending mark to it (papers/001 §3.1)."""
    table = {mark: SEGMENT_MARK for mark in segment_marks}
    counts = mark_f1_counts(map_marks(ref, table), map_marks(hyp, table), SEGMENT_MARK, prefix="seg")
    return {key.replace(f"seg|{SEGMENT_MARK}|", "seg|"): value for key, value in counts.items()}


def wer0_counts(ref: str, hyp: str, marks: str | Iterable[str] = DEFAULT_MARKS) -> dict[str, int]:
    """Capital-letter and punctuation F1 counts, kept only when the normalized words match (papers/002 Table 2).

    On such an utterance words align one to one; capital letters are compared letter by letter and marks word by
    word. ``wer0|utts`` counts the utterances in the subset.
    """
    marks = "".join(dict.fromkeys(marks))
    counts = {"wer0|utts": 0, "wer0|cap|tp": 0, "wer0|cap|fp": 0, "wer0|cap|fn": 0}
    counts.update({f"wer0|{m}|{kind}": 0 for m in marks for kind in ("tp", "fp", "fn")})
    if normalize(ref) != normalize(hyp):
        return counts
    counts["wer0|utts"] = 1
    ref_pairs, hyp_pairs = word_marks(ref, marks), word_marks(hyp, marks)
    for (ref_word, ref_mark), (hyp_word, hyp_mark) in zip(ref_pairs, hyp_pairs, strict=True):
        for ref_ch, hyp_ch in zip(ref_word, hyp_word, strict=False):
            if ref_ch.isupper() and hyp_ch.isupper():
                counts["wer0|cap|tp"] += 1
            elif ref_ch.isupper():
                counts["wer0|cap|fn"] += 1
            elif hyp_ch.isupper():
                counts["wer0|cap|fp"] += 1
        _score_marks(counts, "wer0", ref_mark, hyp_mark)
    return counts
