"""benchmarks/data_real_speech.py: the summary that ``nemo-pc real-speech`` wrote becomes a results file with its run,
and its tables render (here from a fake pocketsphinx sdist)."""

import json

import pytest
from benchmark_loader import load_benchmark

from nemo_pc.data.recipes.real_speech import prepare_real_speech
from nemo_pc.testing.sdists import fake_source, pocketsphinx_files, tone_wav, write_sdist


def test_the_summary_becomes_a_results_file_that_renders(tmp_path):
    files = pocketsphinx_files({"a": (tone_wav(1.0), "he was not"), "b": (tone_wav(1.0), None)})
    files.update(pocketsphinx_files({"001": (tone_wav(1.0), "ten of clubs")}, folder="cards"))
    source = fake_source(write_sdist(tmp_path / "pocketsphinx-5.1.1.tar.gz", "pocketsphinx-5.1.1", files))
    prepare_real_speech(tmp_path / "out", tmp_path / "c", sources=[source], sdist_dir=tmp_path)
    bench, render = load_benchmark("data_real_speech"), load_benchmark("render_results")
    results = tmp_path / "sets.json"
    bench.main([str(tmp_path / "out"), "--json", str(results)])
    assert "data_real_speech.py" in json.loads(results.read_text())["provenance"]["command"]
    text = render.render_real_speech_sets(results)
    assert "| `real_dev` | 1 | 0.02 | 0 | `librivox-sense-and-sensibility` (1, 0.02) |" in text
    assert "| no transcript | 1 | 0.02 | `pocketsphinx` 1 |" in text


def test_a_folder_without_the_summary_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load_benchmark("data_real_speech").main([str(tmp_path), "--json", str(tmp_path / "x.json")])
    assert exit_info.value.code == 2 and "not the summary of nemo-pc real-speech" in capsys.readouterr().err
