"""Pieces of a long recording for the AED: cut at pauses, never longer than the limit, tiling the recording."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.parts.segmentation import (
    PauseRules,
    frame_energy_db,
    plan_pieces,
    quiet_frames,
    quiet_runs,
    recording_energy_db,
)
from nemo_pc.testing.asr import tone_audio

RATE = 16000
FRAME = 160  # 10 ms


def _pieces(audio: np.ndarray, rules: PauseRules):
    return plan_pieces(frame_energy_db(audio, FRAME), len(audio), FRAME, rules)


def _talk(seconds: list[float], pause: float, noise: float = 1e-4) -> tuple[np.ndarray, list[float]]:
    """Tone utterances of the given lengths with ``pause`` seconds of faint noise between them, and the pauses'
    middles in seconds."""
    rng = np.random.default_rng(0)
    parts, middles, time = [], [], 0.0
    for index, length in enumerate(seconds):
        parts.append(tone_audio(index % 4, length, RATE))
        time += length
        if index + 1 < len(seconds):
            parts.append((noise * rng.standard_normal(int(pause * RATE))).astype(np.float32))
            middles.append(time + pause / 2)
            time += pause
    return np.concatenate(parts), middles


def test_utterances_separated_by_silences_are_cut_at_the_silences():
    audio, middles = _talk([2.0, 3.0, 2.5, 1.5], pause=0.6)
    pieces = _pieces(audio, PauseRules(max_seconds=4.0))
    cuts = [piece.end / RATE for piece in pieces[:-1]]
    assert cuts == pytest.approx(middles, abs=0.02)
    # packed up to the limit (no sentence pauses), a pause whose middle lies past the longest piece is cut inside,
    # not at a word
    pieces = _pieces(audio, PauseRules(max_seconds=3.5, sentence_pause_seconds=float("inf")))
    cuts = [piece.end / RATE for piece in pieces[:-1]]
    assert len(cuts) == len(middles)
    assert all(abs(cut - middle) < 0.3 for cut, middle in zip(cuts, middles, strict=True))
    assert all(piece.voiced for piece in pieces)


@pytest.mark.parametrize("edge", [0.0, 0.05, 0.2])
def test_a_piece_is_decoded_from_its_speech_and_a_short_edge_of_quiet(edge):
    audio, _ = _talk([2.0, 3.0, 2.5], pause=0.6)
    pieces = _pieces(audio, PauseRules(max_seconds=4.0, edge_seconds=edge))
    speech = [(0.0, 2.0), (2.6, 5.6), (6.2, 8.7)]
    for piece, (start, end) in zip(pieces, speech, strict=True):
        first, last = (sample / RATE for sample in piece.span)
        assert piece.start / RATE <= first <= last <= piece.end / RATE
        assert first == pytest.approx(max(piece.start / RATE, start - edge), abs=0.02)
        assert last == pytest.approx(min(piece.end / RATE, end + edge), abs=0.02)


def test_short_utterances_share_a_piece_and_the_longest_pause_is_taken():
    audio, middles = _talk([1.5, 1.5, 1.5, 1.5], pause=0.3)
    long_pause = np.zeros(int(1.0 * RATE), np.float32)
    cut = len(audio) / RATE + 0.5
    audio = np.concatenate([audio, long_pause, tone_audio(1, 2.0, RATE)])
    pieces = _pieces(audio, PauseRules(max_seconds=9.0))
    assert [piece.end / RATE for piece in pieces[:-1]] == pytest.approx([cut], abs=0.02)


def test_a_sentence_pause_ends_a_piece_that_could_hold_more():
    audio, middles = _talk([2.0, 3.0, 2.5, 1.5], pause=0.6)
    pieces = _pieces(audio, PauseRules(max_seconds=12.0))
    assert [piece.end / RATE for piece in pieces[:-1]] == pytest.approx(middles, abs=0.02)
    # without the rule the four utterances (10.8 s) share one piece of up to 12 s
    packed = _pieces(audio, PauseRules(max_seconds=12.0, sentence_pause_seconds=float("inf")))
    assert len(packed) == 1
    # shorter pauses do not end a piece
    assert len(_pieces(audio, PauseRules(max_seconds=12.0, sentence_pause_seconds=0.8))) == 1


def test_a_piece_shorter_than_the_least_joins_its_neighbour():
    audio, middles = _talk([2.0, 0.2, 2.0], pause=0.45)
    pieces = _pieces(audio, PauseRules(max_seconds=10.0, min_seconds=1.0))
    # the 0.2-s utterance and the pauses around it (under 1 s) cannot stand alone: it joins the utterance after it
    assert [piece.end / RATE for piece in pieces[:-1]] == pytest.approx([middles[0]], abs=0.02)
    assert all(piece.end - piece.start >= 1.0 * RATE for piece in pieces)


def test_a_piece_that_would_be_too_long_ends_inside_its_sentence_pause():
    audio, _ = _talk([1.0, 1.0, 1.0, 1.0], pause=0.6)
    pieces = _pieces(audio, PauseRules(max_seconds=1.5))
    # from the middle of a pause to the next one is 1.6 s: the piece ends inside the next pause, not in speech
    assert len(pieces) == 4
    pauses = [(1.0, 1.6), (2.6, 3.2), (4.2, 4.8)]
    assert all(a <= piece.end / RATE <= b for piece, (a, b) in zip(pieces, pauses, strict=False))


def test_thirty_seconds_without_a_pause_are_cut_into_pieces_of_at_most_ten_seconds():
    rng = np.random.default_rng(1)
    audio = (0.1 * rng.standard_normal(30 * RATE) * (2.0 + np.sin(np.arange(30 * RATE) / RATE * 7))).astype(np.float32)
    rules = PauseRules()
    assert not quiet_runs(quiet_frames(frame_energy_db(audio, FRAME), rules), 15)
    pieces = _pieces(audio, rules)
    assert len(pieces) >= 3
    assert all(0 < piece.end - piece.start <= 10 * RATE for piece in pieces)
    assert all(piece.end - piece.start >= 5 * RATE for piece in pieces[:-1])  # the quietest frame of the 2nd half
    assert pieces[0].start == 0 and pieces[-1].end == len(audio)


def test_a_piece_of_silence_holds_no_speech():
    audio, _ = _talk([2.0], pause=0.0)
    audio = np.concatenate([audio, np.zeros(12 * RATE, np.float32), tone_audio(2, 2.0, RATE)])
    pieces = _pieces(audio, PauseRules(max_seconds=5.0))
    assert pieces[0].voiced and pieces[-1].voiced
    assert not all(piece.voiced for piece in pieces)


def test_energies_read_in_blocks_are_the_whole_recordings():
    audio, _ = _talk([1.0, 1.0], pause=0.5)
    blocks = [audio[i : i + 4 * FRAME] for i in range(0, len(audio), 4 * FRAME)]
    np.testing.assert_allclose(recording_energy_db(blocks, FRAME), frame_energy_db(audio, FRAME))


def test_bad_rules_and_inputs_are_refused():
    with pytest.raises(ValueError, match="longest piece"):
        PauseRules(max_seconds=0)
    with pytest.raises(ValueError, match="no audio"):
        plan_pieces(np.zeros(0), 0, FRAME, PauseRules())


@given(
    layout=st.lists(st.tuples(st.floats(0.05, 14.0), st.booleans()), min_size=1, max_size=8),
    max_seconds=st.floats(0.5, 10.0),
    sentence_pause=st.sampled_from([0.2, 0.4, 1.0, float("inf")]),
)
def test_pieces_tile_the_recording_and_none_is_too_long(layout, max_seconds, sentence_pause):
    """Stretches of tone or silence in any order: the pieces cover the audio without gaps or overlaps, in order,
    each at most ``max_seconds`` long."""
    audio = np.concatenate(
        [
            tone_audio(k % 4, s, RATE) if loud else np.zeros(int(s * RATE), np.float32)
            for k, (s, loud) in enumerate(layout)
        ]
    )
    if len(audio) == 0:
        return
    pieces = _pieces(audio, PauseRules(max_seconds=max_seconds, sentence_pause_seconds=sentence_pause))
    assert pieces[0].start == 0 and pieces[-1].end == len(audio)
    assert all(a.end == b.start for a, b in zip(pieces, pieces[1:], strict=False))
    assert all(0 < piece.end - piece.start <= max_seconds * RATE + 1e-6 for piece in pieces)
