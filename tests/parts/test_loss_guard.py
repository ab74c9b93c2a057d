"""A NaN training loss names its step and utterances, then the step is skipped (weights and optimizer state as they
were) or the run stops, in both model families, through Lightning's own loop."""

import lightning.pytorch as pl
import pytest
import torch
from omegaconf import OmegaConf

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.parts.loss_guard import NonFiniteLossError, loss_is_finite, nonfinite_policy
from nemo_pc.testing.training import tiny_trainer

NAN_AT = 2  # the training step whose loss is made NaN
STEPS = 4


def test_policy_is_checked_by_name():
    assert nonfinite_policy(OmegaConf.create({})) == "skip"
    assert nonfinite_policy(OmegaConf.create({"nonfinite_loss": "stop"})) == "stop"
    with pytest.raises(ValueError, match="model.nonfinite_loss"):
        nonfinite_policy(OmegaConf.create({"nonfinite_loss": "ignore"}))


def test_a_finite_loss_passes_and_an_infinite_one_is_named():
    class Batch:
        utt_ids = ("a.json:3", "a.json:7")

    assert loss_is_finite(torch.tensor(2.5), Batch(), 0, "stop")
    with pytest.raises(NonFiniteLossError, match=r"step 5; this rank's utterances: a.json:3, a.json:7"):
        loss_is_finite(torch.tensor(float("inf")), Batch(), 5, "stop")
    assert not loss_is_finite(torch.tensor(float("nan")), Batch(), 5, "skip")


class _Poison(pl.Callback):
    """Makes the model's loss NaN at one step by scaling the input audio with NaN, and records the weights and the
    optimizer state around that step."""

    def __init__(self):
        self.before = self.after = None

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        if trainer.global_step == NAN_AT:
            batch.audio.mul_(float("nan"))
            self.before = _snapshot(module, trainer)

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if self.before is not None and self.after is None:
            self.after = _snapshot(module, trainer)


def _snapshot(module, trainer):
    weights = {name: value.detach().clone() for name, value in module.state_dict().items()}
    optimizer = trainer.optimizers[0].state_dict()["state"]
    moments = {key: {k: v.clone() for k, v in value.items() if torch.is_tensor(v)} for key, value in optimizer.items()}
    return weights, moments


def _trainer(callback):
    return tiny_trainer(STEPS, callback)


def _rnnt(tmp_path, policy):
    from nemo_pc.models import EncDecRNNTPCBPEModel
    from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest

    manifest = write_pc_manifest(tmp_path / "data")
    config = OmegaConf.create(tiny_model_config(train_tokenizer(manifest, tmp_path / "tok"), train_manifest=manifest))
    config.loss.loss_name = "scan"
    config.nonfinite_loss = policy
    return lambda trainer: EncDecRNNTPCBPEModel(cfg=config, trainer=trainer), manifest


def _ctc(tmp_path, policy):
    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel
    from nemo_pc.testing.ctc import memorized_corpus, tiny_config

    manifest, tokenizer = memorized_corpus(tmp_path)
    config = OmegaConf.create(tiny_config(tokenizer, manifest, {}))
    config.nonfinite_loss = policy
    return lambda trainer: EncDecCTCPCBPEModel(cfg=config, trainer=trainer), manifest


@pytest.mark.parametrize("family", [_rnnt, _ctc])
def test_a_nan_step_is_skipped_and_training_goes_on(family, tmp_path, caplog):
    build, manifest = family(tmp_path, "skip")
    poison = _Poison()
    trainer = _trainer(poison)
    torch.manual_seed(0)
    model = build(trainer)
    with caplog.at_level("WARNING", logger="nemo_pc.parts.loss_guard"):
        trainer.fit(model)
    weights, moments = poison.before
    after_weights, after_moments = poison.after
    assert all(torch.equal(weights[name], after_weights[name]) for name in weights)
    assert moments.keys() == after_moments.keys()
    assert all(torch.equal(moments[k][n], after_moments[k][n]) for k in moments for n in moments[k])
    message = next(record.getMessage() for record in caplog.records if "non-finite" in record.getMessage())
    assert f"at step {NAN_AT}" in message and f"{manifest}:" in message and "skipped" in message
    final = model.state_dict()  # the steps after the skipped one trained, on finite weights
    assert any(not torch.equal(after_weights[name], final[name]) for name in after_weights)
    assert all(torch.isfinite(value).all() for value in final.values() if value.is_floating_point())


@pytest.mark.parametrize("family", [_rnnt, _ctc])
def test_a_nan_step_stops_the_run_when_configured(family, tmp_path):
    build, manifest = family(tmp_path, "stop")
    trainer = _trainer(_Poison())
    model = build(trainer)
    with pytest.raises(NonFiniteLossError, match=rf"at step {NAN_AT}; this rank's utterances: {manifest}:\d"):
        trainer.fit(model)
