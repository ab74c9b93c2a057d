"""Mixins of the P&C model classes (as NeMo keeps ``asr/parts/mixins``): transcription, data setup."""
