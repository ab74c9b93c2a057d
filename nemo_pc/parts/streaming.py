"""Cache-aware streaming of the P&C transducer: one encoder step per chunk, every requested mode decoded from it.

A model trained with ``encoder=streaming`` (``configs/rnnt/encoder/streaming.yaml``) streams with NeMo's own tools:
``model.conformer_stream_step(...)`` over the chunks of a ``CacheAwareStreamingAudioBuffer``, as NeMo's
``speech_to_text_cache_aware_streaming_infer.py`` does. That step decodes with ``model.decoding``, the decoding of
the model's default mode (``pc.default_mode``), so it returns that mode's text.

:func:`stream_step` is the same step for any set of modes: the encoder runs once on the chunk with its caches, and
each mode's decoding (built on ``model.decoder_for(mode)``) continues its own partial hypotheses from that one
encoder output. :func:`stream_buffer` runs it over a buffer; :func:`stream_transcribe` over audio files.

With the same ``att_context_size``, streaming and offline decoding compute the same thing (``chunked_limited``
attention, causal convolutions and causal subsampling see no frame in streaming that they would not see offline),
so the texts are the same as ``model.transcribe(...)`` (tested).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from nemo_pc.parts.modes import MODES, mode_id, parse_request, requested_ids


@dataclass
class StreamState:
    """What a stream carries from one chunk to the next.

    Attributes:
        cache_last_channel: the attention caches, ``(layers, B, left context, d_model)``.
        cache_last_time: the convolution caches, ``(layers, B, d_model, kernel - 1)``.
        cache_last_channel_len: ``(B,)`` filled length of the attention caches.
        hypotheses: per mode id, the partial hypotheses (one per stream), ``None`` before the first chunk.
        steps: the chunks seen so far.
    """

    cache_last_channel: torch.Tensor
    cache_last_time: torch.Tensor
    cache_last_channel_len: torch.Tensor
    hypotheses: dict[int, list | None] = field(default_factory=dict)
    steps: int = 0


def stream_modes(model, mode: str | Sequence[str] | None = None) -> list[int]:
    """The mode ids a stream decodes: ``"normalized"``, ``"punctuated"``, ``"both"``, a list of names, or ``None``
    (the model's default mode).

    Raises:
        ValueError: an unknown mode.
    """
    if mode is not None and not isinstance(mode, str):
        return [mode_id(parse_request(name)) for name in mode]
    return requested_ids(parse_request(model.default_mode if mode is None else mode))


def initial_state(model, batch_size: int, modes: Sequence[int]) -> StreamState:
    """Empty caches (NeMo's ``encoder.get_initial_cache_state``) and no hypotheses yet, for ``batch_size`` streams."""
    param = next(model.parameters())
    channel, time, channel_len = model.encoder.get_initial_cache_state(
        batch_size=batch_size, dtype=param.dtype, device=param.device
    )
    return StreamState(channel, time, channel_len, hypotheses={int(mode): None for mode in modes})


@torch.no_grad()
def stream_step(
    model,
    chunk: torch.Tensor,
    chunk_lengths: torch.Tensor,
    state: StreamState,
    keep_all_outputs: bool,
    drop_extra_pre_encoded: int | None = None,
) -> dict[int, list]:
    """One chunk: one cache-aware encoder step, then each mode of ``state`` decoded from its output.

    Args:
        model: an :class:`~nemo_pc.models.EncDecRNNTPCBPEModel` with a streaming encoder, in eval mode.
        chunk, chunk_lengths: features ``(B, F, T)`` of the chunk and their lengths, as a
            ``CacheAwareStreamingAudioBuffer`` yields them.
        state: the stream's caches and partial hypotheses; updated in place.
        keep_all_outputs: True on the last chunk of the streams.
        drop_extra_pre_encoded: encoder frames to drop after subsampling (NeMo's argument of the same name).

    Returns:
        Per mode id, the hypotheses so far (one per stream; ``.text`` is the text up to this chunk).
    """
    encoded, encoded_len, channel, time, channel_len = model.encoder.cache_aware_stream_step(
        processed_signal=chunk,
        processed_signal_length=chunk_lengths,
        cache_last_channel=state.cache_last_channel,
        cache_last_time=state.cache_last_time,
        cache_last_channel_len=state.cache_last_channel_len,
        keep_all_outputs=keep_all_outputs,
        drop_extra_pre_encoded=drop_extra_pre_encoded,
    )
    state.cache_last_channel, state.cache_last_time, state.cache_last_channel_len = channel, time, channel_len
    return decode_chunk(model, encoded, encoded_len, state)


@torch.no_grad()
def decode_chunk(model, encoded: torch.Tensor, encoded_len: torch.Tensor, state: StreamState) -> dict[int, list]:
    """Continues each mode's partial hypotheses of ``state`` over one chunk's encoder output ``(B, D, T)``, with
    that mode's decoding; returns them per mode id (see :func:`stream_step`)."""
    from nemo.collections.asr.parts.mixins import TranscribeConfig

    for mode, previous in state.hypotheses.items():
        trcfg = TranscribeConfig(return_hypotheses=True, partial_hypothesis=previous)
        state.hypotheses[mode] = model.decode_mode(encoded, encoded_len, mode, trcfg)
    state.steps += 1
    return dict(state.hypotheses)


def drop_extra_for_step(model, step: int, pad_and_drop_preencoded: bool) -> int:
    """NeMo's rule: the first chunk drops nothing after subsampling unless it was padded like the later ones."""
    if step == 0 and not pad_and_drop_preencoded:
        return 0
    return model.encoder.streaming_cfg.drop_extra_pre_encoded


@torch.no_grad()
def stream_buffer(
    model,
    buffer,
    modes: Sequence[int],
    pad_and_drop_preencoded: bool = False,
    step_fn: Callable[..., dict[int, list]] = stream_step,
) -> dict[int, list[str]]:
    """Streams every chunk of a filled ``CacheAwareStreamingAudioBuffer``; returns each mode's final texts.

    ``pad_and_drop_preencoded`` must be the buffer's own setting. ``step_fn`` replaces :func:`stream_step` (same
    arguments), e.g. to time each step.
    """
    state = initial_state(model, len(buffer.streams_length), modes)
    hypotheses = {mode: [] for mode in modes}
    for step, (chunk, lengths) in enumerate(buffer):
        hypotheses = step_fn(
            model,
            chunk,
            lengths,
            state,
            keep_all_outputs=buffer.is_buffer_empty(),
            drop_extra_pre_encoded=drop_extra_for_step(model, step, pad_and_drop_preencoded),
        )
    return {mode: [hyp.text for hyp in hyps] for mode, hyps in hypotheses.items()}


def streaming_buffer(model, pad_and_drop_preencoded: bool = False):
    """NeMo's ``CacheAwareStreamingAudioBuffer`` for ``model``, features normalized as in training."""
    from nemo.collections.asr.parts.utils.streaming_utils import CacheAwareStreamingAudioBuffer

    return CacheAwareStreamingAudioBuffer(
        model=model, online_normalization=False, pad_and_drop_preencoded=pad_and_drop_preencoded
    )


def stream_transcribe(
    model,
    audio: Sequence[str],
    mode: str | Sequence[str] | None = None,
    batch_size: int = 1,
    pad_and_drop_preencoded: bool = False,
) -> list[str] | dict[str, list[str]]:
    """Streams audio files through ``model``, ``batch_size`` streams at a time, in the encoder's current
    ``att_context_size`` (``model.encoder.set_default_att_context_size`` picks another lookahead).

    Returns what ``model.transcribe`` returns for the same ``mode``: a list of texts, or, for ``"both"`` (or a list
    of modes), ``{"normalized": [...], "punctuated": [...]}``.
    """
    modes = stream_modes(model, mode)
    model.eval()
    buffer = streaming_buffer(model, pad_and_drop_preencoded)
    texts: dict[int, list[str]] = {m: [] for m in modes}
    for start in range(0, len(audio), batch_size):
        buffer.reset_buffer()
        for path in audio[start : start + batch_size]:
            buffer.append_audio_file(str(path), stream_id=-1)
        for m, batch_texts in stream_buffer(model, buffer, modes, pad_and_drop_preencoded).items():
            texts[m].extend(batch_texts)
    if mode is None or (isinstance(mode, str) and len(modes) == 1):
        return texts[modes[0]]
    return {MODES[m]: texts[m] for m in modes}
