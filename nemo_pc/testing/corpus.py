"""Tiny LibriSpeech-layout corpora for tests, from a paragraph of known punctuation.

:func:`make_book` gives a :class:`~nemo_pc.data.recipes.books.Book` for
:func:`nemo_pc.data.recipes.synth.synthesize_corpus`;
:func:`write_chapter` writes one chapter by hand (transcripts, ``CHAPTERS.TXT`` line, book file) so that a test can
put exactly the transcripts it wants next to a book, e.g. to trigger one drop rule.
"""

from __future__ import annotations

from pathlib import Path

from nemo_pc.data.recipes.books import Book, Chapter, ChapterInfo, read_chapters_txt, write_book, write_chapters_txt
from nemo_pc.parts.manifest import write_text_atomic

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
    return Book(book_id, title, [
        Chapter(f"Chapter {numbers[k].title()}", PARAGRAPH.replace("In the beginning", f"In the {numbers[k]} year"))
        for k in range(chapters)
    ])  # fmt: skip


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
