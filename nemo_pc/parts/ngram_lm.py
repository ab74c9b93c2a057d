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

The counting is pure Python: meant for the transcripts of an ASR corpus, not for web-scale text, where KenLM's
``lmplz`` is the tool (NGPU-LM reads its ARPA files just as well).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from nemo_pc.parts.manifest import DropCounter, ManifestError, atomic_open, iter_manifest, require_text
from nemo_pc.parts.text import DEFAULT_MARKS, normalize, parse_marks, preprocess_punctuated

BOS, EOS = "<s>", "</s>"
BOS_ID, EOS_ID = -1, -2  # internal ids of the sentence marks; token ids are >= 0
DEFAULT_ORDER = 6
MIN_ORDER = 2  # NGramGPULanguageModel.from_arpa builds its suffix tree from bigrams up
FALLBACK_DISCOUNTS = (0.5, 1.0, 1.5)  # KenLM lmplz --discount_fallback
LOG10_ZERO = -99.0  # ARPA's log10 probability of <s>, which is never predicted

NGram = tuple[int, ...]


class EmptyCorpusError(ValueError):
    """No sentence to estimate a model from."""


@dataclass
class NGramModel:
    """An estimated back-off model: per order, ``ngram -> (log10 p, log10 back-off or None)``.

    Attributes:
        order: the highest order.
        vocab_size: token ids are ``0 .. vocab_size - 1``.
        entries: ``entries[n - 1]`` holds the n-grams; ``BOS_ID``/``EOS_ID`` stand for ``<s>``/``</s>``.
        discounts: ``(D1, D2, D3+)`` of each order.
        fallback_orders: the orders whose discounts are KenLM's fallback values (too few counts to estimate).
    """

    order: int
    vocab_size: int
    entries: list[dict[NGram, tuple[float, float | None]]]
    discounts: list[tuple[float, float, float]]
    fallback_orders: list[int]

    def counts(self) -> list[int]:
        """The number of n-grams of each order (the ARPA header)."""
        return [len(level) for level in self.entries]


def check_order(order: int) -> int:
    """Returns ``order`` or raises a ``ValueError`` naming it."""
    if isinstance(order, bool) or not isinstance(order, int) or order < MIN_ORDER:
        raise ValueError(f"order must be an integer >= {MIN_ORDER} (NeMo's NGPU-LM reads bigrams and up), got {order}")
    return order


def count_ngrams(sentences: Iterable[Sequence[int]], order: int, vocab_size: int) -> list[Counter]:
    """Raw counts of every n-gram (n = 1 .. order) of ``<s> sentence </s>``.

    Raises:
        ValueError: a token id outside ``[0, vocab_size)``, or no sentence at all.
    """
    counts = [Counter() for _ in range(order)]
    sentences_seen = 0
    for sentence in sentences:
        bad = [token for token in sentence if not 0 <= token < vocab_size]
        if bad:
            raise ValueError(f"token id {bad[0]} is outside the vocabulary [0, {vocab_size})")
        tokens = (BOS_ID, *sentence, EOS_ID)
        for n in range(1, order + 1):
            level = counts[n - 1]
            for start in range(len(tokens) - n + 1):
                level[tokens[start : start + n]] += 1
        sentences_seen += 1
    if not sentences_seen:
        raise EmptyCorpusError("no text to estimate an n-gram model from")
    return counts


def adjusted_counts(raw: list[Counter]) -> list[Counter]:
    """Kneser-Ney's adjusted counts: raw at the highest order and for ``<s>``-initial n-grams, else the number of
    distinct left neighbours (every other n-gram has one, as only ``<s>`` opens a sentence)."""
    adjusted = [Counter() for _ in raw]
    adjusted[-1] = Counter(raw[-1])
    for n in range(len(raw) - 1):
        level = adjusted[n]
        for gram in raw[n + 1]:
            level[gram[1:]] += 1
        for gram, count in raw[n].items():
            if gram[0] == BOS_ID:
                level[gram] = count
    return adjusted


def estimate_discounts(adjusted: Counter) -> tuple[tuple[float, float, float], bool]:
    """``(D1, D2, D3+)`` of one order from its counts of adjusted counts, and whether the fallback was used."""
    t = Counter(count for gram, count in adjusted.items() if gram != (BOS_ID,) and count <= 4)
    if any(t[k] == 0 for k in (1, 2, 3, 4)):
        return FALLBACK_DISCOUNTS, True
    y = t[1] / (t[1] + 2 * t[2])
    discounts = tuple(k - (k + 1) * y * t[k + 1] / t[k] for k in (1, 2, 3))
    if not all(0.0 < d <= k for k, d in zip((1, 2, 3), discounts, strict=True)):
        return FALLBACK_DISCOUNTS, True
    return discounts, False


def _context_stats(adjusted: Counter, discounts: tuple[float, float, float]) -> dict[NGram, tuple[float, float]]:
    """``context -> (a(h·), γ(h))`` over the n-grams of one order."""
    totals: dict[NGram, list[float]] = {}
    for gram, count in adjusted.items():
        if gram == (BOS_ID,) or not count:
            continue
        stats = totals.setdefault(gram[:-1], [0.0, 0.0])
        stats[0] += count
        stats[1] += discounts[min(count, 3) - 1]
    return {context: (total, removed / total) for context, (total, removed) in totals.items()}


def estimate(sentences: Iterable[Sequence[int]], vocab_size: int, order: int = DEFAULT_ORDER) -> NGramModel:
    """Estimates an interpolated modified Kneser-Ney model over token ids (see the module docstring).

    Raises:
        ValueError: a bad order or vocabulary size, a token id outside the vocabulary, or no sentence.
    """
    check_order(order)
    if vocab_size < 1:
        raise ValueError(f"vocab_size must be at least 1, got {vocab_size}")
    adjusted = adjusted_counts(count_ngrams(sentences, order, vocab_size))
    uniform = 1.0 / (vocab_size + 1)  # every piece and </s>
    for token in range(vocab_size):  # pieces the text never shows: unigrams with a zero count
        adjusted[0].setdefault((token,), 0)
    probs: list[dict[NGram, float]] = []
    gammas: list[dict[NGram, float]] = []
    discounts, fallback_orders = [], []
    for n, level in enumerate(adjusted, start=1):
        level_discounts, fallback = estimate_discounts(level)
        discounts.append(level_discounts)
        if fallback:
            fallback_orders.append(n)
        stats = _context_stats(level, level_discounts)
        gammas.append({context: gamma for context, (_, gamma) in stats.items()})
        lower = probs[-1] if probs else None
        level_probs = {}
        for gram, count in level.items():
            if gram == (BOS_ID,):
                continue
            total, gamma = stats[gram[:-1]]
            kept = count - level_discounts[min(count, 3) - 1] if count else 0.0
            level_probs[gram] = kept / total + gamma * (lower[gram[1:]] if lower is not None else uniform)
        probs.append(level_probs)
    entries = _backoff_entries(probs, gammas, order)
    return NGramModel(order, vocab_size, entries, discounts, fallback_orders)


def _backoff_entries(
    probs: list[dict[NGram, float]], gammas: list[dict[NGram, float]], order: int
) -> list[dict[NGram, tuple[float, float | None]]]:
    """The ARPA tables: log10 p of every n-gram and log10 γ of those that are contexts of a longer one."""
    entries = []
    for n in range(order):
        contexts = gammas[n + 1] if n + 1 < order else {}
        level = {}
        for gram, prob in probs[n].items():
            gamma = contexts.get(gram)
            level[gram] = (math.log10(prob), math.log10(gamma) if gamma else None)
        if n == 0:
            gamma = contexts.get((BOS_ID,))
            level[(BOS_ID,)] = (LOG10_ZERO, math.log10(gamma) if gamma else None)
        entries.append(level)
    return entries


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
    handle.write("\\data\\\n")
    for n, count in enumerate(model.counts(), start=1):
        handle.write(f"ngram {n}={count}\n")
    for n, level in enumerate(model.entries, start=1):
        handle.write(f"\n\\{n}-grams:\n")
        for gram in sorted(level):
            log_prob, log_backoff = level[gram]
            words = " ".join(_symbol(token, token_offset) for token in gram)
            line = f"{log_prob:.7f}\t{words}"
            if log_backoff is not None:
                line += f"\t{log_backoff:.7f}"
            handle.write(line + "\n")
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


def write_nemo_lm(model: NGramModel, output: Path, vocab_size: int) -> Path:
    """Writes the model as an ``NGramGPULanguageModel`` ``.nemo`` checkpoint (atomically): NeMo's decoding loads it
    in a fraction of a second, where it parses an ARPA file of millions of n-grams in about half a minute on one
    core.
    ``NGramGPULanguageModel.from_file`` reads either from the same decoding key (``ngram_lm_model``)."""
    import os
    import tempfile

    from nemo.collections.asr.parts.submodules.ngram_lm import NGramGPULanguageModel

    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=output.parent, prefix=f".{output.name}.") as tmp:
        arpa = Path(tmp) / "lm.arpa"
        with arpa.open("w", encoding="utf-8") as handle:
            write_arpa(model, handle)
        staged = Path(tmp) / "lm.nemo"
        NGramGPULanguageModel.from_arpa(arpa, vocab_size=vocab_size).save_to(str(staged))
        os.replace(staged, output)
    return output


def build_token_lm(
    manifests: str | Path | Sequence[str | Path],
    tokenizer: str | Path,
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
        tokenizer: the ASR model's tokenizer folder, its ``tokenizer.model`` or the model's ``.nemo``.
        output: the ARPA file; a ``.nemo`` name writes NGPU-LM's own checkpoint instead (:func:`write_nemo_lm`).
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
    processor = load_sentencepiece(tokenizer)
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
        write_nemo_lm(model, output, vocab_size)
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
