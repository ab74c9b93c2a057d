import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.formatter.labels import (
    LabeledText,
    apply_case,
    compose,
    derive_labels,
    find_spans,
    mark_label,
    span_input,
)
from nemo_pc.parts.text import fold_case, normalize, words
from nemo_pc.testing.text import WRITTEN_SPOKEN


def test_paper_example_labels_and_spans():
    written = "On March 15th, 2024, CEO Sarah McAllister said revenue reached $12.3 million. Is that right?"
    spoken = (
        "on march fifteenth, twenty twenty four, CEO Sarah McAllister said revenue reached "
        "twelve point three million dollars. is that right?"
    )
    labeled = derive_labels(written, spoken)
    table = {w: (p, c, i) for w, p, c, i in zip(labeled.words, labeled.punct, labeled.case, labeled.itn, strict=True)}
    assert table["on"] == ("O", "CAPITAL", "O")
    assert table["march"] == ("O", "CAPITAL", "O")  # TN lower-cased it; the alignment restores the label
    assert table["ceo"] == ("O", "ACRONYM", "O")
    assert table["mcallister"] == ("O", "MIXED", "O")
    assert table["dollars"] == ("PERIOD", "LOWER", "ITN")
    assert table["is"] == ("O", "CAPITAL", "O")
    assert table["right"] == ("QUESTION", "LOWER", "O")
    spans = {" ".join(labeled.words[a:b]): text for a, b, text in labeled.spans}
    assert spans == {
        "fifteenth twenty twenty four": "15th, 2024",
        "mcallister": "McAllister",
        "twelve point three million dollars": "$12.3 million",
    }
    assert labeled.reference() == written


@pytest.mark.parametrize(("written", "spoken"), WRITTEN_SPOKEN)
def test_reference_reproduces_each_hand_written_pair(written, spoken):
    labeled = derive_labels(written, spoken)
    assert labeled.words == spoken.split()
    assert labeled.reference() == written


def test_marks_outside_the_set_are_folded_and_symbols_kept_at_span_edges():
    written = "Wait! It costs $5; (really) 20% more: fine."
    labeled = derive_labels(written, "wait it costs five dollars really twenty percent more fine")
    assert labeled.punct[labeled.words.index("wait")] == "PERIOD"
    assert labeled.punct[labeled.words.index("dollars")] == "PERIOD"
    assert labeled.punct[labeled.words.index("more")] == "COMMA"
    assert [text for _, _, text in labeled.spans] == ["$5", "20%"]


def test_spoken_words_without_written_counterpart_form_an_empty_span():
    labeled = derive_labels("", "some words here")
    assert labeled.itn == ["ITN"] * 3 and labeled.spans == [(0, 3, "")] and labeled.reference() == ""


def test_mark_label_and_find_spans():
    assert mark_label('."') == "PERIOD" and mark_label("),") == "COMMA" and mark_label("-") == "O"
    assert mark_label(":") == "COMMA" and mark_label("?!") == "QUESTION"
    assert find_spans(["O", "ITN", "ITN", "O", "O"], ["LOWER", "LOWER", "LOWER", "MIXED", "LOWER"]) == [(1, 4)]
    assert find_spans(["ITN"], ["LOWER"]) == [(0, 1)] and find_spans([], []) == []


def test_span_input_marks_the_span_and_clips_context():
    assert span_input("a b c d e".split(), 1, 2, 2) == "a <span> b </span> c d"
    assert span_input("a b".split(), 0, 2, 3) == "<span> a b </span>"


def test_apply_case_never_changes_letters():
    assert apply_case("paris", "CAPITAL") == "Paris" and apply_case("nasa", "ACRONYM") == "NASA"
    assert apply_case("ß", "ACRONYM") == "ß"  # "SS" would change the word
    assert apply_case("iphone", "MIXED") == "iphone"


def test_labeled_text_round_trips_through_a_dict():
    labeled = derive_labels(*WRITTEN_SPOKEN[1])
    assert LabeledText.from_dict(labeled.to_dict()) == labeled


@given(st.lists(st.text(min_size=1, max_size=8), max_size=12), st.data())
def test_compose_keeps_every_word_outside_spans_in_order(tokens, data):
    spoken = normalize(" ".join(tokens)).split()
    n = len(spoken)
    punct = data.draw(st.lists(st.sampled_from(["O", "PERIOD", "COMMA", "QUESTION"]), min_size=n, max_size=n))
    case = data.draw(st.lists(st.sampled_from(["LOWER", "CAPITAL", "ACRONYM", "MIXED"]), min_size=n, max_size=n))
    itn = ["O"] * n
    spans = [(a, b, "X") for a, b in find_spans(itn, case)]
    inside = {i for a, b, _ in spans for i in range(a, b)}
    kept = [fold_case(w) for i, w in enumerate(spoken) if i not in inside]
    out = [fold_case(w) for w in words(compose(spoken, punct, case, spans))]
    it = iter(out)
    assert all(any(w == o for o in it) for w in kept)
