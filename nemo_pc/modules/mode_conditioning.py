"""Prediction networks conditioned on the transcription mode (paper 000 §III-C, Fig. 1 (c) and (d)).

The token embedding has ``pred_hidden - mode_dim`` dimensions; a mode embedding of ``mode_dim`` dimensions
(12 in the paper; mode 0 = normalized, 1 = punctuated) is concatenated to it at every position, the start symbol
included, before the LSTM (or as the output of NeMo's stateless predictor). The mode is module state: an ``int``
for the whole batch (decoding) or a ``(B,)`` tensor with one mode per row (training on duplicated batches, export).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from nemo.collections.asr.modules.rnnt import RNNTDecoder, StatelessTransducerDecoder
from nemo.collections.asr.parts.submodules.stateless_net import StatelessNet

ModeLike = int | torch.Tensor


class ModeSwitchMixin:
    """The current mode of a module: an id for the whole batch, or a ``(B,)`` tensor with one id per row."""

    num_modes: int
    _mode: ModeLike

    @property
    def mode(self) -> ModeLike:
        """The current mode."""
        return self._mode

    def set_mode(self, mode: ModeLike) -> None:
        """Sets the mode used until the next call."""
        if isinstance(mode, int) and not 0 <= mode < self.num_modes:
            raise ValueError(f"mode must be in [0, {self.num_modes}), got {mode}")
        self._mode = mode

    @contextmanager
    def using_mode(self, mode: ModeLike) -> Iterator[None]:
        """Sets the mode inside the block and restores the previous one after it."""
        previous = self._mode
        self.set_mode(mode)
        try:
            yield
        finally:
            self._mode = previous


class ModeConditioningMixin(ModeSwitchMixin):
    """The mode embedding shared by both conditioned predictors."""

    mode_dim: int

    def _init_mode(self, num_modes: int, mode_dim: int, pred_hidden: int) -> None:
        if not 0 < mode_dim < pred_hidden:
            raise ValueError(f"mode_dim must be in (0, pred_hidden={pred_hidden}), got {mode_dim}")
        if num_modes < 1:
            raise ValueError(f"num_modes must be positive, got {num_modes}")
        self.mode_dim = mode_dim
        self.num_modes = num_modes
        self.token_dim = pred_hidden - mode_dim
        self._mode = 0

    def append_mode(self, tokens: torch.Tensor) -> torch.Tensor:
        """Concatenates the mode embedding to token embeddings ``(B, U, token_dim)`` -> ``(B, U, pred_hidden)``."""
        batch, length, _ = tokens.shape
        if isinstance(self._mode, torch.Tensor):
            modes = self._mode.to(device=tokens.device, dtype=torch.long).reshape(-1)
            if modes.shape[0] == 1 and batch != 1:
                modes = modes.expand(batch)
        else:
            modes = torch.full((batch,), int(self._mode), dtype=torch.long, device=tokens.device)
        embedded = self.mode_embed(modes).to(tokens.dtype)
        return torch.cat([tokens, embedded.unsqueeze(1).expand(-1, length, -1)], dim=-1)

    def _token_input(self, y: torch.Tensor | None, state: Any, batch_size: int | None, batch_dim: int) -> tuple:
        param = next(self.parameters())
        if y is not None:
            return y.to(param.device), None
        if batch_size is None:
            batch_size = 1 if state is None else state[0].size(batch_dim)
        return None, torch.zeros((batch_size, 1, self.token_dim), device=param.device, dtype=param.dtype)


def _prepend_start(g: torch.Tensor) -> torch.Tensor:
    return torch.cat([torch.zeros_like(g[:, :1]), g], dim=1).contiguous()


class ModeConditionedRNNTDecoder(ModeConditioningMixin, RNNTDecoder):
    """NeMo's LSTM prediction network with a mode embedding concatenated to its input.

    Config keys are those of :class:`nemo.collections.asr.modules.RNNTDecoder` plus ``mode_dim`` (default 12) and
    ``num_modes`` (default 2).
    """

    def __init__(
        self,
        prednet: dict[str, Any],
        vocab_size: int,
        mode_dim: int = 12,
        num_modes: int = 2,
        normalization_mode: str | None = None,
        random_state_sampling: bool = False,
        blank_as_pad: bool = True,
    ) -> None:
        self._init_mode(num_modes, mode_dim, prednet["pred_hidden"])
        super().__init__(
            prednet=prednet,
            vocab_size=vocab_size,
            normalization_mode=normalization_mode,
            random_state_sampling=random_state_sampling,
            blank_as_pad=blank_as_pad,
        )
        self.mode_embed = torch.nn.Embedding(num_modes, mode_dim)

    def _predict_modules(self, **kwargs) -> torch.nn.ModuleDict:
        layers = super()._predict_modules(**kwargs)
        rows = kwargs["vocab_size"] + 1 if self.blank_as_pad else kwargs["vocab_size"]
        padding = self.blank_idx if self.blank_as_pad else None
        layers["embed"] = torch.nn.Embedding(rows, self.token_dim, padding_idx=padding)
        return layers

    def predict(
        self,
        y: torch.Tensor | None = None,
        state: list[torch.Tensor] | None = None,
        add_sos: bool = True,
        batch_size: int | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """As :meth:`RNNTDecoder.predict`, with the current mode embedding appended to every input position."""
        y, zeros = self._token_input(y, state, batch_size, batch_dim=1)
        g = self.prediction["embed"](y) if y is not None else zeros
        if add_sos:
            g = _prepend_start(g)
        g = self.append_mode(g)
        if state is None and self.random_state_sampling and self.training:
            state = self.initialize_state(g)
        out, hidden = self.prediction["dec_rnn"](g.transpose(0, 1), state)
        out = out.transpose(0, 1)
        if self.is_adapter_available():
            out = self.forward_enabled_adapters(out)
        return out, hidden


class ModeConditionedStatelessDecoder(ModeConditioningMixin, StatelessTransducerDecoder):
    """NeMo's stateless prediction network whose output is [token context embedding; mode embedding].

    Config keys are those of :class:`nemo.collections.asr.modules.StatelessTransducerDecoder` plus ``mode_dim``
    (default 12) and ``num_modes`` (default 2).
    """

    def __init__(
        self,
        prednet: dict[str, Any],
        vocab_size: int,
        context_size: int = 2,
        normalization_mode: str | None = None,
        mode_dim: int = 12,
        num_modes: int = 2,
    ) -> None:
        self._init_mode(num_modes, mode_dim, prednet["pred_hidden"])
        super().__init__(
            prednet=prednet, vocab_size=vocab_size, context_size=context_size, normalization_mode=normalization_mode
        )
        self.mode_embed = torch.nn.Embedding(num_modes, mode_dim)

    def _predict_modules(self, **kwargs) -> StatelessNet:
        kwargs["emb_dim"] = self.token_dim
        return StatelessNet(**kwargs)

    def predict(
        self,
        y: torch.Tensor | None = None,
        state: list[torch.Tensor] | None = None,
        add_sos: bool = True,
        batch_size: int | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """As :meth:`StatelessTransducerDecoder.predict`, with the current mode embedding appended."""
        y, zeros = self._token_input(y, state, batch_size, batch_dim=0)
        if y is not None:
            g, state = self.prediction(y, state)
        else:
            g = zeros
        if add_sos:
            g = _prepend_start(g)
        return self.append_mode(g), state
