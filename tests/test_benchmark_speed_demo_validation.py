"""benchmarks/speed_demo_validation.py: a validation's cost read from the gaps of a training log, or from the stats
a run recorded, and a clear error for a model the folder lacks."""

import json

import pytest
from benchmark_loader import load_benchmark


def test_each_validation_costs_its_gap_less_the_gaps_around_it():
    bench = load_benchmark("speed_demo_validation")
    # a loss every 10 steps: 2 s a gap for the first 50 steps, then 4 s (the encoder starts to train);
    # validations at step 25 (+30 s) and step 75 (+50 s)
    walls, wall = [], 0.0
    for step in range(0, 101, 10):
        walls.append((step, wall))
        wall += (2.0 if step < 50 else 4.0) + (30.0 if step == 20 else 0.0) + (50.0 if step == 70 else 0.0)
    estimate = bench.gap_estimate(walls, [25, 75])
    assert estimate["validations"] == 2
    assert estimate["seconds"] == pytest.approx(80.0)  # the local speeds, not one median, are taken off
    with pytest.raises(ValueError, match="no gap without a validation"):
        bench.gap_estimate([(0, 0.0), (10, 5.0)], [5])


def test_a_recorded_clock_wins_and_a_missing_model_exits_2(tmp_path, capsys):
    bench = load_benchmark("speed_demo_validation")
    (tmp_path / "models").mkdir()
    stats = {"seconds": 600.0, "steps": 500, "validation_seconds": 150.0, "validations": 6}
    (tmp_path / "models" / "rnnt_dual.json").write_text(json.dumps(stats))
    (tmp_path / "config.json").write_text(json.dumps({"curve_points": 6, "curve_dev_utterances": 80}))
    out = tmp_path / "out.json"
    assert bench.main(["--demo-dir", str(tmp_path), "--models", "rnnt_dual", "--json", str(out)]) == 0
    row = json.loads(out.read_text())["rows"][0]
    assert row["validation_seconds"] == 150.0 and row["how"] == "recorded"
    assert "| `rnnt_dual` | 500 | 10.0 | 6 | 2.5 | 25% | recorded |" in capsys.readouterr().out
    assert bench.main(["--demo-dir", str(tmp_path), "--models", "ctc_inter", "--json", str(out)]) == 2
    assert "ctc_inter.json: no such model stats" in capsys.readouterr().err


def test_the_rendered_block_names_the_folder_and_its_validations(tmp_path):
    render = load_benchmark("render_results")
    rows = [{"model": "ctc_inter", "steps": 1000, "seconds": 654.0, "validations": 6, "validation_seconds": 72.0,
             "how": "estimated from the log"}]  # fmt: skip
    settings = {"curve_points": 6, "curve_dev_utterances": 80, "real_speech": True}
    source = tmp_path / "v.json"
    source.write_text(json.dumps({"demo_dir": "demo_out", "settings": settings, "rows": rows}))
    text = render.render_demo_validation(source)
    assert text.startswith("`demo_out/`: 6 validations per CTC or RNN-T training on 80 dev utterances and real_dev:")
    assert "| `ctc_inter` | 1000 | 10.9 | 6 | 1.2 | 11% | estimated from the log |" in text


def test_unreadable_stats_or_config_exit_2_naming_the_file(tmp_path, capsys):
    bench = load_benchmark("speed_demo_validation")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "ctc_inter.json").write_text('{"seconds": 600.0')  # cut short
    (tmp_path / "models" / "rnnt_dual.json").write_text(json.dumps({"seconds": 600.0}))  # no steps
    out = tmp_path / "out.json"
    for name in ("ctc_inter", "rnnt_dual"):
        assert bench.main(["--demo-dir", str(tmp_path), "--models", name, "--json", str(out)]) == 2
        assert f"{name}.json: not a model's training stats" in capsys.readouterr().err
    (tmp_path / "models" / "rnnt_dual.json").write_text(json.dumps({"seconds": 6.0, "steps": 5, "validations": 1,
                                                                    "validation_seconds": 1.0}))  # fmt: skip
    (tmp_path / "config.json").write_text("{")
    assert bench.main(["--demo-dir", str(tmp_path), "--models", "rnnt_dual", "--json", str(out)]) == 2
    assert "config.json: not JSON" in capsys.readouterr().err and not out.exists()
