"""NeMo adapters for the Whisper encoder and decoder, and an adapter that trains chosen rows of a frozen token
embedding (the mode prompts).

The adapter classes follow NeMo's ``ConformerEncoderAdapter``: each subclasses its module and NeMo's
``AdapterModuleMixin``, forwards ``add_adapter`` and the enable calls to the parts that hold adapters, and is
registered with NeMo's ``register_adapter``. A model config then names the adapter class as its module's ``_target_``
(NeMo's ``get_registered_adapter`` maps one to the other), and NeMo's model calls (``add_adapter``,
``set_enabled_adapters``, ``freeze`` + ``unfreeze_enabled_adapters``, ``save_adapters``/``load_adapters``) work as
they do for a Conformer.

* :class:`WhisperEncoderAdapter`: a ``LinearAdapter`` after every Whisper encoder block
  (:class:`~nemo_pc.modules.whisper_encoder.WhisperLayer`).
* :class:`WhisperTransformerDecoderNMAdapter`: NeMo's ``TransformerDecoderNMAdapter`` in Whisper's shape. NeMo's
  decoder blocks run a ``LinearAdapter`` on their output, in a full teacher-forced pass and in each cached step of
  NeMo's greedy and beam search alike (a block's cached memory is its adapted output). A :class:`RowOffsetAdapter`
  goes to its token embedding instead.
* :class:`RowOffsetAdapter`: trainable offsets of a few rows of the token embedding; the matrix stays frozen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from nemo.collections.asr.modules.transformer.transformer import TransformerDecoderNMAdapter
from nemo.collections.asr.parts.utils import adapter_utils
from nemo.collections.common.parts.adapter_modules import AdapterModuleUtil
from nemo.core.classes.mixins import adapter_mixin_strategies, adapter_mixins
from nemo.utils import model_utils
from omegaconf import DictConfig
from torch import nn

from nemo_pc.modules.whisper_decoder import WhisperTransformerDecoderNM
from nemo_pc.modules.whisper_encoder import WhisperEncoder


class RowOffsetAdapter(nn.Module, AdapterModuleUtil):
    """Adds a trainable offset to the embedding of each of ``rows``: token ``rows[i]`` reads ``weight[rows[i]] +
    row_offsets[i]``, every other token its row of ``weight``. The offsets start at zero, so the adapter starts as
    the identity, as NeMo's adapters do.

    Why an adapter, and not the embedding's own rows with the other rows' gradients zeroed by a hook: the frozen
    matrix stays out of the optimizer's reach. A hook needs ``requires_grad`` on the whole matrix, and AdamW's
    decoupled weight decay then shrinks every row whose gradient is zero; here the matrix takes no gradient and AdamW
    skips it, only the ``len(rows) x in_features`` offsets train, and NeMo's ``save_adapters`` carries them with the
    other adapters. An output head tied to the embedding's weight stays tied and reads the base rows, which for
    prompt tokens (never a target) plays no part in the loss.

    Args:
        in_features: the embedding width.
        rows: the token ids whose rows take an offset.
        adapter_strategy: NeMo's strategy config; the default returns the adapter's output, which already holds the
            embedding it was given.
    """

    def __init__(self, in_features: int, rows: Sequence[int], adapter_strategy: Any = None) -> None:
        super().__init__()
        self.register_buffer("rows", torch.tensor(list(rows), dtype=torch.long), persistent=False)
        self.row_offsets = nn.Parameter(torch.zeros(len(rows), in_features))
        self.setup_adapter_strategy(adapter_strategy)

    def get_default_strategy_config(self) -> adapter_mixin_strategies.ReturnResultAdapterStrategyConfig:
        return adapter_mixin_strategies.ReturnResultAdapterStrategyConfig()

    def forward(self, x: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
        """``x`` ``(..., in_features)``, the embeddings of ``input_ids`` ``(...)``, with the offsets added."""
        hits = (input_ids.unsqueeze(-1) == self.rows).to(x.dtype)
        return x + hits @ self.row_offsets.to(x.dtype)


@dataclass
class RowOffsetAdapterConfig:
    """The config of a :class:`RowOffsetAdapter`, as NeMo's ``LinearAdapterConfig`` is of a ``LinearAdapter``."""

    in_features: int
    rows: list[int]
    adapter_strategy: Any = field(default_factory=adapter_mixin_strategies.ReturnResultAdapterStrategyConfig)
    _target_: str = f"{RowOffsetAdapter.__module__}.{RowOffsetAdapter.__name__}"


class TokenEmbeddingAdapter(nn.Embedding, adapter_mixins.AdapterModuleMixin):
    """``nn.Embedding`` that takes :class:`RowOffsetAdapter` s. A decoder makes its token embedding one by swapping
    the class, as NeMo's ``update_module_class_with_adapter_class`` does (the methods change, the weight object
    stays, so an output head tied to it stays tied)."""

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        out = super().forward(input_ids)
        if self.is_adapter_available():
            out = self.forward_enabled_adapters({"x": out, "input_ids": input_ids})["x"]
        return out

    def forward_single_enabled_adapter_(
        self, input: dict, adapter_module: nn.Module, *, adapter_name, adapter_strategy
    ):
        return {**input, "x": adapter_strategy(input, adapter_module, module=self)}

    def get_accepted_adapter_types(self) -> set[type]:
        if not super().get_accepted_adapter_types():
            self.set_accepted_adapter_types([RowOffsetAdapter])
        return super().get_accepted_adapter_types()


def _forward_enable(holders: Sequence[adapter_mixins.AdapterModuleMixin], name: str | None, enabled: bool) -> None:
    """``set_enabled_adapters`` on every holder that has adapters (with ``name``: that one)."""
    for holder in holders:
        if holder.is_adapter_available() and (name is None or holder.get_adapter_module(name) is not None):
            holder.set_enabled_adapters(name=name, enabled=enabled)


class WhisperEncoderAdapter(WhisperEncoder, adapter_mixins.AdapterModuleMixin):
    """:class:`~nemo_pc.modules.whisper_encoder.WhisperEncoder` that takes NeMo adapters: an adapter added here is
    added to every block, on the block's output (before the padded frames are zeroed). Accepts NeMo's
    ``LinearAdapter`` (its config ``LinearAdapterConfig``; ``in_features`` is set to ``d_model``). Config keys: as
    :class:`~nemo_pc.modules.whisper_encoder.WhisperEncoder`."""

    def add_adapter(self, name: str, cfg: DictConfig) -> None:
        """Adds the adapter ``name`` of config ``cfg`` to every block.

        Raises:
            ValueError: an adapter type other than ``LinearAdapter``.
        """
        cfg = adapter_utils.update_adapter_cfg_input_dim(self, cfg, module_dim=self.d_model)
        self.check_supported_adapter_type_(cfg, self.get_accepted_adapter_types())
        for layer in self.layers:
            layer.add_adapter(name, cfg)

    def is_adapter_available(self) -> bool:
        return any(layer.is_adapter_available() for layer in self.layers)

    def set_enabled_adapters(self, name: str | None = None, enabled: bool = True) -> None:
        _forward_enable(self.layers, name, enabled)

    def get_enabled_adapters(self) -> list[str]:
        return sorted({name for layer in self.layers for name in layer.get_enabled_adapters()})

    def get_accepted_adapter_types(self) -> set[type]:
        """``LinearAdapter`` only: a block hands its adapters one tensor, its output."""
        if not super().get_accepted_adapter_types():
            self.set_accepted_adapter_types([adapter_utils.LINEAR_ADAPTER_CLASSPATH])
        return super().get_accepted_adapter_types()


class WhisperTransformerDecoderNMAdapter(WhisperTransformerDecoderNM, TransformerDecoderNMAdapter):
    """:class:`~nemo_pc.modules.whisper_decoder.WhisperTransformerDecoderNM` that takes NeMo adapters: NeMo's
    ``TransformerDecoderNMAdapter`` (a ``LinearAdapter`` or NeMo's transformer attention adapter runs in every
    block), and a :class:`RowOffsetAdapter` on the token embedding. Config keys: as
    :class:`~nemo_pc.modules.whisper_decoder.WhisperTransformerDecoderNM`."""

    def add_adapter(self, name: str, cfg: DictConfig) -> None:
        """Adds the adapter ``name`` to the token embedding (a :class:`RowOffsetAdapter`) or to every block."""
        cfg = self._update_adapter_cfg_input_dim(cfg)
        if issubclass(model_utils.import_class_by_path(cfg._target_), RowOffsetAdapter):
            self._adapter_token_embedding().add_adapter(name, cfg)
        else:
            for layer in self._decoder.layers:
                layer.add_adapter(name, cfg)

    def is_adapter_available(self) -> bool:
        return any(holder.is_adapter_available() for holder in self._adapter_holders())

    def set_enabled_adapters(self, name: str | None = None, enabled: bool = True) -> None:
        _forward_enable(self._adapter_holders(), name, enabled)

    def get_enabled_adapters(self) -> list[str]:
        return sorted({name for holder in self._adapter_holders() for name in holder.get_enabled_adapters()})

    def _adapter_holders(self) -> list[adapter_mixins.AdapterModuleMixin]:
        """The blocks, and the token embedding once it takes adapters."""
        parts = [*self._decoder.layers, self._embedding.token_embedding]
        return [part for part in parts if isinstance(part, adapter_mixins.AdapterModuleMixin)]

    def _adapter_token_embedding(self) -> TokenEmbeddingAdapter:
        embedding = self._embedding.token_embedding
        if not isinstance(embedding, TokenEmbeddingAdapter):
            embedding.__class__ = TokenEmbeddingAdapter
        return embedding


if adapter_mixins.get_registered_adapter(WhisperEncoder) is None:
    adapter_mixins.register_adapter(base_class=WhisperEncoder, adapter_class=WhisperEncoderAdapter)
if adapter_mixins.get_registered_adapter(WhisperTransformerDecoderNM) is None:
    adapter_mixins.register_adapter(
        base_class=WhisperTransformerDecoderNM, adapter_class=WhisperTransformerDecoderNMAdapter
    )
