"""benchmarks/quality_real_speech.py: the LibriVox clips of a pocketsphinx-style sdist become a manifest, and WER is
counted over the clips on normalized text."""

import io
import json
import tarfile

import numpy as np
import pytest
import soundfile
from benchmark_loader import load_benchmark


def _sdist(path, clips):
    with tarfile.open(path, "w:gz") as archive:
        for name, (seconds, text) in clips.items():
            for suffix, data in ((".wav", _wav(seconds)), (".txt", f" {text}\n".encode())):
                info = tarfile.TarInfo(f"pocketsphinx-5.1.1/test/data/librivox/{name}{suffix}")
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo("pocketsphinx-5.1.1/test/data/librivox/orphan.wav")  # no transcript: left out
        info.size = len(_wav(0.5))
        archive.addfile(info, io.BytesIO(_wav(0.5)))
    return path


def _wav(seconds: float) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, np.zeros(int(16000 * seconds), np.float32), 16000, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def test_clips_with_transcripts_become_manifest_rows(tmp_path):
    bench = load_benchmark("quality_real_speech")
    sdist = _sdist(tmp_path / "p.tar.gz", {"b-0880": (1.0, "he was  not"), "a-0870": (2.0, "and mister john")})
    rows = bench.extract_clips(sdist, tmp_path / "clips")
    assert [row["text"] for row in rows] == ["and mister john", "he was not"]
    assert [round(row["duration"], 2) for row in rows] == [2.0, 1.0]
    assert all((tmp_path / "clips" / name).is_file() for name in ("a-0870.wav", "b-0880.wav"))


def test_wer_is_counted_over_all_clips_on_normalized_text():
    bench = load_benchmark("quality_real_speech")
    result = bench.score("m", ["and mister john", "he was not"], ["And, Mister John.", "he is not at"])
    assert (result["errors"], result["words"]) == (2, 6) and result["wer"] == round(2 / 6, 4)
    assert result["hypotheses"] == ["and mister john", "he is not at"]


def test_an_archive_without_clips_is_refused(tmp_path, capsys):
    bench = load_benchmark("quality_real_speech")
    empty = tmp_path / "e.tar.gz"
    with tarfile.open(empty, "w:gz"):
        pass
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--sdist", str(empty), "--work", str(tmp_path / "w"), "--no-anchor"])
    assert exit_info.value.code == 2 and "not a pocketsphinx sdist" in capsys.readouterr().err


def test_the_table_renders_from_the_results_file(tmp_path):
    render = load_benchmark("render_results")
    path = tmp_path / "real_speech.json"
    clips = [
        {"audio": "a.wav", "seconds": 2.5, "reference": "a b"},
        {"audio": "b.wav", "seconds": 1.5, "reference": "c"},
    ]
    systems = [{"system": "aed_prompt", "wer": 0.25, "errors": 1, "words": 4, "hypotheses": []}]
    path.write_text(json.dumps({"clips": clips, "systems": systems}))
    text = render.render_real_speech(path)
    assert text.startswith("2 LibriVox clips (4.0 s of read speech)") and "| `aed_prompt` | 25.0% | 1 / 4 |" in text
