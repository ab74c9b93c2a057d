"""benchmarks/quality_demo_parity.py: two demo folders compared figure by figure and transcript by transcript."""

import json

from benchmark_loader import load_benchmark


def _demo(root, loss=2.5, wer=0.4, text="Yes, go.", steps=20):
    for folder in ("models", "eval", "predictions"):
        (root / folder).mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({"out_dir": str(root), "rnnt_steps": steps, "seed": 0}))
    curve = [{"step": 10, "val_loss": 3.0, "val_wer": 1.0}, {"step": 20, "val_loss": loss, "val_wer": 0.9}]
    (root / "models" / "a.json").write_text(json.dumps({"steps": 20, "curve": curve}))
    (root / "eval" / "a.json").write_text(json.dumps({"metrics": {"wer": wer, "per": None}}))
    rows = [{"audio_filepath": str(root / "x.wav"), "pred_text": text, "pred_text_normalized": "yes go"}]
    (root / "predictions" / "a.json").write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    (root / "predictions" / "a.rtf.json").write_text(json.dumps({"seconds": str(root)}))  # timings: not compared
    return root


def test_equal_runs_have_no_difference_and_count_what_was_compared(tmp_path):
    bench = load_benchmark("quality_demo_parity")
    result = bench.compare(_demo(tmp_path / "old"), _demo(tmp_path / "new"))
    assert result == {"figures": 6, "transcripts": 2, "differences": []}


def test_a_changed_figure_transcript_or_missing_file_is_a_difference(tmp_path):
    bench = load_benchmark("quality_demo_parity")
    old = _demo(tmp_path / "old")
    new = _demo(tmp_path / "new", loss=2.6, wer=0.5, text="Yes go.")
    (new / "eval" / "a.json").rename(new / "eval" / "b.json")
    differences = bench.compare(old, new)["differences"]
    assert {"file": "models/a.json", "step": 20, "key": "val_loss", "old": 2.5, "new": 2.6} in differences
    assert {"file": "eval/a.json", "what": "missing in the new run"} in differences
    assert {"file": "predictions/a.json", "line": 1, "key": "pred_text", "old": "Yes, go.", "new": "Yes go."} in (
        differences
    )
    assert bench.compare(old, new, tolerance=0.05)["differences"][0]["file"] == "eval/a.json"  # 2.5 vs 2.6 is within


def test_the_command_writes_its_results_and_refuses_a_folder_that_is_no_demo(tmp_path, capsys):
    bench = load_benchmark("quality_demo_parity")
    old, new = _demo(tmp_path / "old"), _demo(tmp_path / "new")
    assert bench.main([str(old), str(new), "--json", str(tmp_path / "parity.json")]) == 0
    written = json.loads((tmp_path / "parity.json").read_text())
    assert written["differences"] == [] and written["figures"] == 6 and "provenance" in written
    assert written["settings"] == {"rnnt_steps": 20, "seed": 0}
    other = _demo(tmp_path / "other", steps=30)
    assert bench.main([str(old), str(other)]) == 2
    assert "different settings: rnnt_steps" in capsys.readouterr().err
    assert bench.main([str(old), str(tmp_path)]) == 2
    assert "not a demo folder" in capsys.readouterr().err
    (new / "predictions" / "a.json").write_text("{not json\n")
    assert bench.main([str(old), str(new)]) == 2
    assert "predictions/a.json:1: not a JSON line" in capsys.readouterr().err
