"""Distillation targets: a teacher's two outputs on speed-perturbed copies of training audio, written as a manifest,
read back by training, cached on the teacher's and the source's content, empty outputs dropped and counted."""

import json

import numpy as np
import pytest
import soundfile

from nemo_pc.parts.manifest import ManifestError, read_manifest, write_manifest
from nemo_pc.pipelines import distill as distill_module
from nemo_pc.pipelines.distill import (
    DistillError,
    check_speeds,
    distill,
    perturbed_copies,
    record_path,
    speed_perturbed,
)

RATE = 16000


def _tone(seconds=1.0, frequency=440.0):
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


def _peak(audio):
    spectrum = np.abs(np.fft.rfft(audio))
    return np.argmax(spectrum) * RATE / len(audio)


@pytest.mark.parametrize("speed", [0.9, 1.1, 1.25])
def test_a_perturbed_copy_is_shorter_or_longer_and_its_pitch_moves_with_it(speed):
    tone = _tone()
    copy = speed_perturbed(tone, speed)
    assert abs(len(copy) - len(tone) / speed) <= 1
    assert _peak(copy) == pytest.approx(440.0 * speed, rel=0.01)
    assert copy.dtype == np.float32
    assert speed_perturbed(tone, 1.0) is tone


def test_bad_speeds_are_refused_by_value():
    assert check_speeds(["0.9", 1.1]) == [0.9, 1.1]
    with pytest.raises(DistillError, match="no speed"):
        check_speeds([])
    with pytest.raises(DistillError, match="speed 3 is outside"):
        check_speeds([0.9, 3])


def _source(folder, lines=3):
    entries = []
    for index in range(lines):
        path = folder / f"utt{index}.wav"
        soundfile.write(str(path), _tone(0.5 + 0.25 * index, 300.0 + 100 * index), RATE)
        entries.append(
            {
                "audio_filepath": path.name,  # relative to the manifest, as NeMo reads it
                "duration": 0.5 + 0.25 * index,
                "text": f"Line {index}, said.",
                "text_normalized": f"line {index} said",
                "speaker": index,
                "utt_id": f"u{index}",
            }
        )
    return write_manifest(folder / "train.json", entries)


class FakeTeacher:
    """``transcribe_both`` of a teacher that names each copy's speed and writes nothing for the second line."""

    def __init__(self):
        self.calls = 0

    def __call__(self, model, manifest, batch_size=16, progress=True):
        self.calls += 1
        rows = read_manifest(manifest)
        punctuated = ["" if "/utt1_" in row["audio_filepath"] else f"Copy at {row['speed']:g}." for row in rows]
        return {"punctuated": punctuated, "normalized": [text.lower().strip(".") for text in punctuated]}


@pytest.fixture
def fake_teacher(monkeypatch):
    import nemo_pc.pipelines.inference as inference

    teacher = FakeTeacher()
    monkeypatch.setattr(inference, "transcribe_both", teacher)
    return teacher


def test_the_teachers_outputs_are_written_with_the_references_and_empty_ones_are_counted(tmp_path, fake_teacher):
    source = _source(tmp_path)
    model = tmp_path / "teacher.nemo"
    model.write_bytes(b"weights v1")
    out = tmp_path / "distill" / "train_distill.json"
    record = distill(model, source, out, speeds=(0.9, 1.1))
    rows = read_manifest(out)
    assert record.lines == len(rows) == 4  # 3 lines x 2 speeds, line 2's two copies (utt1) dropped
    assert record.dropped["by_reason"] == {distill_module.EMPTY: 2}
    first = rows[0]
    assert first["text"] == "Copy at 0.9." and first["text_normalized"] == "copy at 0.9"
    assert first["text_reference"] == "Line 0, said." and first["text_normalized_reference"] == "line 0 said"
    assert first["speaker"] == 0 and first["speed"] == 0.9
    assert [row["utt_id"] for row in rows] == ["u0-sp09", "u0-sp11", "u2-sp09", "u2-sp11"]
    audio, rate = soundfile.read(first["audio_filepath"])
    assert rate == RATE and first["duration"] == pytest.approx(0.5 / 0.9, abs=1e-3) == len(audio) / RATE
    assert record.audio_seconds == pytest.approx(sum(row["duration"] for row in rows), abs=0.01)
    written = json.loads(record_path(out).read_text())
    assert written["lines"] == 4 and written["speeds"] == [0.9, 1.1] and len(written["teacher_sha256"]) == 64


def test_a_second_call_is_a_cache_hit_until_the_teacher_or_the_source_changes(tmp_path, fake_teacher):
    source = _source(tmp_path)
    model = tmp_path / "teacher.nemo"
    model.write_bytes(b"weights v1")
    out = tmp_path / "train_distill.json"
    distill(model, source, out)
    distill(model, source, out)
    assert fake_teacher.calls == 1
    model.write_bytes(b"weights v2")  # a retrained teacher
    distill(model, source, out)
    assert fake_teacher.calls == 2
    entries = read_manifest(source)[:2]
    write_manifest(source, entries)  # an edited source
    assert distill(model, source, out).lines == 2  # line 3 gone: line 1's two copies (line 2's are empty)
    assert fake_teacher.calls == 3
    distill(model, source, out, speeds=(1.0,))  # other speeds
    assert fake_teacher.calls == 4 and len(read_manifest(out)) == 1
    copies = sorted(path.name for path in (tmp_path / "train_distill_audio").iterdir())
    soundfile.write(str(tmp_path / "utt0.wav"), _tone(0.5, 900.0), RATE)  # same name and length, other samples
    fresh = perturbed_copies(source, tmp_path / "train_distill_audio", [0.9])[0]["audio_filepath"]
    assert fresh.rsplit("/", 1)[1] not in copies
    assert _peak(soundfile.read(fresh)[0]) == pytest.approx(810.0, rel=0.01)


def test_bad_input_is_named(tmp_path, fake_teacher):
    source = _source(tmp_path)
    model = tmp_path / "teacher.nemo"
    with pytest.raises(DistillError, match="no such teacher model"):
        distill(model, source, tmp_path / "out.json")
    model.write_bytes(b"weights")
    with pytest.raises(DistillError, match="no such manifest"):
        distill(model, tmp_path / "missing.json", tmp_path / "out.json")
    rows = read_manifest(source)
    del rows[1]["text_normalized"]
    write_manifest(source, rows)
    with pytest.raises(ManifestError, match=r"train.json:2: missing field 'text_normalized'"):
        perturbed_copies(source, tmp_path / "audio", [0.9])
    rows[1]["text_normalized"] = "x"
    (tmp_path / "utt1.wav").write_bytes(b"not audio")
    write_manifest(source, rows)
    with pytest.raises(ManifestError, match=r"train.json:2: .*utt1.wav: not audio"):
        perturbed_copies(source, tmp_path / "audio", [0.9])
    assert not (tmp_path / "out.json").exists()


def test_the_command_reports_bad_input_in_one_line_with_exit_2(tmp_path, capsys):
    from nemo_pc.cli import main

    source = _source(tmp_path)
    assert main(["distill", str(tmp_path / "none.nemo"), str(source), str(tmp_path / "out.json")]) == 2
    assert "nemo-pc distill: error: " in capsys.readouterr().err
    (tmp_path / "t.nemo").write_bytes(b"x")
    assert main(["distill", str(tmp_path / "t.nemo"), str(source), str(tmp_path / "o.json"), "--speeds", "4"]) == 2
    assert "speed 4 is outside (0.5, 2]" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["distill", "t.nemo", str(source), "o.json", "--speeds", "fast"])


def test_a_tiny_aeds_targets_are_written_and_a_ctc_model_trains_on_them_beside_the_labels(tmp_path):
    """The whole path on real models: a tiny AED (2 steps) transcribes speed-perturbed copies in both modes, and a
    tiny CTC model trains on the labelled manifest and the distillation manifest together."""
    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.whisper import tiny_aed_corpus, tiny_aed_overrides, tiny_ctc_overrides

    corpus = tiny_aed_corpus(tmp_path)
    aed = tmp_path / "aed.nemo"
    train_model("aed", tiny_aed_overrides(corpus["weights"], corpus["tokenizer"], corpus["manifest"]), aed, 2)
    out = tmp_path / "distill.json"
    record = distill(aed, corpus["manifest"], out, speeds=(0.9, 1.1), batch_size=4)
    labelled = read_manifest(corpus["manifest"])
    assert record.lines + record.dropped["total"] == 2 * len(labelled)
    rows = read_manifest(out)
    assert len(rows) == record.lines
    assert {row["text_reference"] for row in rows} <= {row["text"] for row in labelled}
    assert rows and all(row["text"].strip() and row["text_normalized"].strip() for row in rows)
    both = f"model.train_ds.manifest_filepath=[{corpus['manifest']},{out}]"
    stats = train_model("ctc", [*tiny_ctc_overrides(corpus), both], tmp_path / "ctc.nemo", 2, init_from=aed)
    assert stats["steps"] == 2 and (tmp_path / "ctc.nemo").is_file()
