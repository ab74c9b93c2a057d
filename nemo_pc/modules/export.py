"""One decoding step of every P&C RNN-T variant as a single exportable module that takes the mode as an input.

Inputs: ``encoder_outputs`` (B, D, 1), ``targets`` (B, 1) (the last emitted token, blank at the start),
``target_length`` (B,), ``mode`` (B,) (0 = normalized, 1 = punctuated) and the predictor states
``input_states_1..k``. Outputs: the joint's scores (B, 1, 1, V + 1), ``prednet_lengths`` and the new states.

Every predictor is called with the mode (:func:`~nemo_pc.modules.dual.per_mode`): a conditioned predictor reads it
through its mode embedding, a stock one shared by the modes does not need it. The 2-Decoder model runs both of its
predictor + joint pairs and selects each row's scores by its mode, so its states are the states of both predictors,
normalized head first; exported with ``modes=[m]`` it runs only the head of mode ``m`` (what a single-output
deployment of the 2-Decoder model needs). A model with one predictor serves every mode with it, whatever ``modes``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from nemo.core.classes import Exportable
from nemo.core.neural_types import (
    AcousticEncodedRepresentation,
    ElementType,
    LabelsType,
    LengthsType,
    LogprobsType,
    NeuralType,
)

from nemo_pc.modules.dual import DualRNNTDecoder, DualRNNTJoint, per_mode


class ModeDecoderJoint(torch.nn.Module, Exportable):
    """Predictor + joint step(s) with the mode as an input; see the module docstring."""

    def __init__(self, decoder: torch.nn.Module, joint: torch.nn.Module, modes: Sequence[int] | None = None) -> None:
        super().__init__()
        self.decoder = decoder
        self.joint = joint
        if isinstance(decoder, DualRNNTDecoder) != isinstance(joint, DualRNNTJoint):
            raise ValueError("a dual decoder needs a dual joint and the other way round")
        if isinstance(decoder, DualRNNTDecoder):
            self._pair_modes = list(range(decoder.num_modes)) if modes is None else [int(m) for m in modes]
            if not self._pair_modes or any(not 0 <= m < decoder.num_modes for m in self._pair_modes):
                raise ValueError(f"export modes must be a non-empty subset of 0..{decoder.num_modes - 1}, got {modes}")
            self._pairs = [(decoder.head(m), joint.head(m)) for m in self._pair_modes]
        else:
            self._pair_modes = [0]
            self._pairs = [(decoder, joint)]
        example = torch.zeros(1, 1)
        self._state_kinds = [self._state_kind(dec, example) for dec, _ in self._pairs]
        self._saved: list = []

    @staticmethod
    def _state_kind(decoder: torch.nn.Module, example: torch.Tensor) -> list[bool]:
        """One flag per state tensor: True for integer context states (stateless), False for LSTM states."""
        return [not state.is_floating_point() for state in decoder.initialize_state(example)]

    def _state_types(self, prefix: str) -> dict[str, NeuralType]:
        flags = [flag for kinds in self._state_kinds for flag in kinds]
        return {
            f"{prefix}_{index}": NeuralType(("B", "T"), LabelsType())
            if is_int
            else NeuralType(("D", "B", "D"), ElementType())
            for index, is_int in enumerate(flags, start=1)
        }

    @property
    def input_types(self) -> dict[str, NeuralType]:
        return {
            "encoder_outputs": NeuralType(("B", "D", "T"), AcousticEncodedRepresentation()),
            "targets": NeuralType(("B", "T"), LabelsType()),
            "target_length": NeuralType(("B",), LengthsType()),
            "mode": NeuralType(("B",), LabelsType()),
            **self._state_types("input_states"),
        }

    @property
    def output_types(self) -> dict[str, NeuralType]:
        return {
            "outputs": NeuralType(("B", "T", "T", "D"), LogprobsType()),
            "prednet_lengths": NeuralType(("B",), LengthsType()),
            **self._state_types("output_states"),
        }

    def initial_states(self, batch_size: int) -> list[torch.Tensor]:
        """The predictor states at the start of an utterance, in input order."""
        example = torch.zeros(batch_size, 1, device=next(self.parameters()).device)
        return [state for dec, _ in self._pairs for state in dec.initialize_state(example)]

    def input_example(self, max_batch: int = 2, max_dim: int = 1) -> tuple:
        param = next(self.parameters())
        hidden = self._pairs[0][1].encoder_hidden
        encoder_outputs = torch.randn(max_batch, hidden, 1, device=param.device)
        targets = torch.zeros(max_batch, 1, dtype=torch.long, device=param.device)
        target_length = torch.ones(max_batch, dtype=torch.long, device=param.device)
        mode = torch.arange(max_batch, device=param.device) % 2
        return (encoder_outputs, targets, target_length, mode, *self.initial_states(max_batch))

    def forward(self, encoder_outputs, targets, target_length, mode, *states):
        targets = targets.long()
        scores, new_states, offset = [], [], 0
        for (decoder, joint), kinds in zip(self._pairs, self._state_kinds, strict=True):
            own = list(states[offset : offset + len(kinds)])
            offset += len(kinds)
            g, state = per_mode(decoder).predict(
                targets, state=own, add_sos=False, batch_size=targets.shape[0], modes=mode
            )
            scores.append(joint(encoder_outputs=encoder_outputs, decoder_outputs=g.transpose(1, 2)))
            new_states += list(state)
        output = scores[0]
        for index in range(1, len(scores)):
            output = torch.where((mode == self._pair_modes[index]).view(-1, 1, 1, 1), scores[index], output)
        return (output, target_length, *new_states)

    def _prepare_for_export(self, **kwargs) -> None:
        if not self._saved:  # NeMo calls this twice; the first call sees the modules as they were before export
            self._saved = [
                (module, getattr(module, "_rnnt_export", None), getattr(module, "log_softmax", None))
                for module in self.modules()
                if module is not self
            ]
        super()._prepare_for_export(**kwargs)

    def _export_teardown(self) -> None:
        for module, rnnt_export, log_softmax in self._saved:
            if rnnt_export is not None:
                module._rnnt_export = rnnt_export
            if hasattr(module, "log_softmax") and not callable(module.log_softmax):
                module.log_softmax = log_softmax
        self._saved = []
