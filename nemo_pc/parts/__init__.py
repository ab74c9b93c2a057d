"""Shared building blocks: the text rules live in :mod:`nemo_pc.parts.text`."""
