"""The demo report names where the cascade's formatter came from."""

import json

from nemo_pc.pipelines.report import write_report

REPORT = {
    "num_utterances": 2,
    "empty_share": 0.0,
    "normalized_output": {"wer": 0.5},
    "metrics": {"wer": 0.5, "per": 0.25},
    "support": {"wer": 4, "per": 2},
}


def _write(tmp_path, **config):
    (tmp_path / "models").mkdir()
    (tmp_path / "config.json").write_text(json.dumps({"hours": 0.1, "sources": ["kjv"], "seed": 0, **config}))
    runs = [{"finished": "now", "seconds": {"corpus": 1.0}}]
    reports = {"rnnt_conditioned": REPORT, "cascade": REPORT}
    return write_report(tmp_path, reports, runs, "rnnt_conditioned").read_text()


def test_a_reused_formatter_is_named_in_the_report(tmp_path):
    text = _write(tmp_path, formatter_dir="/models/recipe")
    assert "| `cascade` |" in text
    assert "The cascade and the hybrid use the text formatter of `/models/recipe`" in text


def test_the_demo_s_own_formatter_needs_no_note(tmp_path):
    text = _write(tmp_path, formatter_dir=None)
    assert "| `cascade` |" in text and "text formatter of" not in text
