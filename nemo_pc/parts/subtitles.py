"""Timed segments as SubRip (SRT), WebVTT and JSON lines.

A cue's text is one segment's text, wrapped at ``line_width`` characters (42 by default, the common subtitle line
length); a cue never holds an empty line, which would end it early in both formats, nor the ``-->`` of a timing
line. WebVTT escapes ``&``, ``<`` and ``>``; SRT has no escapes. Where a cue ends (sentence marks, pauses, at most
two lines and seven seconds) is decided when the segments are built (:class:`nemo_pc.parts.longform.CueRules`).
Torch-free.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from typing import Protocol

FORMATS = {"srt": ".srt", "vtt": ".vtt", "json": ".jsonl"}
"""Output format names and the file suffix each one writes."""

LINE_WIDTH = 42
"""Characters a subtitle line holds at most (the common subtitle line length)."""


class TimedText(Protocol):
    start: float
    end: float

    @property
    def text(self) -> str: ...

    @property
    def text_normalized(self) -> str: ...

    def as_dict(self) -> dict: ...


def clock(seconds: float, decimal: str) -> str:
    """``HH:MM:SS,mmm`` (SRT, ``decimal=","``) or ``HH:MM:SS.mmm`` (WebVTT, ``decimal="."``)."""
    millis = max(round(seconds * 1000), 0)
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def _cue_text(segment: TimedText, mode: str) -> str:
    return segment.text_normalized if mode == "normalized" else segment.text


def wrap_lines(text: str, line_width: int = LINE_WIDTH) -> list[str]:
    """A cue's lines: its words (every kind of line break or space read as one space, ``-->`` as ``->``) wrapped
    between words at ``line_width`` characters; a word longer than a line keeps its own line. The cue rules
    (:class:`nemo_pc.parts.longform.CueRules`) count lines with this function too."""
    words = " ".join(text.split()).replace("-->", "->")
    return textwrap.wrap(words, line_width, break_long_words=False, break_on_hyphens=False)


def _cue_lines(text: str, line_width: int) -> str:
    return "\n".join(wrap_lines(text, line_width)) or "..."


def to_srt(segments: Sequence[TimedText], mode: str = "punctuated", line_width: int = LINE_WIDTH) -> str:
    """SubRip: numbered cues from 1, ``start --> end``, the text of ``mode``, a blank line after each cue."""
    cues = []
    for number, segment in enumerate(segments, start=1):
        timing = f"{clock(segment.start, ',')} --> {clock(segment.end, ',')}"
        cues.append(f"{number}\n{timing}\n{_cue_lines(_cue_text(segment, mode), line_width)}\n")
    return "\n".join(cues)


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_vtt(segments: Sequence[TimedText], mode: str = "punctuated", line_width: int = LINE_WIDTH) -> str:
    """WebVTT: the ``WEBVTT`` header, then one cue per segment (the text of ``mode``), each after a blank line."""
    cues = ["WEBVTT\n"]
    for segment in segments:
        timing = f"{clock(segment.start, '.')} --> {clock(segment.end, '.')}"
        cues.append(f"{timing}\n{_vtt_escape(_cue_lines(_cue_text(segment, mode), line_width))}\n")
    return "\n".join(cues)


def to_jsonl(segments: Sequence[TimedText]) -> str:
    """One JSON object per segment and line (``segment.as_dict()``)."""
    return "".join(json.dumps(segment.as_dict(), ensure_ascii=False) + "\n" for segment in segments)


def render(segments: Sequence[TimedText], name: str, mode: str = "punctuated", line_width: int = LINE_WIDTH) -> str:
    """The segments in one of :data:`FORMATS`; subtitles show the text of ``mode`` (JSON lines hold both), wrapped
    at ``line_width`` characters.

    Raises:
        ValueError: an unknown format name.
    """
    if name == "srt":
        return to_srt(segments, mode, line_width)
    if name == "vtt":
        return to_vtt(segments, mode, line_width)
    if name == "json":
        return to_jsonl(segments)
    raise ValueError(f"unknown output format {name!r}; known: {', '.join(FORMATS)}")


def parse_formats(value: str) -> list[str]:
    """A comma-separated list of format names (``jsonl`` reads as ``json``), in order, without repeats.

    Raises:
        ValueError: an empty list or an unknown name.
    """
    names = []
    for raw in value.split(","):
        name = {"jsonl": "json", "webvtt": "vtt"}.get(raw.strip().lower(), raw.strip().lower())
        if name not in FORMATS:
            raise ValueError(f"--formats: unknown format {raw.strip()!r}; known: {', '.join(FORMATS)}")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("--formats: no format given")
    return names
