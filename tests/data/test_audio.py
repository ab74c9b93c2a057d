"""Audio of every shape: what NeMo's loader takes is transcribed (resampled, channels averaged), the rest is refused
in one line naming the file. Each row of the audio table in docs/reliability.md is a case here."""

import json
import re

import numpy as np
import pytest
import soundfile
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_pc.data.audio import AudioError, check_audio
from nemo_pc.parts.manifest import ManifestError
from nemo_pc.testing.asr import tone_audio


def _write(path, audio, rate=16000, **kwargs):
    soundfile.write(str(path), audio, rate, **kwargs)


def _nan(path):
    audio = tone_audio(0)
    audio[100:200] = np.nan
    _write(path, audio, subtype="FLOAT")


def _inf(path):
    audio = tone_audio(0)
    audio[5] = -np.inf
    _write(path, audio, subtype="DOUBLE")


def _truncated(path):
    _write(path, tone_audio(0))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _header_only(path):
    _write(path, tone_audio(0))
    path.write_bytes(path.read_bytes()[:30])


ACCEPTED = {
    "mono 16 kHz wav": ("a.wav", lambda p: _write(p, tone_audio(0))),
    "stereo": ("a.wav", lambda p: _write(p, np.stack([tone_audio(0), tone_audio(1)], axis=1))),
    "8 kHz": ("a.wav", lambda p: _write(p, tone_audio(0, sample_rate=8000), 8000)),
    "22.05 kHz": ("a.wav", lambda p: _write(p, tone_audio(0, sample_rate=22050), 22050)),
    "44.1 kHz": ("a.wav", lambda p: _write(p, tone_audio(0, sample_rate=44100), 44100)),
    "48 kHz": ("a.wav", lambda p: _write(p, tone_audio(0, sample_rate=48000), 48000)),
    "flac": ("a.flac", lambda p: _write(p, tone_audio(0))),
    "ogg vorbis": ("a.ogg", lambda p: _write(p, tone_audio(0))),
    "mp3": ("a.mp3", lambda p: _write(p, tone_audio(0))),
    "float wav": ("a.wav", lambda p: _write(p, tone_audio(0), subtype="FLOAT")),
    "silence": ("a.wav", lambda p: _write(p, np.zeros(16000, dtype=np.float32))),
    "clipped": ("a.wav", lambda p: _write(p, np.clip(tone_audio(0) * 20, -1, 1))),
    "0.05 s": ("a.wav", lambda p: _write(p, tone_audio(0, duration=0.05))),
    "data cut short": ("a.wav", _truncated),
}
REFUSED = {
    "no samples": ("a.wav", lambda p: _write(p, np.zeros(0, dtype=np.float32)), "no samples"),
    "NaN samples": ("a.wav", _nan, "NaN or infinite samples"),
    "infinite samples": ("a.wav", _inf, "NaN or infinite samples"),
    "header cut off": ("a.wav", _header_only, "not audio that soundfile reads"),
    "text named .wav": ("a.wav", lambda p: p.write_text("hello\n"), "not audio that soundfile reads"),
    "a folder named .wav": ("a.wav", lambda p: p.mkdir(), "a folder, not an audio file"),
    "missing": ("a.wav", lambda p: None, "no such file"),
}


def _make(tmp_path, case):
    name, writer = case[:2]
    path = tmp_path / name
    writer(path)
    return path


@pytest.mark.parametrize("case", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_audio_that_nemo_reads_is_accepted(tmp_path, case):
    check_audio(_make(tmp_path, case))


@pytest.mark.parametrize("case", REFUSED.values(), ids=REFUSED.keys())
def test_audio_that_nemo_cannot_use_is_refused_naming_the_file(tmp_path, case):
    path = _make(tmp_path, case)
    with pytest.raises(AudioError) as refused:
        check_audio(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and case[2] in message and "\n" not in message


# transcription with a tiny model


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from omegaconf import OmegaConf

    from nemo_pc.models import EncDecRNNTPCBPEModel
    from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest

    folder = tmp_path_factory.mktemp("audio_model")
    tokenizer = train_tokenizer(write_pc_manifest(folder / "data"), folder / "tok")
    return EncDecRNNTPCBPEModel(OmegaConf.create(tiny_model_config(tokenizer))).eval()


def _manifest(folder, paths):
    manifest = folder / "manifest.json"
    lines = [{"audio_filepath": str(p), "duration": 1.0, "text": "Hi.", "text_normalized": "hi"} for p in paths]
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return manifest


def test_every_accepted_shape_is_transcribed_in_both_modes(model, tmp_path):
    from nemo_pc.pipelines.inference import transcribe_both

    paths = []
    for k, case in enumerate(ACCEPTED.values()):
        (tmp_path / str(k)).mkdir()
        paths.append(_make(tmp_path / str(k), case))
    outputs = transcribe_both(model, _manifest(tmp_path, paths), batch_size=4, progress=False)
    for mode in ("normalized", "punctuated"):
        assert len(outputs[mode]) == len(paths) and all(isinstance(text, str) for text in outputs[mode])


def test_stereo_is_transcribed_as_the_average_of_its_channels(model, tmp_path):
    from nemo_pc.pipelines.inference import transcribe_both

    left, right = tone_audio(2), tone_audio(3)
    _write(tmp_path / "stereo.wav", np.stack([left, right], axis=1), subtype="FLOAT")
    _write(tmp_path / "mono.wav", (left + right) / 2, subtype="FLOAT")
    outputs = transcribe_both(
        model, _manifest(tmp_path, [tmp_path / "stereo.wav", tmp_path / "mono.wav"]), progress=False
    )
    assert outputs["punctuated"][0] == outputs["punctuated"][1]
    assert outputs["normalized"][0] == outputs["normalized"][1]


@pytest.mark.parametrize("case", REFUSED.values(), ids=REFUSED.keys())
def test_transcription_refuses_before_decoding_naming_the_line_and_file(model, tmp_path, case):
    from nemo_pc.pipelines.inference import transcribe_both

    (tmp_path / "good").mkdir()
    good = _make(tmp_path / "good", ACCEPTED["mono 16 kHz wav"])
    bad = _make(tmp_path, case)
    manifest = _manifest(tmp_path, [good, bad])
    with pytest.raises(ManifestError, match=f"^{re.escape(f'{manifest}:2: audio {bad}: {case[2]}')}"):
        transcribe_both(model, manifest, progress=False)


SHAPES = st.tuples(
    st.sampled_from([8000, 16000, 22050, 44100, 48000]),
    st.integers(1, 3),
    st.floats(0.01, 1.5),
    st.sampled_from([0.0, 0.001, 1.0, 30.0]),
    st.sampled_from([("wav", "PCM_16"), ("wav", "FLOAT"), ("flac", "PCM_16"), ("ogg", "VORBIS")]),
)


@settings(max_examples=6, deadline=None)
@given(shapes=st.lists(SHAPES, min_size=1, max_size=4))
def test_any_audio_that_loads_gives_text_in_both_modes(model, tmp_path_factory, shapes):
    """Rate, channels, length, level (silence to clipped) and container drawn at random, a few files a manifest."""
    from nemo_pc.pipelines.inference import transcribe_both

    folder = tmp_path_factory.mktemp("any")
    paths = []
    for k, (rate, channels, seconds, gain, (container, subtype)) in enumerate(shapes):
        frames = max(1, int(rate * seconds))
        noise = np.random.default_rng(frames).standard_normal((frames, channels))
        paths.append(folder / f"{k}.{container}")
        _write(paths[-1], np.clip(gain * 0.3 * noise, -1, 1).astype(np.float32), rate, subtype=subtype)
    outputs = transcribe_both(model, _manifest(folder, paths), progress=False)
    for mode in ("normalized", "punctuated"):
        assert len(outputs[mode]) == len(paths) and all(isinstance(text, str) for text in outputs[mode])


def test_a_relative_audio_path_is_read_from_the_manifests_folder(tmp_path, monkeypatch):
    """As the training loader and NeMo read it: a path that does not exist from the working folder is taken
    relative to the manifest's folder."""
    from nemo_pc.data.audio import manifest_audio

    folder = tmp_path / "corpus"
    (folder / "wavs").mkdir(parents=True)
    soundfile.write(str(folder / "wavs" / "a.wav"), np.zeros(1600, dtype=np.float32), 16000)
    manifest = folder / "m.json"
    manifest.write_text(json.dumps({"audio_filepath": "wavs/a.wav", "text": "Yes."}) + "\n")
    monkeypatch.chdir(tmp_path)
    audio = manifest_audio(manifest, ("text",))
    assert audio.paths == [str(folder / "wavs" / "a.wav")] and audio.texts == [["Yes."]]
    manifest.write_text(json.dumps({"audio_filepath": "wavs/missing.wav", "text": "Yes."}) + "\n")
    with pytest.raises(ValueError, match=r"m.json:1: audio .*missing.wav: no such file"):
        manifest_audio(manifest)
