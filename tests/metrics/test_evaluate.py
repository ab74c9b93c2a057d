import json
import re

import pytest

from nemo_pc.cli import main
from nemo_pc.metrics.evaluate import EvalConfig, evaluate, evaluate_manifest
from nemo_pc.parts.manifest import ManifestError

ROWS = [
    {"utt_id": "a", "text": "Hello, world.", "text_normalized": "hello world", "pred_text": "Hello world."},
    {"utt_id": "b", "text": "Is it 2024?", "text_normalized": "is it twenty twenty four", "pred_text": "is it 2024?"},
    {"utt_id": "c", "text": "Yes, McDonald's.", "text_normalized": "yes mcdonald's", "pred_text": ""},
]
QUIET = EvalConfig(progress=False)


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" if isinstance(r, dict) else r for r in rows), encoding="utf-8")
    return path


def test_evaluate_scores_every_line(tmp_path):
    report = evaluate(_write(tmp_path / "m.json", ROWS), QUIET)
    assert report["num_utterances"] == 3 and report["dropped"]["total"] == 0
    assert report["support"]["i_wer"] == 1  # "2024" is the one word that needed ITN
    assert report["metrics"]["i_wer"] == 0.0 and report["metrics"]["m_wer"] == 1.0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json\n", "m.json:2: bad JSON"),
        ("[1, 2]\n", "m.json:2: expected a JSON object"),
        (json.dumps({"utt_id": "x", "pred_text": "hi"}) + "\n", "m.json:2: missing field 'text'"),
        (json.dumps({"utt_id": "x", "text": "  ", "pred_text": "hi"}) + "\n", "m.json:2: field 'text' is empty"),
        (json.dumps({"utt_id": "x", "text": "Hi."}) + "\n", "m.json:2: missing field 'pred_text'"),
        (json.dumps({"utt_id": "x", "text": "Hi.", "pred_text": 3}) + "\n", "m.json:2: field 'pred_text' must be"),
        (json.dumps({"utt_id": "a", "text": "Hi.", "pred_text": "hi"}) + "\n", "m.json:2: duplicate utterance 'a'"),
    ],
)
def test_bad_lines_name_the_file_and_line(tmp_path, line, message):
    path = _write(tmp_path / "m.json", [ROWS[0], line])
    with pytest.raises(ManifestError, match=message):
        evaluate_manifest(path, QUIET)


def test_non_utf8_line_is_reported(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(json.dumps(ROWS[0]).encode() + b"\n" + b'{"text": "caf\xe9"}\n')
    with pytest.raises(ManifestError, match="m.json:2: not UTF-8"):
        evaluate_manifest(path, QUIET)


def test_skip_mode_counts_every_dropped_line_by_reason(tmp_path):
    rows = [ROWS[0], "{bad\n", json.dumps({"text": "", "pred_text": "x"}) + "\n", ROWS[1], "\n"]
    path = tmp_path / "m.json"
    path.write_bytes(b"".join((json.dumps(r) + "\n").encode() if isinstance(r, dict) else r.encode() for r in rows))
    with open(path, "ab") as handle:
        handle.write(b"\xff\xfe\n")
    result = evaluate_manifest(path, EvalConfig(progress=False, on_bad="skip"))
    assert len(result.metrics.rows) == 2
    assert result.dropped.as_dict()["by_reason"] == {"bad JSON": 1, "empty text": 1, "not UTF-8": 1}
    assert result.dropped.examples["bad JSON"].endswith("m.json:2")


def test_configurable_fields(tmp_path):
    rows = [{"ref": "Hi, there.", "hyp": "Hi there."}]
    report = evaluate(
        _write(tmp_path / "m.json", rows),
        EvalConfig(pred_field="hyp", ref_field="ref", spoken_field="", progress=False),
    )
    assert report["metrics"]["per"] == 0.5 and report["counts"]["iwer_missing"] == 1


def test_compare_matches_utterances_by_id_in_any_order(tmp_path):
    first = _write(tmp_path / "a.json", ROWS)
    perfect = [dict(r, pred_text=r["text"]) for r in reversed(ROWS)]
    report = evaluate(first, QUIET, compare=_write(tmp_path / "b.json", perfect), num_resamples=100)
    row = report["compare"]["metrics"]["wer"]
    assert row["a"] > 0 and row["b"] == 0.0 and row["delta"] == row["a"]
    with pytest.raises(ValueError, match="1 missing"):
        evaluate(first, QUIET, compare=_write(tmp_path / "c.json", perfect[:2]))


def test_cli_writes_table_json_and_png(tmp_path, capsys):
    manifest = _write(tmp_path / "m.json", ROWS)
    out_json, out_png = tmp_path / "r.json", tmp_path / "r.png"
    code = main(["evaluate", str(manifest), "--json", str(out_json), "--png", str(out_png), "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "PER by mark" in printed and "WER-PC" in printed
    saved = json.loads(out_json.read_text())
    assert saved["num_utterances"] == 3 and set(saved["per_mark"]) == {".", ",", "?"}
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out_png.stat().st_size > 10_000


def test_cli_reports_bad_input_without_a_traceback(tmp_path, capsys):
    manifest = _write(tmp_path / "m.json", [ROWS[0], "oops\n"])
    assert main(["evaluate", str(manifest), "--no-progress"]) == 2
    assert "m.json:2: bad JSON" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "missing.json"), "--no-progress"]) == 2
    assert main(["evaluate", str(tmp_path), "--no-progress"]) == 2  # a folder, not a manifest
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("rows", "options", "why"),
    [
        ([], [], "the manifest has no utterances"),
        (
            [ROWS[0], ROWS[1]],
            ["--pred-field", "typo", "--on-bad", "skip"],
            "every line was dropped \\(2 missing typo\\)",
        ),
    ],
)
def test_nothing_scored_is_an_error_not_a_perfect_score(tmp_path, capsys, rows, options, why):
    manifest = _write(tmp_path / "m.json", rows)
    assert main(["evaluate", str(manifest), "--no-progress", *options]) == 2
    err = capsys.readouterr()
    assert "m.json: no utterance scored: " in err.err and "WER" not in err.out
    assert re.search(why, err.err)


def test_segmented_manifest_keys_utterances_by_file_and_offset(tmp_path):
    rows = [
        {"audio_filepath": "long.wav", "offset": k * 5.0, "duration": 5.0, "text": "Hi.", "pred_text": "hi"}
        for k in range(3)
    ]
    report = evaluate(_write(tmp_path / "m.json", rows), QUIET)
    assert report["num_utterances"] == 3 and report["dropped"]["total"] == 0
    with pytest.raises(ManifestError, match="d.json:2: duplicate utterance 'long.wav@5.0'"):
        evaluate(_write(tmp_path / "d.json", [rows[1], rows[1]]), QUIET)


def test_an_empty_spoken_form_is_a_bad_line_not_an_itn_error(tmp_path):
    row = {**ROWS[1], "text_normalized": " "}
    with pytest.raises(ManifestError, match="m.json:1: field 'text_normalized' is empty"):
        evaluate_manifest(_write(tmp_path / "m.json", [row]), QUIET)


def test_cli_refuses_an_empty_mark_set_and_a_folder_as_output_before_scoring(tmp_path, capsys):
    manifest = _write(tmp_path / "m.json", ROWS)
    assert main(["evaluate", str(manifest), "--no-progress", "--marks", ""]) == 2
    assert "--marks must name at least one mark" in capsys.readouterr().err
    assert main(["evaluate", str(manifest), "--no-progress", "--json", str(tmp_path)]) == 2
    out = capsys.readouterr()
    assert "is a folder" in out.err and "WER" not in out.out
    for resamples in ("0", "-5"):
        code = main(["evaluate", str(manifest), "--no-progress", "--compare", str(manifest), "--resamples", resamples])
        assert code == 2
        assert f"--resamples must be 1 or more with --compare, got {resamples}" in capsys.readouterr().err


FIVE_MARK_ROWS = [
    {"utt_id": "a", "text": "Stop! Now, go.", "text_normalized": "stop now go", "pred_text": "Stop. Now, go."},
    {"utt_id": "b", "text": "Wait; see!", "text_normalized": "wait see", "pred_text": "Wait; see!"},
    {"utt_id": "c", "text": "Yes? No.", "text_normalized": "yes no", "pred_text": "Yes? No!"},
]


def test_a_five_mark_set_scores_exclamation_marks_in_their_own_row(tmp_path, capsys):
    manifest = _write(tmp_path / "m.json", FIVE_MARK_ROWS)
    out = tmp_path / "report.json"
    assert main(["evaluate", str(manifest), "--no-progress", "--marks", ".,?!;", "--json", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [".", ",", "?", "!", ";"] in [line.split() for line in printed]  # the header of the PER-by-mark table
    assert any(line.startswith("'!'") for line in printed)  # its row in the F1 table
    report = json.loads(out.read_text())
    assert report["marks"] == ".,?!;"
    table = report["per_mark"]
    # '!': "Stop!" written as "Stop." (a substitution) and "see!" kept; '.': "go." kept and "No." written "No!"
    assert table["!"]["reference_count"] == 2 and table["!"]["operations"] == 2
    assert table["!"]["correct"] == table["!"]["substitutions"] == 0.5 and table["!"]["substitutions_to"]["."] == 0.5
    assert table["."]["correct"] == 0.5 and table["."]["substitutions_to"]["!"] == 0.5
    assert table[";"]["correct"] == 1.0 and table[";"]["per"] == 0.0
    assert report["metrics"]["per"] == pytest.approx(2 / 7)  # 7 marks in the references, 2 substituted


def test_the_default_set_does_not_score_marks_outside_it(tmp_path):
    report = evaluate(_write(tmp_path / "m.json", FIVE_MARK_ROWS), QUIET)
    assert report["marks"] == ".,?" and set(report["per_mark"]) == {".", ",", "?"}
    # without '!' in the set, "Stop." inserts a '.', "No!" deletes one, and "go." is right
    row = report["per_mark"]["."]
    assert row["operations"] == 3 and row["correct"] == row["insertions"] == row["deletions"] == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--marks", ".,a", "nemo-pc evaluate: error: --marks: 'a' in '.,a' is a letter or digit, not a mark"),
        ("--marks", ".,.", "nemo-pc evaluate: error: --marks: '.' appears twice in '.,.'"),
        ("--segment-marks", ". ", "nemo-pc evaluate: error: --segment-marks: ' ' in '. ' is a space, not a mark"),
    ],
)
def test_cli_names_a_bad_mark_set(tmp_path, capsys, option, value, message):
    manifest = _write(tmp_path / "m.json", ROWS)
    assert main(["evaluate", str(manifest), "--no-progress", option, value]) == 2
    assert capsys.readouterr().err.strip() == message


def test_a_bad_mark_set_in_the_config_is_named():
    with pytest.raises(ValueError, match="marks: 'x' in '.x' is a letter or digit"):
        evaluate_manifest("unused.json", EvalConfig(marks=".x", progress=False))
