"""The style embedding's explicit style: the encoder pass adds the encoder style, ``run`` re-runs with another."""

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
    embedding.attach(layers)
    return layers, embedding, taps


def _encode(layers, x):
    for layer in layers:
        x = layer(x, scale=0.5)
    return x


def test_run_with_the_encoder_style_repeats_the_encoder_pass():
    layers, embedding, taps = _encoder()
    x = torch.randn(2, 3, 8)
    with taps:
        encoded = _encode(layers, x)
    state, kwargs = taps.state(embedding.first_layer)
    assert kwargs == {"scale": 0.5}
    assert torch.allclose(embedding.run(layers, state, kwargs, style=1), encoded, atol=1e-6)
    other = embedding.run(layers, state, kwargs, style=0)
    assert not torch.allclose(other, encoded, atol=1e-3)
    with torch.no_grad():  # with both styles' vectors equal the styles agree: run adds nothing more than one vector
        embedding.proj.weight[:, 0] = embedding.proj.weight[:, 1]
        assert torch.allclose(embedding.run(layers, state, kwargs, style=0), _encode(layers, x), atol=1e-6)


def test_bad_layers_and_styles_are_refused():
    with pytest.raises(ValueError, match="style_embedding.layers"):
        StyleEmbedding(8, [5], 4)
    with pytest.raises(ValueError, match="encoder_style"):
        StyleEmbedding(8, [1], 4, encoder_style=2)
