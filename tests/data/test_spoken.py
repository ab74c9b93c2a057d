import pytest

from nemo_pc.data.recipes.spoken import SpokenForm, book_words, needs_tn, sentence_spans, written_words
from nemo_pc.parts.text import normalize
from nemo_pc.testing import PARAGRAPH


def test_written_words_keep_glue_and_render_back():
    book = written_words('"Yes," said he -- the well-known man. (Really?)')
    assert book.keys == ["yes", "said", "he", "the", "well", "known", "man", "really"]
    assert book.before[0] == '"' and book.after[0] == ',"' and book.after[4] == "-" and not book.space[4]
    assert book.text() == '"Yes," said he -- the well-known man. (Really?)'
    assert book.text(3, 5) == "the well"


def test_paragraphs_and_sentences():
    book = book_words("Title\n\nFirst one. Mr. Smith came? Yes.", SpokenForm("none"))
    spans = sentence_spans(book)
    assert [book.text(a, b) for a, b in spans] == ["Title", "First one.", "Mr. Smith came?", "Yes."]


def test_identity_form_matches_normalize():
    book = book_words(PARAGRAPH, SpokenForm("none"))
    assert " ".join(book.keys) == normalize(PARAGRAPH)
    assert book.text() == " ".join(PARAGRAPH.split())


def test_needs_tn():
    assert needs_tn("It cost $5.") and needs_tn("Mr. Smith") and needs_tn("in 1901")
    assert not needs_tn("And God said, Let there be light.")


def test_unknown_tn_mode():
    with pytest.raises(ValueError, match="tn must be one of"):
        SpokenForm("espeak")


def test_nemo_tn_expands_numbers_and_keeps_written_case(tmp_path):
    spoken = SpokenForm("nemo")
    book = book_words("It was built in 1901, and Paris paid $12 for it. Nobody came.", spoken)
    assert book.text() == "It was built in nineteen oh one, and Paris paid twelve dollars for it. Nobody came."
    again = SpokenForm("nemo", spoken.cache_dir)
    assert again.convert(["It was built in 1901, and Paris paid $12 for it."]) == [
        "It was built in nineteen oh one, and Paris paid twelve dollars for it."
    ]
    assert again._normalizer is None
