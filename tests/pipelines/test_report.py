"""The demo report names where the cascade's formatter came from."""

import json

from nemo_pc.pipelines.demo.report import write_report

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


def _corpus_and_predictions(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "predictions").mkdir()
    synth = [
        {"utt_id": "100-1-0000", "split": "train", "speaker": "100", "voice": "espeak-ng:en+m1", "duration": 60.0},
        {"utt_id": "101-2-0000", "split": "train", "speaker": "101", "voice": "flite:slt", "duration": 30.0},
        {"utt_id": "102-3-0000", "split": "test", "speaker": "102", "voice": "espeak-ng:en-us+f2", "duration": 6.0},
        {"utt_id": "103-4-0000", "split": "test", "speaker": "103", "voice": "flite:awb", "duration": 6.0},
        {"utt_id": "103-4-0001", "split": "test", "speaker": "103", "voice": "flite:awb", "duration": 6.0},
    ]
    (tmp_path / "corpus" / "SYNTH.jsonl").write_text("".join(json.dumps(line) + "\n" for line in synth))
    predictions = [
        {"utt_id": "102-3-0000", "text": "The cat sat.", "pred_text_normalized": "the cat sat"},
        {"utt_id": "103-4-0000", "text": "A dog ran home.", "pred_text_normalized": "a dog ran"},
        {"utt_id": "103-4-0001", "text": "Go on.", "pred_text_normalized": "go on"},
    ]
    path = tmp_path / "predictions" / "rnnt_conditioned.json"
    path.write_text("".join(json.dumps(line) + "\n" for line in predictions))


def test_voice_table_counts_voices_speakers_and_minutes_per_split_and_engine(tmp_path):
    from nemo_pc.pipelines.demo.report import voices_table

    _corpus_and_predictions(tmp_path)
    lines = voices_table(tmp_path)
    assert "| train | espeak-ng | 1 | 1 | 1.0 |" in lines
    assert "| train | flite | 1 | 1 | 0.5 |" in lines
    assert "| test | flite | 1 | 1 | 0.2 |" in lines
    assert "| train | all | 2 | - | - |" in lines


def test_engine_wer_scores_each_engine_s_test_utterances_apart(tmp_path):
    from nemo_pc.pipelines.demo.report import engine_wer_table

    _corpus_and_predictions(tmp_path)
    lines = engine_wer_table(tmp_path, ["rnnt_conditioned"])
    assert lines[0] == "| system | espeak-ng (words) | flite (words) |"
    assert lines[2] == "| `rnnt_conditioned` | 0.0 (3) | 16.7 (6) |"  # "home" deleted: 1 of 6 flite words


def test_targets_say_by_how_much_a_model_misses(tmp_path):
    from nemo_pc.pipelines.demo.report import targets_table

    (tmp_path / "models").mkdir()
    curve = [{"step": 10, "val_wer_normalized": 0.30, "val_wer": 0.35}]
    (tmp_path / "models" / "rnnt_conditioned.json").write_text(json.dumps({"curve": curve}))
    report = {"normalized_output": {"wer": 0.25}, "metrics": {"wer": 0.3, "per": 0.40}}
    lines = targets_table(tmp_path, {"rnnt_conditioned": report, "cascade": report})
    assert len(lines) == 3  # header, rule, one row: the cascade is not a trained model
    assert "| 25.00 (misses by 5.0) | <= 20 | 30.00 | +5.0 | 40.00 | <= 45 |" in lines[2]
    # an AED's curve on a dev subset says so
    stats = {"curve": curve, "curve_dev_utterances": 80}
    (tmp_path / "models" / "aed_prompt.json").write_text(json.dumps(stats))
    lines = targets_table(tmp_path, {"aed_prompt": report})
    assert "| 30.00 (80 utterances) | +5.0 |" in lines[2]
    # an LM-decoded system's dev WER is its tuned weight's, on the dev subset the tuning read
    (tmp_path / "lm").mkdir()
    choice = {"alpha": 0.4, "dev_grid": {"0.4": 0.28, "0.8": 0.31}}
    summary = {"beam_size": 8, "dev_utterances": 80, "modes": {"normalized": choice, "punctuated": choice}}
    (tmp_path / "lm" / "rnnt_conditioned.json").write_text(json.dumps(summary))
    lines = targets_table(tmp_path, {"rnnt_conditioned_lm": report})
    assert "| 28.00 (80 utterances) (LM tuning) | +3.0 |" in lines[2]


def _seen_eval(tmp_path, wer: float) -> None:
    (tmp_path / "eval").mkdir(exist_ok=True)
    seen = {**REPORT, "num_utterances": 3, "normalized_output": {"wer": wer}}
    (tmp_path / "eval" / "rnnt_conditioned@test_seen.json").write_text(json.dumps(seen))


def test_seen_voices_get_their_own_section_beside_the_held_out_test(tmp_path):
    _seen_eval(tmp_path, 0.125)
    text = _write(tmp_path)
    held_out, seen = text.index("## Held-out voices (test)"), text.index("## Seen voices, unseen chapters (test_seen)")
    assert held_out < text.index("| `rnnt_conditioned` | 0.00 |") < seen < text.index("## Targets")
    section = text[seen : text.index("## Targets")]
    assert "`test_seen`: 3 utterances read by training speakers" in section
    assert "| `rnnt_conditioned` | 50.00 | 12.50 | +37.5 |" in section
    assert "| `rnnt_conditioned@test_seen` | 0.00 | 12.50 | 50.00 |" in section and "`cascade`" not in section


def test_without_a_seen_test_evaluation_there_is_no_seen_section(tmp_path):
    text = _write(tmp_path)
    assert "## Held-out voices (test)" in text and "test_seen" not in text.split("## Voices")[0]


def test_engine_wer_is_tabled_for_each_test_split(tmp_path):
    from nemo_pc.pipelines.demo.report import seen_engine_wer

    _corpus_and_predictions(tmp_path)
    synth = tmp_path / "corpus" / "SYNTH.jsonl"
    seen = [{"utt_id": "104-5-0000", "split": "test_seen", "speaker": "104", "voice": "flite:slt", "duration": 3.0}]
    synth.write_text(synth.read_text() + json.dumps(seen[0]) + "\n")
    predictions = [{"utt_id": "104-5-0000", "text": "Go home now.", "pred_text_normalized": "go home"}]
    (tmp_path / "predictions" / "rnnt_conditioned@test_seen.json").write_text(json.dumps(predictions[0]) + "\n")
    assert seen_engine_wer(tmp_path, ["rnnt_conditioned"]) == []  # predicted, not evaluated: no table
    _seen_eval(tmp_path, 1 / 3)
    lines = seen_engine_wer(tmp_path, ["rnnt_conditioned", "cascade"])
    assert "on the test_seen utterances of each engine" in lines[1]
    assert lines[3:] == ["| system | flite (words) |", "|---|---:|", "| `rnnt_conditioned@test_seen` | 33.3 (3) |"]


def test_every_system_the_demo_can_train_is_described():
    from nemo_pc.pipelines.demo.config import ASR_SYSTEMS
    from nemo_pc.pipelines.demo.report import describe

    undescribed = [name for name in ASR_SYSTEMS if not describe(name, "aed_prompt").strip()]
    assert undescribed == []
