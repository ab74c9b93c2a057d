import pytest

from nemo_pc.formatter.cleaning import clean_text, coarse_reason, fine_reason
from nemo_pc.formatter.entities import EntitySynthesizer, number_sentences
from nemo_pc.formatter.labels import derive_labels
from nemo_pc.parts.text import normalize


def test_sentences_are_seeded_and_cover_every_kind():
    a, b = EntitySynthesizer(3), EntitySynthesizer(3)
    assert a.sentences(22) == b.sentences(22)
    assert a.sentences(5) != EntitySynthesizer(4).sentences(5)
    assert len(set(a.kinds)) == 11


@pytest.mark.parametrize("kind", EntitySynthesizer().kinds)
def test_each_kind_aligns_back_to_its_written_form(kind):
    synth = EntitySynthesizer(7, kinds=(kind,))
    for written, spoken in synth.sentences(20):
        assert spoken == normalize(spoken) and not any(ch.isdigit() for ch in spoken)
        labeled = derive_labels(written, spoken)
        assert labeled.reference() == written
        assert labeled.spans, written


def test_written_forms_follow_the_paper_formats():
    synth = EntitySynthesizer(0)
    assert all(len(synth.ssn()[0]) == 11 for _ in range(5))
    card, said = synth.card()
    assert len(card.replace("-", "")) in (15, 16) and len(said.split()) == len(card.replace("-", ""))
    assert "@" in synth.email()[0] and synth.money()[0].startswith("$")


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown entity kinds"):
        EntitySynthesizer(kinds=("pets",))


def test_number_sentences_are_seeded_number_rich_and_pass_the_filters():
    sentences = number_sentences(300, seed=5)
    assert sentences == number_sentences(300, seed=5) and sentences != number_sentences(300, seed=6)
    for sentence in sentences:
        assert sum(ch.isdigit() for ch in sentence) >= 2, sentence
        assert coarse_reason(sentence) is None and fine_reason(clean_text(sentence)) is None, sentence
    joined = " ".join(sentences)
    for form in (",", "%", "$", "0s", "km2", "th "):
        assert form in joined
