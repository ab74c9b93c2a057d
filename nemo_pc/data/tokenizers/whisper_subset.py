"""Whisper's byte-level BPE over a kept subset of its tokens, as the tokenizer of a CTC model.

A CTC head writes one output row per token, so Whisper's 50k tokens are too many for a small head; the tokens that
the training transcripts use (a few thousand on the demo's corpus) are enough. The subset keeps those tokens and
every one-character token (the 256 bytes of byte-level BPE and a few more), renumbered ``0 .. V-1`` in the order of
their Whisper ids, so that any text still encodes: a token outside the subset is spelled by the longest kept tokens
that make up its characters. Since the ids are Whisper's, a head can start each row from a Whisper decoder's output
row of its token (:meth:`EncDecCTCPCBPEModel.init_token_rows <nemo_pc.models.ctc_pc.EncDecCTCPCBPEModel>`).

A subset is a folder (``model.tokenizer.dir`` with ``model.tokenizer.type=whisper``): Whisper's ``tokenizer.json``
and ``kept.json``, the kept Whisper ids in ascending order. :func:`build_whisper_subset` writes one from texts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from nemo.collections.common.tokenizers import TokenizerSpec

from nemo_pc.data.tokenizers.whisper_bpe import TOKENIZER_FILE, WhisperPCTokenizer, packaged_tokenizer_file
from nemo_pc.parts.manifest import write_text_atomic

KEPT_FILE = "kept.json"


class _Vocabulary:
    """What NeMo's CTC model and decoding read from ``tokenizer.tokenizer``: ``get_vocab()`` and ``vocab_size``."""

    def __init__(self, tokens: list[str]) -> None:
        self._vocab = {token: index for index, token in enumerate(tokens)}

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)


class WhisperSubsetTokenizer(TokenizerSpec):
    """Whisper's BPE over the tokens of ``kept_file`` (see the module's docstring).

    Args:
        tokenizer_file: Whisper's ``tokenizer.json``.
        kept_file: the kept Whisper ids, a JSON list in ascending order.

    Raises:
        ValueError: ``kept_file`` is not an ascending list of Whisper text-token ids (named in the message), or it
            lacks a one-character token (without them not every text encodes).
    """

    def __init__(self, tokenizer_file: str | Path, kept_file: str | Path) -> None:
        self.whisper = WhisperPCTokenizer(tokenizer_file)
        self.kept_file = Path(kept_file)
        try:
            kept = json.loads(self.kept_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(f"{kept_file}: not JSON ({error})") from error
        eos = self.whisper.eos_id
        if not isinstance(kept, list) or not all(isinstance(k, int) and 0 <= k < eos for k in kept):
            raise ValueError(f"{kept_file}: expected a JSON list of Whisper text-token ids (0..{eos - 1})")
        if kept != sorted(set(kept)):
            raise ValueError(f"{kept_file}: the ids must be ascending, each once")
        missing = set(single_character_ids(self.whisper)) - set(kept)
        if missing:
            raise ValueError(f"{kept_file}: {len(missing)} one-character tokens are not kept, e.g. id {min(missing)}")
        self.kept = kept
        self.index = {token: k for k, token in enumerate(kept)}
        self.tokens = self.whisper.ids_to_tokens(kept)
        self.tokenizer = _Vocabulary(self.tokens)
        self._by_text = {token: k for k, token in enumerate(self.tokens)}
        self._longest = max(len(token) for token in self.tokens)

    @property
    def vocab_size(self) -> int:
        return len(self.kept)

    @property
    def unk_id(self) -> None:
        """None: every text encodes."""
        return None

    @cached_property
    def vocab(self) -> list[str]:
        """The kept tokens (Whisper's byte-level strings, ``Ġ`` for a leading space), in id order."""
        return list(self.tokens)

    def text_to_ids(self, text: str) -> list[int]:
        """The ids of ``text`` as Whisper encodes it (words joined by single spaces, a space before the first), each
        token outside the subset spelled by kept tokens."""
        out: list[int] = []
        for token_id in self.whisper.text_to_ids(text):
            k = self.index.get(token_id)
            out += [k] if k is not None else self._spell(self.whisper.ids_to_tokens([token_id])[0])
        return out

    def _spell(self, token: str) -> list[int]:
        """A token's characters as the longest kept tokens, left to right (one-character tokens are all kept)."""
        out, start = [], 0
        while start < len(token):
            for end in range(min(len(token), start + self._longest), start, -1):
                k = self._by_text.get(token[start:end])
                if k is not None:
                    out.append(k)
                    start = end
                    break
            else:  # only a tokenizer.json whose characters are not its own tokens gets here
                raise ValueError(f"{token[start]!r} has no kept token ({self.kept_file})")
        return out

    def text_to_tokens(self, text: str) -> list[str]:
        return self.ids_to_tokens(self.text_to_ids(text))

    def ids_to_text(self, ids: Iterable[int] | Any) -> str:
        """The text of ``ids`` (a sequence, tensor or array), as Whisper decodes their tokens.

        Raises:
            ValueError: an id outside ``0 .. vocab_size - 1``.
        """
        return self.whisper.ids_to_text([self.kept[k] for k in self._as_ids(ids)])

    def ids_to_tokens(self, ids: Iterable[int] | Any) -> list[str]:
        return [self.tokens[k] for k in self._as_ids(ids)]

    def tokens_to_ids(self, tokens: str | Sequence[str]) -> list[int]:
        """The id of each kept token.

        Raises:
            ValueError: a token the subset does not keep.
        """
        out = []
        for token in [tokens] if isinstance(tokens, str) else tokens:
            if token not in self._by_text:
                raise ValueError(f"{token!r} is not a kept token ({self.kept_file})")
            out.append(self._by_text[token])
        return out

    def tokens_to_text(self, tokens: str | Sequence[str]) -> str:
        return self.ids_to_text(self.tokens_to_ids(tokens))

    def _as_ids(self, ids: Iterable[int] | Any) -> list[int]:
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        out = [int(k) for k in ([ids] if isinstance(ids, int) else ids)]
        bad = [k for k in out if not 0 <= k < len(self.kept)]
        if bad:
            raise ValueError(f"token ids {bad[:5]} are outside the vocabulary (0..{len(self.kept) - 1})")
        return out


def single_character_ids(whisper: WhisperPCTokenizer) -> list[int]:
    """The Whisper text-token ids whose token is one character (every byte of byte-level BPE has one)."""
    return [index for token, index in whisper.get_vocab().items() if len(token) == 1 and index < whisper.eos_id]


def build_whisper_subset(texts: Iterable[str], folder: str | Path, tokenizer_file: str | Path | None = None) -> Path:
    """Writes a subset folder: Whisper's ``tokenizer.json`` (``tokenizer_file``, default tiny.en's from its
    package) and ``kept.json``, the ids the texts use plus every one-character token. Returns the folder."""
    source = Path(tokenizer_file) if tokenizer_file else packaged_tokenizer_file()
    whisper = WhisperPCTokenizer(source)
    kept = set(single_character_ids(whisper))
    for text in texts:
        kept.update(k for k in whisper.text_to_ids(text) if k < whisper.eos_id)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / TOKENIZER_FILE, source.read_text(encoding="utf-8"))
    write_text_atomic(folder / KEPT_FILE, json.dumps(sorted(kept)) + "\n")
    return folder
