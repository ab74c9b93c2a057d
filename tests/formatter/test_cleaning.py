import pytest

from nemo_pc.formatter.cleaning import clean_text, coarse_reason, fine_reason


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("JOHN: I met mr Smith (the baker) <b>today</b> 🙂 .", "I met Mr. Smith today."),
        (". hello there", "Hello there"),
        ("Wow!!! That is ok?!", "Wow. That is OK?"),
        ("It was late... Then we left.", "It was late, then we left."),
        ("Is it? You said Well then.", "Is it? You said well then."),
        ("And Your friend said it™.", "And your friend said it."),
        ("We [citation needed] agree {x} .", "We agree."),
    ],
)
def test_cleaning_heuristics(raw, clean):
    assert clean_text(raw) == clean


def test_coarse_and_fine_filters_give_reasons():
    assert coarse_reason("THIS IS ALL SHOUTING") == "mostly upper case"
    assert coarse_reason("%%% ### !!!") == "no letters"
    assert coarse_reason("An ordinary sentence, with a comma.") is None
    assert fine_reason("Too short.") == "too short"
    assert fine_reason("This one has no final mark") == "no final mark"
    assert fine_reason('He said "fine."') is None
    assert fine_reason("Apples And Pears Are Nice Fruit.") == "too many capitals"
    assert fine_reason("Strange symbols ~ here are kept out.") == "symbols out of scope"
    assert fine_reason(" ".join(["word"] * 100) + ".") == "too long"
