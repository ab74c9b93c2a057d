"""Corpus recipes: synthetic speech, source books, LibriSpeech-PC manifests, LM text and lhotse shar."""
