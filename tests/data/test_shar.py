"""nemo-pc export-shar: a manifest as lhotse shar keeps the audio (segments too) and every field; reruns keep a
complete export; bad input ends in one line and exit code 2."""

import json

import numpy as np
import pytest

from nemo_pc.cli import main
from nemo_pc.data.recipes.shar import export_shar
from nemo_pc.parts.manifest import read_manifest, write_manifest
from nemo_pc.testing.asr import tone_audio, write_pc_manifest, write_wav

lhotse = pytest.importorskip("lhotse")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    """The tiny P&C manifest plus two segments of one long file (offset / duration)."""
    folder = tmp_path_factory.mktemp("shar")
    path = write_pc_manifest(folder, duration=0.5)
    long_wav = write_wav(folder / "long.wav", tone_audio(9, duration=2.0))
    entries = read_manifest(path)
    for index, (offset, duration) in enumerate([(0.25, 0.5), (1.0, 0.75)]):
        entries.append(
            {
                "audio_filepath": str(long_wav),
                "offset": offset,
                "duration": duration,
                "text": "Go, Anna.",
                "text_normalized": "go anna",
                "pc_source": "book",
                "utt_id": f"seg{index}",
                "speaker": "9",
            }
        )
    return write_manifest(path, entries)


def _read(folder):
    return list(lhotse.CutSet.from_shar(in_dir=folder))


def test_round_trip_keeps_the_audio_and_every_field(manifest, tmp_path):
    import soundfile

    paths = export_shar(manifest, tmp_path / "shar", shard_size=4)
    assert [len(paths["cuts"]), len(paths["recording"])] == [2, 2]
    cuts = _read(tmp_path / "shar")
    entries = read_manifest(manifest)
    assert [cut.id for cut in cuts] == [entry["utt_id"] for entry in entries]
    for cut, entry in zip(cuts, entries, strict=True):
        assert cut.supervisions[0].text == entry["text"]
        kept = {key: value for key, value in entry.items() if key not in ("audio_filepath", "duration", "offset")}
        assert {key: cut.custom[key] for key in kept if key != "text"} == {
            k: v for k, v in kept.items() if k != "text"
        }
        assert cut.duration == pytest.approx(entry["duration"])
        audio, rate = soundfile.read(entry["audio_filepath"], dtype="float32")
        start = round(entry.get("offset", 0.0) * rate)
        expected = audio[start : start + round(entry["duration"] * rate)]
        np.testing.assert_array_equal(cut.load_audio()[0], expected)


def test_a_rerun_keeps_a_complete_export_and_refuses_other_data(manifest, tmp_path):
    out = tmp_path / "shar"
    export_shar(manifest, out, shard_size=4)
    stamps = {path.name: path.stat().st_mtime_ns for path in out.iterdir()}
    export_shar(manifest, out, shard_size=4)
    assert {path.name: path.stat().st_mtime_ns for path in out.iterdir()} == stamps
    with pytest.raises(FileExistsError, match="holds other data"):
        export_shar(manifest, out, shard_size=2)
    export_shar(manifest, out, shard_size=2, overwrite=True)
    assert len(list(out.glob("cuts.*"))) == 3 and len(_read(out)) == 6
    assert [path.name for path in tmp_path.iterdir()] == ["shar"]  # no staging folder left


def test_cli_writes_the_shards(manifest, tmp_path, capsys):
    assert main(["export-shar", str(manifest), str(tmp_path / "out"), "--shard-size", "100"]) == 0
    assert capsys.readouterr().out.strip() == f"{tmp_path / 'out'}: 1 shards"
    assert len(_read(tmp_path / "out")) == 6


def _one_error_line(capsys) -> str:
    """The error line: the last one on stderr, after the progress bar where writing had begun."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and lines[-1].startswith("nemo-pc export-shar: error: "), lines
    assert all(line.startswith("export-shar ") for line in lines[:-1]), lines  # progress only
    return lines[-1]


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", "No such file or directory"),
        ("no_text", "bad.json:2: missing field 'text'"),
        ("missing_audio", "bad.json:2: audio file not found"),
        ("corrupt_audio", "bad.json:2: cannot read audio"),
        ("shard_size", "shard_size must be 1 or more, got 0"),
        ("other_data", "exists and holds other data"),
    ],
)
def test_bad_input_ends_in_one_line_and_exit_code_2(manifest, tmp_path, capsys, case, message):
    entries = read_manifest(manifest)
    bad = tmp_path / "bad.json"
    out, extra = tmp_path / "out", []
    if case == "missing":
        bad = tmp_path / "missing.json"
    elif case == "no_text":
        entries[1].pop("text_normalized"), entries[1].pop("text")
    elif case == "missing_audio":
        entries[1]["audio_filepath"] = str(tmp_path / "gone.wav")
    elif case == "corrupt_audio":
        entries[1]["audio_filepath"] = str(tmp_path / "corrupt.wav")
        (tmp_path / "corrupt.wav").write_bytes(b"RIFF not really a wav file")
    elif case == "shard_size":
        extra = ["--shard-size", "0"]
    else:
        out.mkdir()
        (out / "notes.txt").write_text("mine\n")
    if case != "missing":
        bad.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    assert main(["export-shar", str(bad), str(out), *extra]) == 2
    assert message in _one_error_line(capsys)
    assert case == "other_data" or not out.exists()
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(".")) == []  # no staging left
