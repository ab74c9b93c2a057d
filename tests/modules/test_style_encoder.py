"""The style embedding's explicit style: the encoder pass inside ``applied`` adds the encoder style, ``run`` re-runs
with another, and no hook outlives the block that needs it."""

import pytest
import torch
from torch import nn

from nemo_pc.modules import LayerTaps, StyleEmbedding


class _Layer(nn.Module):
    """A stand-in encoder layer that takes keyword arguments, as NeMo's Conformer layers do."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)

    def forward(self, x, scale=1.0):
        return torch.tanh(self.linear(x)) * scale


def _encoder(width=8, depth=4):
    torch.manual_seed(0)
    layers = nn.ModuleList(_Layer(width) for _ in range(depth))
    embedding = StyleEmbedding(width, [2, 4], depth, encoder_style=1)
    taps = LayerTaps(layers, [embedding.first_layer])
    return layers, embedding, taps


def _encode(layers, x):
    for layer in layers:
        x = layer(x, scale=0.5)
    return x


def test_run_with_the_encoder_style_repeats_the_encoder_pass():
    layers, embedding, taps = _encoder()
    x = torch.randn(2, 3, 8)
    with taps, embedding.applied(layers):
        encoded = _encode(layers, x)
    state, kwargs = taps.state(embedding.first_layer)
    assert kwargs == {"scale": 0.5}
    assert torch.allclose(embedding.run(layers, state, kwargs, style=1), encoded, atol=1e-6)
    other = embedding.run(layers, state, kwargs, style=0)
    assert not torch.allclose(other, encoded, atol=1e-3)
    with torch.no_grad():  # with both styles' vectors equal the styles agree: run adds nothing more than one vector
        embedding.proj.weight[:, 0] = embedding.proj.weight[:, 1]
        with embedding.applied(layers):
            assert torch.allclose(embedding.run(layers, state, kwargs, style=0), _encode(layers, x), atol=1e-6)


def test_bad_layers_and_styles_are_refused():
    with pytest.raises(ValueError, match="style_embedding.layers"):
        StyleEmbedding(8, [5], 4)
    with pytest.raises(ValueError, match="encoder_style"):
        StyleEmbedding(8, [1], 4, encoder_style=2)


def _hooks(layers):
    return sum(len(layer._forward_pre_hooks) for layer in layers)


def test_outside_its_blocks_the_encoder_is_unchanged():
    layers, embedding, taps = _encoder()
    x = torch.randn(2, 3, 8)
    plain = _encode(layers, x)
    assert _hooks(layers) == 0
    with taps, embedding.applied(layers):
        conditioned = _encode(layers, x)
        assert _hooks(layers) == 1 + len(embedding.layers)
    assert _hooks(layers) == 0
    assert not torch.allclose(conditioned, plain, atol=1e-3)
    assert torch.equal(_encode(layers, x), plain)
    with embedding.applied(layers, style=0):  # an explicit style equals re-running from the first conditioned layer
        other = _encode(layers, x)
    state, kwargs = taps.state(embedding.first_layer)
    kwargs = {"scale": 0.5}
    assert torch.allclose(embedding.run(layers, state, kwargs, style=0), other, atol=1e-6)


def test_the_hooks_go_away_when_the_block_fails():
    layers, embedding, taps = _encoder()
    with pytest.raises(RuntimeError, match="boom"), taps, embedding.applied(layers):
        _encode(layers, torch.randn(1, 2, 8))
        raise RuntimeError("boom")
    assert _hooks(layers) == 0


def test_taps_cannot_be_entered_twice_and_refuse_an_unrecorded_layer():
    layers, _, taps = _encoder()
    with taps:
        with pytest.raises(RuntimeError, match="already recording"), taps:
            pass
    with pytest.raises(RuntimeError, match="was not recorded"):
        taps.state(3)
