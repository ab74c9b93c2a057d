"""Tokenizers: the cased, punctuated SentencePiece model of the ASR models, its extension, the rewriter's, and
Whisper's byte-level BPE with the P&C control tokens (:mod:`~nemo_pc.data.tokenizers.whisper_bpe`).

``WhisperPCTokenizer`` and its constants are exported lazily: importing this package does not import NeMo.
"""

from __future__ import annotations

from typing import Any

_WHISPER_BPE = ("ADDED_TOKENS", "MODE_TOKENS", "WHISPER_IDS", "WhisperPCTokenizer", "packaged_tokenizer_file")

__all__ = list(_WHISPER_BPE)


def __getattr__(name: str) -> Any:
    if name in _WHISPER_BPE:
        from nemo_pc.data.tokenizers import whisper_bpe

        return getattr(whisper_bpe, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
