"""Token-level n-gram LMs over the ASR model's SentencePiece pieces, written as ARPA for NeMo's NGPU-LM.

papers/002 §5.3 fuses a KenLM n-gram over the ASR tokens of the punctuated, cased transcripts. KenLM's ``lmplz``
estimates an interpolated modified Kneser-Ney model (Chen & Goodman 1998), and that is what this module estimates:

* adjusted counts: the raw count for the highest order and for n-grams that start with ``<s>``, else the number of
  distinct words seen to the left (the continuation count);
* three discounts per order, ``D_k = k - (k + 1) Y t_{k+1} / t_k`` with ``Y = t_1 / (t_1 + 2 t_2)`` from the
  counts of adjusted counts ``t_k``; where the data are too few to estimate them, KenLM's
  ``--discount_fallback`` values (0.5, 1, 1.5);
* ``p(w | h) = (a(hw) - D(a(hw))) / a(h·) + γ(h) p(w | h')`` with ``γ(h) = Σ_k D_k N_k(h·) / a(h·)``; the
  unigrams are interpolated with the uniform distribution over the whole vocabulary (every piece and ``</s>``),
  so that a piece the text never shows still has a probability. KenLM reserves that mass for ``<unk>``; here the
  vocabulary is the tokenizer's and closed.

The ARPA file stores ``p(w | h)`` for every n-gram seen and ``γ(h)`` as the back-off weight of every context, which
is the exact back-off form of the interpolated model. Tokens are written as NeMo's ``train_kenlm.py`` writes them
and as ``NGramGPULanguageModel.from_arpa`` reads them: token id ``i`` is the character ``chr(i + token_offset)``
(``DEFAULT_TOKEN_OFFSET`` of ``nemo.collections.asr.parts.submodules.ngram_lm.constants``).

The counting is in memory, with NumPy: each n-gram is numbered by its prefix's number and its last token, so one
sort per order counts them all (about 10 s for the 5.8 million pieces of the demo's LM text on one core). It is
meant for the transcripts of an ASR corpus, not for web-scale text, where KenLM's ``lmplz`` is the tool (NGPU-LM
reads its ARPA files just as well). :mod:`nemo_pc.parts.ngram_lm_nemo` turns a model into NGPU-LM's ``.nemo``
without the ARPA text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

from nemo_pc.parts.manifest import DropCounter, ManifestError, atomic_open, iter_manifest, require_text
from nemo_pc.parts.text import DEFAULT_MARKS, normalize, parse_marks, preprocess_punctuated

BOS, EOS = "<s>", "</s>"
BOS_ID, EOS_ID = -1, -2  # internal ids of the sentence marks; token ids are >= 0
DEFAULT_ORDER = 6
MIN_ORDER = 2  # NGramGPULanguageModel.from_arpa builds its suffix tree from bigrams up
FALLBACK_DISCOUNTS = (0.5, 1.0, 1.5)  # KenLM lmplz --discount_fallback
LOG10_ZERO = -99.0  # ARPA's log10 probability of <s>, which is never predicted


class EmptyCorpusError(ValueError):
    """No sentence to estimate a model from."""


@dataclass
class NGramLevel:
    """The n-grams of one order, in the order an ARPA file lists them (by token id, ``</s>`` before ``<s>`` before
    the pieces).

    Attributes:
        prefix: per n-gram, the index of its first ``n - 1`` tokens in the level below (``-1`` for unigrams).
        suffix: per n-gram, the index of its last ``n - 1`` tokens in the level below (``-1`` for unigrams).
        last: per n-gram, its last token id (``EOS_ID``, ``BOS_ID`` or a piece).
        log10_prob: ``log10 p(w | h)`` (``LOG10_ZERO`` for the ``<s>`` unigram, which is never predicted).
        log10_backoff: ``log10 γ(h)`` of the n-grams that are contexts of a longer one, NaN for the others.
    """

    prefix: np.ndarray
    suffix: np.ndarray
    last: np.ndarray
    log10_prob: np.ndarray
    log10_backoff: np.ndarray

    def __len__(self) -> int:
        return len(self.last)


@dataclass
class NGramModel:
    """An estimated back-off model.

    Attributes:
        order: the highest order.
        vocab_size: token ids are ``0 .. vocab_size - 1``.
        levels: ``levels[n - 1]`` holds the n-grams; every piece of the vocabulary, ``<s>`` and ``</s>`` are unigrams
            (``levels[0]`` is indexed by ``token id + 2``: ``</s>``, ``<s>``, then the pieces).
        discounts: ``(D1, D2, D3+)`` of each order.
        fallback_orders: the orders whose discounts are KenLM's fallback values (too few counts to estimate).
    """

    order: int
    vocab_size: int
    levels: list[NGramLevel]
    discounts: list[tuple[float, float, float]]
    fallback_orders: list[int]

    def counts(self) -> list[int]:
        """The number of n-grams of each order (the ARPA header)."""
        return [len(level) for level in self.levels]

    def tokens(self, n: int) -> np.ndarray:
        """The token ids of every n-gram of order ``n``, one row each (``BOS_ID``/``EOS_ID`` for the sentence
        marks)."""
        rows = self.levels[0].last[:, None]
        for level in self.levels[1:n]:
            rows = np.concatenate([rows[level.prefix], level.last[:, None]], axis=1)
        return rows


def check_order(order: int) -> int:
    """Returns ``order`` or raises a ``ValueError`` naming it."""
    if isinstance(order, bool) or not isinstance(order, int) or order < MIN_ORDER:
        raise ValueError(f"order must be an integer >= {MIN_ORDER} (NeMo's NGPU-LM reads bigrams and up), got {order}")
    return order


def _token_stream(sentences: Iterable[Sequence[int]], vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Every sentence as ``<s> tokens </s>``, one after the other, as unigram indices (``token id + 2``), and at
    each position the number of positions left in its sentence (itself included).

    Raises:
        ValueError: a token id outside ``[0, vocab_size)``, or no sentence at all.
    """
    stream, lengths = [], []
    for sentence in sentences:
        stream.append(BOS_ID)
        stream.extend(sentence)
        stream.append(EOS_ID)
        lengths.append(len(sentence) + 2)
    if not lengths:
        raise EmptyCorpusError("no text to estimate an n-gram model from")
    ids = np.fromiter(stream, dtype=np.int64, count=len(stream))
    ends = np.cumsum(lengths)
    left = np.repeat(ends, lengths) - np.arange(len(ids))
    marks = (left == 1) | (left == np.repeat(lengths, lengths))  # the </s> and <s> positions
    bad = np.flatnonzero(~marks & ((ids < 0) | (ids >= vocab_size)))
    if len(bad):
        raise ValueError(f"token id {ids[bad[0]]} is outside the vocabulary [0, {vocab_size})")
    return ids + 2, left


def _count_levels(unigrams: np.ndarray, left: np.ndarray, order: int, size: int) -> list[dict]:
    """Raw counts of every n-gram (n = 1 .. order) of the stream: per order the sorted n-grams with their prefix,
    suffix and last token (as unigram indices) and counts. Each n-gram is its prefix's index times ``size`` plus its
    last token, so index order is the lexicographic order of the token ids."""
    levels = [
        {
            "prefix": np.full(size, -1),
            "suffix": np.full(size, -1),
            "last": np.arange(size),
            "count": np.bincount(unigrams, minlength=size),
        }
    ]
    ids = unigrams  # at each position, the index of the n-gram that starts there (valid where left >= n)
    for n in range(2, order + 1):
        starts = np.flatnonzero(left >= n)
        keys = ids[starts] * size + unigrams[starts + n - 1]
        grams, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
        following = np.full(len(ids), -1)
        following[starts] = inverse
        levels.append(
            {
                "prefix": grams // size,
                "suffix": ids[starts[first] + 1],  # the (n-1)-gram one position on
                "last": grams % size,
                "count": counts,
            }
        )
        ids = following
    return levels


def estimate_discounts(adjusted: np.ndarray) -> tuple[tuple[float, float, float], bool]:
    """``(D1, D2, D3+)`` of one order from its adjusted counts, and whether the fallback was used."""
    t = np.bincount(np.minimum(adjusted, 5), minlength=6)
    if any(t[k] == 0 for k in (1, 2, 3, 4)):
        return FALLBACK_DISCOUNTS, True
    t1, t2 = int(t[1]), int(t[2])
    y = t1 / (t1 + 2 * t2)
    discounts = tuple(k - (k + 1) * y * int(t[k + 1]) / int(t[k]) for k in (1, 2, 3))
    if not all(0.0 < d <= k for k, d in zip((1, 2, 3), discounts, strict=True)):
        return FALLBACK_DISCOUNTS, True
    return discounts, False


def estimate(sentences: Iterable[Sequence[int]], vocab_size: int, order: int = DEFAULT_ORDER) -> NGramModel:
    """Estimates an interpolated modified Kneser-Ney model over token ids (see the module docstring).

    Raises:
        ValueError: a bad order or vocabulary size, a token id outside the vocabulary, or no sentence.
    """
    check_order(order)
    if vocab_size < 1:
        raise ValueError(f"vocab_size must be at least 1, got {vocab_size}")
    size = vocab_size + 2  # </s>, <s> and the pieces
    bos = BOS_ID + 2
    unigrams, left = _token_stream(sentences, vocab_size)
    raw = _count_levels(unigrams, left, order, size)
    first = [np.arange(size)]  # per n-gram, its first token, to find those that start with <s>
    for level in raw[1:]:
        first.append(first[-1][level["prefix"]])
    probs, gammas, discounts, fallback_orders = [], [], [], []
    for n, level in enumerate(raw, start=1):
        if n == order:
            adjusted = level["count"]
        else:  # the number of distinct left neighbours; the raw count for n-grams that start with <s>
            adjusted = np.bincount(raw[n]["suffix"], minlength=len(level["count"]))
            opens = first[n - 1] == bos
            adjusted[opens] = level["count"][opens]
        counted = adjusted > 0
        if n == 1:
            counted[bos] = False  # <s> is never predicted
        level_discounts, fallback = estimate_discounts(adjusted[counted])
        discounts.append(level_discounts)
        if fallback:
            fallback_orders.append(n)
        table = np.array((0.0, *level_discounts))
        discount = table[np.minimum(adjusted, 3)]  # 0 for a count of 0
        context = np.zeros(len(adjusted), dtype=np.int64) if n == 1 else level["prefix"]
        width = 1 if n == 1 else len(raw[n - 2]["count"])
        total = np.bincount(context[counted], weights=adjusted[counted], minlength=width)
        removed = sum(
            d * np.bincount(context[counted & (np.minimum(adjusted, 3) == k)], minlength=width)
            for k, d in enumerate(level_discounts, start=1)
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            gamma = removed / total  # NaN where a context has no n-gram of this order
        lower = np.full(len(adjusted), 1.0 / (vocab_size + 1)) if n == 1 else probs[-1][level["suffix"]]
        with np.errstate(divide="ignore", invalid="ignore"):
            level_probs = (adjusted - discount) / total[context] + gamma[context] * lower
        if n == 1:
            level_probs[bos] = np.nan
        probs.append(level_probs)
        gammas.append(gamma)
    levels = []
    for n, level in enumerate(raw, start=1):
        log10_prob = np.log10(probs[n - 1])
        if n == 1:
            log10_prob[bos] = LOG10_ZERO
        with np.errstate(divide="ignore", invalid="ignore"):
            log10_backoff = np.log10(gammas[n]) if n < order else np.full(len(log10_prob), np.nan)
        levels.append(NGramLevel(level["prefix"], level["suffix"], level["last"] - 2, log10_prob, log10_backoff))
    return NGramModel(order, vocab_size, levels, discounts, fallback_orders)


def _symbol(token: int, token_offset: int) -> str:
    if token == BOS_ID:
        return BOS
    if token == EOS_ID:
        return EOS
    return chr(token + token_offset)


def nemo_token_offset() -> int:
    """NeMo's ``DEFAULT_TOKEN_OFFSET``, the offset its ARPA readers expect (imported here: it loads NeMo ASR)."""
    from nemo.collections.asr.parts.submodules.ngram_lm.constants import DEFAULT_TOKEN_OFFSET

    return DEFAULT_TOKEN_OFFSET


def check_token_offset(vocab_size: int, token_offset: int) -> None:
    """Every token's character must be a plain code point: not a control character, not a surrogate."""
    if token_offset < 32 or vocab_size + token_offset > 0xD800:
        raise ValueError(
            f"token_offset {token_offset} with {vocab_size} tokens maps tokens outside the plain code points "
            "(offset >= 32 and vocab_size + offset <= 0xD800 are needed)"
        )


def write_arpa(model: NGramModel, handle: TextIO, token_offset: int | None = None) -> None:
    """Writes ``model`` as an ARPA file, tab-separated, n-grams sorted by token id within each order.

    Args:
        model: the estimated model.
        handle: a text file opened with UTF-8.
        token_offset: token id ``i`` is written as ``chr(i + token_offset)``; default NeMo's ``DEFAULT_TOKEN_OFFSET``.
    """
    token_offset = nemo_token_offset() if token_offset is None else token_offset
    check_token_offset(model.vocab_size, token_offset)
    symbols = [_symbol(token, token_offset) for token in range(-2, model.vocab_size)]  # by unigram index
    handle.write("\\data\\\n")
    for n, count in enumerate(model.counts(), start=1):
        handle.write(f"ngram {n}={count}\n")
    words: list[str] = []
    for n, level in enumerate(model.levels, start=1):
        handle.write(f"\n\\{n}-grams:\n")
        last = (level.last + 2).tolist()
        if n == 1:
            words = [symbols[token] for token in last]
        else:
            words = [
                f"{words[prefix]} {symbols[token]}" for prefix, token in zip(level.prefix.tolist(), last, strict=True)
            ]
        for gram, log_prob, log_backoff in zip(
            words, level.log10_prob.tolist(), level.log10_backoff.tolist(), strict=True
        ):
            if log_backoff == log_backoff:  # not NaN: a context of a longer n-gram
                handle.write(f"{log_prob:.7f}\t{gram}\t{log_backoff:.7f}\n")
            else:
                handle.write(f"{log_prob:.7f}\t{gram}\n")
    handle.write("\n\\end\\\n")


# Building an LM from a manifest with the ASR model's tokenizer


def load_sentencepiece(source: str | Path):
    """The SentencePiece model of a tokenizer folder (``tokenizer.model``), a ``.model`` file or a ``.nemo`` (the
    tokenizer its ``model_config.yaml`` names); token ids are those of the NeMo ASR model's ``text_to_ids``.

    Raises:
        FileNotFoundError: no such path.
        ValueError: a folder without ``tokenizer.model``, or a ``.nemo`` without a readable tokenizer.
    """
    import sentencepiece

    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    if path.is_dir():
        model_file = path / "tokenizer.model"
        if not model_file.is_file():
            raise ValueError(f"{path}: no tokenizer.model in this folder")
        return sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    try:
        if path.suffix == ".nemo":
            return sentencepiece.SentencePieceProcessor(model_proto=_nemo_tokenizer_bytes(path))
        return sentencepiece.SentencePieceProcessor(model_file=str(path))
    except (RuntimeError, OSError) as err:
        raise ValueError(f"{path}: not a SentencePiece model ({str(err).strip()})") from None


def _nemo_tokenizer_bytes(path: Path) -> bytes:
    import tarfile

    from omegaconf import OmegaConf

    try:
        with tarfile.open(path, "r:*") as archive:
            members = {Path(member.name).name: member for member in archive.getmembers() if member.isfile()}
            config = members.get("model_config.yaml")
            named = None
            if config is not None:
                cfg = OmegaConf.create(archive.extractfile(config).read().decode("utf-8"))
                named = str(OmegaConf.select(cfg, "tokenizer.model", default="") or "").removeprefix("nemo:")
            candidates = [name for name in members if name.endswith("tokenizer.model")]
            name = Path(named).name if named else (candidates[0] if len(candidates) == 1 else None)
            if name not in members:
                raise ValueError(f"{path}: no SentencePiece tokenizer in this .nemo (found {sorted(candidates)})")
            return archive.extractfile(members[name]).read()
    except tarfile.TarError as err:
        detail = str(err).splitlines()[0].rstrip(":")  # the message of "r:*" lists every compression it tried
        raise ValueError(f"{path}: not a .nemo archive ({detail})") from None


def lm_text(value: str, field_name: str, marks: str = DEFAULT_MARKS) -> str:
    """The text an LM is trained on, as the ASR model's targets are made: ``text_normalized`` normalized, any
    other field reduced to the mark set with case kept (:func:`nemo_pc.parts.text.preprocess_punctuated`)."""
    return normalize(value) if field_name == "text_normalized" else preprocess_punctuated(value, marks)


def manifest_token_sentences(
    manifest: str | Path,
    tokenizer,
    field_name: str = "text",
    marks: str = DEFAULT_MARKS,
    skipped: DropCounter | None = None,
    on_bad: str = "error",
) -> Iterator[list[int]]:
    """The token ids of every usable utterance of a manifest.

    Lines are skipped, and counted in ``skipped`` by reason, when their text is empty after preprocessing or, for
    ``field_name="text"``, when ``pc_source`` is ``"none"`` (their ``text`` is normalized, not punctuated).

    Raises:
        ManifestError: with ``on_bad="error"``, a line that is not JSON or lacks the field (naming file and line);
            with ``on_bad="skip"`` such lines are counted in ``skipped`` instead.
    """
    if on_bad not in ("error", "skip"):
        raise ValueError(f"on_bad must be 'error' or 'skip', got {on_bad!r}")
    skipped = skipped if skipped is not None else DropCounter()

    def drop(err: ManifestError) -> None:
        if on_bad == "error":
            raise err
        skipped.add(err.kind, f"{manifest}:{err.line}")

    for line, entry in iter_manifest(manifest, on_error=drop):
        try:
            value = require_text(entry, field_name, manifest, line)
        except ManifestError as err:
            drop(err)
            continue
        if field_name == "text" and entry.get("pc_source") == "none":
            skipped.add("pc_source none (text is not punctuated)", f"{manifest}:{line}")
            continue
        text = lm_text(value, field_name, marks)
        if not text:
            skipped.add(f"empty {field_name}", f"{manifest}:{line}")
            continue
        yield tokenizer.encode(text, out_type=int)


@dataclass
class LMBuildReport:
    """What :func:`build_token_lm` wrote and read."""

    output: Path
    order: int
    vocab_size: int
    sentences: int
    tokens: int
    ngram_counts: list[int]
    discounts: list[tuple[float, float, float]]
    fallback_orders: list[int]
    skipped: DropCounter = field(default_factory=DropCounter)

    def as_dict(self) -> dict:
        return {
            "output": str(self.output),
            "order": self.order,
            "vocab_size": self.vocab_size,
            "sentences": self.sentences,
            "tokens": self.tokens,
            "ngram_counts": self.ngram_counts,
            "discounts": [list(d) for d in self.discounts],
            "fallback_orders": self.fallback_orders,
            "skipped": self.skipped.as_dict(),
        }


def build_token_lm(
    manifests: str | Path | Sequence[str | Path],
    tokenizer,
    output: str | Path,
    order: int = DEFAULT_ORDER,
    field_name: str = "text",
    marks: str = DEFAULT_MARKS,
    on_bad: str = "error",
    progress: bool = True,
) -> LMBuildReport:
    """Trains a token-level n-gram on the manifests' ``field_name`` (tokenized into the ASR model's pieces) and
    writes it atomically as an ARPA file that ``NGramGPULanguageModel.from_file`` loads.

    Args:
        manifests: one or more nemo_pc manifests.
        tokenizer: the ASR model's tokenizer folder, its ``tokenizer.model`` or the model's ``.nemo``
            (SentencePiece); or a loaded tokenizer with ``encode(text, out_type=int)`` and ``get_piece_size()``, e.g.
            a Whisper subset's (:func:`nemo_pc.data.tokenizers.token_encoder.load_token_encoder`).
        output: the ARPA file; a ``.nemo`` name writes NGPU-LM's own checkpoint instead
            (:func:`nemo_pc.parts.ngram_lm_nemo.write_nemo_lm`).
        order: the n-gram order (papers/002 §5.3 uses 7-gram KenLM models).
        field_name: the manifest field (``text``: cased and punctuated).
        marks: the mark set the punctuated text is reduced to (the ASR model's marks; checked by
            :func:`nemo_pc.parts.text.parse_marks`).
        on_bad: ``"error"`` stops at a bad line; ``"skip"`` counts it and goes on.
        progress: show a progress bar over the manifest lines (on a terminal).

    Raises:
        ManifestError, ValueError, FileNotFoundError: bad input; the message names the file and line or argument.
    """
    from tqdm import tqdm

    check_order(order)
    marks = parse_marks(marks)
    output = Path(output)
    if output.is_dir():
        raise ValueError(f"{output}: is a folder; give the ARPA file name")
    processor = load_sentencepiece(tokenizer) if isinstance(tokenizer, (str, Path)) else tokenizer
    vocab_size = processor.get_piece_size()
    paths = [Path(manifests)] if isinstance(manifests, (str, Path)) else [Path(m) for m in manifests]
    skipped = DropCounter()
    totals = {"sentences": 0, "tokens": 0}

    def sentences() -> Iterator[list[int]]:
        for path in paths:
            lines = sum(1 for _ in path.open("rb"))
            stream = manifest_token_sentences(path, processor, field_name, marks, skipped, on_bad)
            for ids in tqdm(
                stream, total=lines, desc=f"counting {path.name}", unit="utt", disable=None if progress else True
            ):
                totals["sentences"] += 1
                totals["tokens"] += len(ids)
                yield ids

    try:
        model = estimate(sentences(), vocab_size, order)
    except EmptyCorpusError:
        reasons = ", ".join(f"{n} {kind}" for kind, n in skipped.counts.items()) or "no lines"
        raise ValueError(f"{', '.join(map(str, paths))}: no usable {field_name!r} text ({reasons})") from None
    if output.suffix == ".nemo":
        from nemo_pc.parts.ngram_lm_nemo import write_nemo_lm

        write_nemo_lm(model, output)
    else:
        with atomic_open(output) as handle:
            write_arpa(model, handle)
    return LMBuildReport(
        output,
        order,
        vocab_size,
        totals["sentences"],
        totals["tokens"],
        model.counts(),
        model.discounts,
        model.fallback_orders,
        skipped,
    )
