"""The model surface both P&C ASR families share (nemo_pc.models.mixins.pc_model): the pc section, the default
mode, the keys of older checkpoints, and NeMo's training step with auxiliary losses."""

import dataclasses
from types import SimpleNamespace

import pytest
import torch
from nemo.core.classes.mixins import AccessMixin
from omegaconf import OmegaConf, open_dict

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.models import EncDecCTCPCBPEModel, EncDecRNNTPCBPEModel
from nemo_pc.models.ctc_pc import CTCPCConfig
from nemo_pc.models.rnnt_pc import RNNTPCConfig
from nemo_pc.parts.modes import MODES, mode_id
from nemo_pc.testing import ctc as ctc_testing
from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pc_model")
    rnnt_manifest = write_pc_manifest(folder / "rnnt")
    ctc_manifest, ctc_tokenizer = ctc_testing.memorized_corpus(folder / "ctc")
    return {
        "rnnt": (rnnt_manifest, train_tokenizer(rnnt_manifest, folder / "rnnt_tok")),
        "ctc": (ctc_manifest, ctc_tokenizer),
    }


def _ctc(corpora, pc: dict | None = None) -> EncDecCTCPCBPEModel:
    manifest, tokenizer = corpora["ctc"]
    torch.manual_seed(0)
    return EncDecCTCPCBPEModel(OmegaConf.create(ctc_testing.tiny_config(tokenizer, manifest, pc)))


def _rnnt(corpora, **options) -> EncDecRNNTPCBPEModel:
    manifest, tokenizer = corpora["rnnt"]
    config = OmegaConf.create(tiny_model_config(tokenizer, train_manifest=manifest, **options))
    return EncDecRNNTPCBPEModel(config)


@pytest.mark.parametrize("family", ["rnnt", "ctc"])
def test_both_families_answer_a_mode_request_alike(corpora, family):
    """What the shared surface does for either family: no NeMo pretrained name resolves to it, a P&C model writes
    both modes and defaults to punctuated, a request by name, initial, id or ``both`` resolves to the same mode
    names, and a model with a normalized main output refuses a punctuated request by name."""
    build = {"rnnt": lambda **pc: _rnnt(corpora, **pc), "ctc": lambda **pc: _ctc(corpora, pc or None)}[family]
    model = build()
    assert type(model).list_available_models() == []
    assert model.mode_ids == (mode_id("normalized"), mode_id("punctuated")) and model.default_mode == "punctuated"
    requests = {None: "punctuated", "N": "normalized", 1: "punctuated", "both": "both"}
    assert {asked: model.requested_mode(SimpleNamespace(mode=asked)) for asked in requests} == requests
    normalized_only = build(decoders="single", target="normalized") if family == "rnnt" else build(target="normalized")
    assert normalized_only.default_mode == "normalized"
    with pytest.raises(ValueError, match="mode: this model writes only normalized text, not punctuated"):
        normalized_only.requested_mode(SimpleNamespace(mode="P"))


@pytest.mark.parametrize("section", [CTCPCConfig, RNNTPCConfig])
def test_pc_section_fills_defaults_and_reads_old_keys(section):
    assert OmegaConf.to_container(section.section(OmegaConf.create({}))) == dataclasses.asdict(section())
    old = OmegaConf.create({"marks": ".,?!", "pc": {"default_style": "normalized"}})  # an older checkpoint
    pc = section.section(old)
    assert pc.marks == ".,?!" and pc.default_mode == "normalized" and "default_style" not in pc
    new = OmegaConf.create({"marks": ".,?!", "pc": {"marks": ".?", "default_mode": "P", "default_style": "N"}})
    assert section.section(new).marks == ".?" and section.section(new).default_mode == "P"


@pytest.mark.parametrize(
    ("section", "pc", "message"),
    [
        (CTCPCConfig, {"default_mode": "shouting"}, "pc.default_mode"),
        (RNNTPCConfig, {"default_mode": "shouting"}, "pc.default_mode"),
        (CTCPCConfig, {"ngram_lm_mode": "loud"}, "pc.ngram_lm_mode"),
        (RNNTPCConfig, {"ngram_lm_mode": "loud"}, "pc.ngram_lm_mode"),
        (CTCPCConfig, {"target": "spoken"}, "pc.target"),
        (RNNTPCConfig, {"decoders": "single", "target": "spoken"}, "pc.target"),
        (RNNTPCConfig, {"decoders": "triple"}, "pc.decoders"),
        (RNNTPCConfig, {"alpha": 1.5}, "pc.alpha"),
    ],
)
def test_bad_pc_values_are_refused_by_name(section, pc, message):
    with pytest.raises(ValueError, match=message):
        section.section(OmegaConf.create({"pc": pc}))


@pytest.mark.parametrize(
    ("options", "writes"),
    [
        ({"decoders": "single", "target": "normalized"}, ["normalized"]),
        ({"decoders": "single", "target": "punctuated"}, ["normalized", "punctuated"]),
        ({"decoders": "conditioned"}, ["normalized", "punctuated"]),
    ],
)
def test_default_mode_and_its_id_never_disagree(corpora, options, writes):
    """The configured default mode when the model writes it, else the mode of its main output; the RNN-T's NeMo
    decoding (``model.decoding``) is the head that writes it."""
    model = _rnnt(corpora, **options)
    main = "normalized" if writes == ["normalized"] else "punctuated"
    for configured in (None, "normalized", "punctuated"):
        with open_dict(model.cfg):
            model.cfg.pc.default_mode = configured
        assert mode_id(model.default_mode) == model.default_mode_id
        assert model.default_mode == (configured if configured in writes else main)
        model.change_decoding_strategy(model.cfg.decoding, verbose=False)
        assert model.decoding is model.decodings[model.source_mode(model.default_mode_id)]
    assert [MODES[mode] for mode in model.mode_ids] == writes


def test_old_rnnt_keys_are_read_as_fallbacks(corpora):
    """A config of an older RNN-T checkpoint: a top-level marks and pc_fraction (now pc.marks and
    train_ds.pc_fraction)."""
    manifest, tokenizer = corpora["rnnt"]
    config = OmegaConf.create(tiny_model_config(tokenizer, train_manifest=manifest))
    with open_dict(config):
        config.marks, config.pc_fraction = ".,?!", 0.0
        del config.pc["marks"], config.train_ds["pc_fraction"]
    model = EncDecRNNTPCBPEModel(config)
    assert model.cfg.pc.marks == ".,?!"
    assert not next(iter(model._train_dl)).p_mask.any()


def test_old_ctc_checkpoint_with_default_style_restores(corpora, tmp_path):
    model = _ctc(corpora)
    path = tmp_path / "ctc.nemo"
    model.save_to(str(path))
    old = OmegaConf.create(OmegaConf.to_container(model.cfg))
    with open_dict(old):
        del old.pc["default_mode"]
        old.pc.default_style = "normalized"
    restored = EncDecCTCPCBPEModel.restore_from(str(path), override_config_path=old, map_location="cpu")
    assert restored.default_mode == "normalized" and "default_style" not in restored.cfg.pc


def test_ctc_training_step_adds_auxiliary_losses(corpora):
    """NeMo's step: a loss a module registers through AccessMixin (as adapters do) is added, the registry is
    cleared after the step, and the step logs each head's loss and the training batch WER."""
    model = _ctc(corpora, {"ctc_weight": 0.5, "inter": {"weight": 0.5}}).train()
    batch = next(iter(model._train_dl))
    base, _ = model.compute_losses(batch)

    def auxiliary_loss(module, inputs, output):  # what NeMo's adapter strategies do with an L2 loss
        module.set_access_enabled(access_enabled=True, guid=model.model_guid)
        module.register_accessible_tensor(name="adapter_loss", tensor=torch.tensor(2.5))

    model.encoder.register_forward_hook(auxiliary_loss)
    logs = {}
    model.log_dict = lambda values, **kwargs: logs.update(values)
    step = model.training_step(batch, 0)
    torch.testing.assert_close(step["loss"], base + 2.5)
    assert not AccessMixin.get_module_registry(model)
    assert not AccessMixin.is_access_enabled(model.model_guid)
    assert {"train_loss", "train_main_loss", "train_inter_loss", "training_batch_wer"} <= set(logs)
    assert float(logs["adapter_loss/encoder"]) == 2.5


def test_a_bad_nonfinite_policy_is_refused_when_the_model_is_built(corpora):
    manifest, tokenizer = corpora["ctc"]
    config = OmegaConf.create(ctc_testing.tiny_config(tokenizer, manifest, None))
    config.nonfinite_loss = "Skip"
    with pytest.raises(ValueError, match="model.nonfinite_loss must be one of"):
        EncDecCTCPCBPEModel(config)


def test_a_mode_without_reference_words_gets_no_validation_wer():
    """A set whose transcripts carry no marks (real_dev) has no punctuated words: no punctuated WER, not 0."""
    counts = {"": (3.0, 10.0), "_normalized": (3.0, 10.0), "_punctuated": (0.0, 0.0)}
    outputs = []
    for batch in range(2):
        outputs.append({})
        for suffix, (errors, words) in counts.items():
            outputs[-1][f"val_wer_num{suffix}"] = torch.tensor(errors + batch)
            outputs[-1][f"val_wer_denom{suffix}"] = torch.tensor(words if suffix != "_punctuated" else 0.0)
    logs = EncDecRNNTPCBPEModel._epoch_end(SimpleNamespace(), outputs, "val", {"log": {}})["log"]
    assert set(logs) == {"val_wer", "val_wer_normalized"}
    assert float(logs["val_wer_normalized"]) == pytest.approx(7 / 20)
