"""The 2-Decoder model's heads (paper 000 §III-A, Fig. 1 (b)): one predictor and one joint per mode.

:class:`DualRNNTDecoder` and :class:`DualRNNTJoint` hold one stock NeMo module per mode (head 0 = normalized,
head 1 = punctuated), built from the same config. Their ``forward`` sends each row of a batch to the head of its
mode (``modes``: one id per row, or one id for the batch). NeMo's decoding algorithms run on one head, which
:meth:`head` (or ``for_mode``, the name the conditioned predictors share) gives. The few settings NeMo's model class
reads from its ``decoder`` and ``joint`` are properties here, answered by head 0 (every head is built from the same
config).

The per-mode interface of a P&C RNN-T's predictor and joint is ``module(..., modes=...)`` and
``module.for_mode(mode)``; :func:`per_mode` gives it to a stock NeMo module that every mode shares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from nemo.core.classes import NeuralModule
from omegaconf import DictConfig, OmegaConf

from nemo_pc.modules.mode_conditioning import ModeLike, mode_tensor


def route_rows(modes: torch.Tensor, run: Callable[[int, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """Runs ``run(mode, row_indices)`` for each mode present in ``modes`` (B,) and puts the outputs back in row
    order."""
    output = None
    for mode in torch.unique(modes).tolist():
        rows = torch.nonzero(modes == mode).squeeze(1)
        part = run(int(mode), rows)
        if output is None:
            output = part.new_zeros((modes.shape[0], *part.shape[1:]))
        output = output.index_copy(0, rows, part)
    return output


class SharedByModes:
    """A stock NeMo predictor or joint that every mode shares, with the per-mode interface: a call, and ``predict``,
    take ``modes`` and do not need it; ``for_mode`` gives the module itself. Not a module: it holds the model's."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module

    def __call__(self, *args: Any, modes: ModeLike | None = None, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def predict(self, *args: Any, modes: ModeLike | None = None, **kwargs: Any) -> Any:
        return self.module.predict(*args, **kwargs)

    def for_mode(self, mode: int) -> torch.nn.Module:
        return self.module


def per_mode(module: torch.nn.Module) -> Any:
    """``module`` with the per-mode interface: itself when it has one (per-mode heads, a mode-conditioned
    predictor), else :class:`SharedByModes`."""
    return module if callable(getattr(module, "for_mode", None)) else SharedByModes(module)


class _ModeHeads(NeuralModule):
    """One NeMo module per mode."""

    def __init__(self, head_target: str, head: dict | DictConfig, num_modes: int = 2, **shared: Any) -> None:
        super().__init__()
        config = OmegaConf.to_container(head, resolve=True) if isinstance(head, DictConfig) else dict(head)
        config.update(shared, _target_=head_target)
        self.heads = torch.nn.ModuleList(
            [NeuralModule.from_config_dict(OmegaConf.create(config)) for _ in range(num_modes)]
        )
        self.num_modes = num_modes

    def head(self, mode: int) -> torch.nn.Module:
        """The module of one mode."""
        if not 0 <= int(mode) < self.num_modes:
            raise ValueError(f"mode must be in [0, {self.num_modes}), got {mode}")
        return self.heads[int(mode)]

    def for_mode(self, mode: int) -> torch.nn.Module:
        """The module that decodes ``mode``: its head."""
        return self.head(mode)

    def _route(self, modes: ModeLike, batch: int, device: torch.device, run: Callable) -> torch.Tensor:
        return route_rows(mode_tensor(modes, batch, device, self.num_modes), run)


class DualRNNTDecoder(_ModeHeads):
    """Two prediction networks, one per mode.

    Config keys: ``head_target`` (a NeMo decoder class, default ``nemo.collections.asr.modules.RNNTDecoder``;
    ``StatelessTransducerDecoder`` works too), ``head`` (that decoder's config without ``_target_``),
    ``vocab_size`` (set by the model) and ``num_modes`` (default 2).
    """

    def __init__(
        self,
        head: dict | DictConfig,
        vocab_size: int,
        head_target: str = "nemo.collections.asr.modules.RNNTDecoder",
        num_modes: int = 2,
    ) -> None:
        super().__init__(head_target, head, num_modes, vocab_size=vocab_size)

    # What NeMo's RNN-T model and the decoding it builds in its constructor read from its decoder.

    @property
    def blank_idx(self) -> int:
        return self.heads[0].blank_idx

    @property
    def blank_as_pad(self) -> bool:
        return self.heads[0].blank_as_pad

    @property
    def vocab_size(self) -> int:
        return self.heads[0].vocab_size

    @property
    def pred_hidden(self) -> int:
        return self.heads[0].pred_hidden

    def forward(
        self, targets: torch.Tensor, target_length: torch.Tensor, states: Any = None, *, modes: ModeLike
    ) -> tuple:
        """Each row through the predictor of its mode: ``(g (B, D, U), target_length, None)``; training only
        (no states: decoding runs on one head)."""
        if states is not None:
            raise ValueError("states: decode with one head (for_mode) to carry predictor states")

        def run(mode: int, rows: torch.Tensor) -> torch.Tensor:
            return self.heads[mode](targets=targets[rows], target_length=target_length[rows])[0]

        return self._route(modes, targets.shape[0], targets.device, run), target_length, None


class DualRNNTJoint(_ModeHeads):
    """Two joint networks, one per mode.

    Config keys: ``head_target`` (a NeMo joint class, default ``nemo.collections.asr.modules.RNNTJoint``),
    ``head`` (that joint's other keys, e.g. ``log_softmax``), the keys the model sets (``num_classes``,
    ``vocabulary``, ``jointnet`` with ``encoder_hidden`` and ``pred_hidden``), ``num_modes`` (default 2) and
    ``num_extra_outputs`` (TDT's duration outputs, default 0).
    """

    def __init__(
        self,
        jointnet: dict | DictConfig,
        num_classes: int,
        vocabulary: list | None = None,
        head: dict | DictConfig | None = None,
        head_target: str = "nemo.collections.asr.modules.RNNTJoint",
        num_modes: int = 2,
        num_extra_outputs: int = 0,
    ) -> None:
        jointnet = OmegaConf.to_container(jointnet, resolve=True) if isinstance(jointnet, DictConfig) else jointnet
        vocabulary = list(vocabulary) if vocabulary is not None else None
        shared = dict(jointnet=jointnet, num_classes=num_classes, vocabulary=vocabulary)
        if num_extra_outputs:
            shared["num_extra_outputs"] = num_extra_outputs
        super().__init__(head_target, head or {}, num_modes, **shared)

    # What NeMo's RNN-T model reads from its joint.

    @property
    def num_classes_with_blank(self) -> int:
        return self.heads[0].num_classes_with_blank

    @property
    def num_extra_outputs(self) -> int:
        return self.heads[0].num_extra_outputs

    @property
    def vocabulary(self) -> list | None:
        return self.heads[0].vocabulary

    @property
    def fuse_loss_wer(self) -> bool:
        return any(head.fuse_loss_wer for head in self.heads)

    @property
    def temperature(self) -> float:
        return self.heads[0].temperature

    @temperature.setter
    def temperature(self, value: float) -> None:
        for head in self.heads:
            head.temperature = value

    @property
    def encoder_hidden(self) -> int:
        return self.heads[0].encoder_hidden

    def forward(
        self, encoder_outputs: torch.Tensor, decoder_outputs: torch.Tensor, *, modes: ModeLike
    ) -> torch.Tensor:
        """Each row through the joint of its mode: ``(B, T, U, V + 1)``."""

        def run(mode: int, rows: torch.Tensor) -> torch.Tensor:
            return self.heads[mode](encoder_outputs=encoder_outputs[rows], decoder_outputs=decoder_outputs[rows])

        return self._route(modes, encoder_outputs.shape[0], encoder_outputs.device, run)
