"""Tagger labels and rewriter spans from an alignment of a written text with its spoken form (papers/003 §3).

The tagger sees spoken-form words (lower case, no punctuation, like ASR output) and predicts, for each word, the
mark that follows it (punctuation head), its truecasing class (case head) and whether it belongs to a span that
needs inverse text normalization (ITN head). Words of class MIXED and runs of ITN words form the *spans* that
the rewriter turns into written form.

Labels are never guessed from the spoken text alone: NeMo TN lower-cases some words and expands others
("$12.3 million" -> "twelve point three million dollars"), so the written and the spoken words are aligned, and
every written word that has no one-to-one spoken match becomes part of an ITN unit. Edit runs that are at most
``max_gap`` matched words apart are merged into one unit, so that "twelve point three million dollars" is a
single span whose written form is "$12.3 million".

:func:`compose` is the inverse: it writes spoken words with their labels and the written form of each span. The
reference text of a training example is ``compose`` of its own labels, and the text formatter writes its output
with the same function, so that training targets and inference outputs follow one rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from rapidfuzz.distance import Levenshtein

from nemo_pc.data.recipes.spoken import BookWords, render, written_words
from nemo_pc.parts.formatter_labels import (  # noqa: F401 (the formatter's label API)
    CASE_LABELS,
    EDGE_SYMBOLS,
    ITN_LABELS,
    LABEL_OF_MARK,
    MARK_OF_LABEL,
    PUNCT_LABELS,
    SPAN_CLOSE,
    SPAN_OPEN,
)
from nemo_pc.parts.text import (
    DEFAULT_MARK_MAP,
    DEFAULT_MARKS,
    case_class,
    fold_case,
    map_marks,
    normalize,
)


@dataclass
class LabeledText:
    """Spoken words with the three label sequences and the written form of each span.

    ``spans`` holds ``(start, end, written)`` triples over word positions; ``written`` is the text the rewriter
    should produce for ``words[start:end]`` (without the mark after it, which the punctuation head predicts).
    """

    words: list[str]
    punct: list[str]
    case: list[str]
    itn: list[str]
    spans: list[tuple[int, int, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.words)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> LabeledText:
        return cls(
            list(data["words"]),
            list(data["punct"]),
            list(data["case"]),
            list(data["itn"]),
            [tuple(span) for span in data.get("spans", [])],
        )

    def reference(self) -> str:
        """The written text these labels describe (see :func:`compose`)."""
        return compose(self.words, self.punct, self.case, self.spans)


@dataclass
class _Unit:
    """A piece of the alignment: spoken words ``s0:s1`` written as written words ``w0:w1``."""

    s0: int
    s1: int
    w0: int
    w1: int
    equal: bool


def mark_label(glue: str, marks: str = DEFAULT_MARKS) -> str:
    """The punctuation label for the characters written after a word (``'),'`` -> COMMA); marks outside the set
    are folded in with :data:`nemo_pc.parts.text.DEFAULT_MARK_MAP` first."""
    for ch in map_marks(glue, DEFAULT_MARK_MAP):
        if ch in marks and ch in LABEL_OF_MARK:
            return LABEL_OF_MARK[ch]
    return "O"


def derive_labels(written: str, spoken: str, max_gap: int = 2, marks: str = DEFAULT_MARKS) -> LabeledText:
    """Labels and spans for a written text and its spoken form (e.g. from NeMo TN).

    Args:
        written: the written text, punctuated and cased.
        spoken: its spoken form; it is normalized (lower case, no marks) before alignment.
        max_gap: edit runs separated by at most this many matched words become one ITN unit.
        marks: the mark set of the punctuation head.

    Returns:
        The spoken words with their labels and spans.
    """
    book = written_words(written)
    spoken_words = normalize(spoken).split()
    units = _units(book, spoken_words, max_gap, marks)
    labeled = LabeledText(
        spoken_words, ["O"] * len(spoken_words), ["LOWER"] * len(spoken_words), ["O"] * len(spoken_words)
    )
    unit_of_word = [0] * len(spoken_words)
    for k, unit in enumerate(units):
        unit_of_word[unit.s0 : unit.s1] = [k] * (unit.s1 - unit.s0)
        _label_unit(labeled, book, unit, marks)
    for start, end in find_spans(labeled.itn, labeled.case):
        first, last = units[unit_of_word[start]], units[unit_of_word[end - 1]]
        labeled.spans.append((start, end, span_written(book, first.w0, last.w1)))
    return labeled


def _units(book: BookWords, spoken_words: list[str], max_gap: int, marks: str) -> list[_Unit]:
    """One unit per matched word pair and one per merged run of edits.

    Written words glued together without a space ("noah.smith@example.net", "1-800-772-1213") are aligned as one
    token, so they are never split between a span and its neighbours.
    """
    groups: list[tuple[int, int]] = []
    for i in range(len(book)):
        if groups and not book.space[i - 1]:
            groups[-1] = (groups[-1][0], i + 1)
        else:
            groups.append((i, i + 1))
    keys = [fold_case(span_written(book, a, b)) for a, b in groups]
    units: list[_Unit] = []
    for tag, g0, g1, s0, s1 in Levenshtein.opcodes(keys, spoken_words):
        w0 = groups[g0][0] if g0 < len(groups) else len(book)
        w1 = groups[g1 - 1][1] if g1 > g0 else w0
        if tag == "equal":
            units.extend(_Unit(s0 + k, s0 + k + 1, groups[g0 + k][0], groups[g0 + k][1], True) for k in range(g1 - g0))
        else:
            units.append(_Unit(s0, s1, w0, w1, False))
    breaks = {i for i in range(len(book)) if _written_mark(book, i, marks) != "O"}
    return _merge_gaps(units, max_gap, breaks)


def _written_mark(book: BookWords, i: int, marks: str) -> str:
    """The punctuation label of written word ``i``: its glue's mark, if a space follows (not the "." of "a.com")."""
    return mark_label(book.after[i], marks) if book.space[i] else "O"


def _merge_gaps(units: list[_Unit], max_gap: int, breaks: set[int]) -> list[_Unit]:
    """Merges edit units at most ``max_gap`` units apart unless a written mark (in ``breaks``) lies between."""
    merged: list[_Unit] = []
    last_edit = None
    for unit in units:
        prev = merged[last_edit] if last_edit is not None else None
        if (
            not unit.equal
            and prev is not None
            and len(merged) - last_edit - 1 <= max_gap
            and not breaks.intersection(_between(prev, unit))
        ):
            merged[last_edit:] = [_Unit(prev.s0, unit.s1, prev.w0, unit.w1, False)]
        else:
            merged.append(unit)
        if not unit.equal:
            last_edit = len(merged) - 1
    return merged


def _between(prev: _Unit, unit: _Unit) -> range:
    """Written words whose mark would separate two units; a unit without written words has no side of a mark."""
    first = prev.w1 - 1 if prev.w1 > prev.w0 else prev.w1
    return range(first, unit.w0 if unit.w1 > unit.w0 else unit.w0 - 1)


def _label_unit(labeled: LabeledText, book: BookWords, unit: _Unit, marks: str) -> None:
    if unit.s1 == unit.s0:
        if unit.w1 > unit.w0 and unit.s0 > 0 and labeled.punct[unit.s0 - 1] == "O":
            labeled.punct[unit.s0 - 1] = _written_mark(book, unit.w1 - 1, marks)
        return
    last = unit.s1 - 1
    labeled.punct[last] = _written_mark(book, unit.w1 - 1, marks) if unit.w1 > unit.w0 else "O"
    if unit.equal:
        labeled.case[unit.s0] = case_class(book.surface[unit.w0])
        return
    labeled.itn[unit.s0 : unit.s1] = ["ITN"] * (unit.s1 - unit.s0)
    first = span_written(book, unit.w0, unit.w1)
    labeled.case[unit.s0] = "CAPITAL" if first[:1].isupper() else "LOWER"


def span_written(book: BookWords, w0: int, w1: int) -> str:
    """The written form of words ``w0:w1``: their own spelling and the glue between them, with only symbols such as
    ``$`` and ``%`` kept at the edges (the mark after the last word belongs to the punctuation head)."""
    if w1 <= w0:
        return ""
    pieces = [book.piece(i) for i in range(w0, w1)]
    pieces[0][0] = _edge(pieces[0][0], from_end=True)
    pieces[-1][2] = _edge(pieces[-1][2], from_end=False)
    pieces[-1][3] = True
    return render(pieces)


def _edge(glue: str, from_end: bool) -> str:
    """The run of edge symbols that touches the word: the end of the glue before it, the start of the glue after."""
    chars = reversed(glue) if from_end else iter(glue)
    kept = []
    for ch in chars:
        if ch not in EDGE_SYMBOLS:
            break
        kept.append(ch)
    return "".join(reversed(kept)) if from_end else "".join(kept)


def find_spans(itn: Sequence[str], case: Sequence[str]) -> list[tuple[int, int]]:
    """Maximal runs of words labelled ITN or MIXED: the spans the rewriter converts."""
    spans: list[tuple[int, int]] = []
    start = None
    for i, (itn_label, case_label) in enumerate(zip(itn, case, strict=True)):
        inside = itn_label == "ITN" or case_label == "MIXED"
        if inside and start is None:
            start = i
        elif not inside and start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(itn)))
    return spans


def span_input(words: Sequence[str], start: int, end: int, context: int) -> str:
    """The rewriter's input for ``words[start:end]``: up to ``context`` words each side around the marked span."""
    left = words[max(0, start - context) : start]
    right = words[end : end + context]
    return " ".join([*left, SPAN_OPEN, *words[start:end], SPAN_CLOSE, *right])


def apply_case(word: str, label: str) -> str:
    """Writes a word in a truecasing class; a change that would alter the word's letters is not made."""
    if label == "CAPITAL":
        cased = word[:1].upper() + word[1:]
    elif label == "ACRONYM":
        cased = word.upper()
    else:
        return word
    return cased if fold_case(cased) == fold_case(word) and len(cased) == len(word) else word


def compose(
    words: Sequence[str],
    punct: Sequence[str],
    case: Sequence[str],
    spans: Sequence[tuple[int, int, str]],
) -> str:
    """Writes spoken words in written form: the case and the mark of each word, and each span's written form.

    A span's written form replaces its words; its first letter is capitalized when the span's first word is
    labelled CAPITAL, and the mark of its last word follows it. An empty written form removes the span's words,
    and its mark goes to the word before.
    """
    span_at = {start: (end, text) for start, end, text in spans}
    out: list[str] = []
    i = 0
    while i < len(words):
        if i in span_at:
            end, text = span_at[i]
            piece = apply_case(text, "CAPITAL") if case[i] == "CAPITAL" else text
            i = end
        else:
            piece = apply_case(words[i], case[i])
            i += 1
        mark = MARK_OF_LABEL.get(punct[i - 1], "")
        if piece:
            out.append(piece + mark)
        elif mark and out and out[-1][-1:] not in MARK_OF_LABEL.values():
            out[-1] += mark
    return " ".join(out)
