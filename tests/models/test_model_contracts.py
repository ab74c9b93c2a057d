"""What both P&C ASR classes promise NeMo: no stock checkpoints, no silently bypassed loss, the loss chosen for
the device, one encoder pass per validation batch."""

import lightning.pytorch as pl
import pytest
import torch
from nemo.collections.asr.models import EncDecCTCModelBPE, EncDecRNNTBPEModel
from omegaconf import OmegaConf

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.losses.mode_weighted import SCAN, resolve_loss_name
from nemo_pc.models import EncDecCTCPCBPEModel, EncDecRNNTPCBPEModel
from nemo_pc.testing import ctc as ctc_testing
from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest


@pytest.fixture(scope="module")
def rnnt_corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("contracts")
    manifest = write_pc_manifest(folder)
    return {"manifest": manifest, "tokenizer": train_tokenizer(manifest, folder / "tokenizer")}


@pytest.mark.parametrize(
    ("ours", "stock"), [(EncDecRNNTPCBPEModel, EncDecRNNTBPEModel), (EncDecCTCPCBPEModel, EncDecCTCModelBPE)]
)
def test_stock_checkpoint_names_do_not_resolve_to_a_pc_class(ours, stock):
    assert stock.list_available_models()  # NeMo lists its own checkpoints ...
    assert ours.list_available_models() == []  # ... which are not P&C models


@pytest.mark.parametrize("decoders", ["single", "conditioned", "dual"])
def test_fused_joint_is_refused_by_name(rnnt_corpus, decoders):
    config = OmegaConf.create(tiny_model_config(rnnt_corpus["tokenizer"], decoders=decoders))
    joint = config.joint.head if decoders == "dual" else config.joint
    joint.fuse_loss_wer = True
    joint.fused_batch_size = 4
    # nemo_pc's own message: NeMo's joint raises about `fuse_loss_wer` too, for other reasons
    with pytest.raises(ValueError, match="joint.fuse_loss_wer: not supported by P&C RNN-T models"):
        EncDecRNNTPCBPEModel(config)


def test_auto_loss_is_scan_on_cpu_and_nemo_default_on_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_loss_name("auto") == SCAN
    assert resolve_loss_name("auto", pl.Trainer(accelerator="cpu", logger=False)) == SCAN
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_loss_name("auto") == "default"
    for explicit in ("scan", "default", "pytorch"):  # a chosen loss is kept on any device
        assert resolve_loss_name(explicit) == explicit


def test_auto_loss_builds_the_scan_loss_on_cpu(rnnt_corpus):
    config = OmegaConf.create(tiny_model_config(rnnt_corpus["tokenizer"]))
    config.loss.loss_name = "auto"
    model = EncDecRNNTPCBPEModel(config)
    assert model.loss_name == SCAN and model.loss.rnnt is None


@pytest.mark.parametrize("pc", [{}, {"ctc_weight": 0.5, "inter": {"weight": 0.5}}, {"target": "normalized"}])
def test_ctc_validation_runs_the_encoder_once(tmp_path, pc):
    manifest, tokenizer = ctc_testing.memorized_corpus(tmp_path)
    model = EncDecCTCPCBPEModel(OmegaConf.create(ctc_testing.tiny_config(tokenizer, manifest, pc)))
    model.eval()
    calls = []
    model.encoder.register_forward_hook(lambda *_: calls.append(1))
    batch = next(iter(model._train_dl))
    with torch.no_grad():
        logs = model.validation_pass(batch, 0)
    assert len(calls) == 1
    main_len = batch.tokens_n_len if pc.get("target") == "normalized" else batch.tokens_p_len
    assert logs["val_wer_denom"] > 0 and torch.isfinite(logs["val_loss"])
    # the WER counts the words of the main head's own targets
    words = sum(
        len(model.tokenizer.ids_to_text(row[:n].tolist()).split())
        for row, n in zip(
            batch.tokens_p if pc.get("target") != "normalized" else batch.tokens_n, main_len, strict=True
        )
    )
    assert int(logs["val_wer_denom"]) == words


@pytest.mark.parametrize("decoders", ["conditioned", "dual"])
def test_each_row_is_scored_by_the_modules_of_its_own_mode(rnnt_corpus, decoders):
    """Modes are arguments: a batch of both modes' rows gives, row by row, what the predictor and joint of that
    row's mode give alone, and no module keeps a mode between calls."""
    from nemo_pc.data.datasets.pc_dataset import pc_dataloader_from_config

    torch.manual_seed(0)
    config = tiny_model_config(rnnt_corpus["tokenizer"], decoders=decoders, train_manifest=rnnt_corpus["manifest"])
    model = EncDecRNNTPCBPEModel(OmegaConf.create(config))
    model.eval()
    loader = pc_dataloader_from_config(dict(model.cfg.train_ds, batch_size=3, shuffle=False), model.tokenizer)
    with torch.no_grad():
        encoded, encoded_len, rows = model.encode_rows(next(iter(loader)))
        assert sorted(set(rows.modes.tolist())) == [0, 1]
        mixed = model.joint_scores(encoded, rows)
        for mode in (0, 1):
            decoder, joint = model.decoder_for(mode)
            g = decoder(targets=rows.targets, target_length=rows.target_len)[0]
            alone = joint(encoder_outputs=encoded, decoder_outputs=g)
            selected = rows.modes == mode
            assert torch.allclose(mixed[selected], alone[selected], atol=1e-5)
            assert not torch.allclose(mixed[~selected], alone[~selected], atol=1e-3)
    with pytest.raises((TypeError, ValueError)):  # the model's own predictor and joint still need each row's mode
        model.decoder(targets=rows.targets, target_length=rows.target_len)
