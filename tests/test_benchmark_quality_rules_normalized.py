"""benchmarks/quality_rules_normalized.py: the normalized mode's output against the punctuated output normalized by
the text rules, on the same utterances, and clear errors for a missing or bad manifest."""

import json

import pytest
from benchmark_loader import load_benchmark


def _predictions(folder, name, rows):
    path = folder / "predictions" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


ROWS = [
    # the normalized mode drops a word the punctuated output has
    {"utt_id": "a", "text": "The cat sat.", "text_normalized": "the cat sat", "pred_text": "The cat sat.",
     "pred_text_normalized": "the sat"},
    {"utt_id": "b", "text": "A dog ran, fast.", "text_normalized": "a dog ran fast", "pred_text": "A dog ran fast.",
     "pred_text_normalized": "a dog ran fast"},
]  # fmt: skip


def test_the_rules_read_the_punctuated_output_and_the_mode_its_own(tmp_path, capsys):
    bench = load_benchmark("quality_rules_normalized")
    _predictions(tmp_path, "rnnt_conditioned", ROWS)
    _predictions(tmp_path, "rnnt_conditioned@real_test", ROWS[1:])
    out = tmp_path / "rules.json"
    args = ["--demo-dir", str(tmp_path), "--systems", "rnnt_conditioned", "--splits", "test,real_test"]
    assert bench.main([*args, "--resamples", "50", "--json", str(out)]) == 0
    test, real = json.loads(out.read_text())["rows"]
    assert (test["split"], test["utterances"]) == ("test", 2)
    assert test["mode"] == pytest.approx(1 / 7) and test["rules"] == 0.0  # 7 reference words, one deleted
    assert test["delta"] == pytest.approx(-1 / 7)
    assert real["mode"] == real["rules"] == 0.0 and real["delta"] == 0.0
    assert "| `rnnt_conditioned` | test | 2 | 14.3% | 0.0% | -14.3 [" in capsys.readouterr().out


def test_a_missing_or_bad_manifest_exits_2_naming_it(tmp_path, capsys):
    bench = load_benchmark("quality_rules_normalized")
    assert bench.main(["--demo-dir", str(tmp_path), "--systems", "rnnt_dual", "--splits", "test"]) == 2
    assert "rnnt_dual.json: no such predictions" in capsys.readouterr().err
    path = _predictions(tmp_path, "rnnt_dual", ROWS[:1])
    path.write_text(path.read_text() + '{"utt_id": "c", "pred_text": 3}\n')
    assert bench.main(["--demo-dir", str(tmp_path), "--systems", "rnnt_dual", "--splits", "test"]) == 2
    err = capsys.readouterr().err
    assert "rnnt_dual.json:2: " in err and "field 'pred_text' must be a string, got int" in err
