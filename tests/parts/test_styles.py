import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.parts.styles import (
    ALT,
    END_N,
    END_P,
    MIXED_FORMATS,
    N_NULL,
    P_NULL,
    SECTION_END,
    SECTION_SEP,
    STYLE_TAGS,
    align_styles,
    compose_mixed,
    parse_mixed,
    split_tags,
)
from nemo_pc.parts.text import normalize, preprocess_punctuated

N, P = "hello world why not", "Hello, world. Why not?"

# words of a cased, punctuated transcript and of its normalized form, with a few rewritten ones for the
# general case where the two styles are not related by the text rules
LOWER = st.sampled_from(["the", "a", "cat", "sat", "don't", "12", "twelve", "on", "mat", "x"])
WORD = st.builds(
    lambda w, cap, mark: (w.capitalize() if cap else w) + mark,
    LOWER,
    st.booleans(),
    st.sampled_from(["", "", "", ",", ".", "?"]),
)
TEXT = st.lists(WORD, max_size=12).map(" ".join)


def test_examples_of_each_format():
    assert compose_mixed(N, P, "m0") == "Hello, world. Why not? <end_p> hello world why not <end_n>"
    assert compose_mixed(N, P, "m1") == "<T> Hello, hello <T> world. world <T> Why why <T> not? not"
    assert compose_mixed(N, P, "m2") == "<T> Hello, world. Why not? <sep> hello world why not </T>"
    n, p = "the cat sat", "The cat sat."
    assert compose_mixed(n, p, "m2") == "<T> The <sep> the </T> cat <T> sat. <sep> sat </T>"


def test_m1_null_tags_fill_uneven_alternatives():
    mixed = compose_mixed("twenty five dollars", "$25", "m1")
    assert mixed == f"{ALT} $25 twenty {ALT} {P_NULL} five {ALT} {P_NULL} dollars"
    assert parse_mixed(mixed, "m1") == ("twenty five dollars", "$25")
    assert compose_mixed("", "Hi.", "m1") == f"{ALT} Hi. {N_NULL}"


def test_alignment_matches_words_on_their_normalized_form():
    segments = align_styles("i said no", "I said, no.")
    assert [s.shared for s in segments] == [False, False, False]
    assert [(s.punctuated, s.normalized) for s in segments][1] == (("said,",), ("said",))
    assert align_styles("a b", "a b")[0].shared


@pytest.mark.parametrize("fmt", MIXED_FORMATS)
@given(normalized=TEXT, punctuated=TEXT)
def test_parse_inverts_compose_on_any_pair(fmt, normalized, punctuated):
    assert parse_mixed(compose_mixed(normalized, punctuated, fmt), fmt) == (normalized, punctuated)


@pytest.mark.parametrize("fmt", MIXED_FORMATS)
@given(punctuated=TEXT)
def test_parse_inverts_compose_on_related_pairs(fmt, punctuated):
    punctuated = preprocess_punctuated(punctuated)
    normalized = normalize(punctuated)
    assert parse_mixed(compose_mixed(normalized, punctuated, fmt), fmt) == (normalized, punctuated)


@pytest.mark.parametrize("fmt", MIXED_FORMATS)
def test_parse_ignores_spacing_around_tags(fmt):
    mixed = compose_mixed(N, P, fmt)
    glued = mixed.replace(" <", "<").replace("> ", ">")
    assert parse_mixed(glued, fmt) == (N, P)


def test_compose_refuses_transcripts_with_tags_and_unknown_formats():
    with pytest.raises(ValueError, match="punctuated transcript contains a style tag"):
        compose_mixed("a", "a <T>", "m1")
    with pytest.raises(ValueError, match="m0"):
        compose_mixed("a", "a", "m3")


def test_m0_skips_illegal_tags_and_falls_back_without_end_tag():
    assert parse_mixed(f"{END_N} Hi, {END_P} {END_P} there {SECTION_SEP} hi {END_N}", "m0") == ("there hi", "Hi,")
    assert parse_mixed("Hi, you.", "m0") == ("hi you", "Hi, you.")


def test_m1_resumes_after_a_missing_slot():
    # the P slot is missing (papers/001 Fig. 3): the group is dropped and parsing resumes
    assert parse_mixed(f"a {ALT} {N_NULL} b {ALT} C. c", "m1") == ("a b c", "a b C.")
    # a new group starts before the last one finished
    assert parse_mixed(f"{ALT} X {ALT} Y. y {SECTION_END} z", "m1") == ("y z", "X Y. z")


def test_m2_resumes_after_broken_sections():
    assert parse_mixed(f"{SECTION_SEP} a {ALT} B. {SECTION_SEP} b {ALT} C {SECTION_SEP} c", "m2") == (
        "a b c",
        "a B. C",
    )
    assert parse_mixed(f"{ALT} A, {SECTION_END} b {SECTION_END}", "m2") == ("b", "A, b")


def test_split_tags_splits_glued_tags():
    assert split_tags("Hi<T>a  b</T><sep>c") == ["Hi", ALT, "a", "b", SECTION_END, SECTION_SEP, "c"]


@pytest.mark.parametrize("fmt", MIXED_FORMATS)
def test_fuzzed_hypotheses_never_raise_and_give_two_strings(fmt):
    rng = random.Random(fmt)
    vocab = [*STYLE_TAGS, "a", "B.", "c,", "d?", "<", ">", "T", "", " ", "<T", "/T>", "\t", "é"]
    for _ in range(10_000):
        hypothesis = rng.choice(["", " "]).join(rng.choices(vocab, k=rng.randint(0, 20)))
        normalized, punctuated = parse_mixed(hypothesis, fmt)
        assert isinstance(normalized, str) and isinstance(punctuated, str)
        assert set(normalized.split()).isdisjoint(STYLE_TAGS) and set(punctuated.split()).isdisjoint(STYLE_TAGS)
