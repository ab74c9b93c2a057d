"""The token ids of a text as an ASR model's tokenizer folder gives them, for an n-gram LM over those ids
(:func:`nemo_pc.parts.ngram_lm.build_token_lm`): SentencePiece, a Whisper subset (``model.tokenizer.type=whisper``),
or the tokens a head on the AED writes (:class:`HeadTokensEncoder`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

HEAD_TOKENS_FILE = "head_tokens.json"
"""The Whisper ids a head on the AED writes, ascending (:func:`write_head_tokens`)."""
HEAD_TOKENIZER_FILE = "tokenizer.json"


class _SubsetEncoder:
    """A Whisper subset tokenizer behind the two SentencePiece calls that the LM builder makes."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def encode(self, text: str, out_type=int) -> list[int]:
        return self.tokenizer.text_to_ids(text)

    def get_piece_size(self) -> int:
        return self.tokenizer.vocab_size


class HeadTokensEncoder:
    """The Whisper tokens that a head on the AED writes (``decoder_ctc``: output ``k`` is token ``kept[k]``), as the
    ids an n-gram LM over that head's outputs reads: a text is tokenized as the AED's targets are
    (:class:`~nemo_pc.data.tokenizers.whisper_bpe.WhisperPCTokenizer`), each token then numbered by its place in
    ``kept``.

    Raises:
        ValueError: ``kept_file`` is not an ascending JSON list of ids (named in the message).
    """

    def __init__(self, tokenizer_file: str | Path, kept_file: str | Path) -> None:
        from nemo_pc.data.tokenizers.whisper_bpe import WhisperPCTokenizer

        self.kept_file = Path(kept_file)
        try:
            kept = json.loads(self.kept_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(f"{kept_file}: not JSON ({error})") from error
        if not isinstance(kept, list) or not kept or not all(isinstance(k, int) and k >= 0 for k in kept):
            raise ValueError(f"{kept_file}: expected a non-empty JSON list of Whisper token ids")
        if kept != sorted(set(kept)):
            raise ValueError(f"{kept_file}: the ids must be ascending, each once")
        self.tokenizer = WhisperPCTokenizer(tokenizer_file)
        self.kept, self.index = kept, {token: k for k, token in enumerate(kept)}

    def encode(self, text: str, out_type=int) -> list[int]:
        """The places in ``kept`` of ``text``'s tokens.

        Raises:
            ValueError: a token the head does not write (the message names it and the file): add the text to the
                head's ``vocab_text`` before it trains.
        """
        ids = self.tokenizer.text_to_ids(text)
        for token in ids:
            if token not in self.index:
                piece = self.tokenizer.ids_to_tokens([token])[0]
                raise ValueError(f"{self.kept_file}: the head does not write token {token} ({piece!r}) of {text!r}")
        return [self.index[token] for token in ids]

    def get_piece_size(self) -> int:
        return len(self.kept)


def write_head_tokens(folder: str | Path, tokenizer_json: str, kept: Sequence[int]) -> Path:
    """``folder`` with ``kept`` (:data:`HEAD_TOKENS_FILE`) and Whisper's ``tokenizer.json`` (its text,
    ``tokenizer_json``), each written atomically: the tokenizer :func:`load_token_encoder` reads as a
    :class:`HeadTokensEncoder`."""
    from nemo_pc.parts.manifest import write_text_atomic

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / HEAD_TOKENIZER_FILE, tokenizer_json)
    write_text_atomic(folder / HEAD_TOKENS_FILE, json.dumps([int(k) for k in kept]) + "\n")
    return folder


def load_token_encoder(source: str | Path):
    """A head's tokens folder (:func:`write_head_tokens`), a Whisper subset folder (``kept.json`` beside Whisper's
    ``tokenizer.json``, :mod:`nemo_pc.data.tokenizers.whisper_subset`), else
    :func:`nemo_pc.parts.ngram_lm.load_sentencepiece` (a SentencePiece folder, ``.model`` or ``.nemo``). Each has
    ``encode(text, out_type=int)`` and ``get_piece_size()``.

    Raises:
        FileNotFoundError, ValueError: as ``load_sentencepiece``, or a subset folder that does not load.
    """
    path = Path(source)
    if path.is_dir() and (path / HEAD_TOKENS_FILE).is_file():
        return HeadTokensEncoder(path / HEAD_TOKENIZER_FILE, path / HEAD_TOKENS_FILE)
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
