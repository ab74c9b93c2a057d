"""The CTC heads of :class:`~nemo_pc.models.ctc_pc.EncDecCTCPCBPEModel`: what each one reads, learns and writes.

A P&C CTC model has a main head on the encoder output and, by config, an intermediate normalized head
(papers/004) and a normalized style head (papers/001's style layers or style embedding). :func:`ctc_heads`
describes them once from the ``pc`` section; the model keys each head's output and loss by its
:class:`CTCHead`, takes its targets and decoding from its mode, and reads each mode's text from one head
(:meth:`CTCHead.mode_text`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from omegaconf import DictConfig

from nemo_pc.parts.modes import NORMALIZED, NORMALIZED_ID, PUNCTUATED_ID
from nemo_pc.parts.styles import parse_mixed
from nemo_pc.parts.text import normalize


@dataclass(frozen=True)
class CTCHead:
    """One CTC head.

    Attributes:
        name: the head's word in the logs (``train_{name}_loss``, ``val_loss_{name}``): ``main``, ``inter`` or
            ``normalized``.
        mode: the mode of its targets and of its decoding (:mod:`nemo_pc.parts.modes`). A mixed main head has
            the punctuated mode: its targets are the punctuated ones, composed into mixed transcripts.
        layer: the 0-based encoder layer whose input the head reads (the state after ``layer`` layers); ``None``
            for the encoder's output.
        weight: the ``pc`` key of the weight of its loss.
        mixed_format: ``m0``, ``m1`` or ``m2`` for a head whose transcript holds both modes
            (:mod:`nemo_pc.parts.styles`); ``None`` for a head that writes its mode only.
    """

    name: str
    mode: int
    layer: int | None = None
    weight: str = "ctc_weight"
    mixed_format: str | None = None

    def mode_text(self, text: str, mode: int) -> str:
        """The text of ``mode`` in this head's transcript: that mode's half of a mixed transcript, the text rules
        applied to a transcript of another mode, or the transcript itself."""
        if self.mixed_format is not None:
            normalized, punctuated = parse_mixed(text, self.mixed_format)
            return normalized if mode == NORMALIZED_ID else punctuated
        if mode != self.mode:
            return normalize(text)
        return text


@dataclass(frozen=True)
class CTCHeads:
    """The heads of one model; iterating gives those it has, in training order (main, inter, normalized)."""

    main: CTCHead
    inter: CTCHead | None = None
    normalized: CTCHead | None = None

    def __iter__(self) -> Iterator[CTCHead]:
        return iter(head for head in (self.main, self.inter, self.normalized) if head is not None)


def ctc_heads(pc: DictConfig, num_layers: int) -> CTCHeads:
    """The heads a checked ``pc`` section configures for an encoder of ``num_layers`` layers: the main head, an
    intermediate head when ``inter.weight`` > 0, and a normalized head with ``style_layers.branch_layer`` (it reads
    the branch layer) or ``style_embedding.layers`` (it reads the first conditioned layer).

    Raises:
        ValueError: ``pc.inter.layer`` outside ``[1, num_layers - 1]``, or both style layers and a style embedding.
    """
    mixed_format = pc.mixed_format if pc.target == "mixed" else None
    main = CTCHead("main", NORMALIZED_ID if pc.target == NORMALIZED else PUNCTUATED_ID, mixed_format=mixed_format)
    inter = normalized = None
    if pc.inter.weight > 0:
        layer = int(pc.inter.layer or num_layers // 2)
        if not 1 <= layer < num_layers:
            raise ValueError(f"pc.inter.layer must be in [1, {num_layers - 1}], got {layer}")
        inter = CTCHead("inter", NORMALIZED_ID, layer, "inter.weight")
    branch, conditioned = pc.style_layers.branch_layer, pc.style_embedding.layers
    if branch is not None and conditioned:
        raise ValueError("pc.style_layers and pc.style_embedding are alternatives; configure one of them")
    if branch is not None:
        layer = None if int(branch) == num_layers else int(branch)
        normalized = CTCHead("normalized", NORMALIZED_ID, layer, "style_layers.weight")
    elif conditioned:
        first = min(int(k) for k in conditioned) - 1
        normalized = CTCHead("normalized", NORMALIZED_ID, first, "style_embedding.weight")
    return CTCHeads(main, inter, normalized)
