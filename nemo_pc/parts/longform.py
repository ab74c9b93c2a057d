"""Long recordings in chunks: which encoder frames each chunk owns, timed tokens to words, words to sentences.

A recording is cut into chunks that tile it without gaps or overlap; the encoder of each chunk also reads some
context on both sides, and only the frames of the owned span are decoded. Every encoder frame of the recording is
owned by exactly one chunk, so a token is decoded once: the seams are merged on the frame level (CTC labels per
frame, RNN-T tokens with their emission frame, the predictor's state carried from chunk to chunk), never by joining
strings. Words are grouped from the merged token stream, so a word whose pieces fall on both sides of a seam stays
one word with its case and marks.

The chunk bounds are multiples of the encoder's frame step (``samples_per_frame``: the preprocessor's hop times the
encoder's subsampling), so that encoder frame ``k`` of a chunk that reads from sample ``read_start`` is frame
``read_start / samples_per_frame + k`` of the recording.

Torch-free; :mod:`nemo_pc.pipelines.longform` runs the models.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nemo_pc.parts.text import SEGMENT_MARKS, normalize

WORD_START = "\u2581"
"""SentencePiece's word-start marker: a piece that begins with it begins a word."""

CLOSING = "\"')]}\u00bb\u201d\u2019"
"""Characters that may follow a sentence mark at the end of a word (closing quotes and brackets)."""


@dataclass(frozen=True)
class Chunk:
    """One chunk of a recording, in samples at the model's rate.

    Attributes:
        start, end: the span the chunk owns (its frames are decoded).
        read_start, read_end: the span the encoder reads (the owned span with its context, inside the recording).
        last: whether it is the recording's last chunk (it owns every frame the encoder gives past ``start``).
    """

    start: int
    end: int
    read_start: int
    read_end: int
    last: bool

    def owned_frames(self, samples_per_frame: int, encoded_frames: int) -> tuple[int, int]:
        """The encoder frames ``[begin, end)`` of this chunk's output that it owns, given how many it got."""
        begin = (self.start - self.read_start) // samples_per_frame
        end = encoded_frames if self.last else begin + (self.end - self.start) // samples_per_frame
        return min(begin, encoded_frames), min(end, encoded_frames)

    def first_frame(self, samples_per_frame: int) -> int:
        """The recording's frame index of this chunk's first owned frame."""
        return self.start // samples_per_frame


def plan_chunks(total: int, chunk: int, context: int, samples_per_frame: int) -> list[Chunk]:
    """Chunks that tile ``[0, total)`` samples: owned spans of ``chunk`` samples (the last one shorter), each read
    with up to ``context`` samples on each side. ``chunk`` and ``context`` are rounded down to multiples of
    ``samples_per_frame`` (``chunk`` to at least one frame).

    Raises:
        ValueError: a non-positive ``total``, ``chunk`` or ``samples_per_frame``, or a negative ``context``.
    """
    if total <= 0 or samples_per_frame <= 0:
        raise ValueError(f"no audio to cut into chunks (samples={total}, samples per frame={samples_per_frame})")
    if chunk <= 0 or context < 0:
        raise ValueError(f"chunk must be positive and context not negative, got chunk={chunk}, context={context}")
    chunk = max(chunk // samples_per_frame, 1) * samples_per_frame
    context = context // samples_per_frame * samples_per_frame
    chunks = []
    for start in range(0, total, chunk):
        end = min(start + chunk, total)
        chunks.append(Chunk(start, end, max(start - context, 0), min(end + context, total), end >= total))
    return chunks


@dataclass(frozen=True)
class TimedToken:
    """A token of the merged stream: its id and its frames ``[start, end)`` in the recording."""

    id: int
    start: int
    end: int


@dataclass(frozen=True)
class TimedWord:
    """A word (with its marks, in the punctuated mode) and its time in seconds."""

    text: str
    start: float
    end: float

    def as_dict(self) -> dict:
        return {"word": self.text, "start": round(self.start, 3), "end": round(self.end, 3)}


def ctc_tokens(labels: Sequence[int], blank: int, offset: int = 0) -> list[TimedToken]:
    """CTC's greedy collapse of per-frame labels: one token per run of the same non-blank label, timed by its
    frames (``offset`` is the frame index of ``labels[0]``)."""
    tokens = []
    run_start = 0
    for index in range(1, len(labels) + 1):
        if index < len(labels) and labels[index] == labels[run_start]:
            continue
        if labels[run_start] != blank:
            tokens.append(TimedToken(int(labels[run_start]), offset + run_start, offset + index))
        run_start = index
    return tokens


def emitted_tokens(ids: Sequence[int], frames: Sequence[int], offset: int = 0) -> list[TimedToken]:
    """Transducer tokens, each timed by the frame that emitted it (``offset`` is the chunk's first frame).

    Raises:
        ValueError: ``ids`` and ``frames`` of different lengths.
    """
    if len(ids) != len(frames):
        raise ValueError(f"{len(ids)} tokens but {len(frames)} emission frames")
    return [TimedToken(int(i), offset + int(f), offset + int(f) + 1) for i, f in zip(ids, frames, strict=True)]


def words_from_tokens(
    tokens: Sequence[TimedToken],
    pieces: Sequence[str],
    detokenize: Callable[[list[int]], str],
    frame_seconds: float,
    word_start: str = WORD_START,
) -> list[TimedWord]:
    """Groups tokens into words: a piece that starts with ``word_start`` (SentencePiece's ``▁``; Whisper's
    byte-level BPE marks a leading space with ``Ġ``) starts a word. A word's text is ``detokenize`` of
    its ids, its time runs from its first token's first frame to its last token's end.

    Args:
        tokens: the merged token stream, in order.
        pieces: each token's piece (``tokenizer.ids_to_tokens``), as long as ``tokens``.
        detokenize: ids to text (``tokenizer.ids_to_text``).
        frame_seconds: seconds per encoder frame.
        word_start: the mark of a piece that begins a word.
    """
    groups: list[list[TimedToken]] = []
    for token, piece in zip(tokens, pieces, strict=True):
        if not groups or piece.startswith(word_start):
            groups.append([])
        groups[-1].append(token)
    words = []
    for group in groups:
        text = detokenize([token.id for token in group]).strip()
        if text:
            words.append(TimedWord(text, group[0].start * frame_seconds, group[-1].end * frame_seconds))
    return words


def normalized_words(words: Sequence[TimedWord]) -> list[TimedWord]:
    """The normalized mode from punctuated words by the text rules (:func:`nemo_pc.parts.text.normalize`), for a
    model whose normalized mode is its punctuated output, normalized; each word keeps its time."""
    result = []
    for word in words:
        for text in normalize(word.text).split():
            result.append(TimedWord(text, word.start, word.end))
    return result


def ends_sentence(word: str, marks: str = SEGMENT_MARKS) -> bool:
    """Whether a word ends with a sentence mark (closing quotes or brackets after it allowed)."""
    stripped = word.rstrip(CLOSING)
    return bool(stripped) and stripped[-1] in marks


@dataclass
class Segment:
    """A sentence (or a part of a long one) with its time, in both modes.

    Attributes:
        start, end: seconds.
        words: the punctuated mode's words.
        normalized: the normalized mode's words in the same span.
    """

    start: float
    end: float
    words: list[TimedWord]
    normalized: list[TimedWord] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(word.text for word in self.words)

    @property
    def text_normalized(self) -> str:
        return " ".join(word.text for word in self.normalized)

    def as_dict(self) -> dict:
        return {
            "start": round(self.start, 3),
            "end": round(self.end, 3),
            "text": self.text,
            "text_normalized": self.text_normalized,
            "words": [word.as_dict() for word in self.words],
            "words_normalized": [word.as_dict() for word in self.normalized],
        }


def split_sentences(
    words: Sequence[TimedWord], max_seconds: float | None = None, marks: str = SEGMENT_MARKS
) -> list[list[TimedWord]]:
    """Cuts punctuated words after each sentence mark, and before a word that would make a piece longer than
    ``max_seconds`` (``None``: no limit). Every word lands in exactly one piece, in order."""
    pieces: list[list[TimedWord]] = []
    current: list[TimedWord] = []
    for word in words:
        if current and max_seconds is not None and word.end - current[0].start > max_seconds:
            pieces.append(current)
            current = []
        current.append(word)
        if ends_sentence(word.text, marks):
            pieces.append(current)
            current = []
    if current:
        pieces.append(current)
    return pieces


def assign_to_spans(words: Sequence[TimedWord], spans: Sequence[tuple[float, float]]) -> list[list[TimedWord]]:
    """Gives each word to the span that holds its midpoint; the spans (in order) are cut at the midpoints of the
    gaps between them, so a word between two spans goes to the nearer one and every word lands in exactly one."""
    cuts = [(spans[i][1] + spans[i + 1][0]) / 2 for i in range(len(spans) - 1)]
    assigned: list[list[TimedWord]] = [[] for _ in spans]
    for word in words:
        assigned[bisect.bisect_right(cuts, (word.start + word.end) / 2)].append(word)
    return assigned


def build_segments(
    punctuated: Sequence[TimedWord],
    normalized: Sequence[TimedWord],
    duration: float,
    max_seconds: float | None = None,
) -> list[Segment]:
    """Sentence segments from the punctuated words, with the normalized words of the same span.

    Times are clipped to ``[0, duration]``, and a segment's end to the next one's start, so that the segments are
    in order and do not overlap. Normalized words without any punctuated word make one segment of their own.
    """
    pieces = split_sentences(punctuated, max_seconds)
    if not pieces:
        if not normalized:
            return []
        pieces = [[]]
        spans = [(normalized[0].start, normalized[-1].end)]
    else:
        spans = [(piece[0].start, piece[-1].end) for piece in pieces]
    assigned = assign_to_spans(normalized, spans)
    segments = []
    for index, (piece, words, (start, end)) in enumerate(zip(pieces, assigned, spans, strict=True)):
        start = min(max(start, 0.0), duration)
        following = spans[index + 1][0] if index + 1 < len(spans) else duration
        end = max(min(end, following, duration), start)
        if segments:
            start = max(start, segments[-1].end)
            end = max(end, start)
        segments.append(Segment(start, end, list(piece), words))
    return segments
