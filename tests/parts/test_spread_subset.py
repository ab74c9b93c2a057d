from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.parts.manifest import spread_subset


@given(st.integers(0, 300), st.integers(0, 400))
def test_a_spread_subset_keeps_order_and_size_and_reaches_over_the_whole_list(length, count):
    entries = list(range(length))
    subset = spread_subset(entries, count)
    if count == 0 or count >= length:
        assert subset == entries
        return
    assert len(subset) == count and subset == sorted(set(subset))  # no repeats, in order
    assert subset[0] == 0
    gap = length / count
    assert all(b - a <= gap + 1 for a, b in zip(subset[:-1], subset[1:], strict=True))  # no stretch left out
    assert length - 1 - subset[-1] < gap  # reaches the end


def test_a_speaker_sorted_split_keeps_every_speaker():
    rows = [{"speaker": speaker} for speaker in "aaaabbbbccccdddd"]
    assert [row["speaker"] for row in spread_subset(rows, 4)] == ["a", "b", "c", "d"]
