"""The pure parts of long-form transcription: chunk planning and frame ownership, the frame-level merge of CTC
labels and transducer tokens across seams (property tests over chunk and context sizes), word grouping, subtitle
cues (a property test of the cue rules over random timed words) and the alignment of the normalized mode to them."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.parts.longform import (
    CueRules,
    TimedToken,
    TimedWord,
    assign_to_spans,
    build_segments,
    ctc_tokens,
    emitted_tokens,
    ends_sentence,
    normalized_words,
    plan_chunks,
    split_cues,
    word_slots,
    words_from_tokens,
)
from nemo_pc.parts.subtitles import to_srt
from nemo_pc.testing.longform import parse_srt

SPF = 4  # samples per encoder frame of the simulated encoder
PIECES = ["▁Yes", ",", "▁go", "▁ho", "me", ".", "▁Who", "▁is", "▁the", "re", "?", "▁an", "na"]
BLANK = len(PIECES)


def _detokenize(ids: list[int]) -> str:
    return "".join(PIECES[i] for i in ids).replace("▁", " ").strip()


def _encoder_frames(read_start: int, read_end: int) -> int:
    """Frames a NeMo-style encoder gives for a window: one per frame step, plus the frame at time 0."""
    return (read_end - read_start) // SPF + 1


def _simulate_chunked_labels(labels, total, chunk_samples, context, seed):
    """Runs a simulated CTC encoder chunk by chunk: it writes the true label of every frame it reads, except that
    the ``context`` frames next to an inner edge of its window are garbage (what a model without that context gets
    wrong); keeps each chunk's owned frames."""
    rng = np.random.default_rng(seed)
    context_frames = context // SPF
    merged = []
    for chunk in plan_chunks(total, chunk_samples, context, SPF):
        frames = _encoder_frames(chunk.read_start, chunk.read_end)
        local = np.array(labels[chunk.read_start // SPF : chunk.read_start // SPF + frames])
        if chunk.read_start > 0:
            local[:context_frames] = rng.integers(0, BLANK + 1, context_frames)
        if chunk.read_end < total and context_frames:
            local[-context_frames:] = rng.integers(0, BLANK + 1, context_frames)
        begin, end = chunk.owned_frames(SPF, frames)
        merged.extend(local[begin:end].tolist())
    return merged


recordings = st.integers(min_value=1, max_value=400)
chunk_sizes = st.integers(min_value=1, max_value=120)
contexts = st.integers(min_value=0, max_value=12)


@given(samples=recordings, chunk_frames=chunk_sizes, context_frames=contexts, seed=st.integers(0, 2**16))
def test_chunks_tile_the_recording_and_own_every_frame_once(samples, chunk_frames, context_frames, seed):
    total = samples * SPF + seed % SPF  # a length that need not fill the last frame step
    chunks = plan_chunks(total, chunk_frames * SPF, context_frames * SPF, SPF)
    assert chunks[0].start == 0 and chunks[-1].end == total and chunks[-1].last
    assert all(a.end == b.start for a, b in zip(chunks, chunks[1:], strict=False))
    assert all(0 <= c.read_start <= c.start < c.end <= c.read_end <= total for c in chunks)
    owned = []
    for chunk in chunks:
        begin, end = chunk.owned_frames(SPF, _encoder_frames(chunk.read_start, chunk.read_end))
        owned.extend(range(chunk.first_frame(SPF), chunk.first_frame(SPF) + end - begin))
    assert owned == list(range(_encoder_frames(0, total)))  # every frame of the whole pass, once, in order


@given(
    samples=recordings,
    chunk_frames=chunk_sizes,
    context_frames=st.integers(min_value=1, max_value=12),
    seed=st.integers(0, 2**16),
)
def test_ctc_merge_at_seams_neither_duplicates_nor_drops_words(samples, chunk_frames, context_frames, seed):
    total = samples * SPF
    rng = np.random.default_rng(seed)
    # runs of labels of random lengths, blanks between some of them, as a CTC model writes them
    runs = rng.integers(0, BLANK + 1, _encoder_frames(0, total))
    labels = np.repeat(runs, rng.integers(1, 4, len(runs)))[: len(runs)].tolist()
    merged = _simulate_chunked_labels(labels, total, chunk_frames * SPF, context_frames * SPF, seed)
    assert merged == labels
    tokens = ctc_tokens(merged, BLANK)
    assert tokens == ctc_tokens(labels, BLANK)
    words = words_from_tokens(tokens, [PIECES[t.id] for t in tokens], _detokenize, 0.04)
    assert " ".join(w.text for w in words).split() == _detokenize([t.id for t in tokens]).split()


@given(
    emissions=st.lists(st.tuples(st.integers(0, BLANK - 1), st.integers(0, 99)), max_size=60),
    chunk_frames=chunk_sizes,
)
def test_transducer_tokens_of_the_chunks_join_into_the_whole_stream(emissions, chunk_frames):
    """A transducer decodes each owned frame once, carrying its state: the tokens of the chunks, each timed from
    its chunk's first frame, are the tokens of one pass; a word cut by a seam stays one word."""
    emissions = sorted(emissions, key=lambda item: item[1])
    total = 100 * SPF
    whole = emitted_tokens([i for i, _ in emissions], [f for _, f in emissions])
    joined = []
    for chunk in plan_chunks(total, chunk_frames * SPF, 0, SPF):
        first = chunk.first_frame(SPF)
        begin, end = chunk.owned_frames(SPF, _encoder_frames(chunk.read_start, chunk.read_end))
        local = [(i, f - first) for i, f in emissions if first <= f < first + end - begin]
        joined.extend(emitted_tokens([i for i, _ in local], [f for _, f in local], offset=first))
    assert joined == whole
    words = words_from_tokens(joined, [PIECES[t.id] for t in joined], _detokenize, 0.04)
    assert " ".join(w.text for w in words) == " ".join(_detokenize([t.id for t in joined]).split())
    assert all(a.start <= b.start for a, b in zip(words, words[1:], strict=False))


def test_ctc_tokens_collapse_runs_and_drop_blanks():
    assert ctc_tokens([BLANK, 3, 3, BLANK, 3, 4, 4], BLANK, offset=10) == [
        TimedToken(3, 11, 13),
        TimedToken(3, 14, 15),
        TimedToken(4, 15, 17),
    ]
    assert ctc_tokens([], BLANK) == []


def test_emitted_tokens_refuse_unpaired_frames():
    with pytest.raises(ValueError, match="2 tokens but 1"):
        emitted_tokens([1, 2], [0])


def test_words_take_their_marks_and_the_time_of_their_pieces():
    ids = [3, 4, 5, 6, 7, 8, 9, 10]  # ▁ho me . ▁Who ▁is ▁the re ?
    tokens = [TimedToken(i, 2 * k, 2 * k + 1) for k, i in enumerate(ids)]
    words = words_from_tokens(tokens, [PIECES[i] for i in ids], _detokenize, 0.5)
    assert [(w.text, w.start, w.end) for w in words] == [
        ("home.", 0.0, 2.5),
        ("Who", 3.0, 3.5),
        ("is", 4.0, 4.5),
        ("there?", 5.0, 7.5),
    ]


def _words(*spec):
    return [TimedWord(text, start, end) for text, start, end in spec]


def _cue_texts(words, rules):
    return [cue.text for cue in split_cues(word_slots(words, None), rules)]


def test_cues_end_at_marks_and_at_the_length_limit():
    words = _words(("Yes,", 0, 1), ("go", 1, 2), ("home.", 2, 3), ('"Who', 3, 4), ('there?"', 4, 5), ("anna", 5, 8))
    assert _cue_texts(words, CueRules()) == ["Yes, go home.", '"Who there?"', "anna"]
    assert _cue_texts(words, CueRules(max_seconds=1.5)) == ["Yes,", "go", "home.", '"Who', 'there?"', "anna"]
    assert ends_sentence("home.)") and not ends_sentence("home,") and not ends_sentence(")")


def test_a_pause_ends_a_cue_below_the_caps():
    """Four short words without marks, far below two lines and seven seconds, with a 0.7 s gap in the middle."""
    words = _words(("so", 0.0, 0.2), ("we", 0.3, 0.5), ("went", 1.2, 1.5), ("on", 1.6, 1.8))
    segments = build_segments(words, None, duration=2.0)
    assert [(s.text, s.start, s.end) for s in segments] == [("so we", 0.0, 0.5), ("went on", 1.2, 1.8)]
    assert _cue_texts(words, CueRules(pause_seconds=0.8)) == ["so we went on"]
    assert _cue_texts(words, CueRules(pause_seconds=math.inf)) == ["so we went on"]


SHORT_WORDS = st.text("abcXé-'", min_size=1, max_size=10)
LONG_WORDS = st.text("xy", min_size=40, max_size=50)  # some longer than a line
TIMED_WORDS = st.tuples(
    st.one_of(SHORT_WORDS, SHORT_WORDS, SHORT_WORDS, LONG_WORDS),
    st.sampled_from(["", "", "", ",", ".", "?", '!"', ";"]),  # the mark after the word
    st.floats(0.0, 1.5),  # the gap before the word
    st.one_of(st.floats(0.01, 1.0), st.floats(0.01, 1.0), st.floats(6.5, 9.0)),  # its length, some over 7 s
)


def _timed_words(spec, with_marks: bool) -> list[TimedWord]:
    words, clock = [], 0.0
    for stem, mark, gap, length in spec:
        words.append(TimedWord(stem + mark if with_marks else stem, clock + gap, clock + gap + length))
        clock += gap + length
    return words


def _decoded_normalized(words: list[TimedWord]) -> list[TimedWord]:
    """A normalized decoding of its own that writes longer words than the punctuated one, at the same times."""
    return [TimedWord(word.text * 2, word.start, word.end) for word in normalized_words(words)]


@given(spec=st.lists(TIMED_WORDS, max_size=80), with_marks=st.booleans(), derived=st.booleans())
def test_cues_keep_the_caps_and_every_word_in_order(spec, with_marks, derived):
    """Whatever marks the model writes: at most two lines of 42 characters in both modes (a word longer than a line
    alone), at most 7 s (a longer word alone), no pause or sentence mark inside a cue, cues in order without
    overlap, and every word of both modes in exactly one cue, the normalized ones with their punctuated word.
    The normalized mode comes by the text rules (``derived``) or from a decoding of its own."""
    words = _timed_words(spec, with_marks)
    normalize = normalized_words if derived else _decoded_normalized
    rules = CueRules()
    cues = build_segments(words, None if derived else normalize(words), duration=words[-1].end if words else 0.0)
    assert [w for cue in cues for w in cue.words] == words
    assert [w for cue in cues for w in cue.normalized] == normalize(words)
    assert all(cue.normalized == normalize(cue.words) for cue in cues)
    assert all(0.0 <= a.start <= a.end <= b.start <= b.end for a, b in zip(cues, cues[1:], strict=False))
    for mode in ("punctuated", "normalized"):
        shown = [text.split("\n") for _, _, text in parse_srt(to_srt(cues, mode))] if cues else []
        for cue, lines in zip(cues, shown, strict=True):
            assert len(cue.words) == 1 or (len(lines) <= 2 and all(len(line) <= 42 for line in lines)), lines
    for cue in cues:
        assert len(cue.words) == 1 or cue.end - cue.start <= rules.max_seconds
        assert not any(ends_sentence(w.text) for w in cue.words[:-1])
        assert all(b.start - a.end <= rules.pause_seconds for a, b in zip(cue.words, cue.words[1:], strict=False))


def test_cues_end_before_a_third_line_and_a_long_word_is_alone():
    words = [TimedWord(f"word{i:02d}", i * 0.1, i * 0.1 + 0.05) for i in range(20)]  # 6 characters and a space each
    assert [len(text.split()) for text in _cue_texts(words, CueRules())] == [12, 8]  # 6 words on each of two lines
    assert _cue_texts(words[:3], CueRules(max_lines=1, line_width=13)) == ["word00 word01", "word02"]
    long = TimedWord("x" * 50, 0.4, 0.5)
    assert _cue_texts([*words[:2], long, *words[6:8]], CueRules()) == ["word00 word01", "x" * 50, "word06 word07"]


def test_normalized_words_go_to_the_nearest_span_once():
    spans = [(0.0, 2.0), (4.0, 5.0)]
    words = _words(("a", 0, 1), ("b", 2.5, 2.9), ("c", 3.2, 3.6), ("d", 4, 5), ("e", 6, 7))
    assigned = assign_to_spans(words, spans)
    assert [[w.text for w in part] for part in assigned] == [["a", "b"], ["c", "d", "e"]]


def test_segments_are_ordered_inside_the_audio_and_carry_both_modes():
    punctuated = _words(("Yes,", 0.0, 0.4), ("go", 0.4, 0.8), ("home.", 0.8, 1.4), ("Who?", 1.2, 2.2))
    segments = build_segments(punctuated, normalized_words(punctuated), duration=2.0)
    assert [(s.text, s.text_normalized) for s in segments] == [("Yes, go home.", "yes go home"), ("Who?", "who")]
    assert segments[0].end <= segments[1].start  # the overlap of the last word and the next one is clipped
    assert segments[-1].end == 2.0
    assert segments[0].as_dict()["words"][2] == {"word": "home.", "start": 0.8, "end": 1.4}  # words keep their times


def test_normalized_words_without_punctuated_ones_make_a_segment():
    (segment,) = build_segments([], _words(("yes", 1, 2)), duration=3.0)
    assert (segment.start, segment.end, segment.text, segment.text_normalized) == (1, 2, "", "yes")
    assert build_segments([], [], duration=3.0) == []


@pytest.mark.parametrize(
    ("total", "chunk", "context"), [(0, 4, 0), (8, 0, 0), (8, 4, -4)], ids=["empty", "no-chunk", "negative"]
)
def test_plan_chunks_refuses_bad_sizes(total, chunk, context):
    with pytest.raises(ValueError):
        plan_chunks(total, chunk, context, SPF)
