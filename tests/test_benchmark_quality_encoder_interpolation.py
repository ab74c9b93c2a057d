"""benchmarks/quality_encoder_interpolation.py: the start a system's stats name, the weight chosen on the dev splits
only, the flags it refuses, and the rendered table."""

import json

import pytest
from benchmark_loader import load_benchmark


def _row(weight, dev, real_dev, test):
    def scores(n_wer):
        return {"per": 0.4, "punct_micro_f1": 0.5, "wer_pc": n_wer, "wer_normalized": n_wer}

    return {
        "weight": weight,
        "scores": {"dev": scores(dev), "real_dev": scores(real_dev), "test": scores(test), "real_test": scores(0.7)},
    }


def test_the_weight_is_chosen_on_the_dev_splits_alone():
    bench = load_benchmark("quality_encoder_interpolation")
    rows = [_row(0.0, 0.6, 0.5, 0.1), _row(0.5, 0.5, 0.5, 0.9), _row(1.0, 0.4, 0.7, 0.2)]
    assert bench.choose(rows, ["dev", "real_dev"]) == 0.5  # test's 0.1 at weight 0 does not count
    assert bench.choose(rows, ["dev"]) == 1.0
    tied = [_row(0.25, 0.5, 0.5, 0.5), _row(0.75, 0.5, 0.5, 0.5)]
    assert bench.choose(tied, ["dev", "real_dev"]) == 0.75  # ties: the higher weight


def test_the_start_is_the_model_the_system_started_from(tmp_path):
    bench = load_benchmark("quality_encoder_interpolation")
    models = tmp_path / "models"
    models.mkdir()
    (models / "ctc_inter.json").write_text(json.dumps({"init_from": "aed_prompt_finetuned.nemo"}))
    assert bench.system_start(tmp_path, "ctc_inter") == models / "aed_prompt_finetuned.nemo"
    (models / "ctc_punctuated.json").write_text(json.dumps({"init_from": None}))
    with pytest.raises(SystemExit, match="pass --start"):
        bench.system_start(tmp_path, "ctc_punctuated")
    with pytest.raises(SystemExit, match="no stats file"):
        bench.system_start(tmp_path, "rnnt_dual")


def test_a_split_both_chosen_on_and_reported_is_refused(tmp_path, capsys):
    bench = load_benchmark("quality_encoder_interpolation")
    with pytest.raises(SystemExit) as stop:
        bench.main(["--demo-dir", str(tmp_path), "--system", "ctc_inter", "--choose-on", "dev,test"])
    assert stop.value.code == 2
    assert "none of them in --splits" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        bench.main(["--demo-dir", str(tmp_path), "--system", "ctc_inter", "--weights", "0,2"])
    assert stop.value.code == 2
    assert "--weights" in capsys.readouterr().err


def test_the_table_marks_the_chosen_weight(tmp_path):
    render = load_benchmark("render_results")
    source = tmp_path / "encoder_interpolation.json"
    report = {
        "system": "ctc_inter",
        "start": "demo_out/models/aed_prompt_finetuned.nemo",
        "choose_on": ["dev", "real_dev"],
        "splits": ["test", "real_test"],
        "dev_stride": 4,
        "chosen": 0.5,
        "rows": [_row(0.0, 0.6, 0.5, 0.1), _row(0.5, 0.5, 0.5, 0.9)],
    }
    source.write_text(json.dumps(report))
    text = render.render_encoder_interpolation(source)
    assert "`aed_prompt_finetuned.nemo`'s (weight 0)" in text
    assert "| **0.50** (chosen) | 50.0% | 40.0% | 50.0% | 50.0% | 90.0% | 40.0% | 50.0% | 70.0% |" in text
    assert "| 0.00 | 60.0% |" in text
