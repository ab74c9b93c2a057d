"""LM training text from the corpus's source books, with every document a held-out utterance reads left out.

An ASR corpus's transcripts are a small text; the books its chapters come from are much larger. As LibriSpeech's LM
corpus is written from books, nemo_pc writes an LM text from the synth sources (:func:`nemo_pc.data.recipes.synth.
load_sources`): every paragraph split into sentences, one JSON line per sentence with ``text`` (written, as in the
book) and ``text_normalized`` (:func:`nemo_pc.parts.text.normalize`), so that ``nemo-pc build-lm`` reads it as it
reads a manifest.

Leakage is what matters: the sources also hold the chapters that dev and test read, and a sentence of such a chapter
helps the LM on its neighbours even when no utterance reads it. So two guards leave text out, and each left-out
sentence is counted by reason:

* documents: every source chapter (a Bible chapter; a group of about 1,500 words of whole Wikipedia articles or
  paragraphs of a text file, as :mod:`nemo_pc.data.recipes.books` groups them) that an utterance of an excluded
  manifest reads is left out whole. The manifests' ``chapter`` ids are readings of the corpus; its ``CHAPTERS.TXT``
  names the book and chapter each reading comes from (:func:`held_out_documents`). Books are matched by title, not
  by id, because ids depend on the order of the sources.
* sentences: a sentence is left out when it shares a run of ``window`` words (normalized) with any utterance of an
  excluded manifest, or, for an utterance shorter than ``window`` words, contains it whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from nemo_pc.data.recipes.books import Chapter, read_chapters_txt
from nemo_pc.parts.manifest import DropCounter, ManifestError, atomic_open, iter_manifest, require_text
from nemo_pc.parts.text import normalize

DEFAULT_WINDOW = 6
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
IN_DOCUMENT = "in a document a held-out utterance reads"

Document = tuple[str, str]
"""A source document: (book title, chapter title), white space collapsed."""


def split_sentences(paragraph: str) -> list[str]:
    """A paragraph's sentences: split after ``.``, ``?`` or ``!`` followed by white space; spaces collapsed."""
    return [" ".join(s.split()) for s in _SENTENCE_END.split(paragraph.strip()) if s.strip()]


def document_key(book_title: str, chapter_title: str) -> Document:
    """The key that ties a source chapter to a ``CHAPTERS.TXT`` line: both titles with white space collapsed."""
    return " ".join(book_title.split()), " ".join(chapter_title.split())


class HeldOut:
    """The word windows of held-out utterances (normalized text), to test LM sentences against."""

    def __init__(self, texts: Iterable[str], window: int = DEFAULT_WINDOW) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1 word, got {window}")
        self.window = window
        self.windows: set[tuple[str, ...]] = set()
        self.short: dict[int, set[tuple[str, ...]]] = {}
        for text in texts:
            words = tuple(normalize(text).split())
            if len(words) >= window:
                self.windows.update(words[i : i + window] for i in range(len(words) - window + 1))
            elif words:
                self.short.setdefault(len(words), set()).add(words)

    def overlaps(self, sentence: str) -> bool:
        """Whether the sentence shares a ``window``-word run with a held-out utterance or contains a short one."""
        words = tuple(normalize(sentence).split())
        for size, grams in [(self.window, self.windows), *self.short.items()]:
            if grams and any(words[i : i + size] in grams for i in range(len(words) - size + 1)):
                return True
        return False


def held_out_texts(manifests: Iterable[str | Path], field_name: str = "text_normalized") -> Iterator[str]:
    """The ``field_name`` of every line of the manifests (a bad line raises :class:`ManifestError`)."""
    for path in manifests:
        for line, entry in iter_manifest(path):
            yield require_text(entry, field_name, path, line)


def held_out_documents(manifests: Iterable[str | Path], corpus: str | Path) -> list[Document]:
    """The source documents that the utterances of the manifests read, each once, in the order first read.

    Args:
        manifests: manifests whose lines carry the corpus's ``chapter`` id (as ``nemo-pc librispeech-pc`` writes).
        corpus: the corpus folder; its ``CHAPTERS.TXT`` gives each chapter id's book and chapter title.

    Raises:
        FileNotFoundError: ``corpus`` has no ``CHAPTERS.TXT``.
        CorpusError: a bad ``CHAPTERS.TXT`` line (file and line named).
        ManifestError: a manifest line without an integer ``chapter``, or with one ``CHAPTERS.TXT`` does not list.
    """
    chapters_txt = Path(corpus) / "CHAPTERS.TXT"
    if not chapters_txt.is_file():
        raise FileNotFoundError(f"{chapters_txt}: no such file; it names the book chapter of each chapter id")
    chapters = read_chapters_txt(chapters_txt)
    documents: dict[Document, None] = {}
    for path in manifests:
        for line, entry in iter_manifest(path):
            chapter = _chapter_id(entry, path, line)
            info = chapters.get(chapter)
            if info is None:
                raise ManifestError(path, line, f"chapter {chapter} is not listed in {chapters_txt}")
            documents[document_key(info.project_title, info.chapter_title)] = None
    return list(documents)


def _chapter_id(entry: dict, path: str | Path, line: int) -> int:
    """A manifest line's ``chapter`` (an integer, or a string of digits as LibriSpeech-PC manifests write it)."""
    if "chapter" not in entry:
        raise ManifestError(path, line, f"missing field 'chapter' (fields: {', '.join(sorted(entry))})")
    chapter = entry["chapter"]
    if isinstance(chapter, bool) or not re.fullmatch(r"\d+", str(chapter)):
        raise ManifestError(path, line, f"field 'chapter' must be a chapter id, got {chapter!r}")
    return int(chapter)


@dataclass
class LMTextReport:
    """What :func:`write_lm_text` wrote and left out.

    Attributes:
        output: the LM text.
        sentences, words: what it holds (normalized words).
        documents_left_out: the held-out documents found in the sources and left out whole, as ``book, chapter``.
        documents_not_in_sources: held-out documents no source holds (a source not passed, or another version).
        dropped: left-out sentences by reason.
    """

    output: Path
    sentences: int = 0
    words: int = 0
    documents_left_out: list[str] = field(default_factory=list)
    documents_not_in_sources: list[str] = field(default_factory=list)
    dropped: DropCounter = field(default_factory=DropCounter)

    def as_dict(self) -> dict:
        return {
            "output": str(self.output),
            "sentences": self.sentences,
            "words": self.words,
            "held_out_documents": {
                "left_out": len(self.documents_left_out),
                "not_in_sources": len(self.documents_not_in_sources),
                "left_out_titles": self.documents_left_out,
                "not_in_sources_titles": self.documents_not_in_sources,
            },
            "dropped": self.dropped.as_dict(),
        }


def write_lm_text(
    sources: list[str],
    output: str | Path,
    exclude: Iterable[str | Path] = (),
    window: int = DEFAULT_WINDOW,
    progress: bool = True,
    corpus: str | Path | None = None,
) -> LMTextReport:
    """Writes (atomically) the sentences of the source books, as JSON lines with ``text`` and ``text_normalized``,
    without the documents that the utterances of the ``exclude`` manifests read and without any sentence that shares
    a ``window``-word run with one of those utterances.

    Args:
        sources: synth source specs (``kjv``, ``wiki:<wheel or json>``, ``text:<file>``).
        output: the JSON-lines file to write.
        exclude: manifests whose utterances must not reach the LM (dev, test and test_seen).
        window: the shared-run length, in words, that leaves a sentence out.
        progress: a progress bar over the books.
        corpus: the corpus folder the ``exclude`` manifests were prepared from (its ``CHAPTERS.TXT`` names the
            documents they read); ``None`` leaves out overlapping sentences only.
    """
    from tqdm import tqdm

    from nemo_pc.data.recipes.synth import load_sources

    exclude = list(exclude)
    held = HeldOut(held_out_texts(exclude), window)
    documents = held_out_documents(exclude, corpus) if corpus is not None else []
    held_documents = set(documents)
    books = load_sources(list(sources))
    report = LMTextReport(Path(output))
    found: set[Document] = set()
    with atomic_open(output) as handle:
        for book in tqdm(books, desc="LM text", unit="book", disable=None if progress else True):
            for chapter in book.chapters:
                key = document_key(book.title, chapter.title)
                if key in held_documents:
                    found.add(key)
                    for where, _ in _sentences(book.title, chapter):
                        report.dropped.add(IN_DOCUMENT, where)
                    continue
                _write_sentences(handle, book.title, chapter, held, report)
    report.documents_left_out = [", ".join(key) for key in documents if key in found]
    report.documents_not_in_sources = [", ".join(key) for key in documents if key not in found]
    return report


def _sentences(book_title: str, chapter: Chapter) -> Iterator[tuple[str, str]]:
    """``(where, sentence)`` for each sentence of a chapter; ``where`` names the book, chapter and paragraph."""
    for number, paragraph in enumerate(chapter.text.split("\n\n"), 1):
        for sentence in split_sentences(paragraph):
            yield f"{book_title}, {chapter.title}, paragraph {number}", sentence


def _write_sentences(handle: TextIO, book_title: str, chapter: Chapter, held: HeldOut, report: LMTextReport) -> None:
    """Writes the sentences of a chapter that have words and overlap no held-out utterance; counts the others."""
    import json

    for where, sentence in _sentences(book_title, chapter):
        normalized = normalize(sentence)
        if not normalized:
            report.dropped.add("no words", where)
        elif held.overlaps(sentence):
            report.dropped.add(f"shares {held.window} words with a held-out utterance", where)
        else:
            handle.write(json.dumps({"text": sentence, "text_normalized": normalized}) + "\n")
            report.sentences += 1
            report.words += len(normalized.split())
