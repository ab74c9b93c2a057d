from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_pc.data.tokenizers.rewriter import load_rewriter_tokenizer, train_rewriter_tokenizer

_TOKENIZER: dict = {}
TEXTS = ["In 2024 the 1,200 people paid $45.50 for <span> twenty four </span> tickets.", "Call 555-1234 at 10:30."]


def _tokenizer(tmp_path, individual_digits=True):
    path = train_rewriter_tokenizer(
        TEXTS * 20, tmp_path / "tok.json", vocab_size=300, individual_digits=individual_digits
    )
    return load_rewriter_tokenizer(path)


def test_digits_are_single_tokens_unless_asked_otherwise(tmp_path):
    tokens = _tokenizer(tmp_path).tokenize("In 2024, 1,200 paid")
    assert [t for t in tokens if any(ch.isdigit() for ch in t)] == list("2024") + list("1200")
    merged = _tokenizer(tmp_path / "merged", individual_digits=False).tokenize("In 2024, 1,200 paid")
    assert any(sum(ch.isdigit() for ch in t) > 1 for t in merged)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab Z09.,$%-:/é¿"), max_size=40))
def test_encoding_then_decoding_gives_the_text_back(tmp_path_factory, text):
    tokenizer = _TOKENIZER.get("t") or _TOKENIZER.setdefault("t", _tokenizer(tmp_path_factory.mktemp("tok")))
    ids = tokenizer(text)["input_ids"]
    assert ids[0] == tokenizer.bos_token_id and ids[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False) == text
