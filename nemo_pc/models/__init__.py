"""Models of nemo_pc: the joint P&C RNN-T, the punctuated CTC and the P&C AED (ASR), the tagger and rewriter (text)."""

from nemo_pc.models.aed_pc import EncDecAEDPCModel
from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel
from nemo_pc.models.rewriter import SpanRewriterModel
from nemo_pc.models.rnnt_pc import EncDecRNNTPCBPEModel
from nemo_pc.models.tagger import PCTaggerModel

__all__ = ["EncDecAEDPCModel", "EncDecCTCPCBPEModel", "EncDecRNNTPCBPEModel", "PCTaggerModel", "SpanRewriterModel"]
