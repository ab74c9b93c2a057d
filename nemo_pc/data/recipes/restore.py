"""Restores punctuation and case of normalized transcripts by aligning them to their book (papers/002 §4).

A chapter's transcripts, joined in utterance order, are first located in the book with rare word trigrams (the
longest chain of hits that increases on both sides), then aligned word by word to that region of the book with
``rapidfuzz``'s Levenshtein opcodes. Each transcript word takes the case and the punctuation of the book word it
is aligned to. Words are compared after folding accents, so "Kutúzov" in a book still aligns to "KUTUZOV" in a
transcript and the utterance can be reported as a unicode mismatch instead of as a misalignment.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

from nemo_pc.data.recipes.spoken import BookWords, render
from nemo_pc.parts.text import fold, normalize, recase

EDGE_PAD = 3
"""Book words allowed before the first and after the last located word of a chapter. More would let the edges
of the transcript scatter over the book words around the chapter at equal alignment cost."""
GRAM_HIT_LIMITS = (4, 64)
"""How often a trigram may occur in a book to help locate a chapter: rare ones first, then more common ones."""


@dataclass
class Restoration:
    """The outcome for one utterance.

    Attributes:
        text: the restored punctuated, cased text, or ``None`` when the utterance was not found in the book.
        edits: substituted, inserted and deleted words against the book.
        unicode_mismatch: a book word equals a transcript word only after folding accents.
        consistent: the restored text normalizes back to the transcript.
    """

    text: str | None
    edits: int = 0
    unicode_mismatch: bool = False
    consistent: bool = True


class BookIndex:
    """A book's words with an index of their trigrams, built once and shared by all chapters of the book."""

    def __init__(self, book: BookWords) -> None:
        self.book = book
        self.keys = [fold(k) for k in book.keys]
        self.grams: dict[tuple[str, str, str], list[int]] = {}
        keys = self.keys
        for p in range(len(keys) - 2):
            self.grams.setdefault((keys[p], keys[p + 1], keys[p + 2]), []).append(p)

    def locate(self, words: Sequence[str]) -> tuple[int, int] | None:
        """The region ``[start, end)`` of the book that holds ``words``, or ``None`` when too little matches.

        Rare trigrams are tried first; if they give too short a chain (a chapter that repeats text found elsewhere
        in the book), more frequent ones are allowed.
        """
        needed = min(3, max(1, len(words) // 4))
        for max_hits in GRAM_HIT_LIMITS:
            chain = self._chain(words, max_hits)
            if len(chain) >= needed:
                break
        else:
            return None
        chain = _trim_chain(chain)
        (t0, p0), (t1, p1) = chain[0], chain[-1]
        return max(0, p0 - t0 - EDGE_PAD), min(len(self.keys), p1 + (len(words) - t1) + EDGE_PAD)

    def _chain(self, words: Sequence[str], max_hits: int) -> list[tuple[int, int]]:
        hits: list[tuple[int, int]] = []
        for t in range(len(words) - 2):
            positions = self.grams.get((words[t], words[t + 1], words[t + 2]))
            if positions and len(positions) <= max_hits:
                hits.extend((t, -p) for p in positions)
        hits.sort()
        return _longest_chain([(t, -negative_p) for t, negative_p in hits])


def _longest_chain(hits: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest subsequence of ``(t, p)`` hits with p strictly increasing.

    The hits are sorted by t and, for one t, by decreasing p, so a chain holds at most one hit per t.
    """
    tails: list[int] = []
    tail_index: list[int] = []
    parent = [-1] * len(hits)
    for i, (_, p) in enumerate(hits):
        k = bisect.bisect_left(tails, p)
        if k == len(tails):
            tails.append(p)
            tail_index.append(i)
        else:
            tails[k] = p
            tail_index[k] = i
        parent[i] = tail_index[k - 1] if k else -1
    chain = []
    i = tail_index[-1] if tail_index else -1
    while i >= 0:
        chain.append(hits[i])
        i = parent[i]
    chain.reverse()
    return chain


def _trim_chain(chain: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Drops stray hits at the ends of a chain that jump much further in the book than in the transcript."""

    def stray(a: tuple[int, int], b: tuple[int, int]) -> bool:
        return b[1] - a[1] > 3 * (b[0] - a[0]) + 500

    while len(chain) > 2 and stray(chain[0], chain[1]):
        chain = chain[1:]
    while len(chain) > 2 and stray(chain[-2], chain[-1]):
        chain = chain[:-1]
    return chain


def restore_chapter(index: BookIndex, transcripts: Sequence[Sequence[str]]) -> list[Restoration]:
    """Restores every utterance of one chapter.

    Args:
        index: the chapter's book.
        transcripts: the normalized words of each utterance, in reading order.

    Returns:
        One :class:`Restoration` per utterance.
    """
    flat = [fold(w) for words in transcripts for w in words]
    region = index.locate(flat)
    if region is None:
        return [Restoration(None) for _ in transcripts]
    start, end = region
    events = _events(flat, index.keys[start:end], start)
    event_of = [0] * len(flat)
    for e, (t, _, _) in enumerate(events):
        if t >= 0:
            event_of[t] = e
    results = []
    offset = 0
    for words in transcripts:
        if words:
            span = events[event_of[offset] : event_of[offset + len(words) - 1] + 1]
            results.append(_restore(index.book, list(words), offset, span))
        else:
            results.append(Restoration(None))
        offset += len(words)
    return results


def _events(flat: list[str], keys: list[str], start: int) -> list[tuple[int, int, str]]:
    """``(transcript position or -1, book position or -1, tag)`` for every aligned, inserted or deleted word."""
    events: list[tuple[int, int, str]] = []
    for tag, t0, t1, b0, b1 in Levenshtein.opcodes(flat, keys):
        if tag in ("equal", "replace") and t1 - t0 == b1 - b0:
            events.extend((t0 + k, start + b0 + k, tag) for k in range(t1 - t0))
            continue
        if tag == "replace":
            common = min(t1 - t0, b1 - b0)
            events.extend((t0 + k, start + b0 + k, tag) for k in range(common))
            t0, b0 = t0 + common, b0 + common
        events.extend((t, -1, "insert") for t in range(t0, t1))
        events.extend((-1, start + b, "delete") for b in range(b0, b1))
    return events


def _restore(book: BookWords, words: list[str], offset: int, events: list) -> Restoration:
    pieces: list[list] = []
    keys: list[str] = []
    kinds: list[str] = []
    pending_before = ""
    edits = 0
    unicode_mismatch = False
    for t, b, tag in events:
        if tag == "delete":
            edits += 1
            pending_before += book.before[b]
            if pieces and not book.space[b]:
                pieces[-1][2], pieces[-1][3] = "", True
            elif pieces and book.space[b] and not pieces[-1][2]:
                pieces[-1][2] = book.after[b]
            continue
        word = words[t - offset]
        if tag == "insert":
            edits += 1
            pieces.append([pending_before, word, "", True])
        else:
            piece = book.piece(b)
            if tag == "replace":
                edits += 1
                piece[1] = recase(word, book.surface[b])
            elif book.keys[b] != word:
                unicode_mismatch = True
            piece[0] = pending_before + piece[0]
            pieces.append(piece)
        pending_before = ""
        keys.append(word)
        kinds.append(tag)
    _fix_repeats(pieces, keys, kinds)
    text = render(pieces)
    return Restoration(text, edits, unicode_mismatch, normalize(text) == " ".join(words))


def _fix_repeats(pieces: list[list], keys: list[str], kinds: list[str]) -> None:
    """A repeated word copies the case of its twin, and the marks after the pair go after the second copy."""
    for i, kind in enumerate(kinds):
        if kind != "insert":
            continue
        if i + 1 < len(keys) and keys[i + 1] == keys[i] and kinds[i + 1] != "insert":
            pieces[i][1] = pieces[i + 1][1]
            pieces[i][0], pieces[i + 1][0] = pieces[i + 1][0], ""
        elif i > 0 and keys[i - 1] == keys[i]:
            pieces[i][1] = pieces[i - 1][1]
            pieces[i][2:4], pieces[i - 1][2:4] = pieces[i - 1][2:4], ["", True]
