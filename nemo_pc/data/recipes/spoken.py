"""Book text as a sequence of spoken-form words that remember their written case and punctuation.

Both the corpus synthesizer and the LibriSpeech-PC builder read a book through :func:`book_words`, so the words a
voice reads and the words the builder aligns to come from one place. Written tokens that a reader says
differently (numbers, currency, "Mr.") are replaced by their spoken form from NeMo text normalization; the marks
around such a token stay with the first and last spoken word, and every other word keeps its written case. Which
written words become which spoken words comes from an alignment of the two forms, because NeMo TN also changes the
case of words it does not expand.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rapidfuzz.distance import Levenshtein

from nemo_pc.parts.text import canonicalize, words

TN_MODES = ("nemo", "none")

_NEEDS_TN = re.compile(
    r"[0-9$%&@#+=/£€¥°§]|\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Capt|Col|Gen|Lt|Sgt|Rev|Messrs|Mme|Mlle|No|vs|etc)\.",
)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")
_SENTENCE_END = re.compile(r"[.?!]['\"\u201d)\]]*$")
_NOT_SENTENCE_END = re.compile(r"(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Capt|Col|Gen|Lt|Sgt|Rev|Messrs|Mme|Mlle|No|[A-Z])")


def default_cache_dir() -> Path:
    """``$NEMO_PC_CACHE`` or ``$XDG_CACHE_HOME/nemo_pc`` (``~/.cache/nemo_pc``): TN grammars and spoken forms."""
    if os.environ.get("NEMO_PC_CACHE"):
        return Path(os.environ["NEMO_PC_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "nemo_pc"


def needs_tn(sentence: str) -> bool:
    """Whether a written sentence holds something a reader says differently: digits, symbols, abbreviations."""
    return bool(_NEEDS_TN.search(sentence))


class SpokenForm:
    """Written sentence -> spoken sentence, with NeMo TN (``tn="nemo"``) or as is (``tn="none"``).

    NeMo TN is slow (tens of milliseconds a sentence, ~40 s to compile its grammars once), so only sentences for
    which :func:`needs_tn` holds go through it, and every result is kept in an SQLite file that several processes
    can share. ``tn="none"`` is for texts without digits or abbreviations, such as the KJV Bible, and for tests.

    Args:
        tn: ``"nemo"`` or ``"none"``.
        cache_dir: where the grammars and ``spoken.sqlite`` live; default :func:`default_cache_dir`.
    """

    def __init__(self, tn: str = "nemo", cache_dir: str | Path | None = None) -> None:
        if tn not in TN_MODES:
            raise ValueError(f"tn must be one of {TN_MODES}, got {tn!r}")
        self.tn = tn
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self._normalizer = None
        self._db: sqlite3.Connection | None = None

    def __getstate__(self) -> dict:
        return {"tn": self.tn, "cache_dir": self.cache_dir, "_normalizer": None, "_db": None}

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.cache_dir / "spoken.sqlite", timeout=120)
            self._db.execute("CREATE TABLE IF NOT EXISTS spoken (written TEXT PRIMARY KEY, spoken TEXT NOT NULL)")
        return self._db

    def warm_up(self) -> None:
        """Compiles (or loads) the TN grammars now, e.g. once before worker processes start."""
        if self.tn == "nemo" and self._normalizer is None:
            from nemo_text_processing.text_normalization.normalize import Normalizer

            grammars = self.cache_dir / "tn_grammars"
            grammars.mkdir(parents=True, exist_ok=True)
            self._normalizer = Normalizer(input_case="cased", lang="en", cache_dir=str(grammars))

    def convert(self, sentences: Sequence[str]) -> list[str]:
        """The spoken form of each written sentence (unchanged where TN is off or not needed)."""
        todo = sorted({s for s in sentences if self.tn == "nemo" and needs_tn(s)})
        if not todo:
            return list(sentences)
        db = self._connect()
        known: dict[str, str] = {}
        for start in range(0, len(todo), 500):
            chunk = todo[start : start + 500]
            marks = ",".join("?" * len(chunk))
            known.update(db.execute(f"SELECT written, spoken FROM spoken WHERE written IN ({marks})", chunk))
        missing = [s for s in todo if s not in known]
        if missing:
            self.warm_up()
            fresh = {s: canonicalize(self._normalizer.normalize(s, punct_post_process=True)) for s in missing}
            with db:
                db.executemany("INSERT OR REPLACE INTO spoken VALUES (?, ?)", fresh.items())
            known.update(fresh)
        return [known.get(s, s) for s in sentences]


@dataclass
class BookWords:
    """Spoken-form words of a text with the punctuation around them.

    ``keys[i]`` is the normalized word (lower case), ``surface[i]`` the word as written (case kept, or TN's case
    for expanded tokens), ``before[i]``/``after[i]`` the punctuation glued to its left/right (opening quotes,
    closing marks), and ``space[i]`` whether whitespace follows it. ``sentence_end[i]`` marks the last word of a
    sentence.
    """

    keys: list[str] = field(default_factory=list)
    surface: list[str] = field(default_factory=list)
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    space: list[bool] = field(default_factory=list)
    sentence_end: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.keys)

    def append(self, surface: str, before: str = "", after: str = "", space: bool = True) -> None:
        self.keys.append(surface.lower())
        self.surface.append(surface)
        self.before.append(before)
        self.after.append(after)
        self.space.append(space)
        self.sentence_end.append(False)

    def extend(self, other: BookWords) -> None:
        for name in ("keys", "surface", "before", "after", "space", "sentence_end"):
            getattr(self, name).extend(getattr(other, name))

    def text(self, start: int = 0, end: int | None = None) -> str:
        """The punctuated, cased text of words ``start:end``, with the marks that close the last word."""
        return render(self.piece(i) for i in range(start, len(self) if end is None else end))

    def piece(self, i: int) -> list:
        """``[before, surface, after, space]`` of word ``i``, the unit :func:`render` joins."""
        return [self.before[i], self.surface[i], self.after[i], self.space[i]]


def render(pieces: Iterable[Sequence]) -> str:
    """Joins ``[before, surface, after, space]`` pieces; a space follows a piece only where ``space`` says so.

    The glue of a last piece without space (the hyphen of "well-" when the text ends inside "well-known") is left
    out.
    """
    out: list[str] = []
    for before, surface, after, space in pieces:
        out.append(f"{before}{surface}")
        out.append(f"{after} " if space else after)
    if out and not out[-1].endswith(" "):
        out[-1] = ""
    return "".join(out).strip()


def written_words(text: str) -> BookWords:
    """Splits written text into words (the rules of :mod:`nemo_pc.parts.text`) and the glue between them."""
    text = canonicalize(text)
    found = words(text)
    out = BookWords()
    cursor = 0
    starts = []
    for word in found:
        start = text.index(word, cursor)
        starts.append(start)
        cursor = start + len(word)
    before = text[: starts[0]] if found else ""
    for i, (word, start) in enumerate(zip(found, starts, strict=True)):
        end = start + len(word)
        glue = text[end : starts[i + 1]] if i + 1 < len(found) else text[end:]
        cut = glue.rfind(" ")
        after, next_before = (glue, "") if cut < 0 else (glue[:cut], glue[cut + 1 :])
        out.append(word, before=before, after=after, space=cut >= 0 or i + 1 == len(found))
        before = next_before
    _mark_sentence_ends(out)
    return out


def _mark_sentence_ends(book: BookWords) -> None:
    for i in range(len(book)):
        last = i + 1 == len(book)
        if last or (
            book.space[i]
            and _SENTENCE_END.search(book.after[i])
            and _starts_upper(book, i + 1)
            and not (book.after[i].startswith(".") and _NOT_SENTENCE_END.fullmatch(book.surface[i]))
        ):
            book.sentence_end[i] = True


def _starts_upper(book: BookWords, i: int) -> bool:
    return book.surface[i][:1].isupper() or book.surface[i][:1].isdigit()


def sentence_spans(book: BookWords) -> list[tuple[int, int]]:
    """``(start, end)`` word ranges of the sentences of ``book``."""
    spans, start = [], 0
    for i, last in enumerate(book.sentence_end):
        if last:
            spans.append((start, i + 1))
            start = i + 1
    if start < len(book):
        spans.append((start, len(book)))
    return spans


def book_words(text: str, spoken: SpokenForm) -> BookWords:
    """The spoken-form words of a written text (see the module docstring).

    Paragraphs (separated by a blank line) and sentences (a closing ``. ? !`` before a capital) are the units that
    go through TN, so a chapter gives the same words alone as inside its book.

    Args:
        text: written text, e.g. a whole book or one chapter.
        spoken: the TN front end; ``SpokenForm("none")`` keeps the written words.

    Returns:
        The words with their keys, written case and surrounding punctuation.
    """
    written = BookWords()
    for paragraph in _PARAGRAPH_BREAK.split(text):
        written.extend(written_words(paragraph))
    spans = sentence_spans(written)
    sentences = [written.text(start, end) for start, end in spans]
    converted = spoken.convert(sentences)
    out = BookWords()
    for (start, end), before, after in zip(spans, sentences, converted, strict=True):
        part = _slice(written, start, end)
        if after != before:
            part = _respell(part, written_words(after))
        if len(part):
            part.sentence_end[-1] = True
        out.extend(part)
    return out


def _slice(book: BookWords, start: int, end: int) -> BookWords:
    part = BookWords()
    for name in ("keys", "surface", "before", "after", "space", "sentence_end"):
        setattr(part, name, getattr(book, name)[start:end])
    return part


def _respell(written: BookWords, spoken: BookWords) -> BookWords:
    """Joins the written and the spoken words of one sentence: written words where the two agree (case kept),
    TN's words and punctuation where they differ, capitalized where the written word was."""
    out = BookWords()
    for equal, w0, w1, s0, s1 in _blocks(written.keys, spoken.keys):
        if equal:
            out.extend(_slice(written, w0, w1))
            continue
        if s1 == s0:
            _carry_marks(out, written, w0, w1)
            continue
        part = _slice(spoken, s0, s1)
        if (w1 > w0 and written.surface[w0][:1].isupper()) or (w0 == 0 and not len(out)):
            part.surface[0] = part.surface[0][:1].upper() + part.surface[0][1:]
        out.extend(part)
    return out


def _blocks(a: list[str], b: list[str]) -> list[tuple[bool, int, int, int, int]]:
    """Alignment blocks of two word lists: runs of equal words, and maximal runs of edits between them."""
    blocks: list[tuple[bool, int, int, int, int]] = []
    for tag, a0, a1, b0, b1 in Levenshtein.opcodes(a, b):
        equal = tag == "equal"
        if blocks and not equal and not blocks[-1][0]:
            blocks[-1] = (False, blocks[-1][1], a1, blocks[-1][3], b1)
        else:
            blocks.append((equal, a0, a1, b0, b1))
    return blocks


def _carry_marks(out: BookWords, written: BookWords, w0: int, w1: int) -> None:
    """Keeps the marks of written words that have no spoken form on the word before them."""
    if len(out) and not out.after[-1]:
        out.after[-1] = written.after[w1 - 1]
        out.space[-1] = written.space[w1 - 1]
