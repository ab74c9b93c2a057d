"""Claims baselines (``DemoConfig.baselines``): one validation, and only the splits the claims read; the curves'
validations' settings (``curve_points``, ``isolate_validation_rng``) from the command line to ``train_model``."""

import dataclasses

import pytest

from nemo_pc.parts.manifest import write_manifest
from nemo_pc.pipelines.demo.config import BASELINE_CURVE_POINTS, BASELINE_SPLITS, CLAIM_GROUPS, DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo

SYSTEMS = ("rnnt_conditioned", "ctc_inter", "rnnt_punctuated", "aed_normalized")


def _demo(tmp_path, **settings) -> Demo:
    config = DemoConfig(
        out_dir=str(tmp_path / "out"),
        backbone="fastconformer",
        systems=SYSTEMS,
        baselines=("rnnt_punctuated", "aed_normalized"),
        curve_points=6,
        aed_curve_points=3,
        rnnt_steps=60,
        aed_steps=30,
    )
    demo = Demo(dataclasses.replace(config, **settings), log=lambda message: None)
    rows = [{"audio_filepath": f"{i}.wav", "duration": 1.0, "text": f"Line {i}."} for i in range(4)]
    write_manifest(demo.manifest("dev"), rows)
    return demo


def test_a_baseline_validates_once_at_its_end_and_a_demo_system_at_every_curve_point(tmp_path, monkeypatch):
    demo = _demo(tmp_path)
    calls, isolated = {}, {}

    def train_model(family, overrides, target, steps, **kwargs):
        calls[target.stem] = (steps, kwargs["val_every"])
        isolated[target.stem] = kwargs["isolate_validation_rng"]
        return {"seconds": 0.0}

    monkeypatch.setattr("nemo_pc.pipelines.train.train_model", train_model)
    monkeypatch.setattr(demo, "asr_overrides", lambda name: [])
    for name in ("rnnt_conditioned", "rnnt_punctuated"):
        demo._train(name, "rnnt", 60, None)
    demo.train_aed("aed_normalized")
    assert BASELINE_CURVE_POINTS == 1
    assert calls["rnnt_conditioned"] == (60, 10)  # 6 validations
    assert calls["rnnt_punctuated"] == (60, 60)  # one, at the last step
    assert calls["aed_normalized_finetuned"] == (30, 30)  # not the AEDs' 3
    assert all(isolated.values())  # the default
    calls.clear()
    mixing = _demo(tmp_path / "b", isolate_validation_rng=False, curve_points=3)
    monkeypatch.setattr(mixing, "asr_overrides", lambda name: [])
    mixing._train("rnnt_conditioned", "rnnt", 60, None)
    assert calls == {"rnnt_conditioned": (60, 20)} and not isolated["rnnt_conditioned"]


def test_a_baseline_is_transcribed_only_on_the_splits_the_claims_read(tmp_path, monkeypatch):
    demo = _demo(tmp_path)
    transcribed = []
    monkeypatch.setattr(demo, "transcribe", lambda name, split="test": transcribed.append((name, split)))
    monkeypatch.setattr(demo, "evaluate", lambda system: {"system": system})
    for split in ("test_seen", "real_dev", "real_test"):
        reports = demo.transcribe_and_evaluate(split)
        expected = SYSTEMS if split in BASELINE_SPLITS else ("rnnt_conditioned", "ctc_inter")
        assert [name for name, where in transcribed if where == split] == list(expected)
        assert sorted(reports) == sorted(f"{name}@{split}" for name in expected)
    assert "real_test" in BASELINE_SPLITS and "test_seen" not in BASELINE_SPLITS


@pytest.mark.parametrize(
    ("baselines", "settings", "message"),
    [
        (("rnnt_dual",), {}, r"baselines \['rnnt_dual'\] are not among the systems"),
        (("ctc_inter",), {"rnnt_init": "ctc_inter"}, r"baselines \['ctc_inter'\] start other systems"),
        (("aed_normalized",), {"ctc_init": "aed_normalized"}, r"baselines \['aed_normalized'\] start other systems"),
    ],
)
def test_a_baseline_outside_the_systems_or_one_that_starts_others_is_refused(tmp_path, baselines, settings, message):
    with pytest.raises(ValueError, match=message):
        _demo(tmp_path, baselines=baselines, **settings)


def test_the_claims_option_makes_its_systems_baselines_and_full_trains_them_as_systems(monkeypatch, tmp_path):
    from nemo_pc.pipelines.demo import command

    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or tmp_path / "REPORT.md")
    common = ["--backbone", "fastconformer"]
    command.main(["--out", str(tmp_path / "a"), *common])
    command.main(["--out", str(tmp_path / "b"), "--claims", "asr", *common])
    command.main(["--out", str(tmp_path / "c"), "--full", *common])
    plain, asr, full = seen
    assert plain.baselines == () and full.baselines == ()
    assert asr.baselines == CLAIM_GROUPS["asr"] and set(asr.baselines) <= set(asr.systems)


def test_the_curve_points_and_the_validations_random_streams_come_from_the_command_line(monkeypatch, tmp_path):
    from nemo_pc.pipelines.demo import command

    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or tmp_path / "REPORT.md")
    common = ["--backbone", "fastconformer"]
    command.main(["--out", str(tmp_path / "a"), *common])
    command.main(
        ["--out", str(tmp_path / "b"), "--curve-points", "6", "--aed-curve-points", "2", "--no-isolate-validation-rng"]
        + common
    )
    default, chosen = seen
    assert (default.curve_points, default.aed_curve_points, default.isolate_validation_rng) == (3, 3, True)
    assert (chosen.curve_points, chosen.aed_curve_points, chosen.isolate_validation_rng) == (6, 2, False)
