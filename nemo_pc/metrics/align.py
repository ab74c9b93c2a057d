"""Token alignment on top of rapidfuzz's Levenshtein opcodes (C++), shared by every metric."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from rapidfuzz.distance import Levenshtein

Pair = tuple[int | None, int | None]


def edit_distance(ref: Sequence[str], hyp: Sequence[str]) -> int:
    """Minimum number of substitutions, deletions and insertions turning ``ref`` into ``hyp``."""
    return Levenshtein.distance(ref, hyp)


def align_pairs(ref: Sequence[str], hyp: Sequence[str]) -> list[Pair]:
    """A minimum-edit alignment as ``(ref_index, hyp_index)`` pairs; ``None`` marks a deletion or insertion.

    Matches and substitutions pair one reference token with one hypothesis token, in order.
    """
    pairs: list[Pair] = []
    for tag, i1, i2, j1, j2 in Levenshtein.opcodes(ref, hyp):
        if tag in ("equal", "replace"):
            common = min(i2 - i1, j2 - j1)
            pairs.extend((i1 + k, j1 + k) for k in range(common))
            pairs.extend((i, None) for i in range(i1 + common, i2))
            pairs.extend((None, j) for j in range(j1 + common, j2))
        elif tag == "delete":
            pairs.extend((i, None) for i in range(i1, i2))
        else:
            pairs.extend((None, j) for j in range(j1, j2))
    return pairs


def region_errors(
    ref: Sequence[str],
    hyp: Sequence[str],
    region: Collection[int],
    same: Callable[[int, int], bool] | None = None,
) -> int:
    """Word errors that fall on a subset of reference positions (the I-WER / M-WER numerator, papers/003 §5.1).

    A region word counts one error when it is deleted or substituted, or when ``same(i, j)`` rejects its match
    (for example a case-sensitive check on a case-insensitive alignment). An inserted hypothesis token counts
    when the reference word before or after the insertion point is in the region.

    Args:
        ref: reference tokens used for the alignment.
        hyp: hypothesis tokens used for the alignment.
        region: reference positions that are scored.
        same: optional extra test for aligned pairs that are equal in ``ref``/``hyp``.
    """
    region = set(region)
    if not region:
        return 0
    errors = 0
    last_ref = -1
    for i, j in align_pairs(ref, hyp):
        if i is None:
            if last_ref in region or (last_ref + 1) in region:
                errors += 1
            continue
        last_ref = i
        if i not in region:
            continue
        if j is None or ref[i] != hyp[j] or (same is not None and not same(i, j)):
            errors += 1
    return errors
