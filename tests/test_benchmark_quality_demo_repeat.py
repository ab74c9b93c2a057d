"""benchmarks/quality_demo_repeat.py: two runs of one default demo, every figure of the README's block side by side."""

import json

from benchmark_loader import load_benchmark


def _eval(n_wer, per=0.4, f1=0.5):
    metrics = {"wer": n_wer + 0.01, "wer_pc": n_wer + 0.02, "per": per, "punct_micro_f1": f1, "cer": 0.2}
    return {"num_utterances": 3, "metrics": metrics, "normalized_output": {"wer": n_wer, "support": 9}}


def _demo(root, n_wer=0.6, real=0.8, seconds=600.0, steps=500, revision="a" * 40):
    (root / "eval").mkdir(parents=True)
    config = {"out_dir": str(root), "systems": ["rnnt_dual", "aed_prompt"], "rnnt_steps": steps, "seed": 0}
    (root / "config.json").write_text(json.dumps(config))
    reports = {
        "rnnt_dual": _eval(n_wer),
        "rnnt_dual@test_seen": _eval(n_wer - 0.1),
        "rnnt_dual@real_test": _eval(real),
        "aed_prompt": _eval(0.2),
        "whisper_tiny_en": _eval(0.5, per=0.8, f1=0.3),
    }
    for name, report in reports.items():
        (root / "eval" / f"{name}.json").write_text(json.dumps(report))
    run = {
        "command": "python examples/demo_pc.py --out demo_out",
        "revision": revision,
        "finished": "2026-11-29T19:00:00+00:00",
        "from_empty_folder": True,
        "seconds": {"train rnnt_dual": seconds, "transcribe and evaluate whisper_tiny_en": 60.0},
    }
    (root / "timings.json").write_text(json.dumps({"runs": [run]}))
    return root


def test_every_figure_of_the_block_is_paired_and_a_drift_beyond_the_tolerance_is_named(tmp_path):
    bench = load_benchmark("quality_demo_repeat")
    a = _demo(tmp_path / "a")
    same = bench.compare(a, _demo(tmp_path / "same"))
    # rnnt_dual: 5 test figures, test_seen's N-WER, real_test's N-WER and WER; aed_prompt 5; the anchor 5
    assert len(same["rows"]) == 18 and same["max_difference"] == 0 and same["outside"] == []
    assert [row["system"] for row in same["rows"]][:8] == ["rnnt_dual"] * 8
    assert same["rows"][0] == {"system": "rnnt_dual", "split": "test", "metric": "n_wer", "a": 0.6, "b": 0.6,
                               "difference": 0.0}  # fmt: skip
    assert same["minutes"]["a"]["total"] == 11 and same["minutes"]["a"]["without_anchor"] == 10

    drifted = bench.compare(a, _demo(tmp_path / "drift", n_wer=0.63, real=0.81, seconds=540.0))
    assert abs(drifted["max_difference"] - 0.03) < 1e-9
    outside = {(row["system"], row["split"], row["metric"]) for row in drifted["outside"]}
    assert outside == {
        ("rnnt_dual", "test", "n_wer"),
        ("rnnt_dual", "test", "wer_pc"),
        ("rnnt_dual", "test_seen", "n_wer"),
    }  # real_test moved 1 point: inside
    assert drifted["minutes"]["b"]["steps"]["train rnnt_dual"] == 9
    assert bench.compare(a, _demo(tmp_path / "wide", n_wer=0.63), tolerance=0.05)["outside"] == []


def test_a_figure_one_run_lacks_counts_as_outside(tmp_path):
    bench = load_benchmark("quality_demo_repeat")
    a, b = _demo(tmp_path / "a"), _demo(tmp_path / "b")
    (b / "eval" / "rnnt_dual@real_test.json").unlink()
    result = bench.compare(a, b)
    missing = [row for row in result["outside"] if row["split"] == "real_test"]
    assert len(missing) == 2 and all(row["b"] is None and row["difference"] is None for row in missing)


def test_the_command_writes_its_results_and_refuses_other_settings_and_bad_folders(tmp_path, capsys):
    bench = load_benchmark("quality_demo_repeat")
    a, b = _demo(tmp_path / "a"), _demo(tmp_path / "b", n_wer=0.61)
    assert bench.main([str(a), str(b), "--json", str(tmp_path / "repeat.json")]) == 0
    written = json.loads((tmp_path / "repeat.json").read_text())
    assert written["outside"] == [] and written["tolerance"] == 0.02 and "provenance" in written
    assert "18 figures compared, largest difference 1.0 points, 0 outside 2 points" in capsys.readouterr().out

    other = _demo(tmp_path / "other", steps=400)
    assert bench.main([str(a), str(other)]) == 2
    assert "different settings: rnnt_steps" in capsys.readouterr().err
    assert bench.main([str(a), str(other), "--ignore", "rnnt_steps"]) == 0
    assert bench.main([str(a), str(tmp_path)]) == 2
    assert "not a demo folder" in capsys.readouterr().err
    assert bench.main([str(a), str(b), "--tolerance", "-1"]) == 2
    (b / "timings.json").write_text('{"runs": []}')
    assert bench.main([str(a), str(b)]) == 2
    assert "timings.json: no runs" in capsys.readouterr().err


def test_the_renderer_shows_both_runs_and_names_what_drifted(tmp_path):
    bench, render = load_benchmark("quality_demo_repeat"), load_benchmark("render_results")
    source = tmp_path / "repeat.json"
    a, b = _demo(tmp_path / "a"), _demo(tmp_path / "b", n_wer=0.63, revision="b" * 40)
    assert bench.main([str(a), str(b), "--json", str(source)]) == 0
    text = render.render_demo_repeat(source)
    assert "| `rnnt_dual` | test | 60.0% / 63.0% (+3.0) | 62.0% / 65.0% (+3.0) | 40.0% / 40.0% (+0.0) |" in text
    assert "| `rnnt_dual` | real_test | 80.0% / 80.0% (+0.0) |" in text
    assert "revision `aaaaaaaaaaaa`" in text and "revision `bbbbbbbbbbbb`" in text and "11 min 0 s of steps" in text
    assert "3 of 18 figures differ by more than 2 points: `rnnt_dual` test, `rnnt_dual` test_seen." in text
