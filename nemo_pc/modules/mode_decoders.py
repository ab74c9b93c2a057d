"""The transformer decoder of each output mode of the P&C attention encoder-decoder (papers/001 §2.2-2.4).

Every variant answers one question, :meth:`ModeDecoders.decoder_for` ``(mode)``: which decoder writes that mode. NeMo's
greedy and beam search read a decoder through three names (``embedding``, ``decoder``, ``max_sequence_length``), so
the answer is a :class:`DecoderView` with those names.

* ``prompt`` (C, the default) and ``mixed`` (B): one decoder for both modes; the prompt picks the mode, or the
  mixed-style target carries both.
* ``style_layers`` (A): the top ``style_layers`` blocks of the decoder exist once per mode (each starts as a copy of
  the shared block it replaces), the embedding and the blocks below them are shared. A mode's view is the shared
  blocks followed by its own; its blocks are registered under ``branches.<mode>``, so no parameter is stored twice.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from nemo_pc.parts.modes import MODES, mode_name

VARIANTS = ("prompt", "style_layers", "mixed")


class _BlockStack(nn.Module):
    """NeMo's ``TransformerDecoder`` with another list of blocks: its forward, its final norm."""

    def __init__(self, decoder: nn.Module, layers: list[nn.Module]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.final_layer_norm = decoder.final_layer_norm
        self.diagonal, self.d_model = decoder.diagonal, decoder.d_model
        self._forward = type(decoder).forward
        self._helpers = decoder

    def _get_memory_states(self, *args, **kwargs):
        return type(self._helpers)._get_memory_states(self, *args, **kwargs)

    def forward(self, *args, **kwargs):
        return self._forward(self, *args, **kwargs)


class DecoderView:
    """What NeMo's AED search reads of a decoder (``embedding``, ``decoder``, ``max_sequence_length``), and a
    forward like ``TransformerDecoderNM``'s, for one mode."""

    def __init__(self, owner: nn.Module, blocks: nn.Module) -> None:
        self._owner, self.decoder = owner, blocks

    @property
    def embedding(self) -> nn.Module:
        return self._owner.embedding

    @property
    def max_sequence_length(self) -> int:
        return self._owner.max_sequence_length

    def __call__(self, input_ids, decoder_mask, encoder_embeddings, encoder_mask) -> torch.Tensor:
        embeddings = self.embedding(input_ids=input_ids)
        hidden = self.decoder(
            decoder_states=embeddings,
            decoder_mask=decoder_mask,
            encoder_states=encoder_embeddings,
            encoder_mask=encoder_mask,
        )
        return hidden[0] if isinstance(hidden, tuple) else hidden

    # NeMo's decoding freezes and unfreezes the decoder it is given around a search
    def freeze(self) -> None:
        self._owner.freeze()

    def unfreeze(self, partial: bool = False) -> None:
        self._owner.unfreeze(partial=partial)

    def eval(self):
        self._owner.eval()
        return self

    def train(self, mode: bool = True):
        self._owner.train(mode)
        return self


class ModeDecoders(nn.Module):
    """The per-mode decoder branches of variant (A); holds nothing for the other variants.

    Args:
        transformer: the model's ``TransformerDecoderNM`` (its blocks are ``transformer.decoder.layers``).
        variant: one of :data:`VARIANTS`.
        style_layers: (A) how many top blocks each mode has of its own (1 to the decoder's depth).

    Raises:
        ValueError: an unknown variant, or ``style_layers`` outside 1 to the decoder's depth.
    """

    def __init__(self, transformer: nn.Module, variant: str = "prompt", style_layers: int = 1) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"pc.variant must be one of {VARIANTS}, got {variant!r}")
        depth = len(transformer.decoder.layers)
        self.variant, self.style_layers = variant, int(style_layers)
        self.branches = nn.ModuleDict()
        if variant == "style_layers":
            if not 1 <= self.style_layers <= depth:
                raise ValueError(
                    f"pc.style_layers must be between 1 and the decoder's {depth} blocks, got {style_layers}"
                )
            shared_depth = depth - self.style_layers
            for mode in MODES:
                top = [copy.deepcopy(block) for block in transformer.decoder.layers[shared_depth:]]
                self.branches[mode] = nn.ModuleList(top)
        # the views reference registered modules; kept off the module tree so no parameter is listed twice
        object.__setattr__(self, "_transformer", transformer)
        object.__setattr__(self, "_views", {})

    def copy_shared_tops(self) -> None:
        """(A) Sets every mode's blocks to the shared top blocks they replace (after pretrained weights load)."""
        if not len(self.branches):
            return
        shared_depth = len(self._transformer.decoder.layers) - self.style_layers
        with torch.no_grad():
            for branch in self.branches.values():
                for block, source in zip(branch, self._transformer.decoder.layers[shared_depth:], strict=True):
                    block.load_state_dict(source.state_dict())

    def decoder_for(self, mode: int | str):
        """The decoder that writes ``mode``: the model's own transformer decoder, or (A) a :class:`DecoderView` over
        the shared blocks and the mode's branch."""
        name = mode_name(mode)
        if not len(self.branches):
            return self._transformer
        if name not in self._views:
            transformer = self._transformer
            shared = list(transformer.decoder.layers[: len(transformer.decoder.layers) - self.style_layers])
            blocks = _BlockStack(transformer.decoder, [*shared, *self.branches[name]])
            self._views[name] = DecoderView(transformer, blocks)
        return self._views[name]
