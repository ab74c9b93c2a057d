"""LM training text from the corpus's source books, with the held-out utterances' text left out.

An ASR corpus's transcripts are a small text; the books its chapters come from are much larger. As LibriSpeech's LM
corpus is written from books, nemo_pc writes an LM text from the synth sources (:func:`nemo_pc.data.recipes.synth.
load_sources`): every paragraph split into sentences, one JSON line per sentence with ``text`` (written, as in the
book) and ``text_normalized`` (:func:`nemo_pc.parts.text.normalize`), so that ``nemo-pc build-lm`` reads it as it
reads a manifest.

Leakage is what matters: the sources also hold the dev and test chapters. A sentence is left out when it shares a
run of ``window`` words (normalized) with any utterance of an excluded manifest, or, for an utterance shorter than
``window`` words, contains it whole. Left-out sentences are counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nemo_pc.parts.manifest import DropCounter, atomic_open, iter_manifest, require_text
from nemo_pc.parts.text import normalize

DEFAULT_WINDOW = 6
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")


def split_sentences(paragraph: str) -> list[str]:
    """A paragraph's sentences: split after ``.``, ``?`` or ``!`` followed by white space; spaces collapsed."""
    return [" ".join(s.split()) for s in _SENTENCE_END.split(paragraph.strip()) if s.strip()]


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


@dataclass
class LMTextReport:
    output: Path
    sentences: int = 0
    words: int = 0
    dropped: DropCounter = field(default_factory=DropCounter)

    def as_dict(self) -> dict:
        return {"output": str(self.output), "sentences": self.sentences, "words": self.words,
                "dropped": self.dropped.as_dict()}  # fmt: skip


def write_lm_text(
    sources: list[str],
    output: str | Path,
    exclude: Iterable[str | Path] = (),
    window: int = DEFAULT_WINDOW,
    progress: bool = True,
) -> LMTextReport:
    """Writes (atomically) the sentences of the source books that share no ``window``-word run with the utterances
    of the ``exclude`` manifests, as JSON lines with ``text`` and ``text_normalized``.

    Args:
        sources: synth source specs (``kjv``, ``wiki:<wheel or json>``, ``text:<file>``).
        output: the JSON-lines file to write.
        exclude: manifests whose utterances must not reach the LM (the dev and test splits).
        window: the shared-run length, in words, that leaves a sentence out.
        progress: a progress bar over the books.
    """
    import json

    from tqdm import tqdm

    from nemo_pc.data.recipes.synth import load_sources

    held = HeldOut(held_out_texts(exclude), window)
    books = load_sources(list(sources))
    report = LMTextReport(Path(output))
    with atomic_open(output) as handle:
        for book in tqdm(books, desc="LM text", unit="book", disable=None if progress else True):
            for chapter in book.chapters:
                for number, paragraph in enumerate(chapter.text.split("\n\n"), 1):
                    for sentence in split_sentences(paragraph):
                        normalized = normalize(sentence)
                        if not normalized:
                            report.dropped.add("no words", f"{book.title}, {chapter.title}, paragraph {number}")
                            continue
                        if held.overlaps(sentence):
                            report.dropped.add(f"shares {window} words with a held-out utterance",
                                               f"{book.title}, {chapter.title}, paragraph {number}")  # fmt: skip
                            continue
                        handle.write(json.dumps({"text": sentence, "text_normalized": normalized}) + "\n")
                        report.sentences += 1
                        report.words += len(normalized.split())
    return report
