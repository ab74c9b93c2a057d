"""The Whisper anchor's transcript cache: a rerun on the same audio, model and settings decodes nothing; edited
audio, another model or other settings are decoded again."""

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import nemo_pc.pipelines.anchor as anchor_lib
from nemo_pc.data.recipes.spoken import SpokenForm
from nemo_pc.parts.manifest import write_manifest
from nemo_pc.pipelines.anchor import transcribe_whisper
from nemo_pc.pipelines.anchor_cache import CACHE_FILE, model_identity
from nemo_pc.testing.asr import write_wav


class StubWhisper:
    """Answers with what it heard (a file's name, or a segment's length and first sample) and counts its calls."""

    def __init__(self):
        self.calls = []

    def transcribe(self, audio, **options):
        self.calls.append(audio)
        heard = Path(audio).stem if isinstance(audio, str) else f"{audio.size} samples from {audio[0]:.3f}"
        return iter([SimpleNamespace(text=f" Heard {heard}.")]), SimpleNamespace(duration=1.0)


def _tone(frequency: float, seconds: float = 0.5) -> np.ndarray:
    return (0.3 * np.sin(2 * np.pi * frequency * np.arange(int(16000 * seconds)) / 16000)).astype(np.float32)


def _model_dir(folder: Path, weights: bytes = b"tiny.en weights") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.bin").write_bytes(weights)
    return folder


@pytest.fixture
def setup(tmp_path):
    wavs = [write_wav(tmp_path / "audio" / f"utt{k}.wav", _tone(220 * (k + 1))) for k in range(3)]
    entries = [{"audio_filepath": str(wav), "duration": 0.5, "text": "a", "text_normalized": "a"} for wav in wavs]
    manifest = write_manifest(tmp_path / "test.json", entries)
    return SimpleNamespace(
        tmp=tmp_path, wavs=wavs, manifest=manifest, model_dir=_model_dir(tmp_path / "model"), cache=tmp_path / "cache"
    )


def _run(setup, target="pred.json", manifest=None, model=True, **options):
    """Transcribes with a new stub, or with ``load_whisper``'s model where ``model`` is None."""
    model = StubWhisper() if model is True else model
    options = {"model_dir": setup.model_dir, "cache_dir": setup.cache, **options}
    timing = transcribe_whisper(
        manifest or setup.manifest,
        setup.tmp / target,
        model=model,
        spoken=SpokenForm("none"),
        progress=False,
        **options,
    )
    return model, timing


def test_a_rerun_reads_every_transcript_from_the_cache(setup):
    first, timing = _run(setup, "first.json")
    assert len(first.calls) == 3 and (timing.utterances, timing.cached, timing.audio_seconds) == (3, 0, 1.5)
    again, timing = _run(setup, "again.json")
    assert again.calls == []
    assert (setup.tmp / "again.json").read_text() == (setup.tmp / "first.json").read_text()
    assert "Heard utt1." in (setup.tmp / "again.json").read_text()
    assert (timing.utterances, timing.cached, timing.audio_seconds, timing.decode_seconds) == (0, 3, 0.0, 0.0)
    assert math.isnan(timing.rtf) and timing.as_dict()["cached"] == 3
    assert (setup.cache / CACHE_FILE).is_file()


def test_an_edited_wav_is_decoded_again(setup):
    _run(setup)
    write_wav(setup.wavs[1], _tone(1000))
    model, timing = _run(setup)
    assert model.calls == [str(setup.wavs[1])] and (timing.utterances, timing.cached) == (1, 2)


@pytest.mark.parametrize("changed", [{"compute_type": "float32"}, {"beam_size": 5}, {"seed": 1}, {"model": "other"}])
def test_another_model_or_setting_misses_the_cache(setup, changed):
    _run(setup)
    if "model" in changed:
        changed = {"model_dir": _model_dir(setup.tmp / "other", b"other weights")}
    model, timing = _run(setup, **changed)
    assert len(model.calls) == 3 and timing.cached == 0
    assert len(_run(setup, **changed)[0].calls) == 0  # and is cached under its own key


def test_the_model_is_identified_by_its_weights(tmp_path):
    first = model_identity(_model_dir(tmp_path / "a"))
    assert model_identity(_model_dir(tmp_path / "b")) == first
    assert model_identity(_model_dir(tmp_path / "a", b"fine-tuned weights")) != first


def test_without_the_cache_every_run_decodes(setup):
    for _ in range(2):
        model, timing = _run(setup, cache=False)
        assert len(model.calls) == 3 and timing.cached == 0
    assert not (setup.cache / CACHE_FILE).exists()


def test_a_model_without_its_folder_is_not_cached(setup):
    for _ in range(2):
        assert len(_run(setup, model_dir=None)[0].calls) == 3
    assert not (setup.cache / CACHE_FILE).exists()


def test_no_model_is_loaded_when_every_transcript_is_cached(setup, monkeypatch):
    loaded = []

    def load(model_dir=None, threads=2, compute_type="int8"):
        loaded.append(model_dir)
        return StubWhisper()

    monkeypatch.setattr(anchor_lib, "load_whisper", load)
    _run(setup, model=None)
    assert loaded == [setup.model_dir]
    _, timing = _run(setup, model=None)
    assert loaded == [setup.model_dir] and timing.cached == 3


def test_an_offset_segment_is_keyed_by_its_own_samples(setup):
    recording = np.concatenate([_tone(300, 1.0), _tone(500, 1.0)])
    wav = write_wav(setup.tmp / "long.wav", recording)
    segments = [
        {"audio_filepath": str(wav), "offset": offset, "duration": duration, "text": "a", "text_normalized": "a"}
        for offset, duration in ((0.25, 0.75), (1.0, 1.0))
    ]
    manifest = write_manifest(setup.tmp / "long.json", segments)
    assert len(_run(setup, manifest=manifest)[0].calls) == 2
    write_wav(wav, np.concatenate([recording[:16000], _tone(700, 1.0)]))  # only the second segment changes
    model, timing = _run(setup, manifest=manifest)
    assert len(model.calls) == 1 and model.calls[0].size == 16000 and timing.cached == 1
