"""benchmarks/quality_aed_minutes.py: a demo run's systems placed on the minutes each took, the base encoder's minutes
counted for the systems that start from it, and its rendered table."""

import json

import pytest
from benchmark_loader import load_benchmark


def _report(n_wer: float, per: float) -> dict:
    metrics = {"per": per, "punct_micro_f1": 1 - per, "wer_pc": n_wer + 0.1, "cer": n_wer / 2}
    return {"num_utterances": 3, "metrics": metrics, "normalized_output": {"wer": n_wer, "support": 9}}


def _demo(root):
    for folder in ("models", "eval", "predictions"):
        (root / folder).mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({"hours": 1.0, "seed": 0, "backbone": "whisper_tiny"}))
    curve = [{"step": 50, "val_wer_normalized": 0.5, "val_wer_punctuated": 0.6}, {"step": 100, "val_wer": 0.4}]
    runs = {
        "base": (600.0, 1000, None),
        "rnnt_conditioned": (300.0, 100, "base.nemo"),
        "aed_prompt": (120.0, 100, None),
    }
    for name, (seconds, steps, init) in runs.items():
        stats = {"seconds": seconds, "steps": steps, "curve": curve, "init_from": init}
        (root / "models" / f"{name}.json").write_text(json.dumps(stats))
    for name, scores in {
        "aed_prompt": (0.3, 0.5),
        "rnnt_conditioned": (0.5, 0.9),
        "whisper_tiny_en": (0.52, 0.79),
    }.items():
        (root / "eval" / f"{name}.json").write_text(json.dumps(_report(*scores)))
    (root / "eval" / "aed_prompt@test_seen.json").write_text(json.dumps(_report(0.2, 0.4)))
    timing = {"rtf": 0.05, "threads": 2, "batch_size": 16, "engine": "PyTorch"}
    (root / "predictions" / "aed_prompt.rtf.json").write_text(json.dumps(timing))
    return root


def test_minutes_count_the_base_for_the_systems_that_start_from_it(tmp_path):
    bench = load_benchmark("quality_aed_minutes")
    result = bench.compare(_demo(tmp_path), ["aed_prompt", "rnnt_conditioned", "ctc_inter"])
    systems = {system["system"]: system for system in result["systems"]}
    assert set(systems) == {"aed_prompt", "rnnt_conditioned"}  # ctc_inter was not trained: left out
    assert systems["aed_prompt"]["train_minutes"] == 2.0 and systems["aed_prompt"]["base_minutes"] == 0.0
    assert systems["rnnt_conditioned"]["train_minutes"] == 15.0
    assert [p["minutes"] for p in systems["rnnt_conditioned"]["curve"]] == [12.5, 15.0]
    assert [p["minutes"] for p in systems["aed_prompt"]["curve"]] == [1.0, 2.0]
    assert systems["aed_prompt"]["scores"]["test_seen"]["n_wer"] == 0.2
    assert systems["rnnt_conditioned"]["scores"]["test_seen"] is None
    assert result["anchor"]["scores"]["test"]["per"] == 0.79


def test_the_table_renders_from_the_results_file(tmp_path):
    bench, render = load_benchmark("quality_aed_minutes"), load_benchmark("render_results")
    path = tmp_path / "aed_minutes.json"
    bench.main(["--demo-dir", str(_demo(tmp_path / "demo")), "--json", str(path)])
    text = render.render_aed_minutes(path)
    assert "| `aed_prompt` | 2.0 | 30.0% | 50.0% | 50.0% |" in text
    assert "| `rnnt_conditioned` | 15.0 (10.0 base) |" in text
    assert "0 (zero-shot)" in text and "0.050 (2 thr)" in text
    assert json.loads(path.read_text())["provenance"]["command"].startswith("python quality_aed_minutes.py")


def test_a_folder_that_is_not_a_demo_run_is_refused(tmp_path, capsys):
    bench = load_benchmark("quality_aed_minutes")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--demo-dir", str(tmp_path), "--json", str(tmp_path / "out.json")])
    assert exit_info.value.code == 2 and "not a demo output folder" in capsys.readouterr().err


def test_an_aeds_minutes_count_its_interpolation_sweep(tmp_path):
    bench, render = load_benchmark("quality_aed_minutes"), load_benchmark("render_results")
    demo = _demo(tmp_path / "demo")
    stats_path = demo / "models" / "aed_prompt.json"
    stats = json.loads(stats_path.read_text())
    stats_path.write_text(json.dumps({**stats, "interpolation_seconds": 60.0, "interpolation_weight": 0.5}))
    path = tmp_path / "aed_minutes.json"
    bench.main(["--demo-dir", str(demo), "--json", str(path)])
    aed = next(system for system in json.loads(path.read_text())["systems"] if system["system"] == "aed_prompt")
    assert (aed["train_minutes"], aed["interpolation_minutes"]) == (3.0, 1.0)
    assert [p["minutes"] for p in aed["curve"]] == [1.0, 2.0]  # the sweep comes after the last point
    assert "| `aed_prompt` | 3.0 (1.0 interpolation) |" in render.render_aed_minutes(path)
