import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_pc.formatter.asr_noise import (
    ConfusionStats,
    asr_like_examples,
    corrupt,
    estimate_confusions,
    fragment,
    fragment_windows,
)
from nemo_pc.formatter.build import FormatterDataConfig, build_formatter_data
from nemo_pc.formatter.labels import CASE_LABELS, ITN_LABELS, PUNCT_LABELS, LabeledText, derive_labels
from nemo_pc.formatter.sources import Document
from nemo_pc.parts.manifest import read_manifest

TEXT = "The old house stood alone. Was anyone there?"


class Scripted(random.Random):
    """A random stream that returns the given draws in order (``choices`` reads them too)."""

    def __init__(self, draws):
        super().__init__(0)
        self.draws = list(draws)

    def random(self):
        return self.draws.pop(0)


def _stats(**rates) -> ConfusionStats:
    values = {
        "substitution": 0.0,
        "deletion": 0.0,
        "insertion": 0.0,
        "char_substitution": 0.2,
        "char_deletion": 0.1,
        "char_insertion": 0.1,
        "letters": {"x": 2, "q": 1},
        "inserted_words": {"um": 1},
        "utterance_words": {"3": 2, "5": 1},
    }
    return ConfusionStats(**{**values, **rates})


def test_deletion_moves_the_mark_back_and_insertion_is_plain():
    example = derive_labels(TEXT, TEXT)
    # per word: the draw (< 0.5 deletes), then the insertion draw (< 0.5 inserts, then one draw picks the word)
    draws = [0.9, 0.9, 0.9, 0.1, 0.0, 0.9, 0.9, 0.9, 0.9, 0.1, 0.9, 0.9, 0.9, 0.9, 0.9, 0.1, 0.9]
    noisy = corrupt(example, _stats(deletion=0.5, insertion=0.5), Scripted(draws))
    assert noisy.words == ["the", "old", "um", "house", "stood", "was", "anyone"]
    assert noisy.punct == ["O", "O", "O", "O", "PERIOD", "O", "QUESTION"]
    assert noisy.case == ["CAPITAL", "LOWER", "LOWER", "LOWER", "LOWER", "CAPITAL", "LOWER"]
    assert noisy.reference() == "The old um house stood. Was anyone?"


def test_substituted_words_keep_their_labels():
    example = derive_labels(TEXT, TEXT)
    noisy = corrupt(example, _stats(substitution=1.0), random.Random(3))
    assert len(noisy) == len(example)
    assert all(new != old and new for new, old in zip(noisy.words, example.words, strict=True))
    assert (noisy.punct, noisy.case, noisy.itn) == (example.punct, example.case, example.itn)


def test_everything_deleted_keeps_the_last_word():
    example = derive_labels(TEXT, TEXT)
    noisy = corrupt(example, _stats(deletion=1.0), random.Random(0))
    assert (noisy.words, noisy.punct, noisy.case) == (["there"], ["QUESTION"], ["LOWER"])


def test_fragment_windows_tile_the_words_at_measured_lengths():
    windows = fragment_windows(40, _stats(), random.Random(1))
    assert windows[0][0] == 0 and windows[-1][1] == 40
    assert all(a[1] == b[0] for a, b in zip(windows, windows[1:], strict=False))
    assert all(end - start in (3, 5) for start, end in windows[1:-1])
    assert 1 <= windows[0][1] <= 5


def test_a_fragment_keeps_the_labels_of_the_full_text():
    example = derive_labels("The sum, $12, was paid. Then we left.", "the sum twelve dollars was paid then we left")
    piece = fragment(example, 1, 4)
    assert piece.words == ["sum", "twelve", "dollars"]
    assert piece.punct == ["COMMA", "O", "COMMA"] and piece.spans == [(1, 3, "$12")]
    assert fragment(example, 4, 6).punct == ["O", "PERIOD"]
    assert fragment(example, 4, 5).punct == ["O"]  # no sentence end forced on the last word
    assert fragment(example, 3, 6).spans == []  # a span cut by the window is left out


def test_estimate_counts_word_and_character_errors():
    stats = estimate_confusions(["A b c d.", "e f"], ["a x c", "e f g"], source="toy")
    assert (stats.substitution, stats.deletion, stats.insertion) == (1 / 6, 1 / 6, 1 / 6)
    assert (stats.char_substitution, stats.char_deletion, stats.char_insertion) == (1.0, 0.0, 0.0)
    assert stats.letters == {"x": 1} and stats.inserted_words == {"g": 1}
    assert stats.utterance_words == {"2": 1, "4": 1} and stats.source == "toy"


def test_stats_round_trip_and_refuse_impossible_rates(tmp_path):
    stats = _stats(substitution=0.3)
    assert ConfusionStats.load(stats.save(tmp_path / "c.json")) == stats
    with pytest.raises(ValueError, match="exceed 1"):
        _stats(substitution=0.7, deletion=0.5)
    with pytest.raises(ValueError, match="utterance_words"):
        _stats(utterance_words={})


@st.composite
def labeled_texts(draw):
    size = draw(st.integers(1, 30))
    words = draw(st.lists(st.text("abcdefgh", min_size=1, max_size=8), min_size=size, max_size=size))
    labels = [
        draw(st.lists(st.sampled_from(names), min_size=size, max_size=size))
        for names in (PUNCT_LABELS, CASE_LABELS, ITN_LABELS)
    ]
    start = draw(st.integers(0, size - 1))
    end = draw(st.integers(start + 1, size))
    return LabeledText(words, *labels, [(start, end, "W")])


rates = st.floats(0.0, 0.5)


@settings(max_examples=60, deadline=None)
@given(labeled_texts(), rates, rates, rates, st.integers(0, 2**32))
def test_noisy_labels_align_one_to_one_with_words(example, sub, dele, ins, seed):
    stats = _stats(substitution=sub, deletion=dele, insertion=ins)
    pieces = asr_like_examples(example, stats, random.Random(seed))
    assert pieces
    for noisy in pieces:
        assert len(noisy.words) == len(noisy.punct) == len(noisy.case) == len(noisy.itn) >= 1
        assert set(noisy.punct) <= set(PUNCT_LABELS) and set(noisy.case) <= set(CASE_LABELS)
        assert set(noisy.itn) <= set(ITN_LABELS) and all(noisy.words)
        assert all(0 <= start < end <= len(noisy) for start, end, _ in noisy.spans)


def _documents():
    return [
        Document(f"book:{k}", "book", "The old house stood alone. Was anyone there? Nobody answered, so she left.")
        for k in range(30)
    ]


def _build(tmp_path, name, **changes):
    config = FormatterDataConfig(
        sources=(), tn="none", dev=0.2, test=0.2, example_words=12, tokenizer_vocab=300, **changes
    )
    return build_formatter_data(tmp_path / name, config, cache_dir=tmp_path / "cache", documents=_documents())


def test_option_off_leaves_the_build_unchanged_and_on_adds_train_fragments_only(tmp_path):
    confusions = _stats(substitution=0.3, deletion=0.1, insertion=0.1).save(tmp_path / "confusions.json")
    plain = _build(tmp_path, "plain")
    off = _build(tmp_path, "off", asr_confusions=str(confusions))
    on = _build(tmp_path, "on", asr_like=1.0, asr_confusions=str(confusions))
    for name, path in plain.items():
        assert path.read_bytes() == off[name].read_bytes(), name
        if name not in ("train_tagger", "summary"):
            assert path.read_bytes() == on[name].read_bytes(), name
    clean, noisy = read_manifest(plain["train_tagger"]), read_manifest(on["train_tagger"])
    assert [row for row in noisy if row in clean] == clean
    added = [row for row in noisy if row not in clean]
    assert added and {row["doc_id"] for row in added} == {row["doc_id"] for row in clean}
    with pytest.raises(ValueError, match="asr_confusions"):
        FormatterDataConfig(asr_like=0.5)


def test_fragment_stats_keep_lengths_and_make_no_errors():
    from nemo_pc.formatter.asr_noise import fragment_stats

    stats = fragment_stats(["One two three.", "Four five"], source="dev")
    assert (stats.substitution, stats.deletion, stats.insertion) == (0.0, 0.0, 0.0)
    assert stats.utterance_words == {"2": 1, "3": 1} and stats.source == "dev"
    example = derive_labels(TEXT, TEXT)
    pieces = asr_like_examples(example, stats, random.Random(0))
    assert [word for piece in pieces for word in piece.words] == example.words  # clean words, tiled
    assert {len(piece) for piece in pieces[:-1]} <= {2, 3}
