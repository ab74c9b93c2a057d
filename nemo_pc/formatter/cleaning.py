"""Training-text filtering and cleaning for the text formatter (papers/003 §4.1 and appendix A).

Three steps, each a function of one sentence so that any corpus can be run through them:

1. :func:`coarse_reason` drops text far from ordinary punctuation and capitalization (shouting, symbol soup).
2. :func:`clean_text` applies the appendix's heuristics: bracketed asides, emoji, HTML and speaker labels go;
   leading marks go; runs of marks collapse and ``!`` becomes ``.``; spaces are tidied; sentences start with a
   capital; "Mr", "Dr", "Prof" and "ok" are standardized; fillers and "You"/"Your" inside a sentence are
   lower-cased; a capital after an ellipsis is lower-cased; stray symbols are removed.
3. :func:`fine_reason` applies stricter limits to the cleaned sentence.

The reason functions return ``None`` for a sentence that passes, otherwise a short reason for a drop counter.
"""

from __future__ import annotations

import re

FILLERS = ("Well", "Umm", "Um", "Uh", "Uhm", "Mmm", "Hmm", "Oh", "So", "Like")
_BRACKETS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}")
_HTML = re.compile(r"<[^<>]{1,200}>")
_SPEAKER = re.compile(r"(?m)^\s*(?:[A-Z][A-Z .'-]{0,30}|Speaker \d+|[A-Z][a-z]+ ?\d*)\s*:\s+")
_EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f\u200d]")
_SYMBOLS = re.compile("[™©®•¶†‡※♪♫◦▪►▶■□●○◆◇★☆|~^*_\\\\]")
_ELLIPSIS = re.compile(r"\s*(?:\.{3,}|…)\s*(?:([A-Z])(?=[a-z]))?")
_MARK_RUN = re.compile(r"([.,?!;:])(?:\s*[.,?!;:])+")
_TITLES = re.compile(r"(?i)\b(mr|mrs|ms|dr|prof)\b(?!\.)")
_OK = re.compile(r"\b(?:ok|Ok|okay)\b(?!')")
_LEADING_MARKS = re.compile(r"^[.,?]\s+")
_SPACE_BEFORE_MARK = re.compile(r"\s+([.,?;:%])")
_SENTENCE_START = re.compile(r"(^|[.?]\s+)([a-z])")
_LETTERS = re.compile(r"[^\W\d_]")
_ALLOWED = re.compile(r"[^\w\s.,?'\"$%&@/:;#+=€£¥°-]")


def clean_text(text: str) -> str:
    """Applies the cleaning heuristics of papers/003 appendix A to one piece of text."""
    text = _HTML.sub(" ", text)
    text = _SPEAKER.sub("", text)
    text = _BRACKETS.sub(" ", text)
    text = _EMOJI.sub("", text)
    text = _SYMBOLS.sub("", text)
    text = " ".join(text.split())
    text = _ELLIPSIS.sub(lambda m: ", " + (m.group(1) or "").lower() if m.end() < len(text) else ".", text)
    text = text.replace("!", ".")
    text = _MARK_RUN.sub(r"\1", text)
    text = _SPACE_BEFORE_MARK.sub(r"\1", text)
    text = _LEADING_MARKS.sub("", text).strip()
    text = _TITLES.sub(lambda m: m.group(1).capitalize() + ".", text)
    text = _OK.sub("OK", text)
    text = _lower_inside_sentences(text)
    return _SENTENCE_START.sub(lambda m: m.group(1) + m.group(2).upper(), text)


def _lower_inside_sentences(text: str) -> str:
    """Lower-cases fillers, "You" and "Your" when they do not start a sentence."""
    names = "|".join((*FILLERS, "You", "Your"))
    return re.sub(rf"(?<![.?]\s)(?<!^)\b({names})\b", lambda m: m.group(1).lower(), text)


def coarse_reason(text: str, max_upper: float = 0.6, max_marks: float = 0.8) -> str | None:
    """Why a raw sentence is far from ordinary writing (``None`` if it is not)."""
    letters = _LETTERS.findall(text)
    if len(letters) < 2:
        return "no letters"
    if sum(ch.isupper() for ch in letters) > max_upper * len(letters):
        return "mostly upper case"
    if sum(not ch.isalnum() and not ch.isspace() for ch in text) > max_marks * max(len(text.split()), 1):
        return "mostly symbols"
    return None


def fine_reason(
    text: str, min_words: int = 3, max_words: int = 80, max_upper_words: float = 0.5, max_marks: float = 0.5
) -> str | None:
    """Why a cleaned sentence is not good training text (``None`` if it is)."""
    tokens = text.split()
    if len(tokens) < min_words:
        return "too short"
    if len(tokens) > max_words:
        return "too long"
    if _ALLOWED.search(text):
        return "symbols out of scope"
    if not text.rstrip("\"')]\u201d\u2019").endswith((".", "?")):
        return "no final mark"
    if sum(t[:1].isupper() for t in tokens) > max_upper_words * len(tokens):
        return "too many capitals"
    if sum(t[-1:] in ".,?;:" for t in tokens) > max_marks * len(tokens):
        return "too many marks"
    return None
