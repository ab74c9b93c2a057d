"""Every decoder variant of configs/rnnt composes with Hydra and builds the one model class."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import open_dict

from nemo_pc.models import EncDecRNNTPCBPEModel
from nemo_pc.modules import DualRNNTDecoder, ModeConditionedRNNTDecoder, ModeConditionedStatelessDecoder
from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "rnnt"


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rnnt_pc_configs")
    return train_tokenizer(write_pc_manifest(folder, duration=0.2), folder / "tokenizer")


@pytest.mark.parametrize(
    ("overrides", "decoder_type", "modes", "weights"),
    [
        (["decoders=conditioned", "model.pc.alpha=0.3"], ModeConditionedRNNTDecoder, [0, 1], {0: 0.7, 1: 0.3}),
        (["decoders=conditioned_stateless"], ModeConditionedStatelessDecoder, [0, 1], {0: 0.5, 1: 0.5}),
        (["decoders=dual"], DualRNNTDecoder, [0, 1], {0: 1.0, 1: 1.0}),
        (["decoders=dual_stateless"], DualRNNTDecoder, [0, 1], {0: 1.0, 1: 1.0}),
        (["decoders=single", "model.pc.target=normalized"], None, [0], {0: 1.0}),
        (["decoders=single"], None, [1], {1: 1.0}),
    ],
)
def test_variant_configs_build_the_model(tokenizer, overrides, decoder_type, modes, weights):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose(config_name="rnnt_pc", overrides=[*overrides, "model.pc_fraction=0.2"])
    assert cfg.model.train_ds.pc_fraction == 0.2
    with open_dict(cfg):
        cfg.model.tokenizer.dir = str(tokenizer)
        cfg.model.train_ds.manifest_filepath = None
        cfg.model.validation_ds.manifest_filepath = None
    model = EncDecRNNTPCBPEModel(cfg=cfg.model)
    assert model.head_modes == modes and model.loss.mode_weights == pytest.approx(weights)
    if decoder_type is not None:
        assert isinstance(model.decoder, decoder_type)
    if decoder_type is DualRNNTDecoder and "stateless" in overrides[0]:
        assert type(model.decoder.head(1)).__name__ == "StatelessTransducerDecoder"


def test_a_decoder_that_does_not_match_pc_decoders_is_refused(tokenizer):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose(config_name="rnnt_pc", overrides=["decoders=single", "model.pc.decoders=dual"])
    with open_dict(cfg):
        cfg.model.tokenizer.dir = str(tokenizer)
        cfg.model.train_ds.manifest_filepath = None
        cfg.model.validation_ds.manifest_filepath = None
    with pytest.raises(ValueError, match="pc.decoders=dual does not match"):
        EncDecRNNTPCBPEModel(cfg=cfg.model)
