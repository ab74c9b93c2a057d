"""nemo_pc.pipelines.lm_build: LMs built side by side in spawned processes are the files one process writes."""

import json

import pytest

from nemo_pc.parts.manifest import ManifestError
from nemo_pc.pipelines.lm_build import LMJob, build_lms
from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm_build")
    manifest = write_pc_manifest(folder / "data")
    small = train_tokenizer(manifest, folder / "tok_small", vocab_size=30)
    large = train_tokenizer(manifest, folder / "tok_large", vocab_size=45)
    return manifest, small, large


def jobs(data, folder):
    manifest, small, large = data
    return [
        LMJob(manifest, small, folder / "small_text.arpa", 3, "text"),
        LMJob(manifest, small, folder / "small_normalized.arpa", 3, "text_normalized"),
        LMJob(manifest, large, folder / "large_text.arpa", 3, "text"),
    ]


def test_two_processes_write_the_files_of_one(data, tmp_path):
    one, two = jobs(data, tmp_path / "one"), jobs(data, tmp_path / "two")
    assert build_lms(one, workers=1) == [job.target for job in one]
    assert build_lms(two, workers=2) == [job.target for job in two]  # the order of the jobs, whoever built them
    for a, b in zip(one, two, strict=True):
        assert a.target.read_bytes() == b.target.read_bytes()
        report = json.loads(b.target.with_suffix(".json").read_text())
        assert report["order"] == 3 and report["vocab_size"] == b.vocab_size()
    assert [job.vocab_size() for job in two] == [30, 30, 45]
    small_text = one[0].target.read_text()
    assert small_text != one[1].target.read_text()  # the punctuated and the normalized text give two LMs
    assert "\\3-grams:" in small_text


def test_a_bad_manifest_line_stops_the_build_with_its_file_and_line(data, tmp_path):
    manifest, small, large = data
    bad = tmp_path / "bad.json"
    bad.write_text(manifest.read_text().splitlines()[0] + "\n{not json\n")
    good = LMJob(manifest, small, tmp_path / "good.arpa", 3, "text")
    broken = LMJob(bad, large, tmp_path / "broken.arpa", 3, "text")  # the larger vocabulary: a spawned process runs it
    with pytest.raises(ManifestError, match=r"bad\.json:2: "):
        build_lms([good, broken], workers=2)
    assert not broken.target.exists()
    # in a spawned worker for certain (which process takes which job above is a race): the same error comes back
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from nemo_pc.pipelines.lm_build import _run_in_worker

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        with pytest.raises(ManifestError, match=r"bad\.json:2: "):
            pool.submit(_run_in_worker, broken).result()
    assert not broken.target.exists()


def test_a_manifest_error_crosses_a_process_boundary_unchanged(tmp_path):
    import pickle

    error = pickle.loads(pickle.dumps(ManifestError(tmp_path / "m.json", 7, "no text field", kind="no text")))
    assert isinstance(error, ManifestError) and str(error) == f"{tmp_path / 'm.json'}:7: no text field"
    assert (error.line, error.reason, error.kind) == (7, "no text field", "no text")


def test_bad_settings_are_refused_before_any_build(data, tmp_path):
    with pytest.raises(ValueError, match="workers must be 1 or more"):
        build_lms(jobs(data, tmp_path), workers=0)
    twice = jobs(data, tmp_path)[:1] * 2
    with pytest.raises(ValueError, match="two LM jobs write one file"):
        build_lms(twice, workers=2)
    assert not list(tmp_path.iterdir())
