"""Long recordings through the P&C ASR families: both modes from one encoder pass per chunk, subtitle cues.

The audio is read chunk by chunk (:func:`nemo_pc.parts.longform.plan_chunks`), so memory does not grow with the
recording: the encoder sees one chunk and its context at a time, and only the decoded tokens (and, for CTC, one
label per encoder frame) are kept. Both modes are decoded from each chunk's one encoder output:

* RNN-T: each mode's decoding continues from the predictor state it had at the end of the previous chunk (the
  partial hypotheses of NeMo's greedy decoding), so a seam is invisible to the predictor.
* CTC: the greedy label of every owned frame is kept, and the collapse runs over the recording's whole label
  sequence, so a token whose frames straddle a seam is counted once.

Files the model cannot use are refused before any model work: unreadable or empty audio gets a ``ValueError``
naming the file. Audio at another sample rate is resampled chunk by chunk with librosa (as NeMo's loader does) and
several channels are averaged to one (NeMo's ``channel_selector="average"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nemo_pc.parts.longform import (
    WORD_START,
    Chunk,
    CueRules,
    Segment,
    TimedToken,
    TimedWord,
    build_segments,
    ctc_tokens,
    emitted_tokens,
    normalized_words,
    plan_chunks,
    words_from_tokens,
)
from nemo_pc.parts.modes import MODES, NORMALIZED_ID, PUNCTUATED_ID
from nemo_pc.parts.subtitles import FORMATS, LINE_WIDTH, render

GREEDY = ("greedy", "greedy_batch")


class AudioReader:
    """Reads spans of one audio file at the model's sample rate, mono, without loading the whole file.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a file soundfile cannot read, or one without samples.
    """

    def __init__(self, path: str | Path, sample_rate: int) -> None:
        import soundfile

        self.path, self.sample_rate = Path(path), int(sample_rate)
        if not self.path.is_file():
            raise FileNotFoundError(2, "No such file", str(self.path))
        try:
            self._file = soundfile.SoundFile(str(self.path))
        except (RuntimeError, TypeError) as err:  # soundfile's LibsndfileError is a RuntimeError
            reason = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise ValueError(f"{self.path}: not readable as audio ({reason})") from None
        self.source_rate = self._file.samplerate
        if self._file.frames <= 0:
            self._file.close()
            raise ValueError(f"{self.path}: no audio samples")
        self.samples = math.floor(self._file.frames * self.sample_rate / self.source_rate)
        if self.samples <= 0:
            self._file.close()
            raise ValueError(f"{self.path}: shorter than one sample at {self.sample_rate} Hz")

    @property
    def seconds(self) -> float:
        return self.samples / self.sample_rate

    def read(self, start: int, end: int) -> np.ndarray:
        """Samples ``[start, end)`` at the model's rate as float32, channels averaged."""
        ratio = self.source_rate / self.sample_rate
        first, last = math.floor(start * ratio), math.ceil(end * ratio)
        self._file.seek(first)
        audio = self._file.read(last - first, dtype="float32", always_2d=True).mean(axis=1)
        if self.source_rate != self.sample_rate:
            import librosa

            audio = librosa.resample(audio, orig_sr=self.source_rate, target_sr=self.sample_rate)
        return np.ascontiguousarray(_fit_length(audio, end - start), dtype=np.float32)

    def close(self) -> None:
        self._file.close()


def _fit_length(audio: np.ndarray, size: int) -> np.ndarray:
    """``audio`` cut or zero-padded to ``size`` samples."""
    return audio[:size] if len(audio) >= size else np.pad(audio, (0, size - len(audio)))


def frame_geometry(model) -> tuple[int, float]:
    """``(samples per encoder frame, seconds per encoder frame)`` of a model: the preprocessor's hop times the
    encoder's subsampling factor."""
    rate = model_sample_rate(model)
    hop = round(float(model.cfg.preprocessor.get("window_stride", 0.01)) * rate)
    samples = hop * int(getattr(model.encoder, "subsampling_factor", 1))
    return samples, samples / rate


def check_window(model, seconds: float) -> None:
    """Refuses a chunk window longer than an encoder with a fixed positional table takes (Whisper: 30 s).

    Raises:
        ValueError: the window is too long; the message names the options that set it.
    """
    positions = getattr(model.encoder, "n_positions", None)
    if positions is None:
        return
    limit = positions * 2 * float(model.cfg.preprocessor.get("window_stride", 0.01))  # 2x convolution stride
    if seconds > limit + 1e-9:
        raise ValueError(
            f"chunk windows of {seconds:g} s (chunk plus context on both sides) are longer than the "
            f"encoder's {limit:g} s; lower --chunk-seconds or --context-seconds"
        )


def model_sample_rate(model) -> int:
    """The sample rate the model's preprocessor expects."""
    return int(model.cfg.preprocessor.get("sample_rate", model.cfg.get("sample_rate", 16000)))


class _RNNTChunks:
    """Encoder once per chunk, then every decodable mode continued from its previous predictor state."""

    def __init__(self, model) -> None:
        strategy = model.cfg.decoding.get("strategy", "greedy_batch")
        if strategy not in GREEDY:
            raise ValueError(
                f"decoding.strategy={strategy}: long-form transcription continues greedy decoding "
                f"across chunks; use one of {', '.join(GREEDY)}"
            )
        if 1 not in model.head_modes:
            raise ValueError("this model writes no punctuated text, which the subtitle cues need")
        self.model = model
        self.modes = [mode for mode in (0, 1) if mode in model.head_modes]
        self.carriers: dict[int, object | None] = dict.fromkeys(self.modes)

    def step(self, audio, length, begin: int, end: int, offset: int) -> dict[int, list[TimedToken]]:
        from nemo_pc.models.mixins.transcription import PCTranscribeConfig

        encoded, encoded_len = self.model.forward(input_signal=audio, input_signal_length=length)
        begin, end = min(begin, int(encoded_len[0])), min(end, int(encoded_len[0]))
        owned = encoded[:, :, begin:end]
        owned_len = encoded_len.new_tensor([end - begin])
        tokens = {}
        for mode in self.modes:
            carrier = self.carriers[mode]
            trcfg = PCTranscribeConfig(
                return_hypotheses=True, partial_hypothesis=None if carrier is None else [carrier]
            )
            (hyp,) = self.model.decode_mode(owned, owned_len, mode, trcfg)
            ids, frames = _as_list(hyp.y_sequence), _as_list(_emission_frames(hyp))
            tokens[mode] = emitted_tokens(ids, frames, offset)
            self.carriers[mode] = _carrier(hyp)
        return tokens

    def finish(self) -> dict[int, list[TimedToken]]:
        return {}


def _as_list(values) -> list[int]:
    return values.tolist() if hasattr(values, "tolist") else list(values)


def _emission_frames(hyp):
    """The frame of each token: ``hyp.timestamp``, or its ``timestep`` entry when the decoding config computes
    NeMo's timestamps (``compute_timestamps: true`` turns the list into a dict)."""
    return hyp.timestamp["timestep"] if isinstance(hyp.timestamp, dict) else hyp.timestamp


def _carrier(hyp):
    """The hypothesis with its tokens emptied: it carries only the predictor state (and last token) into the next
    chunk, so that the next chunk's tokens and emission frames come back alone. NeMo's batched (label-looping)
    greedy decoding adds the frames a state has decoded (``decoded_length``) to its continuation's frames; that
    count is set to 0, so that the frames stay the chunk's own and ``offset`` places them in the recording."""
    hyp.y_sequence = hyp.y_sequence[:0]
    hyp.timestamp = _emission_frames(hyp)[:0]
    hyp.score, hyp.length, hyp.alignments, hyp.frame_confidence, hyp.text = 0.0, 0, None, None, None
    if getattr(hyp.dec_state, "decoded_length", None) is not None:
        hyp.dec_state.decoded_length = hyp.dec_state.decoded_length.new_zeros(())
    return hyp


class _CTCChunks:
    """Encoder once per chunk with the heads both modes need; greedy labels of the owned frames, collapsed at the
    end over the whole recording."""

    def __init__(self, model) -> None:
        main = model.heads.main
        if main.mode != PUNCTUATED_ID or main.mixed_format is not None:
            raise ValueError(
                f"pc.target={model.cfg.pc.target}: long-form transcription needs a model whose main "
                "head writes punctuated text"
            )
        self.model = model
        # the heads whose own text gives a mode; a normalized mode read from the main head comes by the text rules
        self.heads = {
            mode: head for mode, head in model.mode_heads((PUNCTUATED_ID, NORMALIZED_ID)).items() if head.mode == mode
        }
        self.labels: dict[int, list[np.ndarray]] = {mode: [] for mode in self.heads}
        self.blank = model.decoder.num_classes_with_blank - 1

    def step(self, audio, length, begin: int, end: int, offset: int) -> dict[int, list[TimedToken]]:
        heads = tuple(dict.fromkeys(self.heads.values()))
        outputs, _ = self.model.forward_heads(input_signal=audio, input_signal_length=length, heads=heads)
        for mode in self.labels:
            log_probs = outputs[self.heads[mode]][0, begin:end]
            self.labels[mode].append(log_probs.argmax(dim=-1).cpu().numpy().astype(np.int32))
        return {}

    def finish(self) -> dict[int, list[TimedToken]]:
        return {
            mode: ctc_tokens(np.concatenate(parts) if parts else np.zeros(0, np.int32), self.blank)
            for mode, parts in self.labels.items()
        }


def chunk_decoder(model):
    """The per-chunk decoder of the model's family.

    Raises:
        ValueError: a model of neither family, or one that cannot give punctuated text with greedy decoding.
    """
    from nemo_pc.models import EncDecCTCPCBPEModel, EncDecRNNTPCBPEModel

    if isinstance(model, EncDecRNNTPCBPEModel):
        return _RNNTChunks(model)
    if isinstance(model, EncDecCTCPCBPEModel):
        return _CTCChunks(model)
    raise ValueError(f"{type(model).__name__}: chunked long-form transcription takes a nemo_pc RNN-T or CTC model")


@dataclass
class LongformResult:
    """What :func:`transcribe_long` returns.

    Attributes:
        seconds: the recording's length.
        chunks: how many chunks the encoder ran on.
        words: each mode's timed words (``"normalized"``, ``"punctuated"``).
        segments: the subtitle cues (:class:`nemo_pc.parts.longform.CueRules`).
        spread: the AED's pieces whose word times were spread evenly over the piece (no CTC alignment); 0 for
            the other families, whose tokens carry their frames.
    """

    seconds: float
    chunks: int
    words: dict[str, list[TimedWord]] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    spread: int = 0

    def text(self, mode: str) -> str:
        return " ".join(word.text for word in self.words[mode])


def transcribe_long(
    model,
    audio: str | Path | AudioReader,
    chunk_seconds: float = 16.0,
    context_seconds: float = 4.0,
    cue_rules: CueRules | None = None,
    progress: bool = False,
    max_piece_seconds: float = 10.0,
) -> LongformResult:
    """Both modes of a long recording and its subtitle cues: chunk by chunk for the RNN-T and CTC families, piece by
    piece for the AED (cut at pauses, :mod:`nemo_pc.pipelines.longform_aed`).

    Args:
        model: a nemo_pc RNN-T, CTC or AED model (put in eval mode here).
        audio: an audio file, or an :class:`AudioReader` on one (closed here).
        chunk_seconds: the span each chunk owns (RNN-T, CTC).
        context_seconds: what the encoder also reads on each side of it (RNN-T, CTC).
        cue_rules: where a cue ends (marks, pauses, lines, duration; ``None``: the defaults of
            :class:`nemo_pc.parts.longform.CueRules`).
        progress: show a tqdm bar of the chunks (or pieces) on stderr.
        max_piece_seconds: the longest piece the AED decodes.
    """
    from nemo_pc.models import EncDecAEDPCModel

    rate = model_sample_rate(model)
    reader = audio if isinstance(audio, AudioReader) else AudioReader(audio, rate)
    if isinstance(model, EncDecAEDPCModel):
        return _transcribe_pieces(model, reader, max_piece_seconds, cue_rules, progress)
    return _transcribe_chunks(model, reader, chunk_seconds, context_seconds, cue_rules, progress)


def _transcribe_pieces(model, reader: AudioReader, max_seconds: float, cue_rules, progress: bool) -> LongformResult:
    from nemo_pc.parts.segmentation import PauseRules
    from nemo_pc.pipelines.longform_aed import transcribe_pieces

    try:
        found = transcribe_pieces(model, reader, PauseRules(max_seconds=max_seconds), progress=progress)
    finally:
        reader.close()
    segments = build_segments(found.words["punctuated"], found.words["normalized"], reader.seconds, cue_rules)
    return LongformResult(reader.seconds, found.decoded, found.words, segments, found.spread)


def _transcribe_chunks(model, reader: AudioReader, chunk_seconds, context_seconds, cue_rules, progress):
    import torch
    from tqdm import tqdm

    rate = model_sample_rate(model)
    samples_per_frame, frame_seconds = frame_geometry(model)
    decoder = chunk_decoder(model)
    chunks = plan_chunks(reader.samples, round(chunk_seconds * rate), round(context_seconds * rate), samples_per_frame)
    check_window(model, max((chunk.read_end - chunk.read_start) / rate for chunk in chunks))
    tokens: dict[int, list[TimedToken]] = {}
    model.eval()
    device = next(model.parameters()).device
    bar = tqdm(total=len(chunks), unit="chunk", desc=reader.path.name, disable=not progress, leave=False)
    try:
        with torch.inference_mode():
            for chunk in chunks:
                signal = torch.from_numpy(reader.read(chunk.read_start, chunk.read_end))[None].to(device)
                length = torch.tensor([signal.shape[1]], device=device)
                begin, end = chunk.owned_frames(samples_per_frame, _encoded_frames(chunk, samples_per_frame))
                offset = chunk.first_frame(samples_per_frame)
                for mode, found in decoder.step(signal, length, begin, end, offset).items():
                    tokens.setdefault(mode, []).extend(found)
                bar.update()
            for mode, found in decoder.finish().items():
                tokens.setdefault(mode, []).extend(found)
    finally:
        bar.close()
        reader.close()
    return _result(model, reader.seconds, len(chunks), tokens, frame_seconds, cue_rules)


def _encoded_frames(chunk: Chunk, samples_per_frame: int) -> int:
    """An upper bound of the encoder frames of a chunk (one more than its samples fill), for the last chunk's
    owned span; the decoders clip it to the frames the encoder gave."""
    return (chunk.read_end - chunk.read_start) // samples_per_frame + 1


def _result(model, seconds, chunks, tokens, frame_seconds, cue_rules) -> LongformResult:
    tokenizer = model.tokenizer
    words = {}
    for mode, found in tokens.items():
        pieces = tokenizer.ids_to_tokens([token.id for token in found]) if found else []
        word_start = getattr(tokenizer, "word_start", WORD_START)
        words[MODES[mode]] = words_from_tokens(found, pieces, tokenizer.ids_to_text, frame_seconds, word_start)
    derived = "normalized" not in words  # the model writes one mode; the other comes by the text rules
    if derived:
        words["normalized"] = normalized_words(words["punctuated"])
    for mode in MODES:
        words[mode] = [TimedWord(w.text, min(w.start, seconds), min(w.end, seconds)) for w in words[mode]]
    segments = build_segments(words["punctuated"], None if derived else words["normalized"], seconds, cue_rules)
    return LongformResult(seconds, chunks, words, segments)


def write_outputs(
    result: LongformResult,
    folder: str | Path,
    stem: str,
    formats: list[str],
    subtitles: str = "punctuated",
    line_width: int = LINE_WIDTH,
) -> list[Path]:
    """Writes the segments in each format as ``folder/stem.<suffix>``, each file atomically; returns the paths.
    Subtitles show the text of the ``subtitles`` mode, wrapped at ``line_width`` characters (the cue rules'
    ``line_width``, so that a cue has the lines they counted)."""
    from nemo_pc.parts.manifest import write_text_atomic

    return [
        write_text_atomic(
            Path(folder) / f"{stem}{FORMATS[name]}", render(result.segments, name, subtitles, line_width)
        )
        for name in formats
    ]
