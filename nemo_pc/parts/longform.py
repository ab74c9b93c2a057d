"""Long recordings in chunks: which encoder frames each chunk owns, timed tokens to words, words to subtitle cues.

A recording is cut into chunks that tile it without gaps or overlap; the encoder of each chunk also reads some
context on both sides, and only the frames of the owned span are decoded. Every encoder frame of the recording is
owned by exactly one chunk, so a token is decoded once: the seams are merged on the frame level (CTC labels per
frame, RNN-T tokens with their emission frame, the predictor's state carried from chunk to chunk), never by joining
strings. Words are grouped from the merged token stream, so a word whose pieces fall on both sides of a seam stays
one word with its case and marks.

The chunk bounds are multiples of the encoder's frame step (``samples_per_frame``: the preprocessor's hop times the
encoder's subsampling), so that encoder frame ``k`` of a chunk that reads from sample ``read_start`` is frame
``read_start / samples_per_frame + k`` of the recording.

The words become subtitle cues by :class:`CueRules`: a cue ends at a sentence mark, at a pause, and before the word
that would pass two lines of 42 characters or seven seconds, so a model that writes few marks still gets short
cues. Both modes of a cue hold the same span: each normalized word belongs to the punctuated word nearest it.

Torch-free; :mod:`nemo_pc.pipelines.longform` runs the models.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nemo_pc.parts.subtitles import LINE_WIDTH, wrap_lines
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
    """A subtitle cue (a sentence, or a part of one that the cue rules cut) with its time, in both modes.

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


@dataclass(frozen=True)
class CueRules:
    """Where a subtitle cue ends, whatever marks the model writes: after a word that ends a sentence, at a pause,
    and before the word that would pass a cap. A cue that would pass a cap with its first word alone (a word longer
    than a line, or than ``max_seconds``) is that word alone. ``math.inf`` turns the pause or duration rule off.

    Attributes:
        pause_seconds: a gap longer than this between two words ends a cue.
        max_seconds: the longest cue, from its first word's start to its last word's end.
        max_lines: the most lines a cue holds, in either mode's text.
        line_width: the most characters a line holds (lines are wrapped by
            :func:`nemo_pc.parts.subtitles.wrap_lines`, as the subtitle writers wrap them).
        marks: the sentence marks that end a cue (:func:`ends_sentence`).
    """

    pause_seconds: float = 0.6
    max_seconds: float = 7.0
    max_lines: int = 2
    line_width: int = LINE_WIDTH
    marks: str = SEGMENT_MARKS

    def fits(self, text: str) -> bool:
        """Whether ``text`` wraps into at most ``max_lines`` lines of at most ``line_width`` characters."""
        lines = wrap_lines(text, self.line_width)
        return len(lines) <= self.max_lines and all(len(line) <= self.line_width for line in lines)

    def continues(self, cue: Segment, slot: Segment) -> bool:
        """Whether the next word's ``slot`` (see :func:`word_slots`) may join ``cue``: no sentence mark ends the
        cue, no pause lies between them, and the joined cue keeps within the duration and, in both modes, the
        line caps."""
        if cue.words and ends_sentence(cue.words[-1].text, self.marks):
            return False
        if slot.start - cue.end > self.pause_seconds or slot.end - cue.start > self.max_seconds:
            return False
        return self.fits(f"{cue.text} {slot.text}") and self.fits(f"{cue.text_normalized} {slot.text_normalized}")


def word_slots(punctuated: Sequence[TimedWord], normalized: Sequence[TimedWord] | None) -> list[Segment]:
    """One segment for each punctuated word, with the normalized words nearest it (:func:`assign_to_spans` over the
    words' spans), so that a cue of consecutive slots holds both modes of the same span and every word of both
    modes lands in exactly one slot. ``normalized=None`` gives each punctuated word its normalized words by the
    text rules (:func:`normalized_words`). Without punctuated words, each normalized word is a slot of its own."""
    if not punctuated:
        return [Segment(word.start, word.end, [], [word]) for word in normalized or []]
    if normalized is None:
        return [Segment(word.start, word.end, [word], normalized_words([word])) for word in punctuated]
    assigned = assign_to_spans(normalized, [(word.start, word.end) for word in punctuated])
    return [Segment(word.start, word.end, [word], near) for word, near in zip(punctuated, assigned, strict=True)]


def split_cues(slots: Sequence[Segment], rules: CueRules) -> list[Segment]:
    """Joins consecutive word slots into cues while :meth:`CueRules.continues` allows; every slot lands in exactly
    one cue, in order, and a cue always takes its first slot, so a word that passes a cap alone is a cue alone."""
    cues: list[Segment] = []
    for slot in slots:
        if cues and rules.continues(cues[-1], slot):
            cue = cues[-1]
            cue.end = max(cue.end, slot.end)
            cue.words += slot.words
            cue.normalized += slot.normalized
        else:
            cues.append(Segment(slot.start, slot.end, list(slot.words), list(slot.normalized)))
    return cues


def assign_to_spans(words: Sequence[TimedWord], spans: Sequence[tuple[float, float]]) -> list[list[TimedWord]]:
    """Gives each word to the span that holds its midpoint; the spans (in order) are cut at the midpoints of the
    gaps between them, so a word between two spans goes to the nearer one and every word lands in exactly one."""
    cuts = [(spans[i][1] + spans[i + 1][0]) / 2 for i in range(len(spans) - 1)]
    assigned: list[list[TimedWord]] = [[] for _ in spans]
    for word in words:
        assigned[bisect.bisect_right(cuts, (word.start + word.end) / 2)].append(word)
    return assigned


def clip_times(cues: Sequence[Segment], duration: float) -> list[Segment]:
    """The cues with their times clipped to ``[0, duration]`` and each end to the next cue's start, so that they are
    in order and do not overlap; a cue's time only shrinks."""
    clipped: list[Segment] = []
    for index, cue in enumerate(cues):
        start = min(max(cue.start, 0.0), duration)
        following = cues[index + 1].start if index + 1 < len(cues) else duration
        end = max(min(cue.end, following, duration), start)
        if clipped:
            start = max(start, clipped[-1].end)
            end = max(end, start)
        clipped.append(Segment(start, end, cue.words, cue.normalized))
    return clipped


def build_segments(
    punctuated: Sequence[TimedWord],
    normalized: Sequence[TimedWord] | None,
    duration: float,
    rules: CueRules | None = None,
) -> list[Segment]:
    """Subtitle cues from the punctuated words, with the normalized words of the same span: the words' slots
    (:func:`word_slots`) joined by the cue ``rules`` (:class:`CueRules`, its defaults for ``None``), with times
    clipped to the audio (:func:`clip_times`).

    Args:
        punctuated: the punctuated mode's words, in order; a cue's time is the span of its punctuated words.
        normalized: the normalized mode's words, in order, or ``None`` to take each punctuated word's by the text
            rules. Without punctuated words the cues are cut from the normalized words alone.
        duration: the audio's length in seconds.
        rules: where cues end.
    """
    return clip_times(split_cues(word_slots(punctuated, normalized), rules or CueRules()), duration)
