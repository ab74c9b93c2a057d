"""Prediction networks conditioned on the transcription mode (paper 000 §III-C, Fig. 1 (c) and (d)).

The token embedding has ``pred_hidden - mode_dim`` dimensions; a mode embedding of ``mode_dim`` dimensions
(12 in the paper; mode 0 = normalized, 1 = punctuated) is concatenated to it at every position, the start symbol
included, before the LSTM (or as the output of NeMo's stateless predictor).

``mode_combine: add`` is the form for a predictor adapted from a stock one (``nemo-pc adapt``): the token embedding
keeps all ``pred_hidden`` dimensions (the stock embedding loads as is) and a zero-initialised mode embedding of the
same width is added to it, so that before training every mode computes exactly what the stock predictor computes.

The mode is an argument: ``forward(targets, target_length, modes=...)`` and ``predict(..., modes=...)`` take one
mode id per row (a ``(B,)`` tensor) or one id for the whole batch. NeMo's decoding algorithms call ``predict``
without it, so each mode's decoding gets :meth:`ModeConditioningMixin.for_mode` ``(mode)``, a
:class:`ModeBoundPredictor`: not a module and not a copy of one, it passes its mode to every ``predict`` and answers
everything else (weights, states, the ``training`` flag, ``train``/``eval``) with the predictor itself.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import torch
from nemo.collections.asr.modules.rnnt import RNNTDecoder, StatelessTransducerDecoder
from nemo.collections.asr.parts.submodules.stateless_net import StatelessNet
from nemo.collections.common.parts import rnn

ModeLike = int | torch.Tensor
COMBINES = ("concat", "add")


def mode_tensor(modes: ModeLike, batch: int, device: torch.device, num_modes: int | None = None) -> torch.Tensor:
    """``modes`` (one id, or one id per row) as a ``(batch,)`` long tensor on ``device``.

    Raises:
        ValueError: with ``num_modes``, an id outside ``[0, num_modes)``.
    """
    if isinstance(modes, torch.Tensor):
        modes = modes.to(device=device, dtype=torch.long).reshape(-1)
        ids = modes.expand(batch) if modes.shape[0] == 1 and batch != 1 else modes
    else:
        ids = torch.full((batch,), int(modes), dtype=torch.long, device=device)
    if num_modes is not None and ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= num_modes):
        raise ValueError(f"modes must be in [0, {num_modes}), got {ids.tolist()}")
    return ids


class ModeBoundPredictor:
    """A mode-conditioned predictor as NeMo's decoding of one mode sees it.

    ``predict``, ``forward`` and a call pass the bound mode to the predictor. Every other attribute is the
    predictor's: its weights, its ``training`` flag, ``train``/``eval``/``freeze`` (they act on the predictor), and an
    assignment goes to the predictor too. A method of NeMo's predictor classes (or of this package's) is run with this
    object as ``self``, so that a helper that calls ``self.predict`` (``score_hypothesis``,
    ``batch_score_hypothesis``) predicts in the bound mode; ``torch.nn.Module``'s own methods stay the predictor's.
    ``isinstance`` sees the predictor's class, as NeMo's beam search checks its decoder's type.
    """

    __slots__ = ("_predictor", "_mode")

    def __init__(self, predictor: ModeConditioningMixin, mode: int) -> None:
        if not 0 <= int(mode) < predictor.num_modes:
            raise ValueError(f"mode must be in [0, {predictor.num_modes}), got {mode}")
        object.__setattr__(self, "_predictor", predictor)
        object.__setattr__(self, "_mode", int(mode))

    @property
    def mode(self) -> int:
        """The bound mode."""
        return self._mode

    @property
    def predictor(self) -> ModeConditioningMixin:
        """The predictor (the module the model holds)."""
        return self._predictor

    @property
    def __class__(self) -> type:  # noqa: D105  (isinstance reads it: NeMo's decoding checks the decoder's type)
        return type(self._predictor)

    def __reduce__(self) -> tuple:
        return ModeBoundPredictor, (self._predictor, self._mode)

    def predict(
        self,
        y: torch.Tensor | None = None,
        state: Any = None,
        add_sos: bool = True,
        batch_size: int | None = None,
    ) -> tuple:
        """The predictor's ``predict`` in the bound mode."""
        return self._predictor.predict(y, state=state, add_sos=add_sos, batch_size=batch_size, modes=self._mode)

    def forward(self, targets: torch.Tensor, target_length: torch.Tensor, states: Any = None) -> tuple:
        """The predictor's training-time pass (through its ``__call__``, hooks included) in the bound mode."""
        return self._predictor(targets=targets, target_length=target_length, states=states, modes=self._mode)

    __call__ = forward

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._predictor, name)
        function = inspect.getattr_static(type(self._predictor), name, None)
        if inspect.isfunction(function) and isinstance(value, types.MethodType) and not hasattr(torch.nn.Module, name):
            return types.MethodType(function, self)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._predictor, name, value)


class ModeConditioningMixin:
    """The mode embedding shared by both conditioned predictors, the ``modes`` argument and the mode-bound form
    NeMo's decoding runs on."""

    mode_dim: int
    num_modes: int

    def _init_mode(self, num_modes: int, mode_dim: int, pred_hidden: int, mode_combine: str = "concat") -> None:
        if mode_combine not in COMBINES:
            raise ValueError(f"mode_combine must be one of {COMBINES}, got {mode_combine!r}")
        if mode_combine == "add":
            mode_dim = pred_hidden
        elif not 0 < mode_dim < pred_hidden:
            raise ValueError(f"mode_dim must be in (0, pred_hidden={pred_hidden}), got {mode_dim}")
        if num_modes < 1:
            raise ValueError(f"num_modes must be positive, got {num_modes}")
        self.mode_combine = mode_combine
        self.mode_dim = mode_dim
        self.num_modes = num_modes
        self.token_dim = pred_hidden if mode_combine == "add" else pred_hidden - mode_dim

    def for_mode(self, mode: int) -> ModeBoundPredictor:
        """This predictor bound to ``mode``, for NeMo's decoding (see :class:`ModeBoundPredictor`)."""
        return ModeBoundPredictor(self, mode)

    def mode_ids(self, modes: ModeLike | None, batch: int, device: torch.device) -> torch.Tensor:
        """The ``(batch,)`` mode ids of a call.

        Raises:
            ValueError: no ``modes``, or an id out of range.
        """
        if modes is None:
            raise ValueError("modes: pass the mode of every row, or decode with for_mode(mode)")
        return mode_tensor(modes, batch, device, self.num_modes)

    def _make_mode_embedding(self) -> torch.nn.Embedding:
        embedding = torch.nn.Embedding(self.num_modes, self.mode_dim)
        if self.mode_combine == "add":
            torch.nn.init.zeros_(embedding.weight)
        return embedding

    def append_mode(self, tokens: torch.Tensor, modes: ModeLike | None = None) -> torch.Tensor:
        """Concatenates the mode embedding to token embeddings ``(B, U, token_dim)`` -> ``(B, U, pred_hidden)``, or
        adds it (``mode_combine: add``)."""
        batch, length, _ = tokens.shape
        embedded = self.mode_embed(self.mode_ids(modes, batch, tokens.device)).to(tokens.dtype).unsqueeze(1)
        if self.mode_combine == "add":
            return tokens + embedded
        return torch.cat([tokens, embedded.expand(-1, length, -1)], dim=-1)

    def forward(
        self, targets: torch.Tensor, target_length: torch.Tensor, states: Any = None, modes: ModeLike | None = None
    ) -> tuple:
        """NeMo's training-time predictor pass with each row's mode: ``(g (B, D, U), target_length, states)``."""
        y = rnn.label_collate(targets)
        g, states = self.predict(y, state=states, add_sos=not self._rnnt_export, modes=modes)
        return g.transpose(1, 2), target_length, states

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

    Config keys are those of :class:`nemo.collections.asr.modules.RNNTDecoder` plus ``mode_dim`` (default 12),
    ``num_modes`` (default 2) and ``mode_combine`` (``concat``, the default, or ``add``).
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
        mode_combine: str = "concat",
    ) -> None:
        self._init_mode(num_modes, mode_dim, prednet["pred_hidden"], mode_combine)
        super().__init__(
            prednet=prednet,
            vocab_size=vocab_size,
            normalization_mode=normalization_mode,
            random_state_sampling=random_state_sampling,
            blank_as_pad=blank_as_pad,
        )
        self.mode_embed = self._make_mode_embedding()

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
        modes: ModeLike | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """As :meth:`RNNTDecoder.predict`, with the embedding of each row's mode appended to every input position."""
        y, zeros = self._token_input(y, state, batch_size, batch_dim=1)
        g = self.prediction["embed"](y) if y is not None else zeros
        if add_sos:
            g = _prepend_start(g)
        g = self.append_mode(g, modes)
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
    (default 12), ``num_modes`` (default 2) and ``mode_combine`` (``concat``, the default, or ``add``).
    """

    def __init__(
        self,
        prednet: dict[str, Any],
        vocab_size: int,
        context_size: int = 2,
        normalization_mode: str | None = None,
        mode_dim: int = 12,
        num_modes: int = 2,
        mode_combine: str = "concat",
    ) -> None:
        self._init_mode(num_modes, mode_dim, prednet["pred_hidden"], mode_combine)
        super().__init__(
            prednet=prednet, vocab_size=vocab_size, context_size=context_size, normalization_mode=normalization_mode
        )
        self.mode_embed = self._make_mode_embedding()

    def _predict_modules(self, **kwargs) -> StatelessNet:
        kwargs["emb_dim"] = self.token_dim
        return StatelessNet(**kwargs)

    @classmethod
    def batch_split_states(cls, batch_states: list[torch.Tensor]) -> list[list[torch.Tensor]]:
        """One state per row: ``[(B, C)]`` -> B x ``[(C,)]``, the inverse of ``batch_unsplit_states``.

        NeMo's stateless decoder splits ``[(B, C)]`` into a single item of B ``(1, C)`` tensors; the label-looping
        greedy search, resuming partial hypotheses at the next chunk of a stream, stacks that to 3 dimensions and
        fails (even for one stream). With this split each row resumes from its own context.
        """
        return [list(row) for row in zip(*(state.unbind(0) for state in batch_states), strict=True)]

    def predict(
        self,
        y: torch.Tensor | None = None,
        state: list[torch.Tensor] | None = None,
        add_sos: bool = True,
        batch_size: int | None = None,
        modes: ModeLike | None = None,
    ) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """As :meth:`StatelessTransducerDecoder.predict`, with the embedding of each row's mode appended."""
        y, zeros = self._token_input(y, state, batch_size, batch_dim=0)
        if y is not None:
            g, state = self.prediction(y, state)
        else:
            g = zeros
        if add_sos:
            g = _prepend_start(g)
        return self.append_mode(g, modes), state
