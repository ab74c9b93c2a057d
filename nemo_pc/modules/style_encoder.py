"""Encoder-layer hooks for the punctuated CTC model: taps, style-dependent top layers and a style embedding.

NeMo's :class:`~nemo.collections.asr.modules.ConformerEncoder` runs its layers in one loop. Like NeMo's
``AccessMixin`` capture for InterCTC, these modules work through hooks on the encoder's layers instead of a copy of
that loop, and each hook lives only inside a ``with`` block around the call that needs it: outside one, the encoder
is NeMo's, unchanged (a plain ``model.encoder(...)``, an export or a streaming step sees no hidden addition).

* :class:`LayerTaps` records the input (and the keyword arguments: masks, positional embedding) of chosen layers
  while the encoder runs inside ``with taps:``, so that later code can read the state after ``k`` layers, or run
  layers again from it.
* :class:`StyleBranch` is a per-style copy of the top layers from a branch layer E_i (papers/001 §2.2).
* :class:`StyleEmbedding` adds a projected one-hot style vector to the input of chosen layers (papers/001 §2.4),
  inside ``with embedding.applied(layers):``.

Layer numbers in configs count from 1, as in the papers: "after layer k" is the input of the 0-based layer ``k``.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterable, Iterator, Sequence

import torch
from torch import nn


def run_layers(layers: Iterable[nn.Module], x: torch.Tensor, kwargs: dict) -> torch.Tensor:
    """Runs encoder layers in order on ``x`` with the keyword arguments the encoder gave the first of them."""
    for layer in layers:
        x = layer(x, **kwargs)
    return x


def to_decoder_input(x: torch.Tensor, out_proj: nn.Module | None) -> torch.Tensor:
    """Turns a layer state ``(B, T, D)`` into an encoder output ``(B, D', T)``, as the encoder's last step does."""
    if out_proj is not None:
        x = out_proj(x)
    return x.transpose(1, 2)


class LayerTaps:
    """Records what chosen encoder layers receive, inside ``with taps:``; the hooks exist only there.

    A tap entered before :meth:`StyleEmbedding.applied` records a layer's input before the style vector is added
    (hooks run in the order they were registered).

    Args:
        layers: the encoder's layers.
        indices: 0-based indices of the layers whose input to record.
    """

    def __init__(self, layers: Sequence[nn.Module], indices: Iterable[int]) -> None:
        self._layers = layers
        self.indices = sorted(set(indices))
        self.states: dict[int, tuple[torch.Tensor, dict]] = {}
        self._handles: list = []

    def _recorder(self, index: int):
        def hook(module, args, kwargs):
            x = args[0] if args else kwargs["x"]
            rest = {name: value for name, value in kwargs.items() if name != "x"}
            self.states[index] = (x, rest)

        return hook

    def __enter__(self) -> LayerTaps:
        if self._handles:
            raise RuntimeError("LayerTaps is already recording; it cannot be entered twice")
        self.states = {}
        self._handles = [
            self._layers[index].register_forward_pre_hook(self._recorder(index), with_kwargs=True)
            for index in self.indices
        ]
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def state(self, index: int) -> tuple[torch.Tensor, dict]:
        """The ``(x, kwargs)`` the 0-based layer ``index`` received in the last recorded forward."""
        if index not in self.states:
            raise RuntimeError(f"encoder layer {index} was not recorded; run the encoder inside `with taps:`")
        return self.states[index]


class StyleBranch(nn.Module):
    """A copy of the encoder's top layers, from the branch layer on, for one more style.

    Args:
        layers: the encoder's layers, copied before any hook is registered on them.
        branch_layer: E_i, the number of shared bottom layers (1 to the number of layers).
        out_proj: the encoder's output projection, if any; it is copied too.
    """

    def __init__(self, layers: Sequence[nn.Module], branch_layer: int, out_proj: nn.Module | None = None) -> None:
        super().__init__()
        if not 1 <= branch_layer <= len(layers):
            raise ValueError(f"style_layers.branch_layer must be in [1, {len(layers)}], got {branch_layer}")
        self.branch_layer = branch_layer
        self.layers = nn.ModuleList(copy.deepcopy(list(layers[branch_layer:])))
        self.out_proj = copy.deepcopy(out_proj)

    def copy_from(self, layers: Sequence[nn.Module], out_proj: nn.Module | None = None) -> None:
        """Sets the copied layers (and output projection) to the weights of the encoder's, e.g. after the encoder
        was initialized from a pretrained checkpoint."""
        for mine, theirs in zip(self.layers, layers[self.branch_layer :], strict=True):
            mine.load_state_dict(theirs.state_dict())
        if self.out_proj is not None and out_proj is not None:
            self.out_proj.load_state_dict(out_proj.state_dict())

    def forward(self, x: torch.Tensor, kwargs: dict) -> torch.Tensor:
        """Runs the copied layers from the state after the branch layer; returns ``(B, D, T)``."""
        return to_decoder_input(run_layers(self.layers, x, kwargs), self.out_proj)


class StyleEmbedding(nn.Module):
    """A one-hot style vector, projected to the model width and added to the input of chosen encoder layers.

    The encoder's own pass inside :meth:`applied` gets ``encoder_style``; another style is computed by :meth:`run`,
    which re-runs the conditioned layers with that style's vector. Outside :meth:`applied` the encoder is unchanged.

    Args:
        d_model: the encoder width.
        layers: 1-based numbers of the layers whose input gets the embedding.
        num_layers: how many layers the encoder has, to check ``layers``.
        num_styles: how many styles there are.
        encoder_style: the style of the encoder's own pass (the model's main output; also that of an export).
    """

    def __init__(
        self, d_model: int, layers: Sequence[int], num_layers: int, num_styles: int = 2, encoder_style: int = 0
    ) -> None:
        super().__init__()
        if not layers or any(not 1 <= int(k) <= num_layers for k in layers):
            raise ValueError(f"style_embedding.layers must be a non-empty list in [1, {num_layers}], got {layers}")
        if not 0 <= encoder_style < num_styles:
            raise ValueError(f"encoder_style must be in [0, {num_styles}), got {encoder_style}")
        self.layers = sorted({int(k) for k in layers})
        self.num_styles = num_styles
        self.encoder_style = encoder_style
        self.proj = nn.Linear(num_styles, d_model, bias=False)

    @property
    def first_layer(self) -> int:
        """0-based index of the first conditioned layer: where re-running for another style starts."""
        return self.layers[0] - 1

    def vector(self, like: torch.Tensor, style: int) -> torch.Tensor:
        """The projected one-hot vector of ``style``, as a ``(1, 1, d_model)`` tensor."""
        one_hot = torch.zeros(self.num_styles, dtype=like.dtype, device=like.device)
        one_hot[style] = 1.0
        return self.proj(one_hot).view(1, 1, -1)

    @contextlib.contextmanager
    def applied(self, encoder_layers: Sequence[nn.Module], style: int | None = None) -> Iterator[None]:
        """Adds ``style``'s vector (default: the encoder style) to the input of the conditioned layers while the
        block runs; the hooks are removed when it ends, also on an error. Enter any :class:`LayerTaps` first, so that
        a tap records a layer's input before the vector is added."""
        style = self.encoder_style if style is None else style
        if not 0 <= style < self.num_styles:
            raise ValueError(f"style must be in [0, {self.num_styles}), got {style}")

        def add(module, args, kwargs):
            if args:
                return (args[0] + self.vector(args[0], style), *args[1:]), kwargs
            kwargs = dict(kwargs)
            kwargs["x"] = kwargs["x"] + self.vector(kwargs["x"], style)
            return args, kwargs

        handles = [
            encoder_layers[number - 1].register_forward_pre_hook(add, with_kwargs=True) for number in self.layers
        ]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def run(self, encoder_layers: Sequence[nn.Module], x: torch.Tensor, kwargs: dict, style: int) -> torch.Tensor:
        """Runs the encoder's layers from :attr:`first_layer` on ``x`` (the input that layer received, as a
        :class:`LayerTaps` records it) with ``style``'s vector added where :meth:`applied` adds one.

        The layers' ``forward`` is called directly, so hooks (of an open :meth:`applied` or taps) do not run.
        """
        for index in range(self.first_layer, len(encoder_layers)):
            if index + 1 in self.layers:
                x = x + self.vector(x, style)
            x = encoder_layers[index].forward(x, **kwargs)
        return x
