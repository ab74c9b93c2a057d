"""Long recordings through the attention encoder-decoder: pieces cut at pauses, both modes per piece, word times
from its CTC head.

An AED trained on utterances of a few seconds writes only the first words of a 16-s window, and it emits no frame per
token. So the recording is cut at pauses into pieces no longer than the decoder knows
(:mod:`nemo_pc.parts.segmentation`; 10 s by default), and the pieces are decoded in batches the way the model's
``transcribe`` decodes a batch (:meth:`~nemo_pc.models.EncDecAEDPCModel.decode_modes` on the encoder states, both
modes from one encoder pass) with the search limits of ``decoding.limits`` on (a model whose config switches them off
gets their defaults for the call). The same encoder pass feeds the CTC head that learns the normalized text
(``aux_ctc``): each piece's normalized words are force-aligned to its log probabilities
(:func:`nemo_pc.parts.word_times.align_words`) and the punctuated words take the times of the normalized words they
align with (:func:`~nemo_pc.parts.word_times.carry_times`).
Where the alignment fails (more tokens than frames), or the model has no CTC head, the piece's words are spread
evenly over it, and the piece is counted.

The audio is read twice, block by block for the voice-activity detector and then piece by piece, so memory does not
grow with the recording.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch
from omegaconf import OmegaConf

from nemo_pc.modules.aed_search import SearchLimits
from nemo_pc.parts.longform import TimedWord
from nemo_pc.parts.modes import NORMALIZED_ID, PUNCTUATED_ID
from nemo_pc.parts.segmentation import PauseRules, Piece, plan_pieces, recording_energy_db
from nemo_pc.parts.word_times import align_words, carry_times, spread_evenly

BLOCK_SECONDS = 60.0
"""Audio the voice-activity detector reads at a time."""


@dataclass
class PieceWords:
    """What :func:`transcribe_pieces` returns.

    Attributes:
        words: each mode's timed words (``"normalized"``, ``"punctuated"``), in the recording's seconds.
        pieces: the pieces the recording was cut into (those without speech included).
        decoded: the pieces that held speech and were decoded.
        spread: the decoded pieces whose words were spread evenly (no CTC alignment).
    """

    words: dict[str, list[TimedWord]] = field(default_factory=lambda: {"normalized": [], "punctuated": []})
    pieces: int = 0
    decoded: int = 0
    spread: int = 0


def plan_recording(reader, rules: PauseRules) -> list[Piece]:
    """The pieces of the recording ``reader`` reads (:class:`nemo_pc.pipelines.longform.AudioReader`)."""
    frame = max(1, int(rules.frame_seconds * reader.sample_rate))
    block = max(1, int(BLOCK_SECONDS * reader.sample_rate) // frame) * frame
    blocks = (reader.read(start, min(start + block, reader.samples)) for start in range(0, reader.samples, block))
    return plan_pieces(recording_energy_db(blocks, frame), reader.samples, frame, rules)


@contextlib.contextmanager
def search_limits_on(model) -> Iterator[None]:
    """The model's decoding with ``decoding.limits`` on inside the block: a config whose limits are null gets the
    defaults of :class:`~nemo_pc.modules.aed_search.SearchLimits`, and its own decoding back afterwards."""
    decoding = model.cfg.decoding
    if decoding.get("limits", {}) is not None:
        yield
        return
    saved = OmegaConf.create(OmegaConf.to_container(decoding))
    limited = OmegaConf.merge(saved, {"limits": vars(SearchLimits())})
    model.change_decoding_strategy(limited, verbose=False)
    try:
        yield
    finally:
        model.change_decoding_strategy(saved, verbose=False)


def transcribe_pieces(
    model, reader, rules: PauseRules | None = None, batch_size: int = 8, progress: bool = False
) -> PieceWords:
    """Both modes of a recording, timed word by word, decoded piece by piece (see the module docstring).

    Args:
        model: a nemo_pc AED (:class:`~nemo_pc.models.EncDecAEDPCModel`), put in eval mode here.
        reader: an :class:`~nemo_pc.pipelines.longform.AudioReader` at the model's sample rate (not closed here).
        rules: where the pieces are cut (``None``: the defaults of :class:`~nemo_pc.parts.segmentation.PauseRules`).
        batch_size: pieces decoded together.
        progress: show a tqdm bar of the pieces on stderr.
    """
    from tqdm import tqdm

    pieces = plan_recording(reader, rules or PauseRules())
    speech = [piece for piece in pieces if piece.voiced]
    found = PieceWords(pieces=len(pieces), decoded=len(speech))
    model.eval()
    bar = tqdm(total=len(speech), unit="piece", desc=reader.path.name, disable=not progress, leave=False)
    try:
        with torch.inference_mode(), search_limits_on(model):
            for first in range(0, len(speech), max(1, batch_size)):
                batch = speech[first : first + max(1, batch_size)]
                for normalized, punctuated, spread in _decode(model, reader, batch):
                    found.words["normalized"] += normalized
                    found.words["punctuated"] += punctuated
                    found.spread += spread
                bar.update(len(batch))
    finally:
        bar.close()
    return found


def _decode(model, reader, batch: Sequence[Piece]) -> list[tuple[list[TimedWord], list[TimedWord], bool]]:
    """Each piece's normalized and punctuated words in the recording's seconds, and whether they were spread."""
    device = next(model.parameters()).device
    audio = [reader.read(*piece.span) for piece in batch]
    lengths = torch.tensor([len(a) for a in audio], device=device)
    signal = torch.zeros(len(audio), int(lengths.max()), device=device)
    for row, samples in enumerate(audio):
        signal[row, : len(samples)] = torch.from_numpy(samples)
    encoded, encoded_len = model.encode(signal, lengths)
    states, mask = model.cross_states(encoded, encoded_len)
    texts = model.decode_modes(states, mask, [NORMALIZED_ID, PUNCTUATED_ID])
    log_probs = model.normalized_ctc_log_probs(encoded)
    frame_seconds = model.encoder_frame_seconds
    out = []
    for row, piece in enumerate(batch):
        start, end = (sample / reader.sample_rate for sample in piece.span)
        frames = min(int(encoded_len[row]), math.ceil((end - start) / frame_seconds))
        row_log_probs = None if log_probs is None else log_probs[row, :frames]
        normalized = _normalized_times(model, row_log_probs, texts[NORMALIZED_ID][row].split(), start, frame_seconds)
        spread = normalized is None
        if spread:
            normalized = spread_evenly(texts[NORMALIZED_ID][row].split(), start, end)
        normalized = [TimedWord(w.text, min(w.start, end), min(w.end, end)) for w in normalized]
        out.append((normalized, carry_times(normalized, texts[PUNCTUATED_ID][row], start, end), spread))
    return out


def _normalized_times(
    model, log_probs: torch.Tensor | None, words: list[str], offset: float, frame_seconds: float
) -> list[TimedWord] | None:
    """The normalized words timed by the CTC head's forced alignment, or ``None`` where it cannot be made."""
    if log_probs is None:
        return None
    tokenizer = model.ctc_tokenizer
    spans = align_words(log_probs, [tokenizer.text_to_ids(word) for word in words], log_probs.shape[-1] - 1)
    if spans is None:
        return None
    return [
        TimedWord(word, offset + a * frame_seconds, offset + b * frame_seconds)
        for word, (a, b) in zip(words, spans, strict=True)
    ]
