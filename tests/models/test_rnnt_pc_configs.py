"""Every decoder variant of configs/rnnt composes with Hydra and builds the one model class; the streaming encoder
variant composes with any of them and trains."""

from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import open_dict

from nemo_pc.models import EncDecRNNTPCBPEModel
from nemo_pc.modules import DualRNNTDecoder, ModeConditionedRNNTDecoder, ModeConditionedStatelessDecoder
from nemo_pc.testing.asr import tiny_streaming_config, train_tokenizer, write_pc_manifest
from nemo_pc.testing.training import LossRecorder, tiny_trainer

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "rnnt"
STATELESS = ["variant=conditioned", "predictor=stateless"]  # the streaming-ready transducer of paper 000


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rnnt_pc_configs")
    return train_tokenizer(write_pc_manifest(folder, duration=0.2), folder / "tokenizer")


@pytest.mark.parametrize(
    ("overrides", "decoder_type", "modes", "weights"),
    [
        (["variant=conditioned", "model.pc.alpha=0.3"], ModeConditionedRNNTDecoder, [0, 1], {0: 0.7, 1: 0.3}),
        (["variant=conditioned", "predictor=stateless"], ModeConditionedStatelessDecoder, [0, 1], {0: 0.5, 1: 0.5}),
        (["variant=dual"], DualRNNTDecoder, [0, 1], {0: 1.0, 1: 1.0}),
        (["variant=dual", "predictor=stateless"], DualRNNTDecoder, [0, 1], {0: 1.0, 1: 1.0}),
        (["variant=single", "model.pc.target=normalized"], None, [0], {0: 1.0}),
        (["variant=single"], None, [1], {1: 1.0}),
    ],
)
def test_variant_configs_build_the_model(tokenizer, overrides, decoder_type, modes, weights):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose(config_name="rnnt_pc", overrides=[*overrides, "model.train_ds.pc_fraction=0.2"])
    assert cfg.model.train_ds.pc_fraction == 0.2
    with open_dict(cfg):
        cfg.model.tokenizer.dir = str(tokenizer)
        cfg.model.train_ds.manifest_filepath = None
        cfg.model.validation_ds.manifest_filepath = None
    model = EncDecRNNTPCBPEModel(cfg=cfg.model)
    assert model.head_modes == modes and model.loss.mode_weights == pytest.approx(weights)
    if decoder_type is not None:
        assert isinstance(model.decoder, decoder_type)
    if decoder_type is DualRNNTDecoder and "predictor=stateless" in overrides:
        assert type(model.decoder.head(1)).__name__ == "StatelessTransducerDecoder"


def test_an_older_config_whose_pc_decoders_names_another_variant_is_refused(tokenizer):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose(config_name="rnnt_pc", overrides=["variant=single", "+model.pc.decoders=dual"])
    with open_dict(cfg):
        cfg.model.tokenizer.dir = str(tokenizer)
        cfg.model.train_ds.manifest_filepath = None
        cfg.model.validation_ds.manifest_filepath = None
    with pytest.raises(ValueError, match="pc.decoders=dual does not match"):
        EncDecRNNTPCBPEModel(cfg=cfg.model)


@pytest.mark.parametrize(
    ("variant", "predictor"), [("conditioned", "stateless"), ("conditioned", "lstm"), ("dual", "lstm")]
)
def test_the_streaming_encoder_composes_with_a_decoder_variant(tokenizer, variant, predictor):
    decoder = [f"variant={variant}", f"predictor={predictor}"]
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose(config_name="rnnt_pc", overrides=["encoder=streaming", *decoder])
        plain = compose(config_name="rnnt_pc", overrides=decoder)
    encoder = cfg.model.encoder
    assert encoder.att_context_style == "chunked_limited" and encoder.conv_context_size == "causal"
    assert encoder.causal_downsampling and encoder.conv_norm_type == "layer_norm"
    assert (encoder.subsampling, encoder.subsampling_factor) == ("dw_striding", 8)
    assert all(left % (right + 1) == 0 for left, right in encoder.att_context_size)  # chunked_limited's rule
    assert cfg.model.preprocessor.normalize == "NA"
    assert cfg.model.decoder == plain.model.decoder and plain.model.encoder.att_context_size == [-1, -1]
    with open_dict(cfg):
        cfg.model.tokenizer.dir = str(tokenizer)
        cfg.model.train_ds.manifest_filepath = None
        cfg.model.validation_ds.manifest_filepath = None
    model = EncDecRNNTPCBPEModel(cfg=cfg.model)
    assert model.encoder.att_context_size_all == [[70, 13], [70, 6], [70, 1], [70, 0]]
    assert model.encoder.att_context_size == [70, 13]  # the first pair is the inference default
    assert model.encoder.streaming_cfg.last_channel_cache_size == 70


def test_the_4x_streaming_encoder_has_the_contexts_of_the_8x_one_and_the_offline_4x_weights(tokenizer):
    from nemo_pc.testing.asr import TINY_ENCODER_OVERRIDES

    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose(config_name="rnnt_pc", overrides=["encoder=streaming_4x", *STATELESS])
        eight = compose(config_name="rnnt_pc", overrides=["encoder=streaming", *STATELESS])
        offline = compose(
            config_name="rnnt_pc",
            overrides=[
                *STATELESS,
                "model.encoder.subsampling_factor=4",
                *TINY_ENCODER_OVERRIDES,
            ],
        )
        tiny = compose(
            config_name="rnnt_pc",
            overrides=["encoder=streaming_4x", *STATELESS, *TINY_ENCODER_OVERRIDES],
        )
    encoder = cfg.model.encoder
    assert (encoder.subsampling, encoder.subsampling_factor) == ("dw_striding", 4)
    assert encoder.att_context_style == "chunked_limited" and encoder.conv_context_size == "causal"
    assert encoder.causal_downsampling and encoder.conv_norm_type == "batch_norm"
    assert cfg.model.preprocessor.normalize == "NA"
    assert all(left % (right + 1) == 0 for left, right in encoder.att_context_size)  # chunked_limited's rule
    # the same chunks and left context in seconds: 40 ms frames against 80 ms
    assert encoder.att_context_size == [
        [2 * left, 2 * right + 1] for left, right in eight.model.encoder.att_context_size
    ]
    models = {}
    for name, config in (("streaming", tiny), ("offline", offline)):
        with open_dict(config):
            config.model.tokenizer.dir = str(tokenizer)
            config.model.train_ds.manifest_filepath = None
            config.model.validation_ds.manifest_filepath = None
        models[name] = EncDecRNNTPCBPEModel(cfg=config.model)
    assert models["streaming"].encoder.att_context_size == [140, 27]
    assert models["streaming"].encoder.streaming_cfg.last_channel_cache_size == 140
    shapes = {name: {k: v.shape for k, v in m.encoder.state_dict().items()} for name, m in models.items()}
    assert shapes["streaming"].keys() == shapes["offline"].keys()
    # init_from_nemo_model loads every encoder tensor of an offline 4x model but the projection after the causal
    # subsampling, which sees one more frequency bin per channel (exclude: [encoder.pre_encode.out.])
    assert [k for k in shapes["offline"] if shapes["offline"][k] != shapes["streaming"][k]] == [
        "pre_encode.out.weight"
    ]


def test_the_streaming_variant_trains_on_one_batch(tmp_path):
    manifest = write_pc_manifest(tmp_path / "data")
    tokenizer = train_tokenizer(manifest, tmp_path / "tokenizer")
    pl.seed_everything(0)
    losses = LossRecorder()
    trainer = tiny_trainer(8, losses, gradient_clip_val=None)
    model = EncDecRNNTPCBPEModel(
        cfg=tiny_streaming_config(tokenizer, manifest, "model.optim.lr=0.003"), trainer=trainer
    )
    assert len(model._train_dl) == 1  # the four utterances are one batch: every step sees the same batch
    trainer.fit(model)
    assert len(losses.values) == 8 and all(torch.isfinite(torch.tensor(losses.values)))
    assert losses.values[-1] < 0.8 * losses.values[0]
