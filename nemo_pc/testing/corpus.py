"""Tiny LibriSpeech-layout corpora for tests, from a paragraph of known punctuation.

:func:`make_book` gives a :class:`~nemo_pc.data.recipes.books.Book` for
:func:`nemo_pc.data.recipes.synth.synthesize_corpus`;
:func:`write_chapter` writes one chapter by hand (transcripts, ``CHAPTERS.TXT`` line, book file) so that a test can
put exactly the transcripts it wants next to a book, e.g. to trigger one drop rule;
:func:`write_text_sources` and :func:`write_readings` give text sources and manifests of utterances that read them,
with the ``CHAPTERS.TXT`` that ties the two, for the LM text (:mod:`nemo_pc.data.recipes.lm_text`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from nemo_pc.data.recipes.books import Book, Chapter, ChapterInfo, read_chapters_txt, write_book, write_chapters_txt
from nemo_pc.parts.manifest import write_manifest, write_text_atomic
from nemo_pc.parts.text import normalize

PARAGRAPH = (
    "In the beginning the old house stood alone upon the hill, and nobody in the village would go near it. "
    '"Why should we?" asked the miller\'s wife; the well-known answer was always the same: fear. '
    "But Julie was braver than the rest. She climbed the path at dawn, opened the gate, and walked "
    "into the garden, where roses grew wild among the stones. Was anyone living there? "
    "Nobody answered her, so she went on."
)
"""A paragraph without digits: quotes, a question inside quotes, a hyphenated word, ``;`` and ``:``."""


def make_book(book_id: int = 30001, chapters: int = 2, title: str = "The House on the Hill") -> Book:
    """A book whose every chapter is :data:`PARAGRAPH` with the chapter number spelled in its first sentence."""
    numbers = ("first", "second", "third", "fourth", "fifth", "sixth")
    return Book(
        book_id,
        title,
        [
            Chapter(
                f"Chapter {numbers[k].title()}", PARAGRAPH.replace("In the beginning", f"In the {numbers[k]} year")
            )
            for k in range(chapters)
        ],
    )


def write_chapter(
    root: str | Path,
    book_text: str,
    transcripts: list[str],
    split: str = "test",
    speaker: int = 7,
    chapter: int = 70,
    book_id: int = 900,
) -> list[str]:
    """Writes one chapter with the given normalized transcripts and its book; returns the utterance ids.

    ``CHAPTERS.TXT`` gains a line for the chapter (existing lines are kept).
    """
    root = Path(root)
    folder = root / split / str(speaker) / str(chapter)
    utt_ids = [f"{speaker}-{chapter}-{k:04d}" for k in range(len(transcripts))]
    lines = "".join(f"{utt} {text.upper()}\n" for utt, text in zip(utt_ids, transcripts, strict=True))
    write_text_atomic(folder / f"{speaker}-{chapter}.trans.txt", lines)
    write_book(root / "books", Book(book_id, f"Book {book_id}", [Chapter("Chapter One", book_text)]))
    chapters_txt = root / "CHAPTERS.TXT"
    known = read_chapters_txt(chapters_txt) if chapters_txt.is_file() else {}
    known[chapter] = ChapterInfo(chapter, speaker, 1.0, split, book_id, book_id, "Chapter One", f"Book {book_id}")
    write_chapters_txt(chapters_txt, known.values())
    return utt_ids


def write_text_sources(folder: str | Path, documents: Mapping[str, str]) -> list[str]:
    """Writes one text file per document (``<title>.txt``) and returns their ``text:<file>`` source specs.

    :func:`nemo_pc.data.recipes.books.text_books` makes each file a book titled ``<title>``; a text shorter than a
    chapter is one chapter, ``Chapter 1``.
    """
    specs = []
    for title, text in documents.items():
        specs.append(f"text:{write_text_atomic(Path(folder) / f'{title}.txt', text)}")
    return specs


def write_readings(
    corpus: str | Path, manifests: str | Path, readings: Mapping[str, Sequence[tuple[str, str]]]
) -> dict[str, Path]:
    """Writes manifests of utterances that read documents of :func:`write_text_sources`, and the corpus's
    ``CHAPTERS.TXT`` that names the document of each utterance's chapter id.

    Args:
        corpus: the corpus folder; its ``CHAPTERS.TXT`` is written with one chapter id per utterance.
        manifests: the folder of the ``<split>.json`` manifests.
        readings: split -> ``(document title, utterance text)`` pairs.

    Returns:
        split -> manifest.
    """
    chapters: list[ChapterInfo] = []
    paths = {}
    for split, utterances in readings.items():
        lines = []
        for title, text in utterances:
            chapter = 10000 + len(chapters)
            chapters.append(ChapterInfo(chapter, 100, 0.1, split, 30001, 30001, "Chapter 1", title))
            lines.append(
                {
                    "utt_id": f"100-{chapter}-0000",
                    "speaker": "100",
                    "chapter": str(chapter),
                    "split": split,
                    "text": text,
                    "text_normalized": normalize(text),
                }
            )
        paths[split] = write_manifest(Path(manifests) / f"{split}.json", lines)
    write_chapters_txt(Path(corpus) / "CHAPTERS.TXT", chapters)
    return paths
