"""Word times for the AED: CTC forced alignment of the normalized words, carried to the punctuated words."""

import numpy as np
import pytest
import torch

from nemo_pc.parts.longform import TimedWord
from nemo_pc.parts.word_times import align_words, carry_times, needed_frames, spread_evenly, word_spans

BLANK = 4


def _log_probs(frames: int, peaks: dict[int, int], vocabulary: int = 5) -> torch.Tensor:
    """``(frames, vocabulary)`` log probabilities: the blank likely everywhere but at ``peaks`` (frame: token)."""
    rng = np.random.default_rng(0)
    logits = rng.normal(0.0, 0.3, (frames, vocabulary))
    logits[:, BLANK] += 4.0
    for frame, token in peaks.items():
        logits[frame, token] += 8.0
    return torch.log_softmax(torch.tensor(logits, dtype=torch.float32), dim=-1)


def test_the_viterbi_alignment_times_each_word_in_order_inside_the_piece():
    words = [[0, 1], [1], [2, 3, 3]]
    peaks = {3: 0, 5: 1, 11: 1, 20: 2, 22: 3, 25: 3}
    spans = align_words(_log_probs(30, peaks), words, BLANK)
    assert spans == [(3, 6), (11, 12), (20, 26)]
    assert all(0 <= a < b <= 30 for a, b in spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_the_alignment_is_monotone_whatever_the_log_probabilities():
    generator = torch.Generator().manual_seed(3)
    for frames in (6, 9, 40):
        log_probs = torch.log_softmax(torch.randn(frames, 5, generator=generator), dim=-1)
        spans = align_words(log_probs, [[0], [1, 1], [2]], BLANK)
        assert spans is not None
        assert all(0 <= a < b <= frames for a, b in spans)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_more_tokens_than_frames_cannot_be_aligned():
    assert needed_frames([1, 1, 2]) == 4
    assert align_words(_log_probs(3, {}), [[1, 1], [2]], BLANK) is None
    assert align_words(_log_probs(3, {}), [[1], []], BLANK) is None
    assert align_words(_log_probs(3, {}), [], BLANK) == []


def test_a_path_that_skips_a_token_gives_no_spans():
    assert word_spans([0, 1, 2, 3, 4], [1, 1]) == [(1, 2), (3, 4)]
    assert word_spans([0, 1, 2, 2, 4], [1, 1]) is None  # token 2 (state 3) never visited
    assert word_spans([0, 1, 0, 3, 4], [1, 1]) is None  # goes back


def test_spreading_shares_the_span_evenly():
    words = spread_evenly(["a", "b", "c", "d"], 2.0, 4.0)
    assert [(w.start, w.end) for w in words] == [(2.0, 2.5), (2.5, 3.0), (3.0, 3.5), (3.5, 4.0)]


def _timed(*spans: tuple[str, float, float]) -> list[TimedWord]:
    return [TimedWord(*span) for span in spans]


def test_punctuated_words_take_the_times_of_the_normalized_words_they_align_with():
    normalized = _timed(("hello", 1.0, 1.4), ("mister", 1.6, 1.9), ("smith", 2.0, 2.5), ("bye", 3.0, 3.2))
    punctuated = carry_times(normalized, "Hello, Mr. Smith. Bye", 0.5, 4.0)
    assert [w.text for w in punctuated] == ["Hello,", "Mr.", "Smith.", "Bye"]
    assert punctuated[0] == TimedWord("Hello,", 1.0, 1.4)
    assert punctuated[2:] == [TimedWord("Smith.", 2.0, 2.5), TimedWord("Bye", 3.0, 3.2)]
    assert 1.4 <= punctuated[1].start <= punctuated[1].end <= 2.0


def test_words_of_one_side_only_are_spread_over_the_gaps():
    normalized = _timed(("two", 1.0, 1.5), ("cats", 2.0, 2.5))
    punctuated = carry_times(normalized, "Oh, two cats, yes.", 0.0, 4.0)
    assert [w.text for w in punctuated] == ["Oh,", "two", "cats,", "yes."]
    assert punctuated[0] == TimedWord("Oh,", 0.0, 1.0)
    assert punctuated[3] == TimedWord("yes.", 2.5, 4.0)
    times = [t for w in punctuated for t in (w.start, w.end)]
    assert times == sorted(times)
    assert carry_times(normalized, "Two two cats <T>", 0.0, 4.0) == spread_evenly(
        ["Two", "two", "cats", "<T>"], 1.0, 2.5
    )
    assert carry_times([], "Hm.", 0.0, 1.0) == [TimedWord("Hm.", 0.0, 1.0)]


@pytest.mark.parametrize("text", ["", "   "])
def test_no_punctuated_words_gives_none(text):
    assert carry_times(_timed(("a", 0.0, 1.0)), text, 0.0, 1.0) == []
