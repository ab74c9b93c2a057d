"""A CTC model between the encoder it started from (a tiny AED's) and its fine-tune: the start end puts the AED's
encoder under the CTC heads, the interpolated model is saved with its record, and a start of another shape is
refused."""

import pytest
import torch

from nemo_pc.models.interpolation import InterpolationError, encoder_start_state


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A tiny AED trained 2 steps, and a CTC model trained 2 steps from its encoder with nothing frozen."""
    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.whisper import tiny_aed_corpus, tiny_aed_overrides, tiny_ctc_overrides

    folder = tmp_path_factory.mktemp("encoder_interpolation")
    corpus = tiny_aed_corpus(folder)
    aed = folder / "aed.nemo"
    train_model("aed", tiny_aed_overrides(corpus["weights"], corpus["tokenizer"], corpus["manifest"]), aed, 2)
    ctc = folder / "ctc.nemo"
    overrides = tiny_ctc_overrides(corpus, "model.optim.lr=0.01")
    train_model("ctc", overrides, ctc, 2, init_from=aed)
    return {"aed": aed, "ctc": ctc, "manifest": corpus["manifest"], "folder": folder}


def _states(pair):
    from nemo_pc.pipelines.inference import load_asr_model

    aed = load_asr_model(pair["aed"]).state_dict()
    ctc = load_asr_model(pair["ctc"])
    return aed, ctc


def test_the_start_end_is_the_aeds_encoder_under_the_ctc_heads(pair):
    aed, ctc = _states(pair)
    tuned = {key: value.clone() for key, value in ctc.state_dict().items()}
    start = encoder_start_state(ctc, aed)
    shared = [key for key in tuned if key.startswith("encoder.") and key in aed]
    assert shared and all(torch.equal(start[key], aed[key]) for key in shared)
    # the CTC steps moved the encoder, so the start end is not the fine-tune
    assert any(not torch.equal(tuned[key], aed[key]) for key in shared if tuned[key].is_floating_point())
    heads = [key for key in tuned if not key.startswith("encoder.")]
    assert heads and all(torch.equal(start[key], tuned[key]) for key in heads)
    assert all(torch.equal(value, tuned[key]) for key, value in ctc.state_dict().items())  # the model is untouched


def test_the_interpolated_ctc_model_is_saved_halfway_with_its_start(pair):
    from nemo_pc.pipelines.inference import load_asr_model
    from nemo_pc.pipelines.interpolate import interpolate_at

    aed, ctc = _states(pair)
    tuned = ctc.state_dict()
    target = interpolate_at(pair["ctc"], pair["folder"] / "half.nemo", 0.5, modules=["encoder"], start=pair["aed"])
    half = load_asr_model(target)
    assert half.cfg.interpolation.start == str(pair["aed"])
    assert half.cfg.interpolation.modules == ["encoder"]
    got = half.state_dict()
    moved = [key for key in tuned if key.startswith("encoder.") and key in aed and tuned[key].is_floating_point()]
    for key in moved:
        torch.testing.assert_close(got[key], (aed[key] + tuned[key]) / 2, msg=key)
    assert all(torch.equal(got[key], tuned[key]) for key in tuned if not key.startswith("encoder."))


def test_a_start_of_another_shape_is_refused(pair):
    aed, ctc = _states(pair)
    wrong = {key: torch.zeros(*value.shape, 3) for key, value in aed.items() if key.startswith("encoder.")}
    with pytest.raises(InterpolationError, match="no encoder weight"):
        encoder_start_state(ctc, wrong)


def test_the_sweep_chooses_between_the_ctc_and_its_start(pair):
    from nemo_pc.pipelines.interpolate import sweep_interpolation

    report = sweep_interpolation(
        pair["ctc"],
        {"dev": pair["manifest"]},
        pair["folder"] / "chosen.nemo",
        weights=(0.0, 1.0),
        modules=["encoder"],
        start=pair["aed"],
    )
    assert report["start"] == str(pair["aed"])
    assert [row["weight"] for row in report["rows"]] == [0.0, 1.0]
    means = report["mean_normalized_wer"]
    assert report["chosen"] == min((0.0, 1.0), key=lambda w: (means[str(w)], -w))
    assert (pair["folder"] / "chosen.nemo").is_file()
