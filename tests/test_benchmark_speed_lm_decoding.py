"""benchmarks/speed_lm_decoding.py: a folder's LM system decoded at each beam with the run's LMs and weights, the
run's own beam checked against the run's predictions, its minutes scaled by the decodes' ratio; bad input exits 2."""

import json

import pytest
import torch
from benchmark_loader import load_benchmark
from omegaconf import OmegaConf

from nemo_pc.parts.ngram_lm import build_token_lm
from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest

pytestmark = pytest.mark.usefixtures("one_thread")
LM_TEXT = [("Who is there?", "book")] * 20 + [("Yes, go home.", "book")] * 5
SYSTEM = "rnnt_conditioned"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A finished demo folder in miniature: one RNN-T, its two LMs and weights, its run's beam-2 LM predictions."""
    from nemo_pc.models import EncDecRNNTPCBPEModel
    from nemo_pc.pipelines.lm import LMChoice, transcribe_with_lms

    bench = load_benchmark("speed_lm_decoding")
    root = tmp_path_factory.mktemp("lm_demo")
    test = write_pc_manifest(root / "audio", name="test.json")
    (root / "manifests").mkdir()
    (root / "manifests" / "test.json").write_text(test.read_text())
    tokenizer = train_tokenizer(test, root / "tokenizer")
    lm_manifest = write_pc_manifest(root / "lm_text", LM_TEXT, duration=0.1)
    (root / "lm").mkdir()
    lms = {
        mode: str(build_token_lm(lm_manifest, tokenizer, root / "lm" / f"{mode}.arpa", order=3, field_name=field,
                                 progress=False).output)
        for mode, field in (("normalized", "text_normalized"), ("punctuated", "text"))
    }  # fmt: skip
    torch.manual_seed(0)
    model = EncDecRNNTPCBPEModel(OmegaConf.create(tiny_model_config(tokenizer))).eval()
    (root / "models").mkdir()
    model.save_to(str(root / "models" / f"{SYSTEM}.nemo"))
    choices = {"normalized": LMChoice(lms["normalized"], 0.5), "punctuated": LMChoice(lms["punctuated"], 0.3)}
    summary = {"beam_size": 2, "modes": {mode: choice.as_dict() for mode, choice in choices.items()}}
    # the LM paths as a run in another working folder wrote them: only their names match this folder's files
    for mode in summary["modes"].values():
        mode["lm"] = f"elsewhere/lm/{mode['lm'].rsplit('/', 1)[-1]}"
    (root / "lm" / f"{SYSTEM}.json").write_text(json.dumps(summary))
    outputs = transcribe_with_lms(model, test, choices, beam_size=2, batch_size=2)
    (root / "predictions").mkdir()
    bench.write_predictions(root, outputs, root / "predictions" / f"{SYSTEM}_lm.json")
    timings = {"runs": [{"seconds": {f"transcribe {SYSTEM} with LM": 90.0}}]}
    (root / "timings.json").write_text(json.dumps(timings))
    return root


def test_each_beam_is_timed_and_scored_and_the_runs_beam_matches_the_run(folder, tmp_path):
    bench = load_benchmark("speed_lm_decoding")
    out = tmp_path / "lm_decoding.json"
    bench.main(["--demo-dir", str(folder), "--beams", "2,1", "--batch-size", "2", "--json", str(out)])
    result = json.loads(out.read_text())
    (system,) = result["systems"]
    assert system["system"] == SYSTEM and system["run_beam"] == 2
    assert system["alphas"] == {"normalized": 0.5, "punctuated": 0.3}
    assert [row["beam"] for row in system["rows"]] == [1, 2]
    beam1, beam2 = system["rows"]
    assert beam2["same_as_run"] == 1.0 and "same_as_run" not in beam1
    assert system["run_step_minutes"] == 1.5 and beam2["step_minutes_estimate"] == 1.5
    assert beam1["step_minutes_estimate"] == pytest.approx(1.5 * beam1["seconds"] / beam2["seconds"], abs=0.01)
    for row in system["rows"]:
        assert row["seconds"] > 0 and 0 <= row["per"] and 0 <= row["punct_f1"] <= 1 and row["wer_normalized"] >= 0
    assert result["test_utterances"] > 0 and result["provenance"]
    text = bench.markdown(result)
    assert f"| `{SYSTEM}` | **2** |" in text and "| 100.0% |" in text
    assert "summed over the systems (estimated): beam 1:" in text


def test_a_changed_prediction_is_not_counted_as_the_same(folder, tmp_path):
    bench = load_benchmark("speed_lm_decoding")
    run = folder / "predictions" / f"{SYSTEM}_lm.json"
    rows = [json.loads(line) for line in run.read_text().splitlines()]
    rows[0]["pred_text"] += " extra"
    edited = tmp_path / "edited.json"
    edited.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert bench.same_share(run, edited) == pytest.approx(1 - 1 / len(rows))
    assert bench.same_share(run, run) == 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--beams", "0"], "--beams must be beam sizes of 1 or more"),
        (["--beams", "x"], "--beams must be beam sizes of 1 or more"),
        (["--systems", "rnnt_dual"], "rnnt_dual.json: no such file"),
    ],
)
def test_bad_arguments_exit_2_naming_what_is_wrong(folder, capsys, args, message):
    bench = load_benchmark("speed_lm_decoding")
    with pytest.raises(SystemExit) as stop:
        bench.main(["--demo-dir", str(folder), *args])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_a_broken_lm_summary_exits_2_naming_the_file(folder, tmp_path, capsys):
    import shutil

    bench = load_benchmark("speed_lm_decoding")
    broken = tmp_path / "demo"
    shutil.copytree(folder, broken)
    (broken / "lm" / f"{SYSTEM}.json").write_text('{"modes": {}}')
    with pytest.raises(SystemExit) as stop:
        bench.main(["--demo-dir", str(broken)])
    assert stop.value.code == 2
    assert f"{SYSTEM}.json: not an LM summary of the demo" in capsys.readouterr().err


def test_a_folder_without_a_test_manifest_exits_2(tmp_path, capsys):
    bench = load_benchmark("speed_lm_decoding")
    with pytest.raises(SystemExit) as stop:
        bench.main(["--demo-dir", str(tmp_path)])
    assert stop.value.code == 2
    assert "test.json: no such manifest" in capsys.readouterr().err


def test_the_rendered_block_marks_the_runs_beam_and_sums_the_minutes(tmp_path):
    render = load_benchmark("render_results")
    row = {"wer_normalized": 0.4, "wer_pc": 0.45, "per": 0.38, "punct_f1": 0.6}
    systems = [
        {"system": "rnnt_dual", "run_beam": 8, "greedy": {**row, "wer_normalized": 0.58},
         "rows": [{"beam": 4, "seconds": 60.0, "step_minutes_estimate": 2.0, **row},
                  {"beam": 8, "seconds": 120.0, "step_minutes_estimate": 4.0, "same_as_run": 1.0, **row}]},
        {"system": "ctc_inter", "run_beam": 8, "greedy": None,
         "rows": [{"beam": 4, "seconds": 30.0, "step_minutes_estimate": 1.5, **row},
                  {"beam": 8, "seconds": 60.0, "step_minutes_estimate": 3.0, "same_as_run": 0.99, **row}]},
    ]  # fmt: skip
    source = tmp_path / "lm.json"
    source.write_text(json.dumps({"demo_dir": "demo_out", "test_utterances": 341, "batch_size": 16, "threads": 2,
                                  "systems": systems}))  # fmt: skip
    text = render.render_lm_decoding(source)
    assert text.startswith("LM decoding of `demo_out`'s LM systems on test (341 utterances)")
    assert "| `rnnt_dual` | greedy | | | 58.0% |" in text
    assert "| `rnnt_dual` | **8** | 120.0 | 4.0 | 40.0% | 45.0% | 38.0% | 60.0% | 100.0% |" in text
    assert "| `ctc_inter` | 4 | 30.0 | 1.5 |" in text and "| 99.0% |" in text
    assert "(estimated): beam 4: 3.5, beam 8: 7.0." in text
