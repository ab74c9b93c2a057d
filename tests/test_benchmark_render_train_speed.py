"""speed_train.py's results render in both layouts: its own file (one run, the command in the provenance) and the
archived one (several runs under one machine line)."""

import json

from benchmark_loader import load_benchmark


def _row(variant, steps_per_s):
    return {
        "model": "rnnt_conditioned",
        "variant": variant,
        "steps_per_s": steps_per_s,
        "audio_s_per_s": 70.0,
        "padding_share": 0.05,
        "mean_loss": 90.0,
    }


def test_the_scripts_own_file_renders_one_table_against_its_first_row(tmp_path):
    render = load_benchmark("render_results")
    source = tmp_path / "speed.json"
    rows = [_row("bucketed_bf16", 2.0), _row("bucketed_bf16_workers0", 1.5)]
    source.write_text(json.dumps({"steps": 150, "warmup": 10, "rows": rows}))
    text = render.render_train_speed(source)
    assert text.startswith("150 timed steps per variant after 10 untimed")
    assert "| rnnt_conditioned | bucketed_bf16 | 2.000 | 70.0 | 5.0% | 90.0 | 1.00x |" in text
    assert "| rnnt_conditioned | bucketed_bf16_workers0 | 1.500 | 70.0 | 5.0% | 90.0 | 0.75x |" in text


def test_the_archived_layout_names_each_runs_command(tmp_path):
    render = load_benchmark("render_results")
    source = tmp_path / "archive.json"
    run = {"command": "python benchmarks/speed_train.py --steps 60", "rows": [_row("fp32", 1.0)]}
    source.write_text(json.dumps({"machine": "2 CPU cores", "corpus": "a corpus", "runs": [run]}))
    text = render.render_train_speed(source)
    assert text.startswith("2 CPU cores; a corpus (`")
    assert "speed_train.py --steps 60" in text and "| rnnt_conditioned | fp32 | 1.000 |" in text
