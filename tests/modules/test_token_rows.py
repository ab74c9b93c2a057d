"""What the heads on the AED share (nemo_pc.modules.token_rows): the token set a head may write, the reading of a
text's tokens and of a head's options; and the two heads keep their state-dict keys."""

import json
from collections import Counter

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_pc.modules.aed_decoder_ctc import DecoderCTCHead
from nemo_pc.modules.aed_transducer import TransducerJoint
from nemo_pc.modules.token_rows import TokenRows, as_paths, head_options, text_token_ids


class Rows(TokenRows):
    def __init__(self, vocab_size: int, width: int = 4) -> None:
        super().__init__()
        self._add_token_rows(vocab_size, width)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 19), max_size=6), max_size=5), st.sets(st.integers(0, 19), max_size=4))
def test_the_set_is_the_counted_targets_and_the_allowed_tokens(targets, allowed):
    rows = Rows(20)
    rows.count(targets)
    rows.allow(allowed)
    counts = Counter(token for row in targets for token in row)
    assert rows.token_counts.tolist() == [float(counts[k]) for k in range(20)]
    assert set(torch.nonzero(rows.kept()).squeeze(1).tolist()) == set(counts) | allowed
    assert rows.vocab_size == 20


def test_both_heads_keep_their_state_dict_keys():
    # the keys a saved .nemo holds: sharing the rows must not rename them
    joint = set(TransducerJoint(8, 6, 10).state_dict())
    assert joint == {
        "enc.weight",
        "enc.bias",
        "pred.weight",
        "pred.bias",
        "token_out",
        "token_bias",
        "blank_out.weight",
        "blank_out.bias",
        "token_counts",
        "extra_tokens",
    }
    head = set(DecoderCTCHead(8, 6, 10).state_dict())
    assert head == {"query.weight", "query.bias", "query_scale"} | (joint - {"enc.weight", "enc.bias"}) - {
        "pred.weight",
        "pred.bias",
    }


class CharTokenizer:
    def text_to_ids(self, text):
        return [ord(char) for char in text]


def test_a_texts_tokens_are_those_of_both_modes(tmp_path):
    path = tmp_path / "text.json"
    path.write_text(json.dumps({"text": "Hi, Bo."}) + "\n" + json.dumps({"text": "ok"}) + "\n")
    ids, count = text_token_ids(CharTokenizer(), ".,?", str(path))
    assert count == 2
    # normalized: "hi bo", "ok"; punctuated: "Hi, Bo.", "ok"
    assert ids == {ord(c) for c in "hi boHi, Bo.ok"}


def test_a_heads_options_are_its_defaults_and_what_is_given():
    defaults = {"stack": 4, "inter_block": None}
    assert head_options("decoder_ctc", None, defaults) is None
    assert head_options("decoder_ctc", {"inter_block": 3}, defaults) == {"stack": 4, "inter_block": 3}
    known = r"known: \['inter_block', 'stack'\]"
    with pytest.raises(ValueError, match=r"decoder_ctc: unknown key\(s\) \['stak'\]; " + known):
        head_options("decoder_ctc", {"stak": 2}, defaults)
    assert as_paths(None) == [] and as_paths("a.json") == ["a.json"] and as_paths(["a", "b"]) == ["a", "b"]
