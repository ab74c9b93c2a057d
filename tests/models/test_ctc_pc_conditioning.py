"""The CTC style embedding leaves no hook on NeMo's encoder: a plain ``model.encoder(...)`` is NeMo's encoder, and
the conditioning happens only where the model calls it (its forward and its export)."""

import pytest
import torch
from nemo.collections.asr.modules import ConformerEncoder
from omegaconf import OmegaConf

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel
from nemo_pc.testing.ctc import memorized_corpus, tiny_config


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    root = tmp_path_factory.mktemp("ctc_conditioning")
    manifest, tokenizer = memorized_corpus(root)
    config = tiny_config(tokenizer, manifest, {"style_embedding": {"layers": [3]}})
    config["encoder"].update(conv_norm_type="layer_norm")
    torch.manual_seed(0)
    built = EncDecCTCPCBPEModel(OmegaConf.create(config)).eval()
    with torch.no_grad():  # a visible vector: the untrained projection is small
        built.style_embedding.proj.weight.mul_(50.0)
    return built


def _features(model):
    batch = next(iter(model._train_dl))
    return model.preprocessor(input_signal=batch.audio, length=batch.audio_len)


def _hooks(model):
    return sum(len(layer._forward_pre_hooks) for layer in model.encoder.layers)


@torch.no_grad()
def test_a_plain_encoder_call_is_the_encoders_own_output(model):
    features, lengths = _features(model)
    model.forward(processed_signal=features, processed_signal_length=lengths)  # the model's own pass ran before
    assert _hooks(model) == 0
    own_cfg = OmegaConf.to_container(model.cfg.encoder, resolve=True)
    own_cfg.pop("_target_")
    own = ConformerEncoder(**own_cfg).eval()
    own.load_state_dict(model.encoder.state_dict())
    plain, plain_len = model.encoder(audio_signal=features, length=lengths)
    want, want_len = own(audio_signal=features, length=lengths)
    torch.testing.assert_close(plain, want)
    assert torch.equal(plain_len, want_len)
    with model.conditioned_encoder():
        conditioned, _ = model.encoder(audio_signal=features, length=lengths)
    assert _hooks(model) == 0
    assert not torch.allclose(conditioned, plain, atol=1e-3)  # the conditioning is real, and only inside the block
    main = model.decoder(encoder_output=conditioned)
    got, _, _ = model.forward(processed_signal=features, processed_signal_length=lengths)
    torch.testing.assert_close(got, main)


@torch.no_grad()
def test_the_export_forward_is_the_main_head(model):
    features, lengths = _features(model)
    want, _, _ = model.forward(processed_signal=features, processed_signal_length=lengths)
    got = model.forward_for_export(audio_signal=features, length=lengths)
    got = got[0] if isinstance(got, tuple) else got
    torch.testing.assert_close(got, want)
    assert _hooks(model) == 0
