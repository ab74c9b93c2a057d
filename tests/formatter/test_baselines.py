"""Chunking of the whole-text baselines: no chunk boundary cuts a spoken number in two."""

from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.formatter.baselines import NUMBER_WORDS, _word_chunks, format_by_chunks

WORDS = ["in", "the", "year", "seventeen", "fifty", "three", "point", "five", "king", "hundred", "and", "dollars"]


def test_a_boundary_inside_a_number_moves_to_its_end():
    text = "born in seventeen fifty three in paris"
    assert _word_chunks(text, 3) == ["born in seventeen fifty three", "in paris"]
    assert _word_chunks(text, 10) == [text]
    assert _word_chunks("", 3) == []


@given(st.lists(st.sampled_from(WORDS), max_size=60), st.integers(1, 8))
def test_chunks_keep_every_word_and_cut_numbers_only_when_too_long(words, size):
    chunks = _word_chunks(" ".join(words), size)
    assert " ".join(chunks).split() == words
    for left, right in zip(chunks, chunks[1:], strict=False):
        left_words = left.split()
        assert len(left_words) <= 2 * size
        if left_words[-1] in NUMBER_WORDS and right.split()[0] in NUMBER_WORDS:
            assert len(left_words) == 2 * size  # only a run longer than the extra allowance is cut


@given(st.lists(st.lists(st.sampled_from(WORDS), max_size=20), max_size=5), st.integers(1, 6))
def testformat_by_chunks_puts_every_text_back_together(texts, size):
    joined = [" ".join(words) for words in texts]
    calls = []

    def upper(chunks):
        calls.append(len(chunks))
        return [chunk.upper() for chunk in chunks]

    assert format_by_chunks(joined, size, upper) == [text.upper() for text in joined]
    assert len(calls) == 1  # every chunk of every text in one call
