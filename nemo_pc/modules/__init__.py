"""Neural modules of the P&C models: mode-conditioned predictors, per-mode heads and the export wrapper."""

from nemo_pc.modules.dual import DualRNNTDecoder, DualRNNTJoint, route_rows
from nemo_pc.modules.export import ModeDecoderJoint
from nemo_pc.modules.mode_conditioning import (
    ModeConditionedRNNTDecoder,
    ModeConditionedStatelessDecoder,
    ModeConditioningMixin,
)
from nemo_pc.modules.style_encoder import LayerTaps, StyleBranch, StyleEmbedding
from nemo_pc.modules.style_targets import MixedStyleDataset, build_style_tokenizer

__all__ = [
    "LayerTaps",
    "MixedStyleDataset",
    "StyleBranch",
    "StyleEmbedding",
    "build_style_tokenizer",
    "DualRNNTDecoder",
    "DualRNNTJoint",
    "ModeConditionedRNNTDecoder",
    "ModeConditionedStatelessDecoder",
    "ModeConditioningMixin",
    "ModeDecoderJoint",
    "route_rows",
]
