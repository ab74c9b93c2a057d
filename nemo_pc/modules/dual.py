"""The 2-Decoder model's heads (paper 000 §III-A, Fig. 1 (b)): one predictor and one joint per mode.

:class:`DualRNNTDecoder` and :class:`DualRNNTJoint` hold one stock NeMo module per mode (head 0 = normalized,
head 1 = punctuated), built from the same config. Their ``forward`` sends each row of a batch to the head of its
mode, so NeMo's training and validation steps run unchanged on a batch that holds rows of both modes. Everything
else (``predict``, state handling, projections) is answered by the head of the current integer mode, which is what
NeMo's decoding algorithms call; :meth:`head` gives a head itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from nemo.core.classes import NeuralModule
from omegaconf import DictConfig, OmegaConf

from nemo_pc.modules.mode_conditioning import ModeLike, ModeSwitchMixin


def route_rows(modes: torch.Tensor, run: Callable[[int, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """Runs ``run(mode, row_indices)`` for each mode present in ``modes`` and puts the outputs back in row order."""
    modes = modes.reshape(-1)
    output = None
    for mode in torch.unique(modes).tolist():
        rows = torch.nonzero(modes == mode).squeeze(1)
        part = run(int(mode), rows)
        if output is None:
            output = part.new_zeros((modes.shape[0], *part.shape[1:]))
        output = output.index_copy(0, rows, part)
    return output


class _ModeHeads(ModeSwitchMixin, NeuralModule):
    """One NeMo module per mode, chosen by the current mode."""

    def __init__(self, head_target: str, head: dict | DictConfig, num_modes: int = 2, **shared: Any) -> None:
        super().__init__()
        config = OmegaConf.to_container(head, resolve=True) if isinstance(head, DictConfig) else dict(head)
        config.update(shared, _target_=head_target)
        self.heads = torch.nn.ModuleList(
            [NeuralModule.from_config_dict(OmegaConf.create(config)) for _ in range(num_modes)]
        )
        self.num_modes = num_modes
        self._mode: ModeLike = 0

    def head(self, mode: int) -> torch.nn.Module:
        """The module of one mode."""
        return self.heads[mode]

    def _active(self) -> torch.nn.Module:
        """The head of the current mode; with per-row modes, head 0 answers for the settings all heads share."""
        return self.heads[0 if isinstance(self._mode, torch.Tensor) else self._mode]

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name.startswith("__") or "_modules" not in self.__dict__ or "heads" not in self._modules:
                raise
            return getattr(self._active(), name)


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

    def forward(self, targets: torch.Tensor, target_length: torch.Tensor, states: Any = None) -> tuple:
        if not isinstance(self._mode, torch.Tensor):
            return self._active()(targets=targets, target_length=target_length, states=states)
        if states is not None:
            raise ValueError("states cannot be given together with per-row modes")

        def run(mode: int, rows: torch.Tensor) -> torch.Tensor:
            return self.heads[mode](targets=targets[rows], target_length=target_length[rows])[0]

        return route_rows(self._mode, run), target_length, None


class DualRNNTJoint(_ModeHeads):
    """Two joint networks, one per mode.

    Config keys: ``head_target`` (a NeMo joint class, default ``nemo.collections.asr.modules.RNNTJoint``),
    ``head`` (that joint's other keys, e.g. ``log_softmax``), the keys the model sets (``num_classes``,
    ``vocabulary``, ``jointnet`` with ``encoder_hidden`` and ``pred_hidden``), and ``num_modes`` (default 2).
    """

    def __init__(
        self,
        jointnet: dict | DictConfig,
        num_classes: int,
        vocabulary: list | None = None,
        head: dict | DictConfig | None = None,
        head_target: str = "nemo.collections.asr.modules.RNNTJoint",
        num_modes: int = 2,
    ) -> None:
        jointnet = OmegaConf.to_container(jointnet, resolve=True) if isinstance(jointnet, DictConfig) else jointnet
        vocabulary = list(vocabulary) if vocabulary is not None else None
        super().__init__(
            head_target, head or {}, num_modes, jointnet=jointnet, num_classes=num_classes, vocabulary=vocabulary
        )

    def forward(self, encoder_outputs: torch.Tensor, decoder_outputs: torch.Tensor | None, **kwargs: Any) -> Any:
        if not isinstance(self._mode, torch.Tensor):
            return self._active()(encoder_outputs=encoder_outputs, decoder_outputs=decoder_outputs, **kwargs)
        if kwargs.get("transcripts") is not None:
            raise ValueError("the fused joint (fuse_loss_wer) is not supported with per-row modes")

        def run(mode: int, rows: torch.Tensor) -> torch.Tensor:
            return self.heads[mode](encoder_outputs=encoder_outputs[rows], decoder_outputs=decoder_outputs[rows])

        return route_rows(self._mode, run)
