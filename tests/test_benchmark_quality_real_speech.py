"""benchmarks/quality_real_speech.py: the clips of ``nemo-pc real-speech``'s recipe (here from a fake pocketsphinx
sdist) become the rows scored, chosen by split and speaker, and WER is counted over the clips on normalized text."""

import json

import pytest
from benchmark_loader import load_benchmark

from nemo_pc.testing.sdists import fake_source, pocketsphinx_files, tone_wav, write_sdist


def _sdist(folder):
    files = pocketsphinx_files(
        {"b-0880": (tone_wav(1.0), "he was  not"), "a-0870": (tone_wav(2.0), "and mister john")}
    )
    files.update(pocketsphinx_files({"001": (tone_wav(1.0), "ten of clubs")}, folder="cards"))
    files["test/data/librivox/orphan.wav"] = tone_wav(0.5)  # no transcript: left out
    folder.mkdir()
    return fake_source(write_sdist(folder / "pocketsphinx-5.1.1.tar.gz", "pocketsphinx-5.1.1", files))


def test_the_recipes_clips_become_the_rows_scored(tmp_path):
    bench = load_benchmark("quality_real_speech")
    source = _sdist(tmp_path / "sd")
    sdist = tmp_path / "sd" / "pocketsphinx-5.1.1.tar.gz"
    speaker = ["librivox-sense-and-sensibility"]
    rows = bench.real_clips(tmp_path / "w", [sdist], speakers=speaker, cache_dir=tmp_path / "c", sources=[source])
    assert [row["text_normalized"] for row in rows] == ["and mister john", "he was not"]
    assert [round(row["duration"], 2) for row in rows] == [2.0, 1.0]
    assert all(
        (tmp_path / "w" / "audio" / "pocketsphinx").joinpath(f"librivox-{n}.wav").is_file()
        for n in ("a-0870", "b-0880")
    )
    every = bench.real_clips(tmp_path / "w", [sdist], cache_dir=tmp_path / "c", sources=[source])
    assert {row["speaker"] for row in every} == {"librivox-sense-and-sensibility", "pocketsphinx-cards"}


def test_wer_is_counted_over_all_clips_on_normalized_text():
    bench = load_benchmark("quality_real_speech")
    result = bench.score("m", ["and mister john", "he was not"], ["And, Mister John.", "he is not at"])
    assert (result["errors"], result["words"]) == (2, 6) and result["wer"] == round(2 / 6, 4)
    assert result["hypotheses"] == ["and mister john", "he is not at"]


def test_an_sdist_that_is_not_the_pinned_one_is_refused(tmp_path, capsys):
    bench = load_benchmark("quality_real_speech")
    _sdist(tmp_path / "sd")  # same name, another hash than pocketsphinx 5.1.1's
    argv = ["--sdist", str(tmp_path / "sd" / "pocketsphinx-5.1.1.tar.gz"), "--work", str(tmp_path / "w")]
    with pytest.raises(SystemExit) as exit_info:
        bench.main([*argv, "--cache-dir", str(tmp_path / "c"), "--no-anchor"])
    assert exit_info.value.code == 2 and "pocketsphinx==5.1.1" in capsys.readouterr().err
    (tmp_path / "other.tar.gz").write_bytes(b"")
    with pytest.raises(SystemExit):
        bench.main(["--sdist", str(tmp_path / "other.tar.gz"), "--work", str(tmp_path / "w"), "--no-anchor"])
    assert "not a pinned sdist" in capsys.readouterr().err


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
    assert text.startswith("2 real recorded clips (4.0 s of speech)") and "| `aed_prompt` | 25.0% | 1 / 4 |" in text
