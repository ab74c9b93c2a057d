"""Tokenizers: the cased, punctuated SentencePiece model of the ASR models, its extension, the rewriter's."""
