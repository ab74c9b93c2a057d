"""configs/rnnt's two decoder groups: ``variant`` (single, dual, conditioned) and ``predictor`` (lstm, stateless).

Every pair composes and builds. The five decoder configs of the former ``decoders`` group (kept below as they were
written) compose exactly as before from their pair, so that a run or a checkpoint of either layout is the same.
"""

from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, open_dict

from nemo_pc.testing.asr import TINY_ENCODER_OVERRIDES, train_tokenizer, write_pc_manifest

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "rnnt"

_RNNT_JOINT = """
  joint:
    _target_: nemo.collections.asr.modules.RNNTJoint
    log_softmax: null
    preserve_memory: false
    fuse_loss_wer: false
    jointnet:
      joint_hidden: ${model.model_defaults.joint_hidden}
      activation: relu
      dropout: 0.1
"""
_DUAL_JOINT = """
  joint:
    _target_: nemo_pc.modules.DualRNNTJoint
    head_target: nemo.collections.asr.modules.RNNTJoint
    head:
      log_softmax: null
      preserve_memory: false
      fuse_loss_wer: false
    jointnet:
      joint_hidden: ${model.model_defaults.joint_hidden}
      activation: relu
      dropout: 0.1
"""
FORMER = {  # configs/rnnt/decoders/<name>.yaml before the split -> (the overrides that replace it, its content)
    "single": (
        ["variant=single"],
        """
model:
  pc:
    decoders: single
  decoder:
    _target_: nemo.collections.asr.modules.RNNTDecoder
    normalization_mode: null
    random_state_sampling: false
    blank_as_pad: true
    prednet:
      pred_hidden: ${model.model_defaults.pred_hidden}
      pred_rnn_layers: 1
      dropout: 0.1
"""
        + _RNNT_JOINT,
    ),
    "conditioned": (
        ["variant=conditioned", "predictor=lstm"],
        """
model:
  pc:
    decoders: conditioned
  decoder:
    _target_: nemo_pc.modules.ModeConditionedRNNTDecoder
    mode_dim: ${model.model_defaults.mode_dim}
    normalization_mode: null
    random_state_sampling: false
    blank_as_pad: true
    prednet:
      pred_hidden: ${model.model_defaults.pred_hidden}
      pred_rnn_layers: 1
      dropout: 0.1
"""
        + _RNNT_JOINT,
    ),
    "conditioned_stateless": (
        ["variant=conditioned", "predictor=stateless"],
        """
model:
  pc:
    decoders: conditioned
  decoder:
    _target_: nemo_pc.modules.ModeConditionedStatelessDecoder
    mode_dim: ${model.model_defaults.mode_dim}
    context_size: 2
    normalization_mode: layer
    prednet:
      pred_hidden: ${model.model_defaults.pred_hidden}
      dropout: 0.1
"""
        + _RNNT_JOINT,
    ),
    "dual": (
        ["variant=dual"],
        """
model:
  pc:
    decoders: dual
  decoder:
    _target_: nemo_pc.modules.DualRNNTDecoder
    head_target: nemo.collections.asr.modules.RNNTDecoder
    head:
      normalization_mode: null
      random_state_sampling: false
      blank_as_pad: true
      prednet:
        pred_hidden: ${model.model_defaults.pred_hidden}
        pred_rnn_layers: 1
        dropout: 0.1
"""
        + _DUAL_JOINT,
    ),
    "dual_stateless": (
        ["variant=dual", "predictor=stateless"],
        """
model:
  pc:
    decoders: dual
  decoder:
    _target_: nemo_pc.modules.DualRNNTDecoder
    head_target: nemo.collections.asr.modules.StatelessTransducerDecoder
    head:
      context_size: 2
      normalization_mode: layer
      prednet:
        pred_hidden: ${model.model_defaults.pred_hidden}
        dropout: 0.1
"""
        + _DUAL_JOINT,
    ),
}

DECODERS = {  # (variant, predictor) -> the decoder class, and for dual the class of each mode's predictor
    ("single", "lstm"): ("RNNTDecoder", None),
    ("single", "stateless"): ("StatelessTransducerDecoder", None),
    ("dual", "lstm"): ("DualRNNTDecoder", "RNNTDecoder"),
    ("dual", "stateless"): ("DualRNNTDecoder", "StatelessTransducerDecoder"),
    ("conditioned", "lstm"): ("ModeConditionedRNNTDecoder", None),
    ("conditioned", "stateless"): ("ModeConditionedStatelessDecoder", None),
}


def _compose(overrides):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        return compose(config_name="rnnt_pc", overrides=list(overrides))


@pytest.mark.parametrize("former", sorted(FORMER))
def test_a_pair_composes_the_decoder_and_joint_of_the_former_config(former):
    overrides, text = FORMER[former]
    expected = yaml.safe_load(text)["model"]
    assert expected.pop("pc") == {"decoders": former.removesuffix("_stateless")}  # the modules name the variant now
    for extra in ([], ["loss=tdt", "aux_ctc=normalized", "encoder=streaming"]):
        model = OmegaConf.to_container(_compose([*overrides, *extra]).model, resolve=False)
        assert "decoders" not in model["pc"]
        composed = {"decoder": model["decoder"], "joint": model["joint"]}
        if extra:  # loss=tdt adds the joint's duration outputs and nothing else to these sections
            assert composed["joint"].pop("num_extra_outputs") == 5
        assert composed == expected


def test_the_defaults_are_the_conditioned_lstm_predictor():
    assert _compose([]).model == _compose(["variant=conditioned", "predictor=lstm"]).model


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rnnt_pc_config_groups")
    return train_tokenizer(write_pc_manifest(folder, duration=0.2), folder / "tokenizer")


@pytest.mark.parametrize(("variant", "predictor"), sorted(DECODERS))
def test_every_variant_and_predictor_pair_builds(tokenizer, variant, predictor):
    from nemo_pc.models import EncDecRNNTPCBPEModel

    cfg = _compose(
        [
            f"variant={variant}",
            f"predictor={predictor}",
            *TINY_ENCODER_OVERRIDES,
            "model.model_defaults.pred_hidden=32",
            "model.model_defaults.joint_hidden=32",
        ]
    )
    with open_dict(cfg):
        cfg.model.tokenizer.dir = str(tokenizer)
        cfg.model.train_ds.manifest_filepath = None
        cfg.model.validation_ds.manifest_filepath = None
    model = EncDecRNNTPCBPEModel(cfg=cfg.model)
    decoder, head = DECODERS[(variant, predictor)]
    assert type(model.decoder).__name__ == decoder
    if head is not None:
        assert [type(model.decoder.head(mode)).__name__ for mode in (0, 1)] == [head, head]
    assert "decoders" not in cfg.model.pc and cfg.name == f"RNNT-PC-{variant}"
