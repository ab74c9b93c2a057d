"""The token ids of a text as an ASR model's tokenizer folder gives them, for an n-gram LM over those ids
(:func:`nemo_pc.parts.ngram_lm.build_token_lm`): SentencePiece, or a Whisper subset
(``model.tokenizer.type=whisper``)."""

from __future__ import annotations

from pathlib import Path


class _SubsetEncoder:
    """A Whisper subset tokenizer behind the two SentencePiece calls that the LM builder makes."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def encode(self, text: str, out_type=int) -> list[int]:
        return self.tokenizer.text_to_ids(text)

    def get_piece_size(self) -> int:
        return self.tokenizer.vocab_size


def load_token_encoder(source: str | Path):
    """A Whisper subset folder (``kept.json`` beside Whisper's ``tokenizer.json``,
    :mod:`nemo_pc.data.tokenizers.whisper_subset`), else :func:`nemo_pc.parts.ngram_lm.load_sentencepiece` (a
    SentencePiece folder, ``.model`` or ``.nemo``). Either has ``encode(text, out_type=int)`` and ``get_piece_size()``.

    Raises:
        FileNotFoundError, ValueError: as ``load_sentencepiece``, or a subset folder that does not load.
    """
    path = Path(source)
    if path.is_dir() and (path / "kept.json").is_file():
        from nemo_pc.data.tokenizers.whisper_bpe import TOKENIZER_FILE
        from nemo_pc.data.tokenizers.whisper_subset import KEPT_FILE, WhisperSubsetTokenizer

        if not (path / TOKENIZER_FILE).is_file():
            raise ValueError(f"{path}: {KEPT_FILE} without Whisper's {TOKENIZER_FILE} in this folder")
        return _SubsetEncoder(WhisperSubsetTokenizer(path / TOKENIZER_FILE, path / KEPT_FILE))
    from nemo_pc.parts.ngram_lm import load_sentencepiece

    return load_sentencepiece(path)


def model_token_encoder(model, nemo_path: str | Path):
    """The token ids of a loaded ASR ``model`` (restored from ``nemo_path``) for the LM builder: its Whisper subset
    tokenizer behind the two SentencePiece calls, else the SentencePiece model inside ``nemo_path``."""
    from nemo_pc.data.tokenizers.whisper_subset import WhisperSubsetTokenizer

    if isinstance(getattr(model, "tokenizer", None), WhisperSubsetTokenizer):
        return _SubsetEncoder(model.tokenizer)
    from nemo_pc.parts.ngram_lm import load_sentencepiece

    return load_sentencepiece(nemo_path)
