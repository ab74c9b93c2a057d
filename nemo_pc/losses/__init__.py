"""Losses of the P&C models."""

from nemo_pc.losses.mode_weighted import ModeWeightedRNNTLoss
from nemo_pc.losses.rnnt_scan import rnnt_loss_scan
from nemo_pc.losses.tdt_scan import tdt_loss_scan

__all__ = ["ModeWeightedRNNTLoss", "rnnt_loss_scan", "tdt_loss_scan"]
