"""The text rules of nemo_pc: the one place that says what a word, a mark and normalized text are.

Every other part of the package (metrics, manifest builders, datasets, the text formatter) imports these
functions instead of writing its own regular expressions.

Definitions:
    * A **word** is a run of letters and digits. An apostrophe between two letters or digits stays inside the
      word ("don't", "rock'n'roll"), and so does a ``.`` or ``,`` between two digits ("12.3", "1,000"), because
      removing it would change the number. Curly apostrophes are written as ``'``.
    * A **hyphen** between two word characters splits the word by default ("well-known" -> "well", "known"), as
      in LibriSpeech's normalized transcripts; ``hyphens="keep"`` keeps such words whole.
    * A **mark** is one of the characters of the mark set, a parameter everywhere (default ``.,?``). A user's set
      is read by :func:`parse_marks`: each character one punctuation mark or symbol, listed once, in the order the
      per-mark tables show them.
    * **Folding**: before text is reduced to a mark set (:func:`preprocess_punctuated`), each mark outside the set
      that the mark map names is written as its target (:data:`DEFAULT_MARK_MAP`: ``!`` and ``;`` become ``.``,
      ``:`` becomes ``,``). A mark inside the set is never folded: with the set ``.,?!`` an ``!`` stays ``!`` while
      ``;`` still becomes ``.`` (:func:`fold_map`).
    * Everything else (quotes, brackets, dashes, symbols, marks outside the set) is dropped.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from functools import lru_cache

TEXT_RULES_VERSION = 1
"""Raised whenever a change to these rules changes what :func:`normalize` or :func:`preprocess_punctuated` return, so
that texts derived and cached under the old rules (:mod:`nemo_pc.data.normalized_text`) are derived again."""

DEFAULT_MARKS = ".,?"
"""The mark set of the LibriSpeech-PC training recipe (papers/002 §5)."""

DEFAULT_MARK_MAP: Mapping[str, str] = {"!": ".", ";": ".", ":": ","}
"""How marks outside the mark set are folded into it before training (papers/003 appendix); see :func:`fold_map`."""

SEGMENT_MARKS = ";.?!"
"""Sentence-ending marks that papers/001 §3.1 maps to one segmentation mark."""

CASE_CLASSES = ("LOWER", "CAPITAL", "ACRONYM", "MIXED")
"""Truecasing classes of papers/003 §3.1."""

_FOLD = str.maketrans({"æ": "ae", "œ": "oe", "ß": "ss", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th"})
_APOSTROPHE_CHARS = "'\u2019\u02bc\u2018`"
_APOSTROPHES = str.maketrans({ch: "'" for ch in _APOSTROPHE_CHARS[1:]})
_HYPHENS = "-\u2010\u2011"
_ALNUM = r"(?:[^\W_]|[\u0300-\u036f])"  # letters, digits and the combining diacritics that lower() may produce


def _marks_key(marks: str | Iterable[str]) -> str:
    key = "".join(sorted(set(marks)))
    for mark in key:
        if len(mark) != 1 or _is_word_char(mark) or mark.isspace():
            raise ValueError(f"a mark must be one punctuation character, got {mark!r}")
    return key


def _is_word_char(ch: str) -> bool:
    return ch.isalnum()


def _not_a_mark(ch: str) -> str | None:
    """Why a character cannot be a mark of a user's set (``None`` when it can)."""
    if ch in _APOSTROPHE_CHARS:
        return "an apostrophe (it joins words)"
    if ch in _HYPHENS:
        return "a hyphen (it joins words)"
    category = unicodedata.category(ch)
    if category[0] in "LN":
        return "a letter or digit"
    if category[0] == "Z" or ch.isspace():
        return "a space"
    if category[0] == "M":
        return "a combining character"
    if category[0] == "C":
        return "a control or unassigned character"
    return None


def parse_marks(value: str | Iterable[str], name: str = "marks") -> str:
    """Checks a user's mark set (a CLI option or config key) and returns it as a string, in the order given.

    Each character must be one punctuation mark or symbol (Unicode categories P and S), listed once; apostrophes
    and hyphens are not marks, because they join words (see the module docstring). The order is the order of the
    per-mark tables of the metrics.

    Args:
        value: the set as a string (``".,?!;"``) or a list of one-character strings (a YAML list).
        name: how the error names the setting, e.g. ``"--marks"`` or ``"model.marks"``.

    Raises:
        ValueError: one line naming the setting and the bad value, e.g.
            ``--marks: 'a' in '.,a' is a letter or digit, not a mark``.
    """
    if isinstance(value, str):
        chars = list(value)
    elif isinstance(value, Iterable) and all(isinstance(item, str) and len(item) == 1 for item in value):
        chars = list(value)
    else:
        raise ValueError(f"{name} must be a string of marks such as {DEFAULT_MARKS!r}, got {value!r}")
    text = "".join(chars)
    if not chars:
        raise ValueError(f"{name} must name at least one mark")
    for index, ch in enumerate(chars):
        reason = _not_a_mark(ch)
        if reason:
            shown = repr(ch) if ch.isprintable() and unicodedata.category(ch)[0] != "M" else f"U+{ord(ch):04X}"
            raise ValueError(f"{name}: {shown} in {text!r} is {reason}, not a mark")
        if ch in chars[:index]:
            raise ValueError(f"{name}: {ch!r} appears twice in {text!r}")
    return text


def fold_map(marks: str | Iterable[str], mark_map: Mapping[str, str] | None = None) -> dict[str, str]:
    """The folds applied before text is reduced to ``marks``: the entries of ``mark_map`` (default
    :data:`DEFAULT_MARK_MAP`) whose mark is outside the set.

    A mark of the set is kept as written: ``fold_map(".,?")`` is the whole default map, ``fold_map(".,?!")`` is
    ``{";": ".", ":": ","}``. A target outside the set is dropped later with every other character outside it.
    """
    kept = set(marks)
    folds = DEFAULT_MARK_MAP if mark_map is None else mark_map
    return {mark: target for mark, target in folds.items() if mark not in kept}


@lru_cache(maxsize=64)
def _token_regex(marks: str, keep_hyphens: bool) -> re.Pattern:
    joiners = [r"'(?=" + _ALNUM + ")", r"(?<=\d)[.,](?=\d)"]
    if keep_hyphens:
        joiners.append(f"[{re.escape(_HYPHENS)}](?={_ALNUM})")
    word = f"{_ALNUM}+(?:(?:{'|'.join(joiners)}){_ALNUM}+)*"
    if not marks:
        return re.compile(word)
    return re.compile(f"{word}|[{re.escape(marks)}]")


def canonicalize(text: str) -> str:
    """Applies NFC, writes every apostrophe variant as ``'`` and collapses whitespace."""
    return " ".join(unicodedata.normalize("NFC", text).translate(_APOSTROPHES).split())


def tokenize(text: str, marks: str | Iterable[str] = DEFAULT_MARKS, hyphens: str = "split") -> list[str]:
    """Splits text into words and marks for punctuation-aware scoring; case is kept.

    Args:
        text: any text.
        marks: the mark set; each of its characters becomes a token of its own.
        hyphens: ``"split"`` (default) or ``"keep"`` for words joined by hyphens.

    Returns:
        Tokens in order, e.g. ``tokenize("Let's eat, Bob!", ".,?!") == ["Let's", "eat", ",", "Bob", "!"]``.
    """
    if hyphens not in ("split", "keep"):
        raise ValueError(f"hyphens must be 'split' or 'keep', got {hyphens!r}")
    return _token_regex(_marks_key(marks), hyphens == "keep").findall(canonicalize(text))


def words(text: str, hyphens: str = "split") -> list[str]:
    """The words of ``text`` with their case, without any mark."""
    return tokenize(text, marks="", hyphens=hyphens)


def fold_case(word: str) -> str:
    """Lower case in NFC; the case-insensitive form of a word everywhere in nemo_pc."""
    return unicodedata.normalize("NFC", word.lower())


def normalize(text: str) -> str:
    """Lower-cases, drops every mark except apostrophes inside words, and collapses spaces."""
    return " ".join(fold_case(word) for word in words(text))


def is_mark(token: str, marks: str | Iterable[str] = DEFAULT_MARKS) -> bool:
    """Whether a token from :func:`tokenize` is a mark of the given set."""
    return len(token) == 1 and token in set(marks)


def map_marks(text: str, mark_map: Mapping[str, str]) -> str:
    """Replaces marks character by character, e.g. ``{"!": "."}``; an empty target deletes the mark."""
    return canonicalize(text).translate(str.maketrans(dict(mark_map)))


def word_marks(text: str, marks: str | Iterable[str] = DEFAULT_MARKS) -> list[tuple[str, str | None]]:
    """Pairs each word with the mark that follows it (``None`` when no mark follows).

    A run of marks keeps its first mark; marks before the first word are dropped.
    """
    mark_set = set(marks)
    pairs: list[tuple[str, str | None]] = []
    for token in tokenize(text, marks):
        if len(token) == 1 and token in mark_set:
            if pairs and pairs[-1][1] is None:
                pairs[-1] = (pairs[-1][0], token)
        else:
            pairs.append((token, None))
    return pairs


def join_word_marks(pairs: Iterable[tuple[str, str | None]], separate_marks: bool = False) -> str:
    """Inverse of :func:`word_marks`: writes words with their marks, attached or space-separated."""
    parts = []
    for word, mark in pairs:
        parts.append(word)
        if mark:
            if separate_marks:
                parts.append(mark)
            else:
                parts[-1] += mark
    return " ".join(parts)


def preprocess_punctuated(
    text: str,
    marks: str | Iterable[str] = DEFAULT_MARKS,
    mark_map: Mapping[str, str] | None = None,
    separate_marks: bool = False,
) -> str:
    """The training-text preprocessing of papers/002 §5, with case kept.

    ``mark_map`` (default :data:`DEFAULT_MARK_MAP`) first folds the marks outside the set into it (a mark of
    the set is never folded, see :func:`fold_map`); then only the marks of ``marks`` are kept, one per gap
    between words, and whitespace is collapsed. With ``separate_marks`` a space goes before every mark
    ("done." -> "done .").
    """
    marks = "".join(marks)
    mapped = map_marks(text, fold_map(marks, mark_map))
    return join_word_marks(word_marks(mapped, marks), separate_marks=separate_marks)


def strip_marks(text: str) -> str:
    """Cased text without marks: the words of ``text`` joined by single spaces."""
    return " ".join(words(text))


def case_class(word: str) -> str:
    """The truecasing class of a word: ``LOWER``, ``CAPITAL``, ``ACRONYM`` or ``MIXED`` (papers/003 §3.1).

    Only cased letters count: "2024" and "don't" are LOWER, "I" and "Paris" CAPITAL, "NASA" and "U.S." ACRONYM,
    "McDonald's" and "iPhone" MIXED.
    """
    letters = [ch for ch in word if ch.isupper() or ch.islower()]
    if not letters or not any(ch.isupper() for ch in letters):
        return "LOWER"
    if all(ch.isupper() for ch in letters):
        return "CAPITAL" if len(letters) == 1 else "ACRONYM"
    if letters[0].isupper() and all(ch.islower() for ch in letters[1:]):
        return "CAPITAL"
    return "MIXED"


def has_upper(word: str) -> bool:
    """Whether a word contains an upper-case letter (it counts in N_c of papers/000 eq. 8)."""
    return any(ch.isupper() for ch in word)


@lru_cache(maxsize=1 << 16)
def fold(word: str) -> str:
    """A comparison key for a normalized word: accents removed and ligatures spelled out."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word.translate(_FOLD))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def recase(word: str, model: str) -> str:
    """Writes a lower-case word in the case pattern of ``model``: all upper, capitalized, or lower."""
    letters = [ch for ch in model if ch.isalpha()]
    if len(letters) > 1 and all(ch.isupper() for ch in letters):
        return word.upper()
    if letters and letters[0].isupper():
        return word[:1].upper() + word[1:]
    return word
