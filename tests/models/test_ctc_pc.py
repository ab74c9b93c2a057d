import copy
import math
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel
from nemo_pc.parts.modes import NORMALIZED_ID, PUNCTUATED_ID
from nemo_pc.parts.text import normalize
from nemo_pc.testing.asr import audio_paths
from nemo_pc.testing.ctc import UTTERANCES, memorized_corpus, tiny_config
from nemo_pc.testing.training import fit_steps

ROOT = Path(__file__).resolve().parents[2]
VARIANT_DIR = ROOT / "configs" / "ctc" / "variant"

# the pc block of every variant, with layer numbers for the tiny 4-layer encoder (⌊l/2⌋ = 2)
TINY_VARIANTS = {
    "punctuated": {},
    "inter": {"ctc_weight": 0.5, "inter": {"weight": 0.5}},
    "style_layers": {"style_layers": {"branch_layer": 2}},
    "mixed_m0": {"target": "mixed", "mixed_format": "m0"},
    "mixed_m1": {"target": "mixed", "mixed_format": "m1"},
    "mixed_m2": {"target": "mixed", "mixed_format": "m2"},
    "style_embedding": {"style_embedding": {"layers": [3]}},
}
EXPECTED = {
    "punctuated": [text for text, _ in UTTERANCES],
    "normalized": [normalize(text) for text, _ in UTTERANCES],
}
STEPS = 120
# batch-norm running statistics would average the two styles of a style embedding: it uses layer norm
ENCODER = {"style_embedding": {"conv_norm_type": "layer_norm"}}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("ctc_pc")
    manifest, tokenizer = memorized_corpus(root)
    return {"root": root, "manifest": manifest, "tokenizer": tokenizer}


def build(data, pc: dict, encoder: dict | None = None) -> EncDecCTCPCBPEModel:
    torch.manual_seed(0)
    config = tiny_config(data["tokenizer"], data["manifest"], copy.deepcopy(pc))
    config["encoder"].update(encoder or {})
    return EncDecCTCPCBPEModel(OmegaConf.create(config))


def texts(result):
    if isinstance(result, dict):
        return {style: texts(hyps) for style, hyps in result.items()}
    return [hyp if isinstance(hyp, str) else hyp.text for hyp in result]


@pytest.fixture(scope="module")
def trained(data):
    """Every tiny variant, trained once on the two memorized utterances."""
    models = {}
    for name, pc in TINY_VARIANTS.items():
        model = build(data, pc, ENCODER.get(name))
        losses = fit_steps(model, STEPS, gradient_clip_val=None)
        models[name] = (model, losses)
    return models


def audio_files(data) -> list[str]:
    return audio_paths(data["manifest"])


@pytest.mark.parametrize("variant", sorted(TINY_VARIANTS))
def test_memorized_utterances_decode_in_both_styles(trained, data, variant):
    model, losses = trained[variant]
    assert losses[-1] < 0.1 * losses[0]
    both = texts(model.transcribe(audio_files(data), mode="both", verbose=False))
    assert both == EXPECTED
    assert texts(model.transcribe(audio_files(data), mode="normalized", verbose=False)) == EXPECTED["normalized"]


@pytest.mark.parametrize(
    "variant",
    [
        "inter",
        "mixed_m2",
        "style_embedding",
        "style_layers",
    ],
)
def test_nemo_round_trip_keeps_every_head(trained, data, variant, tmp_path):
    model, _ = trained[variant]
    path = tmp_path / f"{variant}.nemo"
    model.save_to(str(path))
    restored = EncDecCTCPCBPEModel.restore_from(str(path), map_location="cpu").eval()
    assert not any(module.training for module in model.modules()), "transcribe left part of the model in training"
    assert OmegaConf.to_container(restored.cfg.pc) == OmegaConf.to_container(model.cfg.pc)
    assert restored.heads == model.heads
    batch = next(iter(model._train_dl))
    for heads in ((model.heads.main,), tuple(model.heads)):
        want, _ = model.forward_heads(input_signal=batch.audio, input_signal_length=batch.audio_len, heads=heads)
        got, _ = restored.forward_heads(input_signal=batch.audio, input_signal_length=batch.audio_len, heads=heads)
        assert list(got) == list(heads)
        for head in heads:
            torch.testing.assert_close(got[head], want[head])
    assert texts(restored.transcribe(audio_files(data), mode="both", verbose=False)) == EXPECTED


@pytest.mark.parametrize("reads_inter", [False, True])
def test_inter_transcribe_picks_the_head_of_the_normalized_output(trained, data, reads_inter, tmp_path):
    """papers/004 scores the last layer: by default the normalized output is the punctuated one, normalized, and
    an intermediate head with its weights zeroed changes nothing; ``pc.inter.transcribe`` reads that head."""
    trained["inter"][0].save_to(str(tmp_path / "inter.nemo"))
    model = EncDecCTCPCBPEModel.restore_from(str(tmp_path / "inter.nemo"), map_location="cpu").eval()
    model.cfg.pc.inter.transcribe = reads_inter
    assert model.mode_head(NORMALIZED_ID) == (model.heads.inter if reads_inter else model.heads.main)
    assert model.normalized_by_rules is not reads_inter
    with torch.no_grad():
        for parameter in model.inter_decoder.parameters():
            parameter.zero_()
    both = texts(model.transcribe(audio_files(data), mode="both", verbose=False))
    assert both["punctuated"] == EXPECTED["punctuated"]
    assert (both["normalized"] == EXPECTED["normalized"]) is not reads_inter


@pytest.mark.parametrize("variant", ["inter", "style_layers", "mixed_m2"])
def test_validation_logs_the_loss_and_wer_of_each_mode(trained, data, variant, tmp_path):
    """Each mode's WER is that of ``transcribe``'s output in that mode (punctuated: on the utterances with a P
    transcript), summed over the epoch; each head's loss is logged too."""
    import jiwer
    import lightning.pytorch as pl

    from nemo_pc.data.datasets.pc_dataset import pc_dataloader_from_config
    from nemo_pc.parts.manifest import read_manifest, write_manifest

    model, _ = trained[variant]
    entries = read_manifest(data["manifest"])
    shifted = [
        dict(entries[0], text=entries[1]["text"], text_normalized=entries[1]["text_normalized"]),
        dict(
            entries[1],
            text=entries[0]["text_normalized"],
            text_normalized=entries[0]["text_normalized"],
            pc_source="none",
        ),
    ]
    manifest = write_manifest(tmp_path / "shifted.json", shifted)
    config = {"manifest_filepath": str(manifest), "batch_size": 1, "sample_rate": 16000}
    loader = pc_dataloader_from_config(config, model.tokenizer, model.pc_mixed_format())
    trainer = pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False)
    metrics = trainer.validate(model, dataloaders=loader, verbose=False)[0]
    model.eval()
    hyps = texts(model.transcribe(audio_files(data), mode="both", verbose=False))
    expected_n = jiwer.wer([entry["text_normalized"] for entry in shifted], hyps["normalized"])
    expected_p = jiwer.wer([shifted[0]["text"]], hyps["punctuated"][:1])
    assert expected_n > 0.5 and expected_p > 0.5
    assert metrics["val_wer_normalized"] == pytest.approx(expected_n)
    assert metrics["val_wer_punctuated"] == pytest.approx(expected_p)
    heads = {"inter": ["main", "inter"], "style_layers": ["main", "normalized"], "mixed_m2": ["main"]}[variant]
    assert all(math.isfinite(metrics[f"val_loss_{head}"]) for head in heads)


def test_untrained_heads_differ_between_styles(data):
    """The normalized pass of the style embedding really re-runs the conditioned layers with another style."""
    model = build(data, TINY_VARIANTS["style_embedding"], ENCODER["style_embedding"]).eval()
    batch = next(iter(model._train_dl))
    with torch.no_grad():
        out, _ = model.forward_heads(
            input_signal=batch.audio,
            input_signal_length=batch.audio_len,
            heads=(model.heads.main, model.heads.normalized),
        )
    assert not torch.allclose(out[model.heads.main], out[model.heads.normalized])


def test_forward_heads_refuses_a_head_the_model_lacks(data):
    model = build(data, TINY_VARIANTS["punctuated"]).eval()
    batch = next(iter(model._train_dl))
    assert (model.heads.main.mode, model.heads.inter, model.heads.normalized) == (PUNCTUATED_ID, None, None)
    other = build(data, TINY_VARIANTS["inter"]).heads.inter
    with pytest.raises(ValueError, match="no inter head"):
        model.forward_heads(input_signal=batch.audio, input_signal_length=batch.audio_len, heads=(other,))


def test_p_loss_is_masked_where_no_punctuated_transcript(tmp_path):
    manifest, tokenizer = memorized_corpus(tmp_path, [("Yes, it is.", "none"), ("Is it? No.", "none")])
    data = {"manifest": manifest, "tokenizer": tokenizer}
    model = build(data, TINY_VARIANTS["inter"])
    _, losses = model.compute_losses(next(iter(model._train_dl)))
    assert float(losses[model.heads.main]) == 0.0 and float(losses[model.heads.inter]) > 0.0


@pytest.mark.parametrize(
    "pc, message",
    [
        ({"target": "spoken"}, "pc.target"),
        ({"target": "mixed", "mixed_format": "m9"}, "mixed-style format"),
        ({"inter": {"weight": 0.5, "layer": 4}}, "pc.inter.layer"),
        ({"style_layers": {"branch_layer": 5}}, "branch_layer"),
        ({"style_embedding": {"layers": [0]}}, "style_embedding.layers"),
        ({"style_layers": {"branch_layer": 2}, "style_embedding": {"layers": [3]}}, "alternatives"),
    ],
)
def test_bad_pc_config_is_refused_by_name(data, pc, message):
    with pytest.raises(ValueError, match=message):
        build(data, pc)


def test_bad_mode_request_is_refused(trained, data):
    model, _ = trained["punctuated"]
    with pytest.raises(ValueError, match="mode: mode must be one of"):
        model.transcribe(audio_files(data), mode="spoken", verbose=False)


@pytest.mark.parametrize("variant", sorted(p.stem for p in VARIANT_DIR.glob("*.yaml")))
def test_every_variant_config_builds_and_takes_a_training_step(data, variant):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "configs" / "ctc"), version_base=None):
        cfg = compose(config_name="ctc_pc", overrides=[f"variant={variant}"])
    tiny = OmegaConf.create(tiny_config(data["tokenizer"], data["manifest"], layers=16))
    model_cfg = OmegaConf.merge(cfg.model, {k: tiny[k] for k in ("tokenizer", "train_ds", "validation_ds")})
    model_cfg.encoder = OmegaConf.merge(tiny.encoder, {"feat_in": cfg.model.preprocessor.features})
    model_cfg.optim = tiny.optim
    model = EncDecCTCPCBPEModel(model_cfg)
    batch = next(iter(model._train_dl))
    model.train()
    loss = model.training_step(batch, 0)["loss"]
    loss.backward()
    assert torch.isfinite(loss)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_lightning_fit_runs_training_and_validation(data, tmp_path):
    import lightning.pytorch as pl

    model = build(data, TINY_VARIANTS["mixed_m2"])
    trainer = pl.Trainer(
        max_steps=2,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        limit_val_batches=1,
        check_val_every_n_epoch=1,
        default_root_dir=tmp_path,
    )
    model.set_trainer(trainer)
    model.setup_optimization(model.cfg.optim)
    trainer.fit(model)
    assert trainer.global_step == 2
    assert "val_loss" in trainer.callback_metrics


@pytest.mark.parametrize("variant", ["inter", "style_embedding", "mixed_m2"])
def test_onnx_export_matches_the_main_head(trained, variant, tmp_path):
    import onnxruntime

    model, _ = trained[variant]
    path = tmp_path / f"{variant}.onnx"
    model.export(str(path))
    batch = next(iter(model._train_dl))
    with torch.no_grad():
        features, lengths = model.preprocessor(input_signal=batch.audio, length=batch.audio_len)
        want, _, _ = model.forward(processed_signal=features, processed_signal_length=lengths)
    session = onnxruntime.InferenceSession(str(path))
    names = [node.name for node in session.get_inputs()]
    got = session.run(None, {names[0]: features.numpy(), names[1]: lengths.numpy()})[0]
    torch.testing.assert_close(torch.from_numpy(got), want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("prompt, mode", [({}, "punctuated"), ({"mode": "normalized"}, "normalized")])
def test_stock_transcribe_speech_path(trained, data, tmp_path, prompt, mode):
    """The calls of NeMo's examples/asr/transcribe_speech.py on a .nemo file and a manifest."""
    from nemo.collections.asr.models.aed_multitask_models import parse_multitask_prompt
    from nemo.collections.asr.parts.utils.transcribe_utils import setup_model

    model, _ = trained["mixed_m1"]
    path = tmp_path / "mixed_m1.nemo"
    model.save_to(str(path))
    asr_model, name = setup_model(OmegaConf.create({"model_path": str(path)}), torch.device("cpu"))
    asr_model.change_decoding_strategy(OmegaConf.create({"strategy": "greedy_batch"}))
    override = asr_model.get_transcribe_config()
    override.batch_size = 2
    override.num_workers = 0
    override.return_hypotheses = False
    override.text_field = "text"
    override.lang_field = "lang"
    if hasattr(override, "prompt"):
        override.prompt = parse_multitask_prompt(prompt)
    hypotheses = asr_model.eval().transcribe(audio=str(data["manifest"]), override_config=override)
    assert name == "mixed_m1" and texts(hypotheses) == EXPECTED[mode]


def test_init_from_an_encoder_checkpoint_also_starts_the_style_layers(trained, data, tmp_path):
    """NeMo's init_from_nemo_model with include [encoder.]: the encoder is loaded, and the style layers, which the
    checkpoint lacks, start as copies of its top layers; heads stay as built."""
    base, _ = trained["punctuated"]
    path = tmp_path / "base.nemo"
    base.save_to(str(path))
    model = build(data, TINY_VARIANTS["style_layers"])
    head_before = copy.deepcopy(model.normalized_decoder.state_dict())
    init = {"init_from_nemo_model": {"base": {"path": str(path), "include": ["encoder."]}}}
    model.maybe_init_from_pretrained_checkpoint(OmegaConf.create(init))
    for name, value in base.encoder.state_dict().items():
        torch.testing.assert_close(model.encoder.state_dict()[name], value)
    branch = model.style_branch
    for mine, theirs in zip(branch.layers, base.encoder.layers[branch.branch_layer :], strict=True):
        for (name, value), (_, want) in zip(mine.state_dict().items(), theirs.state_dict().items(), strict=True):
            torch.testing.assert_close(value, want, msg=name)
    for name, value in model.normalized_decoder.state_dict().items():
        torch.testing.assert_close(value, head_before[name])


def test_init_from_a_full_style_layers_checkpoint_keeps_its_style_layers(trained, data, tmp_path):
    source, _ = trained["style_layers"]
    path = tmp_path / "style_layers.nemo"
    source.save_to(str(path))
    model = build(data, TINY_VARIANTS["style_layers"])
    model.maybe_init_from_pretrained_checkpoint(OmegaConf.create({"init_from_nemo_model": str(path)}))
    for name, value in source.style_branch.state_dict().items():
        torch.testing.assert_close(model.style_branch.state_dict()[name], value)
