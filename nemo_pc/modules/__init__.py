"""Neural modules (``nn.Module`` only) of the P&C models: mode-conditioned predictors, per-mode heads, style layers
and the export wrapper. Datasets live in :mod:`nemo_pc.data`, metrics in :mod:`nemo_pc.metrics`."""

from nemo_pc.modules.dual import DualRNNTDecoder, DualRNNTJoint, route_rows
from nemo_pc.modules.export import ModeDecoderJoint
from nemo_pc.modules.mode_conditioning import (
    ModeConditionedRNNTDecoder,
    ModeConditionedStatelessDecoder,
    ModeConditioningMixin,
)
from nemo_pc.modules.style_encoder import LayerTaps, StyleBranch, StyleEmbedding
from nemo_pc.modules.whisper_adapters import (
    RowOffsetAdapter,
    RowOffsetAdapterConfig,
    WhisperEncoderAdapter,
    WhisperTransformerDecoderNMAdapter,
)
from nemo_pc.modules.whisper_decoder import WhisperTransformerDecoderNM
from nemo_pc.modules.whisper_encoder import WhisperEncoder, WhisperLogMelPreprocessor

__all__ = [
    "LayerTaps",
    "StyleBranch",
    "StyleEmbedding",
    "DualRNNTDecoder",
    "DualRNNTJoint",
    "ModeConditionedRNNTDecoder",
    "ModeConditionedStatelessDecoder",
    "ModeConditioningMixin",
    "ModeDecoderJoint",
    "route_rows",
    "RowOffsetAdapter",
    "RowOffsetAdapterConfig",
    "WhisperEncoder",
    "WhisperEncoderAdapter",
    "WhisperLogMelPreprocessor",
    "WhisperTransformerDecoderNM",
    "WhisperTransformerDecoderNMAdapter",
]
