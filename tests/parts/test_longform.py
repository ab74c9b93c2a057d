"""The pure parts of long-form transcription: chunk planning and frame ownership, the frame-level merge of CTC
labels and transducer tokens across seams (property tests over chunk and context sizes), word grouping, sentence
segments and the alignment of the normalized mode to them."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.parts.longform import (
    TimedToken,
    TimedWord,
    assign_to_spans,
    build_segments,
    ctc_tokens,
    emitted_tokens,
    ends_sentence,
    normalized_words,
    plan_chunks,
    split_sentences,
    words_from_tokens,
)

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


def test_sentences_end_at_marks_and_at_the_length_limit():
    words = _words(("Yes,", 0, 1), ("go", 1, 2), ("home.", 2, 3), ('"Who', 4, 5), ('there?"', 5, 6), ("anna", 6, 9))
    assert [[w.text for w in piece] for piece in split_sentences(words)] == [
        ["Yes,", "go", "home."],
        ['"Who', 'there?"'],
        ["anna"],
    ]
    assert [[w.text for w in piece] for piece in split_sentences(words, max_seconds=1.5)] == [
        ["Yes,"],
        ["go"],
        ["home."],
        ['"Who'],
        ['there?"'],
        ["anna"],
    ]
    assert ends_sentence("home.)") and not ends_sentence("home,") and not ends_sentence(")")


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
