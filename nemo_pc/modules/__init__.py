"""Neural modules of the P&C models: mode-conditioned predictors, per-mode heads and the export wrapper."""

from nemo_pc.modules.dual import DualRNNTDecoder, DualRNNTJoint, route_rows
from nemo_pc.modules.export import ModeDecoderJoint
from nemo_pc.modules.mode_conditioning import (
    ModeConditionedRNNTDecoder,
    ModeConditionedStatelessDecoder,
    ModeConditioningMixin,
)

__all__ = [
    "DualRNNTDecoder",
    "DualRNNTJoint",
    "ModeConditionedRNNTDecoder",
    "ModeConditionedStatelessDecoder",
    "ModeConditioningMixin",
    "ModeDecoderJoint",
    "route_rows",
]
