"""Models of nemo_pc."""

from nemo_pc.models.rnnt_pc import EncDecRNNTPCBPEModel

__all__ = ["EncDecRNNTPCBPEModel"]
