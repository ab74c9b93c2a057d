"""Losses of the P&C models."""

from nemo_pc.losses.mode_weighted import ModeWeightedRNNTLoss

__all__ = ["ModeWeightedRNNTLoss"]
