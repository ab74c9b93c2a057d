"""EncDecRNNTPCBPEModel: every decoder variant trains, memorizes, round-trips, exports and decodes in both modes."""

import json
import math
import subprocess
import sys

import lightning.pytorch as pl
import pytest
import torch
from omegaconf import OmegaConf

from nemo_pc.data.datasets.pc_dataset import pc_dataloader_from_config
from nemo_pc.models import EncDecRNNTPCBPEModel
from nemo_pc.parts.text import normalize
from nemo_pc.pipelines.onnx_rnnt import OnnxRNNTPCRunner, export_for_onnxruntime
from nemo_pc.testing.asr import (
    UTTERANCES,
    audio_paths,
    first_batch_features,
    tiny_model_config,
    train_tokenizer,
    write_pc_manifest,
)
from nemo_pc.testing.training import LossRecorder, tiny_trainer

VARIANTS = {
    "single_normalized": {"decoders": "single", "target": "normalized"},
    "single_punctuated": {"decoders": "single", "target": "punctuated"},
    "dual": {"decoders": "dual"},
    "conditioned": {"decoders": "conditioned"},
    "conditioned_stateless": {"decoders": "conditioned", "predictor": "stateless"},
}
STEPS = 150
NATIVE = {"single_normalized": ["normalized"], "single_punctuated": ["punctuated"]}


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rnnt_pc")
    manifest = write_pc_manifest(folder)
    return {"folder": folder, "manifest": manifest, "tokenizer": train_tokenizer(manifest, folder / "tokenizer")}


def _config(corpus, variant, **overrides):
    config = OmegaConf.create(
        tiny_model_config(corpus["tokenizer"], train_manifest=corpus["manifest"], **VARIANTS[variant], **overrides)
    )
    config.loss.loss_name = "scan"  # the fastest RNN-T loss on CPU
    return config


_TRAINED = {}


@pytest.fixture(scope="module")
def trained(corpus):
    def get(variant):
        if variant not in _TRAINED:
            pl.seed_everything(0)
            losses = LossRecorder()
            trainer = tiny_trainer(STEPS, losses)
            model = EncDecRNNTPCBPEModel(cfg=_config(corpus, variant, lr=0.003), trainer=trainer)
            trainer.fit(model)
            model.eval()
            _TRAINED[variant] = (model, losses.values, trainer)
        return _TRAINED[variant]

    return get


def _audio(corpus):
    return audio_paths(corpus["manifest"])


def _texts(hypotheses):
    return [hyp.text if hasattr(hyp, "text") else hyp for hyp in hypotheses]


@pytest.mark.parametrize("variant", VARIANTS)
def test_training_steps_run_with_finite_loss_and_training_wer(trained, variant):
    _, losses, trainer = trained(variant)
    assert len(losses) == STEPS and all(math.isfinite(loss) for loss in losses)
    wer = trainer.callback_metrics["training_batch_wer"]  # NeMo's step computed it, per mode, on the last step
    assert math.isfinite(float(wer)) and float(wer) >= 0.0


@pytest.mark.parametrize("variant", VARIANTS)
def test_overfitting_lowers_the_loss_and_memorizes_an_utterance(trained, corpus, variant):
    model, losses, _ = trained(variant)
    assert losses[-1] < 0.05 * losses[0]
    texts = [text for text, _ in UTTERANCES[:2]]
    expected = {"normalized": [normalize(text) for text in texts], "punctuated": texts}
    for mode in NATIVE.get(variant, ["normalized", "punctuated"]):
        assert _texts(model.transcribe(_audio(corpus)[:2], mode=mode, verbose=False)) == expected[mode], mode


@pytest.mark.parametrize("variant", VARIANTS)
def test_both_equals_the_two_single_mode_calls(trained, corpus, variant):
    model, _, _ = trained(variant)
    audio = _audio(corpus)
    if variant == "single_normalized":
        with pytest.raises(ValueError, match="mode"):
            model.transcribe(audio, mode="both", verbose=False)
        return
    both = model.transcribe(audio, mode="both", verbose=False, batch_size=2)
    for mode in ("normalized", "punctuated"):
        assert _texts(both[mode]) == _texts(model.transcribe(audio, mode=mode, verbose=False, batch_size=2))
    assert _texts(both["normalized"]) != _texts(both["punctuated"])


@pytest.mark.parametrize("variant", VARIANTS)
def test_nemo_file_round_trip(trained, corpus, variant, tmp_path):
    model, _, _ = trained(variant)
    path = tmp_path / f"{variant}.nemo"
    model.save_to(str(path))
    restored = EncDecRNNTPCBPEModel.restore_from(str(path), map_location="cpu")
    assert type(restored.decoder) is type(model.decoder) and restored.head_modes == model.head_modes
    for name, value in model.state_dict().items():
        assert torch.equal(value, restored.state_dict()[name]), name
    for mode in NATIVE.get(variant, ["normalized", "punctuated"]):
        assert _texts(restored.transcribe(_audio(corpus), mode=mode, verbose=False)) == _texts(
            model.transcribe(_audio(corpus), mode=mode, verbose=False)
        )


@pytest.mark.parametrize("variant", VARIANTS)
def test_onnx_greedy_equals_pytorch_greedy(trained, corpus, variant, tmp_path):
    model, _, _ = trained(variant)
    runner = OnnxRNNTPCRunner(export_for_onnxruntime(model, tmp_path / "onnx"))
    features, lengths = first_batch_features(model, corpus["manifest"])
    for mode in model.head_modes:
        name = ("normalized", "punctuated")[mode]
        onnx_texts = runner.transcribe_features(features, lengths, [mode] * 4)
        assert onnx_texts == _texts(model.transcribe(_audio(corpus), mode=name, verbose=False, batch_size=4)), name
    every = runner.transcribe_all(features, lengths)
    assert sorted(every) == sorted(("normalized", "punctuated")[mode] for mode in model.head_modes)
    for mode in model.head_modes:
        name = ("normalized", "punctuated")[mode]
        assert every[name] == runner.transcribe_features(features, lengths, [mode] * 4)
    for mode in set((0, 1)) - set(model.head_modes):  # a single-target export refuses the other mode
        with pytest.raises(ValueError, match="not exported"):
            runner.transcribe_features(features, lengths, [mode] * 4)
    # The export leaves the modules as they were: training and decoding still prepend the start symbol.
    assert not any(getattr(module, "_rnnt_export", False) for module in model.modules())
    assert all(
        getattr(module, "log_softmax", None) is None
        for module in model.joint.modules()
        if hasattr(module, "log_softmax") and not callable(module.log_softmax)
    )


def test_dual_model_exports_one_head_per_mode(trained, corpus, tmp_path):
    """A single-output deployment of the 2-Decoder model runs only that mode's predictor and joint."""
    model, _, _ = trained("dual")
    features, lengths = first_batch_features(model, corpus["manifest"])
    full = OnnxRNNTPCRunner(export_for_onnxruntime(model, tmp_path / "both"))
    for mode in (0, 1):
        one = OnnxRNNTPCRunner(export_for_onnxruntime(model, tmp_path / f"mode{mode}", modes=[mode]))
        assert len(one.states) == len(full.states) // 2
        want = full.transcribe_features(features, lengths, [mode] * 4)
        assert one.transcribe_features(features, lengths, [mode] * 4) == want
        # the runner reads the exported modes: the other mode is refused, not answered by the wrong head
        assert one.modes == [mode]
        assert list(one.transcribe_all(features, lengths)) == [("normalized", "punctuated")[mode]]
        with pytest.raises(ValueError, match="not exported"):
            one.transcribe_features(features, lengths, [1 - mode] * 4)
    with pytest.raises(ValueError, match="heads for modes"):
        export_for_onnxruntime(model, tmp_path / "bad", modes=[2])


def test_change_decoding_strategy_applies_to_every_head(trained, corpus):
    model, _, _ = trained("dual")
    modes = ("normalized", "punctuated")
    before = {mode: _texts(model.transcribe(_audio(corpus), mode=mode, verbose=False)) for mode in modes}
    model.change_decoding_strategy(OmegaConf.create({"strategy": "greedy", "greedy": {"max_symbols": 10}}))
    try:
        assert [type(decoding.decoding).__name__ for decoding in model.decodings.values()] == ["GreedyRNNTInfer"] * 2
        assert model.decoding is model.decodings[1]
        assert {mode: _texts(model.transcribe(_audio(corpus), mode=mode, verbose=False)) for mode in modes} == before
    finally:
        model.change_decoding_strategy(OmegaConf.create({"strategy": "greedy_batch", "greedy": {"max_symbols": 10}}))
    assert [type(decoding.decoding).__name__ for decoding in model.decodings.values()] == [
        "GreedyBatchedRNNTInfer"
    ] * 2


def test_validation_logs_the_wer_of_each_mode(trained, corpus, tmp_path):
    import jiwer

    from nemo_pc.parts.manifest import read_manifest, write_manifest

    model, _, _ = trained("conditioned")
    entries = read_manifest(corpus["manifest"])
    shifted = [
        dict(entry, text=other["text"], text_normalized=other["text_normalized"], pc_source=other["pc_source"])
        for entry, other in zip(entries, entries[1:] + entries[:1], strict=True)
    ]
    manifest = write_manifest(tmp_path / "shifted.json", shifted)
    loader = pc_dataloader_from_config({"manifest_filepath": str(manifest), "batch_size": 2}, model.tokenizer)
    trainer = pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False)
    metrics = trainer.validate(model, dataloaders=loader, verbose=False)[0]
    modes = ("normalized", "punctuated")
    hyps = {mode: _texts(model.transcribe(_audio(corpus), mode=mode, verbose=False)) for mode in modes}
    with_p = [index for index, entry in enumerate(shifted) if entry["pc_source"] != "none"]
    expected_n = jiwer.wer([entry["text_normalized"] for entry in shifted], hyps["normalized"])
    expected_p = jiwer.wer([shifted[i]["text"] for i in with_p], [hyps["punctuated"][i] for i in with_p])
    assert expected_n > 0.5 and expected_p > 0.5
    assert metrics["val_wer_normalized"] == pytest.approx(expected_n)
    assert metrics["val_wer_punctuated"] == pytest.approx(expected_p)
    assert all(math.isfinite(metrics[f"val_loss_{mode}"]) for mode in modes)  # each mode's loss term
    model.eval()


def test_unknown_mode_is_refused_naming_the_argument(trained, corpus):
    model, _, _ = trained("conditioned")
    with pytest.raises(ValueError, match="mode must be one of"):
        model.transcribe(_audio(corpus), mode="shouting", verbose=False)


def _batch_loss(model, batch):
    """The loss and per-mode terms the training step computes, on the batch's mode rows."""
    return model.rows_loss(*model.encode_rows(batch))


@pytest.mark.parametrize("variant", ["dual", "conditioned"])
def test_pc_fraction_zero_removes_the_punctuated_loss(corpus, variant):
    model = EncDecRNNTPCBPEModel(cfg=_config(corpus, variant, pc_fraction=0.0))
    config = dict(model.cfg.train_ds, batch_size=4, shuffle=False)
    masked = next(iter(pc_dataloader_from_config(config, model.tokenizer)))
    full = next(iter(pc_dataloader_from_config(dict(config, pc_fraction=1.0), model.tokenizer)))
    assert not masked.p_mask.any() and full.p_mask.tolist() == [True, True, True, False]
    model.train()
    loss, terms = _batch_loss(model, masked)
    assert float(terms[1]) == 0.0
    weight_n = 1.0 if variant == "dual" else 0.5
    assert torch.isclose(loss, weight_n * terms[0])
    loss.backward()
    if variant == "dual":
        assert all(p.grad is None or not p.grad.any() for p in model.decoder.head(1).parameters())
        assert any(p.grad is not None and p.grad.any() for p in model.decoder.head(0).parameters())
    model.zero_grad()
    assert float(_batch_loss(model, full)[1][1]) > 0.0


def test_nemo_freeze_updates_hold_the_encoder_then_release_it(corpus):
    """NeMo's dynamic freezing (ModelPT ``freeze_updates``) works on this class: with the encoder frozen for two
    updates, two Lightning steps leave every encoder weight as built while the predictor and joint learn, and the
    third step updates the encoder too."""
    snapshots = []

    class Snapshot(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            snapshots.append({name: value.clone() for name, value in module.state_dict().items()})

    config = _config(corpus, "conditioned")
    config.freeze_updates = {"enabled": True, "modules": {"encoder": 2}}
    pl.seed_everything(0)
    trainer = tiny_trainer(3, Snapshot())
    model = EncDecRNNTPCBPEModel(cfg=config, trainer=trainer)
    start = {name: value.clone() for name, value in model.state_dict().items()}
    trainer.fit(model)

    def changed(state, prefix):
        names = [name for name in state if name.startswith(prefix) and state[name].is_floating_point()]
        assert names
        return [name for name in names if "running" not in name and not torch.equal(state[name], start[name])]

    assert not changed(snapshots[1], "encoder.")
    assert changed(snapshots[1], "decoder.") and changed(snapshots[1], "joint.")
    assert changed(snapshots[2], "encoder.")


SCRIPT = """
import json, sys, torch
from omegaconf import OmegaConf
from nemo.collections.asr.models.aed_multitask_models import parse_multitask_prompt
from nemo.collections.asr.parts.submodules.rnnt_decoding import RNNTDecodingConfig
from nemo.collections.asr.parts.utils.transcribe_utils import setup_model
# the script imports no nemo_pc module itself; the installed startup hook (nemo_pc-allowlist.pth) imports the package
assert not [name for name in sys.modules if name.startswith("nemo_pc.models")]
cfg = OmegaConf.create({"model_path": sys.argv[1], "pretrained_name": None})
model, name = setup_model(cfg, torch.device("cpu"))
model.change_decoding_strategy(OmegaConf.structured(RNNTDecodingConfig(fused_batch_size=-1)))
out = {}
for prompt in ({}, {"mode": "normalized"}):
    override = model.get_transcribe_config()
    override.batch_size = 2
    override.num_workers = 0
    override.return_hypotheses = True
    override.text_field = "text"
    if hasattr(override, "prompt"):
        override.prompt = parse_multitask_prompt(prompt)
    hyps = model.transcribe(audio=sys.argv[2], override_config=override)
    out[prompt.get("mode", "default")] = [h.text for h in hyps]
print(json.dumps(out))
"""


def test_stock_transcribe_speech_path_restores_and_switches_mode(trained, corpus, tmp_path):
    model, _, _ = trained("conditioned")
    path = tmp_path / "conditioned.nemo"
    model.save_to(str(path))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path), str(corpus["manifest"])],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["default"] == _texts(model.transcribe(_audio(corpus), mode="punctuated", verbose=False))
    assert out["normalized"] == _texts(model.transcribe(_audio(corpus), mode="normalized", verbose=False))
