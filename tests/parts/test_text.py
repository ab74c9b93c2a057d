import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.parts.text import (
    DEFAULT_MARK_MAP,
    DEFAULT_MARKS,
    case_class,
    fold_case,
    fold_map,
    is_mark,
    join_word_marks,
    map_marks,
    normalize,
    parse_marks,
    preprocess_punctuated,
    strip_marks,
    tokenize,
    word_marks,
    words,
)

# Text that looks like book prose: words, marks and the punctuation that must be dropped or mapped.
PIECES = ["the", "Bob", "don't", "U.S.", "1,000", "12.3", "well-known", "McDonald's", "Kutúzov", "iPhone", "İa"]
PUNCT = [".", ",", "?", "!", ";", ":", '"', "(", ")", "--", "...", "’", "'", "-", " "]
prose = st.lists(st.sampled_from(PIECES + PUNCT), max_size=25).map(" ".join)
any_text = st.one_of(st.text(max_size=60), prose)


def test_normalize_matches_librispeech_conventions():
    assert normalize('"Well-known," said Mr. O’Brien -- don\'t!') == "well known said mr o'brien don't"
    assert normalize("  In 1990,  GDP was $12.3 billion.  ") == "in 1990 gdp was 12.3 billion"
    assert normalize("'Tis the dogs' bone") == "tis the dogs bone"


def test_tokenize_keeps_apostrophes_numbers_and_the_mark_set():
    assert tokenize("Let’s eat, Bob!", ".,?!") == ["Let's", "eat", ",", "Bob", "!"]
    assert tokenize("Let’s eat, Bob!") == ["Let's", "eat", ",", "Bob"]
    assert tokenize("It cost 1,000.50, i.e. a lot.") == [
        "It",
        "cost",
        "1,000.50",
        ",",
        "i",
        ".",
        "e",
        ".",
        "a",
        "lot",
        ".",
    ]
    assert tokenize("a well-known fact", hyphens="keep") == ["a", "well-known", "fact"]
    assert tokenize("a well-known fact") == ["a", "well", "known", "fact"]


def test_preprocess_follows_librispeech_pc_recipe():
    text = 'He said: "Stop!" Then; silence... Really?!'
    assert preprocess_punctuated(text) == "He said, Stop. Then. silence. Really?"
    assert preprocess_punctuated(text, separate_marks=True) == "He said , Stop . Then . silence . Really ?"
    assert preprocess_punctuated(text, marks=".,?!", mark_map={}) == "He said Stop! Then silence. Really?"
    assert preprocess_punctuated("done.", separate_marks=True) == "done ."


def test_word_marks_and_join_are_inverse_on_clean_text():
    pairs = word_marks("Hello, world. How are you?")
    assert pairs == [("Hello", ","), ("world", "."), ("How", None), ("are", None), ("you", "?")]
    assert join_word_marks(pairs) == "Hello, world. How are you?"
    assert word_marks(", leading marks are dropped") == [
        ("leading", None),
        ("marks", None),
        ("are", None),
        ("dropped", None),
    ]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("the", "LOWER"),
        ("2024", "LOWER"),
        ("Paris", "CAPITAL"),
        ("I", "CAPITAL"),
        ("NASA", "ACRONYM"),
        ("McDonald's", "MIXED"),
        ("iPhone", "MIXED"),
        ("Élodie", "CAPITAL"),
    ],
)
def test_case_class(word, expected):
    assert case_class(word) == expected


def test_bad_mark_set_is_rejected():
    with pytest.raises(ValueError, match="one punctuation character"):
        tokenize("x", marks="a")
    with pytest.raises(ValueError, match="hyphens"):
        tokenize("x", hyphens="drop")


@given(any_text)
def test_normalize_is_idempotent_and_clean(text):
    once = normalize(text)
    assert normalize(once) == once
    assert once == once.strip() and "  " not in once
    assert once == fold_case(once)
    assert normalize(text).split() == [fold_case(w) for w in words(text)]


@given(any_text, st.booleans())
def test_preprocess_keeps_words_and_only_set_marks(text, separate):
    out = preprocess_punctuated(text, separate_marks=separate)
    assert normalize(out) == normalize(text)
    assert strip_marks(out) == strip_marks(text)
    assert preprocess_punctuated(out, separate_marks=separate) == out
    for token in tokenize(out, marks=DEFAULT_MARKS + "!;:"):
        assert is_mark(token, DEFAULT_MARKS) or token[0].isalnum() or not token.isascii()


@given(any_text)
def test_tokens_are_words_or_marks(text):
    for token in tokenize(text, ".,?!"):
        assert token.strip() == token and token
        if len(token) == 1 and not token.isalnum():
            assert token in ".,?!" or "\u0300" <= token <= "\u036f"


# A user's mark set: any order of a few marks from a pool that holds the folded marks, their targets and others.
MARK_POOL = '.,?!;:"()…—«»¿¡&%'
mark_sets = st.lists(st.sampled_from(MARK_POOL), min_size=1, max_size=8, unique=True).map("".join)
plain_words = st.text(alphabet="abcXYZ", min_size=1, max_size=5)
gaps = st.text(alphabet=MARK_POOL + " ", min_size=1, max_size=4)


@given(mark_sets, st.lists(st.tuples(plain_words, gaps), max_size=8), gaps)
def test_a_configured_mark_set_is_kept_and_the_other_marks_fold_by_the_map(marks, pieces, head):
    """The documented rule: a mark of the set stays as written; one outside it becomes its DEFAULT_MARK_MAP target,
    which counts only if the target is in the set; the first counting mark after a word is kept, the rest dropped."""
    text = head + "".join(word + gap for word, gap in pieces)
    expected = []
    for word, gap in pieces:
        folded = [DEFAULT_MARK_MAP.get(ch, ch) if ch not in marks else ch for ch in gap]
        kept = [ch for ch in folded if ch in marks]
        expected.append(word + (kept[0] if kept else ""))
    out = preprocess_punctuated(text, marks)
    assert out == " ".join(expected)
    assert {ch for ch in out if not ch.isalpha() and ch != " "} <= set(marks)
    assert fold_map(marks) == {mark: target for mark, target in DEFAULT_MARK_MAP.items() if mark not in marks}


@given(any_text, st.sampled_from([DEFAULT_MARKS, ".?", ",", "?.,", '.,?"', "—"]))
def test_sets_without_a_folded_mark_keep_the_fold_everything_rule(text, marks):
    """Only a set that holds one of ! ; : changes what a text becomes: for every other set (the default among them)
    the output is that of folding the whole default map first."""
    folded_first = join_word_marks(word_marks(map_marks(text, DEFAULT_MARK_MAP), marks))
    assert preprocess_punctuated(text, marks) == folded_first
    assert fold_map(marks) == dict(DEFAULT_MARK_MAP)


def test_five_mark_set_keeps_exclamation_and_semicolon():
    text = 'He said: "Stop!" Then; silence... Really?!'
    assert preprocess_punctuated(text, ".,?!;") == "He said, Stop! Then; silence. Really?"
    assert preprocess_punctuated(text, ".,?!;", mark_map={}) == "He said Stop! Then; silence. Really?"
    assert preprocess_punctuated(text, ".,?!;:", separate_marks=True) == "He said : Stop ! Then ; silence . Really ?"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "--marks must name at least one mark"),
        (".,a", "--marks: 'a' in '.,a' is a letter or digit, not a mark"),
        (".,7", "'7' in '.,7' is a letter or digit"),
        (". ", "' ' in '. ' is a space"),
        (".'", '"\'" in ".\'" is an apostrophe (it joins words)'),
        (".-", "'-' in '.-' is a hyphen (it joins words)"),
        (".\u0301", "U+0301 in '.\u0301' is a combining character"),
        (".,.", "--marks: '.' appears twice in '.,.'"),
        (None, "--marks must be a string of marks"),
        ([".", "ab"], "--marks must be a string of marks"),
    ],
)
def test_parse_marks_names_the_bad_value(value, message):
    with pytest.raises(ValueError) as caught:
        parse_marks(value, "--marks")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_parse_marks_keeps_the_order_given():
    assert parse_marks(DEFAULT_MARKS) == DEFAULT_MARKS
    assert parse_marks("?!.,;") == "?!.,;"
    assert parse_marks(["!", "."]) == "!."
    assert parse_marks("—«»¿¡…") == "—«»¿¡…"
