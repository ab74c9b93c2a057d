"""Long-form transcription on tiny untrained models of both families.

With local attention and unnormalized features, each encoder frame depends on a bounded stretch of audio; chunks
read with more context than that must give, in both modes, exactly the words of one whole-file ``transcribe``:
whatever the chunk size, no word at a seam may be duplicated, dropped or changed.
"""

import numpy as np
import pytest
import soundfile
import torch
from omegaconf import OmegaConf

from nemo_pc.cli import main
from nemo_pc.models import EncDecCTCPCBPEModel, EncDecRNNTPCBPEModel
from nemo_pc.parts.longform import CueRules
from nemo_pc.parts.modes import NORMALIZED_ID
from nemo_pc.parts.subtitles import to_srt
from nemo_pc.parts.text import DEFAULT_MARKS, SEGMENT_MARKS, normalize
from nemo_pc.pipelines.longform import AudioReader, frame_geometry, transcribe_long
from nemo_pc.testing import ctc as ctc_fixtures
from nemo_pc.testing.asr import UTTERANCES, tiny_model_config, train_tokenizer, write_pc_manifest, write_wav
from nemo_pc.testing.longform import parse_srt, parse_vtt, windowed, write_recording

pytestmark = pytest.mark.usefixtures("one_thread")

CONTEXT = 1.2  # seconds: more than the tiny windowed encoders reach (2 layers of ±10 frames of 40 ms, subsampling)
CHUNKS = (60.0, 1.0, 0.36)  # one chunk; seams inside utterances; nine-frame chunks


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("longform")
    manifest = write_pc_manifest(folder / "data")
    recording = write_recording(folder / "talk.wav", utterances=4, utterance_seconds=0.8, pause_seconds=0.5)
    return {
        "folder": folder,
        "recording": recording,
        "rnnt_tokenizer": train_tokenizer(manifest, folder / "tokenizer"),
        "ctc_tokenizer": train_tokenizer(manifest, folder / "ctc_tokenizer", ctc_fixtures.VOCAB_SIZE, style_tags=True),
    }


def _rnnt(data, local: bool = True, decoders: str = "conditioned") -> EncDecRNNTPCBPEModel:
    torch.manual_seed(0)
    config = tiny_model_config(data["rnnt_tokenizer"], decoders=decoders, hidden=32)
    config["decoding"]["greedy"]["max_symbols"] = 2
    return EncDecRNNTPCBPEModel(cfg=OmegaConf.create(windowed(config) if local else config)).eval()


def _ctc(data, pc: dict) -> EncDecCTCPCBPEModel:
    torch.manual_seed(0)
    config = windowed(ctc_fixtures.tiny_config(data["ctc_tokenizer"], pc=pc, layers=2))
    return EncDecCTCPCBPEModel(OmegaConf.create(config)).eval()


@pytest.fixture(scope="module")
def rnnt(data):
    return _rnnt(data)


def _whole(model, path) -> dict[str, list[str]]:
    """Each mode's words from one whole-file ``transcribe``."""
    both = model.transcribe([str(path)], batch_size=1, verbose=False, mode="both")
    return {mode: getattr(hyps[0], "text", hyps[0]).split() for mode, hyps in both.items()}


def _words(result) -> dict[str, list[str]]:
    return {mode: [word.text for word in words] for mode, words in result.words.items()}


def _check_segments(result):
    segments = result.segments
    assert segments, "an untrained model still writes tokens; no segment would make the checks vacuous"
    assert all(0.0 <= s.start <= s.end <= result.seconds for s in segments)
    assert all(a.end <= b.start for a, b in zip(segments, segments[1:], strict=False))
    # every word of both modes is in exactly one segment, in order
    assert [w for s in segments for w in s.words] == result.words["punctuated"]
    assert [w for s in segments for w in s.normalized] == result.words["normalized"]


@pytest.mark.parametrize("chunk_seconds", CHUNKS)
def test_rnnt_chunks_give_the_words_of_one_whole_pass(data, rnnt, chunk_seconds):
    whole = _whole(rnnt, data["recording"])
    result = transcribe_long(rnnt, data["recording"], chunk_seconds=chunk_seconds, context_seconds=CONTEXT)
    assert result.chunks == max(1, int(np.ceil(result.seconds / chunk_seconds - 1e-9)))
    assert _words(result) == whole
    assert whole["normalized"] != whole["punctuated"]  # two decodings, not one text twice
    _check_segments(result)
    # and the times of one chunk: NeMo's batched greedy decoding adds the frames its partial hypothesis decoded
    one_chunk = transcribe_long(rnnt, data["recording"], chunk_seconds=CHUNKS[0], context_seconds=CONTEXT)
    assert result.words == one_chunk.words


@pytest.mark.parametrize("strategy", ["greedy", "greedy_batch"])
def test_rnnt_decoding_options_carry_the_state_too(data, strategy):
    """NeMo's ``greedy`` strategy continues a partial hypothesis by its own code path (not the batched loop), and
    ``compute_timestamps`` turns each hypothesis's frames into a dict of NeMo's timestamps."""
    model = _rnnt(data, decoders="single")
    decoding = OmegaConf.to_container(model.cfg.decoding)
    model.change_decoding_strategy(
        OmegaConf.create({**decoding, "strategy": strategy, "compute_timestamps": True}), verbose=False
    )
    whole = _whole(model, data["recording"])
    result = transcribe_long(model, data["recording"], chunk_seconds=0.36, context_seconds=CONTEXT)
    assert _words(result) == whole
    assert result.words == transcribe_long(model, data["recording"], chunk_seconds=CHUNKS[0]).words
    beam = OmegaConf.merge(model.cfg.decoding, {"strategy": "beam", "beam": {"beam_size": 2}})
    model.change_decoding_strategy(beam, verbose=False)
    with pytest.raises(ValueError, match="decoding.strategy=beam"):
        transcribe_long(model, data["recording"])


@pytest.mark.parametrize(
    ("variant", "pc"),
    [("main", {}), ("inter", {"ctc_weight": 0.5, "inter": {"weight": 0.5, "layer": 1, "transcribe": True}})],
)
def test_ctc_chunks_give_the_words_of_one_whole_pass(data, variant, pc):
    model = _ctc(data, pc)
    assert model.mode_head(NORMALIZED_ID) == getattr(model.heads, variant)
    whole = _whole(model, data["recording"])
    for chunk_seconds in CHUNKS[1:]:
        result = transcribe_long(model, data["recording"], chunk_seconds=chunk_seconds, context_seconds=CONTEXT)
        assert _words(result) == whole
        _check_segments(result)


def test_word_times_follow_the_encoder_frames(data, rnnt):
    samples_per_frame, frame_seconds = frame_geometry(rnnt)
    assert (samples_per_frame, frame_seconds) == (640, 0.04)
    result = transcribe_long(rnnt, data["recording"], chunk_seconds=1.0, context_seconds=CONTEXT)
    for words in result.words.values():
        assert all(0 <= w.start < w.end <= result.seconds for w in words)
        assert all(round(w.start / frame_seconds, 6).is_integer() for w in words)
        assert all(a.start <= b.start for a, b in zip(words, words[1:], strict=False))


def test_a_full_attention_model_in_one_chunk_is_its_whole_pass(data):
    """Without local attention the chunks change what the encoder sees, so only one chunk must be exact."""
    model = _rnnt(data, local=False, decoders="dual")
    whole = _whole(model, data["recording"])
    result = transcribe_long(model, data["recording"], chunk_seconds=60.0, context_seconds=0.0)
    assert _words(result) == whole
    _check_segments(transcribe_long(model, data["recording"], chunk_seconds=1.0, context_seconds=0.4))


def test_stereo_is_averaged_and_other_rates_are_resampled(data, rnnt, tmp_path):
    mono = transcribe_long(rnnt, data["recording"], chunk_seconds=1.0, context_seconds=CONTEXT)
    stereo = write_recording(
        tmp_path / "stereo.wav", utterances=4, utterance_seconds=0.8, pause_seconds=0.5, channels=2
    )
    assert transcribe_long(rnnt, stereo, chunk_seconds=1.0, context_seconds=CONTEXT).words == mono.words
    tone = np.sin(2 * np.pi * 440 * np.arange(48000) / 48000).astype(np.float32)
    reader = AudioReader(write_wav(tmp_path / "tone48k.wav", tone, sample_rate=48000), 16000)
    assert reader.samples == 16000 and reader.source_rate == 48000
    span = reader.read(4000, 8000)
    expected = np.sin(2 * np.pi * 440 * np.arange(4000, 8000) / 16000)
    assert len(span) == 4000 and np.abs(span - expected)[200:-200].max() < 0.01  # edges fall in the context
    reader.close()


@pytest.fixture(scope="module")
def saved_model(data, rnnt):
    path = data["folder"] / "tiny_rnnt.nemo"
    rnnt.save_to(str(path))
    return path


def test_the_command_writes_strict_srt_vtt_and_json_lines(data, saved_model, rnnt, tmp_path, capsys):
    out = tmp_path / "out"
    args = [
        "transcribe",
        str(saved_model),
        str(data["recording"]),
        "--out",
        str(out),
        "--chunk-seconds",
        "1",
        "--context-seconds",
        str(CONTEXT),
        "--formats",
        "srt,vtt,json",
    ]
    assert main(args) == 0
    written = capsys.readouterr().out.split()
    assert written == [str(out / f"talk{suffix}") for suffix in (".srt", ".vtt", ".jsonl")]
    expected = transcribe_long(rnnt, data["recording"], chunk_seconds=1.0, context_seconds=CONTEXT)
    srt = parse_srt((out / "talk.srt").read_text())
    vtt = parse_vtt((out / "talk.vtt").read_text())
    assert len(srt) == len(vtt) == len(expected.segments)
    assert [" ".join(text.split()) for _, _, text in srt] == [s.text for s in expected.segments]
    assert [(a, b) for a, b, _ in srt] == [(a, b) for a, b, _ in vtt]
    assert all(0 <= a <= b <= expected.seconds + 0.001 for a, b, _ in srt)
    lines = (out / "talk.jsonl").read_text().splitlines()
    assert lines == [__import__("json").dumps(s.as_dict(), ensure_ascii=False) for s in expected.segments]


def _bad(path, tmp_path, capsys, model, *extra):
    code = main(["transcribe", str(model), str(path), "--out", str(tmp_path / "out"), "--no-progress", *extra])
    err = capsys.readouterr().err.strip().splitlines()
    return code, err[-1] if err else ""


def test_bad_input_gets_one_line_and_exit_2(data, saved_model, tmp_path, capsys):
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    text = tmp_path / "notes.wav"
    text.write_text("not audio\n")
    silent = tmp_path / "silent.wav"
    soundfile.write(str(silent), np.zeros(0, np.float32), 16000)
    nan = tmp_path / "nan.wav"
    soundfile.write(str(nan), np.full(1600, np.nan, np.float32), 16000, subtype="FLOAT")
    folder = tmp_path / "folder.wav"
    folder.mkdir()
    cases = {
        empty: (saved_model, "empty.wav: not audio that soundfile reads"),
        text: (saved_model, "notes.wav: not audio that soundfile reads"),
        silent: (saved_model, "silent.wav: no samples"),
        tmp_path / "missing.wav": (saved_model, "missing.wav: no such file"),
        nan: (saved_model, "nan.wav: NaN or infinite samples"),
        folder: (saved_model, "folder.wav: a folder, not an audio file"),
        data["recording"]: (text, "expected a .nemo file"),
    }
    for path, (model, message) in cases.items():
        code, line = _bad(path, tmp_path, capsys, model)
        assert code == 2 and line.startswith("nemo-pc transcribe: error: ") and message in line, line
    for extra, message in [
        (["--formats", "srt,doc"], "unknown format 'doc'"),
        (["--chunk-seconds", "0"], "posit"),
        (["--max-cue-seconds", "0"], "--max-cue-seconds must be positive"),
        (["--cue-pause-seconds", "-1"], "--cue-pause-seconds must not be negative"),
        (["--max-cue-lines", "0"], "--max-cue-lines must be at least 1"),
    ]:
        code, line = _bad(data["recording"], tmp_path, capsys, saved_model, *extra)
        assert code == 2 and message in line, line
    assert not (tmp_path / "out").exists()  # nothing written for bad input
    (tmp_path / "out").write_text("a file")
    code, line = _bad(data["recording"], tmp_path, capsys, saved_model)
    assert code == 2 and line.endswith("out: a file, not a folder"), line


def test_a_whisper_encoder_runs_in_windows_it_can_take(data):
    """Whisper's encoder has a fixed positional table (here 100 frames of 20 ms: 2 s); a chunk window longer than
    that is refused with the options that set it, before any audio is read."""
    config = OmegaConf.create(tiny_model_config(data["rnnt_tokenizer"], hidden=32))
    config.preprocessor = {"_target_": "nemo_pc.modules.WhisperLogMelPreprocessor", "features": 16}
    config.encoder = {
        "_target_": "nemo_pc.modules.WhisperEncoder",
        "feat_in": 16,
        "d_model": 32,
        "n_layers": 2,
        "n_heads": 2,
        "ff_dim": 64,
        "n_positions": 100,
    }
    config.decoding.greedy.max_symbols = 2
    torch.manual_seed(0)
    model = EncDecRNNTPCBPEModel(cfg=config).eval()
    assert frame_geometry(model)[1] == pytest.approx(0.02 * model.encoder.subsampling_factor / 2)
    result = transcribe_long(model, data["recording"], chunk_seconds=1.2, context_seconds=0.4)
    assert result.chunks == 4
    _check_segments(result)
    with pytest.raises(ValueError, match="chunk windows of 2.8 s .* longer than the encoder's 2 s"):
        transcribe_long(model, data["recording"], chunk_seconds=1.2, context_seconds=0.8)


def test_a_cache_aware_streaming_encoder_runs_in_chunks(data, tmp_path):
    """``encoder=streaming`` (chunked_limited attention, 8x, stateless conditioned predictor): its attention chunks
    are counted from each window's first frame, so only its run and its segments are checked, not the words."""
    from nemo_pc.testing.asr import tiny_streaming_config

    manifest = write_pc_manifest(tmp_path / "data")
    torch.manual_seed(0)
    model = EncDecRNNTPCBPEModel(cfg=tiny_streaming_config(data["rnnt_tokenizer"], manifest)).eval()
    assert frame_geometry(model) == (1280, 0.08)
    result = transcribe_long(model, data["recording"], chunk_seconds=1.2, context_seconds=0.8)
    assert result.chunks == 4
    _check_segments(result)


@pytest.fixture(scope="module")
def no_marks(data):
    """A tiny RNN-T that cannot write a mark (its tokenizer learned none: it was trained on mark-free text) and a
    recording of 37.8 s: 24 tone utterances of 1 s with 0.6 s pauses."""
    utterances = [(normalize(text), "none") for text, _ in UTTERANCES]
    manifest = write_pc_manifest(data["folder"] / "no_marks", utterances=utterances)
    tokenizer = train_tokenizer(manifest, data["folder"] / "no_marks_tokenizer")
    torch.manual_seed(2)  # a seed whose untrained model writes many short words
    config = tiny_model_config(tokenizer, hidden=32)
    config["decoding"]["greedy"]["max_symbols"] = 2
    model = EncDecRNNTPCBPEModel(cfg=OmegaConf.create(config)).eval()
    recording = write_recording(data["folder"] / "no_marks.wav", utterances=24, utterance_seconds=1.0)
    return model, recording


def _check_cue_caps(segments, rules: CueRules) -> None:
    """Every cue of more than one word within the caps, as the SRT shows it in both modes."""
    for mode in ("punctuated", "normalized"):
        for segment, (_, _, text) in zip(segments, parse_srt(to_srt(segments, mode, rules.line_width)), strict=True):
            lines = text.split("\n")
            assert len(segment.words) == 1 or len(lines) <= rules.max_lines, (mode, lines)
            assert len(segment.words) == 1 or all(len(line) <= rules.line_width for line in lines), (mode, lines)
    assert all(len(s.words) == 1 or s.end - s.start <= rules.max_seconds for s in segments)


def test_a_model_that_writes_no_marks_gets_cues_within_the_caps(no_marks):
    """Before the cue rules, a model without marks made one cue of the whole recording."""
    model, recording = no_marks
    result = transcribe_long(model, recording, chunk_seconds=16.0, context_seconds=2.0)
    assert result.seconds > 30 and result.chunks == 3
    punctuated = result.words["punctuated"]
    assert not any(set(word.text) & set(DEFAULT_MARKS + SEGMENT_MARKS) for word in punctuated)
    _check_segments(result)
    _check_cue_caps(result.segments, CueRules())
    assert len(result.segments) >= 10 and sum(len(s.words) > 1 for s in result.segments) >= 10
    assert punctuated[-1].end - punctuated[0].start > 30  # the words span the recording, the cues cut them


def test_the_command_takes_the_cue_caps(data, no_marks, tmp_path, capsys):
    model, recording = no_marks
    path = data["folder"] / "no_marks.nemo"
    model.save_to(str(path))
    caps = ["--max-cue-seconds", "3", "--max-cue-lines", "1", "--max-line-chars", "30", "--cue-pause-seconds", "inf"]
    args = [
        "transcribe",
        str(path),
        str(recording),
        "--out",
        str(tmp_path),
        "--chunk-seconds",
        "16",
        "--context-seconds",
        "2",
        "--formats",
        "srt",
        "--no-progress",
        *caps,
    ]
    assert main(args) == 0 and capsys.readouterr().out.split() == [str(tmp_path / "no_marks.srt")]
    rules = CueRules(pause_seconds=float("inf"), max_seconds=3.0, max_lines=1, line_width=30)
    expected = transcribe_long(model, recording, chunk_seconds=16.0, context_seconds=2.0, cue_rules=rules)
    _check_cue_caps(expected.segments, rules)
    cues = parse_srt((tmp_path / "no_marks.srt").read_text())
    assert [text.replace("\n", " ") for _, _, text in cues] == [s.text for s in expected.segments]
    assert all(len(text.split()) == 1 or ("\n" not in text and len(text) <= 30) for _, _, text in cues)
