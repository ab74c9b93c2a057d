"""A batch of prefixes through NeMo's transformer decoder, one token at a time, each utterance at its own length.

NeMo's ``TransformerDecoderNM`` caches the states of a prefix (``decoder_mems``: the input of every block at every
position) so that a new token costs one decoder step, but its self-attention mask covers the new position only: the
prefixes of a batch must have one length. :class:`DecoderCache` keeps each utterance's cached states right-padded in
one buffer and masks the padding itself, so that the utterances that wrote a token in a greedy transducer step take
their decoder step together (:func:`nemo_pc.modules.aed_transducer.greedy_batch`). Every block's cross-attention
keys and values of the encoder states are projected once per batch, not at every step as NeMo's decoder does. Each
step's states equal those of the utterance's prefix alone through the decoder (tested against the whole prefix).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn

NEG_INF = -10000.0  # NeMo's additive attention mask (nemo.collections.common.parts.transformer_utils)


class DecoderCache:
    """The cached decoder states of a batch of utterances that share a prompt.

    Args:
        decoder: a ``TransformerDecoderNM`` (pre- or post-LN; its final layer norm, if any, applied to each output).
        prompt: the tokens every prefix starts with.
        states: the encoder's states ``(B, T, D)`` its cross-attention reads.
        mask: their mask ``(B, T)``.
    """

    def __init__(self, decoder: nn.Module, prompt: Sequence[int], states: torch.Tensor, mask: torch.Tensor) -> None:
        from nemo.core.classes.common import typecheck

        self.decoder, self.states, self.mask = decoder, states, mask.to(states.dtype)
        batch, device = states.shape[0], states.device
        ids = torch.tensor([list(prompt)] * batch, device=device)
        decoder.return_mems = True
        try:
            with typecheck.disable_checks():
                mems = decoder(
                    input_ids=ids,
                    decoder_mask=torch.ones_like(ids, dtype=states.dtype),
                    encoder_embeddings=states,
                    encoder_mask=self.mask,
                )
        finally:
            decoder.return_mems = False
        # mems (B, blocks + 1 [+ 1 with a final norm], L, H): the blocks' inputs are what later steps attend to
        self.blocks = len(decoder._decoder.layers)
        with torch.no_grad():  # each block's cross-attention keys and values of the states, (B, T, H) each
            self.cross = [
                (layer.second_sub_layer.key_net(states), layer.second_sub_layer.value_net(states))
                for layer in decoder._decoder.layers
            ]
        self.buffer = mems[:, : self.blocks].contiguous()
        self.output = mems[:, -1, -1]  # (B, H): the last state of the last prompt token
        self.lengths = torch.full((batch,), len(prompt), dtype=torch.long, device=device)

    def _reserve(self, length: int) -> None:
        capacity = self.buffer.shape[2]
        if length <= capacity:
            return
        grown = self.buffer.new_zeros(*self.buffer.shape[:2], max(length, 2 * capacity), self.buffer.shape[3])
        grown[:, :, :capacity] = self.buffer
        self.buffer = grown

    @torch.no_grad()
    def step(self, rows: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Appends ``tokens`` ``(R,)`` to the prefixes of ``rows`` ``(R,)`` and returns the decoder's output for each
        ``(R, H)`` (the last block's, after the final layer norm)."""
        from nemo.collections.common.parts.transformer_utils import form_attention_mask

        inner = self.decoder._decoder
        position = self.lengths[rows]
        width = int(position.max()) + 1
        self._reserve(width)
        x = self.decoder._embedding(input_ids=tokens[:, None], start_pos=position)  # (R, 1, H) at each position
        padding = torch.arange(width, device=x.device)[None, :] > position[:, None]
        self_mask = (padding.to(x.dtype) * NEG_INF)[:, None, None, :]  # (R, 1, 1, width)
        states, cross_mask = self.states[rows], form_attention_mask(self.mask[rows])
        for block, layer in enumerate(inner.layers):
            self.buffer[rows, block, position] = x[:, 0]
            keys, values = self.cross[block]
            with _projected(layer.second_sub_layer, keys[rows], values[rows]):
                x, _ = layer(x, self_mask, self.buffer[rows, block, :width], states, cross_mask)
        if inner.final_layer_norm is not None:
            x = inner.final_layer_norm(x)
        self.lengths[rows] += 1
        self.output[rows] = x[:, 0]
        return x[:, 0]


@contextmanager
def _projected(attention: nn.Module, keys: torch.Tensor, values: torch.Tensor) -> Iterator[None]:
    """Within the block, ``attention``'s key and value projections return ``keys`` and ``values`` (those of the
    states it is called with, projected before)."""
    attention.key_net.forward = lambda states: keys
    attention.value_net.forward = lambda states: values
    try:
        yield
    finally:
        del attention.key_net.forward, attention.value_net.forward  # the class's forward again
