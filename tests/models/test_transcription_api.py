"""The P&C ASR families share one transcription API (nemo_pc.models.mixins.transcription): one written
``transcribe`` that takes NeMo's arguments by name."""

import dataclasses
import inspect
from types import SimpleNamespace

import pytest
from nemo.collections.asr.models import EncDecCTCModelBPE, EncDecMultiTaskModel, EncDecRNNTBPEModel
from omegaconf import OmegaConf

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.models import EncDecCTCPCBPEModel, EncDecRNNTPCBPEModel
from nemo_pc.models.aed_pc import EncDecAEDPCModel
from nemo_pc.models.mixins.transcription import PCTranscribeConfig, PCTranscriptionMixin, resolve_mode
from nemo_pc.testing import ctc as ctc_testing
from nemo_pc.testing.asr import audio_paths, tiny_model_config, train_tokenizer, write_pc_manifest


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("api")
    manifest = write_pc_manifest(folder / "rnnt")
    rnnt = EncDecRNNTPCBPEModel(OmegaConf.create(tiny_model_config(train_tokenizer(manifest, folder / "tok"))))
    ctc_manifest, tokenizer = ctc_testing.memorized_corpus(folder / "ctc")
    ctc = EncDecCTCPCBPEModel(OmegaConf.create(ctc_testing.tiny_config(tokenizer, ctc_manifest)))
    return {"rnnt": rnnt.eval(), "ctc": ctc.eval(), "audio": audio_paths(manifest)[:1]}


def _positional(function) -> list[str]:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in inspect.signature(function).parameters.values() if p.kind in kinds]


@pytest.mark.parametrize(
    ("ours", "stock"),
    [
        (EncDecRNNTPCBPEModel, EncDecRNNTBPEModel),
        (EncDecCTCPCBPEModel, EncDecCTCModelBPE),
        (EncDecAEDPCModel, EncDecMultiTaskModel),
    ],
)
def test_one_written_transcribe_takes_every_nemo_argument_by_name(ours, stock):
    """Every family's ``transcribe`` is the mixin's; each argument of its NeMo parent is a keyword with NeMo's default.
    Nothing after ``audio`` is positional: NeMo's parents disagree on the positions, so none is taken."""
    assert ours.transcribe is PCTranscriptionMixin.transcribe
    parameters = inspect.signature(ours.transcribe).parameters
    for name, parameter in inspect.signature(stock.transcribe).parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        elif name not in ("self", "audio"):
            assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name
            assert parameters[name].default == parameter.default, name
    assert _positional(ours.transcribe) == ["self", "audio"]
    assert parameters["mode"].kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("family", ["rnnt", "ctc"])
def test_a_second_positional_argument_is_refused(models, family):
    with pytest.raises(TypeError, match="positional"):
        models[family].transcribe(models["audio"], 2)


@pytest.mark.parametrize("family", ["rnnt", "ctc"])
def test_unknown_keyword_is_refused_by_both_families(models, family):
    with pytest.raises(TypeError, match="bogus"):
        models[family].transcribe(models["audio"], bogus=1, verbose=False)


@pytest.mark.parametrize("family", ["rnnt", "ctc"])
def test_same_config_class_and_mode_vocabulary(models, family):
    model = models[family]
    assert type(model.get_transcribe_config()) is PCTranscribeConfig
    assert model.default_mode == "punctuated"
    with pytest.raises(ValueError, match="mode: mode must be one of"):
        model.transcribe(models["audio"], mode="shouting", verbose=False)


@pytest.mark.parametrize("family", ["rnnt", "ctc"])
def test_mode_is_the_one_word(models, family):
    """``mode`` names the output; papers/001's ``style`` is no keyword of transcribe."""
    model = models[family]
    both = model.transcribe(models["audio"], mode="both", verbose=False)
    assert sorted(both) == ["normalized", "punctuated"]
    with pytest.raises(TypeError, match="style"):
        model.transcribe(models["audio"], style="both", verbose=False)
    assert "style" not in {field.name for field in dataclasses.fields(PCTranscribeConfig)}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, "punctuated"),
        ({"mode": "N"}, "normalized"),
        ({"mode": 1}, "punctuated"),
        ({"mode": "both"}, "both"),
        ({"prompt": {"mode": "normalized"}}, "normalized"),
        ({"prompt": {"style": "normalized"}}, "punctuated"),  # not a slot of the prompt: the default
        ({"prompt": [{"role": "user", "slots": {"mode": "normalized"}}]}, "normalized"),
        ({"mode": "punctuated", "prompt": {"mode": "normalized"}}, "punctuated"),  # the argument wins
    ],
)
def test_resolve_mode(config, expected):
    fields = {"mode": None, "prompt": None, **config}
    assert resolve_mode(SimpleNamespace(**fields), "punctuated") == expected


def test_ctc_default_mode_follows_a_normalized_main_head(tmp_path):
    """Without pc.default_mode, a CTC model trained on normalized text transcribes normalized text by default."""
    manifest, tokenizer = ctc_testing.memorized_corpus(tmp_path)
    model = EncDecCTCPCBPEModel(
        OmegaConf.create(ctc_testing.tiny_config(tokenizer, manifest, {"target": "normalized"}))
    )
    assert model.default_mode == "normalized"
    assert isinstance(model.eval().transcribe(audio_paths(manifest)[:1], verbose=False), list)
