"""Greedy RNN-T decoding of an exported P&C model with onnxruntime, in any mode, in one batched loop.

:func:`export_for_onnxruntime` writes ``encoder-model.onnx`` and ``decoder_joint-model.onnx`` (through NeMo's
``model.export``), the SentencePiece ``tokenizer.model`` and ``runner.json`` (blank id, ``max_symbols`` and the
shape of every predictor state). :class:`OnnxRNNTPCRunner` reads that folder. Its greedy search is NeMo's: at each
encoder frame, emit the best label until it is blank or ``max_symbols`` labels were emitted, then go to the next
frame. Rows may have different modes, so both outputs of one utterance come from a single loop over a batch that
holds the utterance twice.

A cache-aware streaming model (``encoder=streaming``) exports its encoder step with the caches as inputs and outputs
(:func:`export_streaming_encoder`, NeMo's ``cache_support`` export); :class:`OnnxStreamingEncoder` runs it in place of
the PyTorch encoder step of :func:`nemo_pc.parts.streaming.stream_step`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nemo_pc.parts.modes import MODES

RUNNER_CONFIG = "runner.json"


@dataclass
class StateSpec:
    """One predictor state tensor: its shape with the batch axis set to 1, that axis, dtype and start value."""

    shape: list[int]
    batch_axis: int
    dtype: str
    fill: float

    def initial(self, batch_size: int) -> np.ndarray:
        shape = list(self.shape)
        shape[self.batch_axis] = batch_size
        return np.full(shape, self.fill, dtype=self.dtype)


def export_for_onnxruntime(model: Any, folder: str | Path, modes: Sequence[int] | None = None) -> Path:
    """Exports an :class:`~nemo_pc.models.EncDecRNNTPCBPEModel` for :class:`OnnxRNNTPCRunner`; returns ``folder``.

    ``modes`` limits a 2-Decoder model to the heads of those modes (e.g. ``[1]`` for punctuated output only).
    """
    from nemo_pc.modules.export import ModeDecoderJoint

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    modes = list(model.head_modes) if modes is None else [int(m) for m in modes]
    unknown = [mode for mode in modes if mode not in model.head_modes]
    if not modes or unknown:
        raise ValueError(f"modes: this model has heads for modes {list(model.head_modes)}, got {modes}")
    model.eval()
    # The two files NeMo's ``model.export`` writes, with the decoding step limited to the requested heads.
    step = ModeDecoderJoint(model.decoder, model.joint, modes)
    model.encoder.export(str(folder / "encoder-model.onnx"))
    step.export(str(folder / "decoder_joint-model.onnx"))
    states = []
    for one, two in zip(step.initial_states(1), step.initial_states(2), strict=True):
        one, two = one.cpu(), two.cpu()  # a model on a GPU gives its states there
        axis = next(index for index, (a, b) in enumerate(zip(one.shape, two.shape, strict=True)) if a != b)
        fill = float(one.flatten()[0]) if one.numel() else 0.0
        states.append(StateSpec(list(one.shape), axis, str(one.numpy().dtype), fill).__dict__)
    config = {
        "blank_id": int(model.decoder.blank_idx),
        "max_symbols": int(model.cfg.decoding.get("greedy", {}).get("max_symbols", 10) or 10),
        "states": states,
        "modes": modes,
    }
    (folder / RUNNER_CONFIG).write_text(json.dumps(config, indent=1), encoding="utf-8")
    (folder / "tokenizer.model").write_bytes(model.tokenizer.tokenizer.serialized_model_proto())
    return folder


class OnnxRNNTPCRunner:
    """Encoder + greedy decoding with onnxruntime on CPU.

    Args:
        folder: written by :func:`export_for_onnxruntime`.
        threads: onnxruntime intra-op threads (None: its default).
    """

    def __init__(self, folder: str | Path, threads: int | None = None) -> None:
        import onnxruntime
        import sentencepiece

        folder = Path(folder)
        config = json.loads((folder / RUNNER_CONFIG).read_text(encoding="utf-8"))
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        providers = ["CPUExecutionProvider"]
        self.encoder = onnxruntime.InferenceSession(str(folder / "encoder-model.onnx"), options, providers=providers)
        self.step = onnxruntime.InferenceSession(
            str(folder / "decoder_joint-model.onnx"), options, providers=providers
        )
        self.folder = folder
        self.modes = [int(mode) for mode in config["modes"]]
        self.blank_id = config["blank_id"]
        self.max_symbols = config["max_symbols"]
        self.states = [StateSpec(**spec) for spec in config["states"]]
        self.tokenizer = sentencepiece.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
        self._encoder_inputs = [item.name for item in self.encoder.get_inputs()]
        self._step_inputs = [item.name for item in self.step.get_inputs()]

    def encode(self, features: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Features (B, F, T) and their lengths -> encoder output (B, D, T') and lengths."""
        feeds = dict(zip(self._encoder_inputs, (features.astype(np.float32), lengths.astype(np.int64)), strict=True))
        encoded, encoded_len = self.encoder.run(None, feeds)[:2]
        return encoded, encoded_len

    def greedy(self, encoded: np.ndarray, encoded_len: np.ndarray, modes: np.ndarray) -> list[list[int]]:
        """Greedy token ids of each row of encoder output, row ``b`` decoded in mode ``modes[b]``."""
        batch = encoded.shape[0]
        tokens = np.full((batch, 1), self.blank_id, dtype=np.int64)
        states = [spec.initial(batch) for spec in self.states]
        modes = modes.astype(np.int64)
        ones = np.ones(batch, dtype=np.int64)
        hyps: list[list[int]] = [[] for _ in range(batch)]
        for frame in range(encoded.shape[2]):
            active = frame < encoded_len
            frame_out = encoded[:, :, frame : frame + 1]
            for _ in range(self.max_symbols):
                values = {"encoder_outputs": frame_out, "targets": tokens, "target_length": ones, "mode": modes}
                values.update((f"input_states_{index}", state) for index, state in enumerate(states, start=1))
                feeds = {name: values[name] for name in self._step_inputs}  # an unused mode input is pruned
                outputs = self.step.run(None, feeds)
                labels = outputs[0][:, 0, 0, :].argmax(-1)
                emit = active & (labels != self.blank_id)
                if not emit.any():
                    break
                for row in np.nonzero(emit)[0]:
                    hyps[row].append(int(labels[row]))
                tokens = np.where(emit[:, None], labels[:, None], tokens).astype(np.int64)
                states = [
                    np.where(self._batch_mask(emit, spec), new, old)
                    for spec, new, old in zip(self.states, outputs[2:], states, strict=True)
                ]
                active = emit
        return hyps

    @staticmethod
    def _batch_mask(mask: np.ndarray, spec: StateSpec) -> np.ndarray:
        shape = [1] * len(spec.shape)
        shape[spec.batch_axis] = mask.shape[0]
        return mask.reshape(shape)

    def transcribe_features(
        self, features: np.ndarray, lengths: np.ndarray, modes: list[int] | np.ndarray
    ) -> list[str]:
        """Texts of a feature batch, one mode per row (the same features may appear once per mode).

        Raises:
            ValueError: a mode that the export does not hold (``runner.json`` lists the exported modes).
        """
        modes = np.asarray(modes)
        self._check_modes(modes.tolist())
        encoded, encoded_len = self.encode(features, lengths)
        return [self.tokenizer.decode(ids) for ids in self.greedy(encoded, encoded_len, modes)]

    def transcribe_all(self, features: np.ndarray, lengths: np.ndarray) -> dict[str, list[str]]:
        """Every exported mode of every utterance, keyed by mode name: one encoder run, one greedy loop over the
        batch repeated once per mode. A single-mode export answers with that mode only."""
        encoded, encoded_len = self.encode(features, lengths)
        batch, count = encoded.shape[0], len(self.modes)
        modes = np.repeat(np.asarray(self.modes), batch)
        ids = self.greedy(np.concatenate([encoded] * count), np.concatenate([encoded_len] * count), modes)
        texts = [self.tokenizer.decode(item) for item in ids]
        return {MODES[mode]: texts[index * batch : (index + 1) * batch] for index, mode in enumerate(self.modes)}

    def _check_modes(self, modes: list[int]) -> None:
        missing = sorted({int(mode) for mode in modes} - set(self.modes))
        if missing:
            names = [(MODES[mode] if mode in range(len(MODES)) else str(mode)) for mode in missing]
            exported = [MODES[mode] for mode in self.modes]
            raise ValueError(f"{self.folder}: mode(s) {names} not exported (this export holds {exported})")


def export_streaming_encoder(model: Any, path: str | Path) -> Path:
    """Exports the cache-aware encoder step of a streaming model at its current ``att_context_size`` (the chunk
    size, left cache and dropped pre-encoded frames are fixed in the graph); returns the ONNX file.

    NeMo's ``model.export`` with ``cache_support`` writes the encoder's step with the caches (batch axis first) as
    inputs and outputs. It fixes ``drop_extra_pre_encoded`` for every chunk, so the first chunk must be padded like
    the later ones: stream with ``CacheAwareStreamingAudioBuffer(..., pad_and_drop_preencoded=True)``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.set_export_config({"cache_support": True})
    try:
        model.encoder.export(str(path))
    finally:
        model.set_export_config({"cache_support": False})
    return path


class OnnxStreamingEncoder:
    """The exported encoder step of :func:`export_streaming_encoder` on onnxruntime's CPU provider, called like
    :func:`nemo_pc.parts.streaming.stream_step` (it ignores ``drop_extra_pre_encoded``, fixed at export).

    Args:
        path: the ONNX file.
        threads: onnxruntime intra-op threads (None: its default).
    """

    def __init__(self, path: str | Path, threads: int | None = None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = [item.name for item in self.session.get_inputs()]

    def encode(self, chunk, chunk_lengths, state) -> tuple:
        """One chunk through the exported step; updates the caches of ``state`` and returns the encoder output and
        its lengths as torch tensors."""
        import torch

        channel, time = state.cache_last_channel.transpose(0, 1), state.cache_last_time.transpose(0, 1)
        values = (chunk, chunk_lengths, channel, time, state.cache_last_channel_len)
        feeds = {name: value.cpu().numpy() for name, value in zip(self.inputs, values, strict=True)}
        encoded, encoded_len, channel, time, channel_len = (
            torch.from_numpy(out) for out in self.session.run(None, feeds)
        )
        state.cache_last_channel, state.cache_last_time = channel.transpose(0, 1), time.transpose(0, 1)
        state.cache_last_channel_len = channel_len
        return encoded, encoded_len

    def __call__(self, model, chunk, chunk_lengths, state, keep_all_outputs: bool, drop_extra_pre_encoded=None):
        from nemo_pc.parts.streaming import decode_chunk

        encoded, encoded_len = self.encode(chunk, chunk_lengths, state)
        return decode_chunk(model, encoded, encoded_len, state)
