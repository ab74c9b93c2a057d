"""benchmarks/quality_head_lm_scale.py on a tiny transducer head: each weight of the decoder's logits scored on the
dev subset, the trained weight and the best decoded on the held-out splits, the head left at its trained weight; a
model without a head, and a bad weight list, are clear errors."""

import json
import shutil

import pytest
import torch
from benchmark_loader import load_benchmark


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.whisper import tiny_aed_overrides, train_tiny_aed

    folder = tmp_path_factory.mktemp("head_scale")
    corpus, aed = train_tiny_aed(folder)
    overrides = tiny_aed_overrides(
        corpus["weights"],
        corpus["tokenizer"],
        corpus["manifest"],
        "transducer=conditioned",
        f"+init_from_nemo_model={aed}",
    )
    head = folder / "models" / "rnnt_conditioned.nemo"
    train_model("aed", overrides, head, 2)
    for split in ("dev_curve", "test"):
        (folder / "manifests").mkdir(exist_ok=True)
        shutil.copy(corpus["manifest"], folder / "manifests" / f"{split}.json")
    return {"folder": folder, "head": head, "aed": aed}


def test_each_weight_is_scored_on_dev_and_the_best_beside_the_trained_one(demo, tmp_path):
    out = tmp_path / "scale.json"
    args = ["--model", str(demo["head"]), "--demo-dir", str(demo["folder"]), "--scales", "0,1,2.5"]
    report = load_benchmark("quality_head_lm_scale").main([*args, "--final-splits", "test", "--json", str(out)])
    assert json.loads(out.read_text())["best_scale"] == report["best_scale"] in (0.0, 1.0, 2.5)
    assert set(report["dev_grid"]) == {"0", "1", "2.5"} and report["trained_scale"] == 1.0
    for row in report["dev_grid"].values():
        assert set(row) == {"per", "punct_micro_f1", "wer_pc", "wer_normalized"}
    assert set(report["final"]) == {"1", f"{report['best_scale']:g}"}
    assert all(set(scores) == {"test"} for scores in report["final"].values())
    best = min(report["dev_grid"].values(), key=lambda row: row["wer_pc"])["wer_pc"]
    assert report["dev_grid"][f"{report['best_scale']:g}"]["wer_pc"] == best
    assert report["dev_utterances"] == sum(1 for _ in (demo["folder"] / "manifests" / "dev_curve.json").open())
    rendered = load_benchmark("render_results").render_head_lm_scale(out).splitlines()
    assert f"by WER-PC: {report['best_scale']:g} (" in rendered[0]
    test_row = next(line for line in rendered if line.startswith("| 1 | test |"))
    assert f"| {100 * report['final']['1']['test']['per']:.1f}% |" in test_row
    assert sum(line.count("| dev_curve |") for line in rendered) == 3


def test_the_weight_changes_the_joint_inside_the_block_only():
    from nemo_pc.modules.aed_transducer import TransducerJoint

    bench = load_benchmark("quality_head_lm_scale")
    torch.manual_seed(0)
    joint, head = TransducerJoint(8, 8, 5), torch.nn.Linear(8, 5)
    model = type("Head", (), {"transducer_joint": joint})()
    f, g = torch.randn(1, 3, 8), torch.randn(1, 2, 8)
    trained = joint(f, g, head)
    with bench.lm_scale(model, 3.0):
        scaled = joint(f, g, head)
    torch.testing.assert_close(joint(f, g, head), trained)
    # the decoder's logits enter three times instead of once: the token rows move by twice those logits
    lm = (g @ head.weight.T + head.bias)[:, None]
    torch.testing.assert_close(scaled[..., :5] - trained[..., :5], 2.0 * lm.expand_as(trained[..., :5]))


def test_a_model_without_a_head_and_bad_weights_are_clear_errors(demo, tmp_path, capsys):
    bench = load_benchmark("quality_head_lm_scale")
    args = ["--model", str(demo["aed"]), "--demo-dir", str(demo["folder"]), "--json", str(tmp_path / "x.json")]
    with pytest.raises(SystemExit) as stop:
        bench.main([*args, "--final-splits", "test"])
    assert stop.value.code == 2 and "not a transducer head on an AED" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # a held-out split the folder lacks: named before any model loads
        bench.main([*args, "--final-splits", "real_test"])
    assert stop.value.code == 2 and "no such manifest" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        bench.main([*args, "--scales", "1,x"])
    assert stop.value.code == 2 and "--scales must be comma-separated numbers" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        bench.main([*args, "--scales", "-1"])
    assert stop.value.code == 2 and "weights of 0 or more" in capsys.readouterr().err
