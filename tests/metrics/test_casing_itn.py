import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.metrics import (
    ITN_KINDS,
    case_f1_counts,
    cer_counts,
    itn_kind,
    itn_outcomes,
    itn_positions,
    iwer_counts,
    mwer_counts,
)


def test_truecasing_f1_counts_by_class():
    counts = case_f1_counts("The cat sat, then left.", "the cat sat then Left?")
    assert counts["case|LOWER|tp"] == 3 and counts["case|LOWER|fp"] == 1 and counts["case|LOWER|fn"] == 1
    assert counts["case|CAPITAL|tp"] == 0 and counts["case|CAPITAL|fp"] == 1 and counts["case|CAPITAL|fn"] == 1


def test_truecasing_ignores_misrecognized_words():
    counts = case_f1_counts("NASA and iPhone", "Nassau and iPhone")
    assert counts["case|ACRONYM|fn"] == 0 and counts["case|MIXED|tp"] == 1 and counts["case|LOWER|tp"] == 1


def test_cer_is_on_cased_text_without_marks():
    assert cer_counts("The cat sat, then left.", "the cat sat then Left?") == {"cer_E": 2, "cer_N": 21}


def test_mwer_compares_mixed_case_words_with_their_case():
    assert mwer_counts("I love McDonald's and iPhone.", "i love Mcdonald's and iPhone") == {"mwer_E": 1, "mwer_N": 2}
    # a split word: one substitution on the region word plus the inserted piece next to it
    assert mwer_counts("call McDonald's now", "call Mc Donald's now") == {"mwer_E": 2, "mwer_N": 1}
    assert mwer_counts("no mixed words here", "nothing") == {"mwer_E": 0, "mwer_N": 0}


def test_itn_words_come_from_aligning_written_and_spoken_forms():
    written = "On March 15th, 2024, he paid $12.3 million."
    spoken = "on march fifteenth twenty twenty four he paid twelve point three million dollars"
    assert itn_positions(written, spoken) == [2, 3, 6]  # 15th, 2024, 12.3
    assert iwer_counts(written, "on march 15th 2024 he paid 12.3 million", spoken) == {"iwer_E": 0, "iwer_N": 3}
    hyp = "On March fifteenth, 2024, he paid $12.3 million."
    assert iwer_counts(written, hyp, spoken) == {"iwer_E": 1, "iwer_N": 3}
    # errors outside the ITN words do not count
    assert iwer_counts(written, "on march 15th 2024 she paid 12.3 million", spoken)["iwer_E"] == 0


def test_iwer_is_zero_over_zero_without_itn_words():
    assert iwer_counts("hello there", "hello", "hello there") == {"iwer_E": 0, "iwer_N": 0}


@pytest.mark.parametrize("hyp", ["", "completely different words"])
def test_iwer_counts_deleted_and_substituted_itn_words(hyp):
    assert iwer_counts("Call 911 now", hyp, "call nine one one now") == {"iwer_E": 1, "iwer_N": 1}


def test_itn_outcomes_say_what_became_of_each_itn_word():
    written = "On March 15th, 2024, he paid 12.3 million."
    spoken = "on march fifteenth twenty twenty four he paid twelve point three million"
    outcomes = itn_outcomes(written, "on march fifteenth 2024 he paid 12.3 million", spoken)
    assert [(o.word, o.hypothesis, o.correct) for o in outcomes] == [
        ("15th", "fifteenth", False),
        ("2024", "2024", True),
        ("12.3", "12.3", True),
    ]
    assert [itn_kind(o.word) for o in outcomes] == ["number+text", "year", "number+text"]
    assert itn_outcomes("Call 911 now", "call now", "call nine one one now") == [("911", None, False)]


@pytest.mark.parametrize(
    ("word", "kind"),
    [
        ("1972", "year"),
        ("2024", "year"),
        ("1990s", "year"),
        ("911", "number"),
        ("6,440,120", "number"),
        ("3000", "number"),
        ("12.3", "number+text"),
        ("km2", "number+text"),
        ("jr", "word"),
    ],
)
def test_itn_kind(word, kind):
    assert kind in ITN_KINDS and itn_kind(word) == kind


@given(st.lists(st.sampled_from(["on", "march", "15th", "2024", "he", "paid", "12.3"]), max_size=12))
def test_itn_outcomes_agree_with_iwer_counts_without_insertions(hyp_words):
    written = "On March 15th, 2024, he paid 12.3 million."
    spoken = "on march fifteenth twenty twenty four he paid twelve point three million"
    hyp = " ".join(hyp_words)
    outcomes = itn_outcomes(written, hyp, spoken)
    assert len(outcomes) == iwer_counts(written, hyp, spoken)["iwer_N"] == 3
    assert sum(not o.correct for o in outcomes) <= iwer_counts(written, hyp, spoken)["iwer_E"]
    assert all(o.correct == (o.hypothesis == o.word) for o in outcomes)
