"""Weight interpolation between a fine-tuned model and the pretrained weights it started from.

A fine-tune on a narrow domain (synthetic voices) moves the weights away from what the pretrained model knows (real
speech); the weights on the line between the two often keep most of both (Wortsman et al., "Robust fine-tuning of
zero-shot models", 2022). For the AED, the zero-shot end is the same model with Whisper's encoder and decoder
weights loaded again (the mode rows back to ``<|notimestamps|>``); the parts that have no pretrained origin (the
auxiliary CTC head, adapters) are the same at both ends, so they keep their fine-tuned values.

A CTC or RNN-T model that started from another model's encoder (the demo's systems start from the fine-tuned AED's)
has a second start: :func:`encoder_start_state` puts that model's encoder back under the fine-tuned heads.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


class InterpolationError(ValueError):
    """A model that has no pretrained weights to interpolate with, or a weight outside [0, 1]."""


def zero_shot_state(model) -> dict[str, torch.Tensor]:
    """The state dict of an AED (:class:`~nemo_pc.models.EncDecAEDPCModel`) with the pretrained weights it was built
    from loaded over its fine-tuned ones: Whisper's encoder (``encoder.pretrained``) and decoder
    (``pretrained_decoder``). The model itself keeps its fine-tuned weights.

    Raises:
        InterpolationError: the config names neither source.
        WhisperWeightsError: a source that cannot be read (the weights package missing, say).
    """
    encoder_source = model.cfg.encoder.get("pretrained")
    decoder_source = model.cfg.get("pretrained_decoder")
    if not (encoder_source or decoder_source):
        raise InterpolationError(
            f"{type(model).__name__}: neither encoder.pretrained nor pretrained_decoder is set; "
            "there are no pretrained weights to interpolate with"
        )
    fine_tuned = {key: value.clone() for key, value in model.state_dict().items()}
    try:
        if encoder_source:
            model.encoder.load_pretrained(encoder_source, int(model.cfg.encoder.n_heads))
        if decoder_source:
            model.load_pretrained_decoder(decoder_source)
        return {key: value.clone() for key, value in model.state_dict().items()}
    finally:
        model.load_state_dict(fine_tuned)


def encoder_start_state(model, start_state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The state dict of ``model`` with the encoder weights of ``start_state`` (another model's state dict, e.g. the
    AED whose encoder started a CTC model) in place of its own: every ``encoder.`` tensor that both hold with the same
    shape. The rest (the heads, a projection the start does not have) keeps its fine-tuned values.

    Raises:
        InterpolationError: no encoder tensor of ``start_state`` matches the model's in name and shape.
    """
    own = {key: value.clone() for key, value in model.state_dict().items()}
    shared = [
        key
        for key, value in start_state.items()
        if key.startswith("encoder.") and key in own and tuple(own[key].shape) == tuple(value.shape)
    ]
    if not shared:
        raise InterpolationError(
            f"{type(model).__name__}: the start holds no encoder weight of the model's names and shapes"
        )
    for key in shared:
        own[key] = start_state[key].detach().to(own[key].dtype).clone()
    return own


def interpolated_state(
    zero_shot: dict[str, torch.Tensor],
    fine_tuned: dict[str, torch.Tensor],
    weight: float,
    modules: Sequence[str] | None = None,
) -> dict[str, torch.Tensor]:
    """``(1 - weight) * zero_shot + weight * fine_tuned`` for every floating-point tensor (others: fine-tuned).

    Args:
        zero_shot, fine_tuned: the two ends' state dicts.
        weight: the fine-tuned end's weight.
        modules: only the tensors of these top-level modules move (e.g. ``["encoder"]``: the encoder between the two
            ends, the decoder as fine-tuned); ``None``: every tensor.

    Raises:
        InterpolationError: a weight outside [0, 1], state dicts with different keys, or a module that has no tensor.
    """
    if not 0.0 <= weight <= 1.0:
        raise InterpolationError(f"the interpolation weight must be in [0, 1], got {weight}")
    if zero_shot.keys() != fine_tuned.keys():
        raise InterpolationError(f"the state dicts differ in keys: {sorted(zero_shot.keys() ^ fine_tuned.keys())[:5]}")
    prefixes = None if modules is None else tuple(f"{name}." for name in modules)
    if prefixes is not None:
        missing = [
            name for name, prefix in zip(modules, prefixes, strict=True) if not any(map(_starts(prefix), fine_tuned))
        ]
        if missing or not prefixes:
            raise InterpolationError(f"no weights under module(s) {missing or list(modules)}")
    return {
        key: torch.lerp(zero_shot[key], value, weight)
        if value.is_floating_point() and (prefixes is None or key.startswith(prefixes))
        else value
        for key, value in fine_tuned.items()
    }


def _starts(prefix: str):
    return lambda key: key.startswith(prefix)
