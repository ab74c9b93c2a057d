"""ASR-like tagger examples: utterance-like fragments of a document with recognition errors, labels carried over.

A text formatter in a cascade reads an ASR system's normalized output: short segments that start and end anywhere
in a sentence, with misrecognized, missing and extra words. Training examples cut at sentence ends from clean text
teach the tagger neither. This module makes such examples from clean labelled text:

* :func:`estimate_confusions` measures an ASR system's errors by aligning its transcripts (of a split it is not
  scored on) to their references: word substitution, deletion and insertion rates per reference word, character
  edit rates inside substituted words, the inserted words and the utterance lengths (:class:`ConfusionStats`,
  saved as a small JSON);
* :func:`fragment_windows` cuts a document's words into windows of utterance-like lengths at any word position, so a
  fragment's last word keeps the label it has in the full text (no forced sentence end);
* :func:`corrupt` draws errors at the measured rates and carries the labels through them: a substituted word keeps
  its reference word's labels, a deleted word's mark moves to the previous kept word, an inserted word gets ``O`` /
  ``LOWER`` / ``O``;
* :func:`asr_like_examples` does both for one document; :func:`fragment_stats` gives statistics with utterance
  lengths only (fragments without word errors).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nemo_pc.formatter.labels import LabeledText
from nemo_pc.metrics.align import align_pairs
from nemo_pc.parts.manifest import iter_manifest, require_text, write_text_atomic
from nemo_pc.parts.text import normalize


@dataclass
class ConfusionStats:
    """An ASR system's measured errors, per reference word (words) and per reference character (characters).

    Attributes:
        substitution, deletion, insertion: word error rates per reference word.
        char_substitution, char_deletion, char_insertion: character edit rates per reference character of the
            substituted words.
        letters: the characters the ASR wrote in substituted and inserted characters, with their counts.
        inserted_words: the words the ASR inserted, with their counts.
        utterance_words: reference utterance lengths in words, with their counts (keys are strings, as in JSON).
        source: what was measured (e.g. the transcripts' manifest).
    """

    substitution: float
    deletion: float
    insertion: float
    char_substitution: float
    char_deletion: float
    char_insertion: float
    letters: dict[str, int] = field(default_factory=dict)
    inserted_words: dict[str, int] = field(default_factory=dict)
    utterance_words: dict[str, int] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        if self.substitution + self.deletion > 1.0:
            raise ValueError(f"substitution + deletion rates exceed 1: {self.substitution} + {self.deletion}")
        if self.char_substitution + self.char_deletion > 1.0:
            raise ValueError("char_substitution + char_deletion rates exceed 1")
        if not self.utterance_words:
            raise ValueError("ConfusionStats needs utterance_words (the fragment lengths)")

    @classmethod
    def load(cls, path: str | Path) -> ConfusionStats:
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))

    def save(self, path: str | Path) -> Path:
        """Writes the statistics as JSON (atomically) and returns the path."""
        return write_text_atomic(path, json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n")


def estimate_confusions(
    references: Sequence[str], hypotheses: Sequence[str], source: str = "", top: int = 200
) -> ConfusionStats:
    """Measures word and character error rates of ``hypotheses`` against ``references`` (both normalized first).

    Args:
        references: reference texts (e.g. a dev split's ``text``).
        hypotheses: the ASR's normalized outputs of the same utterances.
        source: what was measured, recorded in the result.
        top: how many of the most frequent inserted words and letters are kept.
    """
    if len(references) != len(hypotheses):
        raise ValueError(f"{len(references)} references for {len(hypotheses)} hypotheses")
    words = subs = dels = ins = 0
    chars = char_subs = char_dels = char_ins = 0
    letters: Counter[str] = Counter()
    inserted: Counter[str] = Counter()
    lengths: Counter[str] = Counter()
    for reference, hypothesis in zip(references, hypotheses, strict=True):
        ref, hyp = normalize(reference).split(), normalize(hypothesis).split()
        if not ref:
            continue
        words += len(ref)
        lengths[str(len(ref))] += 1
        for i, j in align_pairs(ref, hyp):
            if j is None:
                dels += 1
            elif i is None:
                ins += 1
                inserted[hyp[j]] += 1
            elif ref[i] != hyp[j]:
                subs += 1
                chars += len(ref[i])
                for a, b in align_pairs(ref[i], hyp[j]):
                    if b is None:
                        char_dels += 1
                    elif a is None:
                        char_ins += 1
                        letters[hyp[j][b]] += 1
                    elif ref[i][a] != hyp[j][b]:
                        char_subs += 1
                        letters[hyp[j][b]] += 1
    if not words:
        raise ValueError("no reference words to measure errors on")
    chars = max(chars, 1)
    return ConfusionStats(
        subs / words,
        dels / words,
        ins / words,
        char_subs / chars,
        char_dels / chars,
        char_ins / chars,
        dict(letters.most_common(top)),
        dict(inserted.most_common(top)),
        dict(sorted(lengths.items(), key=lambda kv: int(kv[0]))),
        source,
    )


def fragment_stats(references: Sequence[str], source: str = "") -> ConfusionStats:
    """The utterance lengths of ``references`` and no recognition errors: :func:`asr_like_examples` then gives
    fragments with clean words (what the tagger needs to learn segment edges without learning to drop marks)."""
    return estimate_confusions(references, references, source)


def manifest_fragment_stats(manifest: str | Path, target: str | Path) -> Path:
    """:func:`fragment_stats` of the transcripts (``text``) of ``manifest``, saved to ``target``; a line without a
    ``text`` string is a :class:`~nemo_pc.parts.manifest.ManifestError` naming the file and line."""
    texts = [require_text(entry, "text", manifest, line) for line, entry in iter_manifest(manifest)]
    return fragment_stats(texts, f"{Path(manifest).name} transcripts (lengths only)").save(target)


def _draw(rng: random.Random, counts: dict[str, int], fallback: str) -> str:
    if not counts:
        return fallback
    return rng.choices(list(counts), weights=list(counts.values()))[0]


def fragment_windows(num_words: int, stats: ConfusionStats, rng: random.Random) -> list[tuple[int, int]]:
    """Consecutive ``(start, end)`` windows that tile ``0:num_words``, each of a length drawn from the measured
    utterance lengths; the first window is cut short at a random point, so windows start anywhere in a sentence."""
    lengths = [int(n) for n in stats.utterance_words]
    weights = list(stats.utterance_words.values())
    windows, start = [], 0
    first = max(1, rng.randint(1, max(lengths)))
    while start < num_words:
        size = first if not windows else max(1, rng.choices(lengths, weights=weights)[0])
        end = min(start + size, num_words)
        windows.append((start, end))
        start = end
    return windows


def misspell(word: str, stats: ConfusionStats, rng: random.Random) -> str:
    """A character-level misrecognition of ``word`` at the measured character edit rates (never ``word`` itself,
    never empty)."""
    out = []
    for ch in word:
        draw = rng.random()
        if draw < stats.char_deletion:
            pass
        elif draw < stats.char_deletion + stats.char_substitution:
            out.append(_draw(rng, stats.letters, "e"))
        else:
            out.append(ch)
        if rng.random() < stats.char_insertion:
            out.append(_draw(rng, stats.letters, "e"))
    spelled = "".join(out)
    if spelled and spelled != word:
        return spelled
    k = rng.randrange(len(word))
    letter = _draw(rng, stats.letters, "e")
    letter = letter if letter != word[k] else ("a" if word[k] != "a" else "e")
    return word[:k] + letter + word[k + 1 :]


def corrupt(example: LabeledText, stats: ConfusionStats, rng: random.Random) -> LabeledText:
    """``example`` with recognition errors drawn at the measured rates, its labels carried through them.

    A substituted (misspelled) word keeps its reference word's labels; a deleted word's mark moves to the previous
    kept word (it is lost at the start); an inserted word gets ``O`` / ``LOWER`` / ``O``. A span keeps its written
    form only when all its words are kept unchanged. At least one word always remains.
    """
    words: list[str] = []
    punct: list[str] = []
    case: list[str] = []
    itn: list[str] = []
    position: dict[int, int] = {}  # reference word -> output word, for the unchanged ones
    for i, word in enumerate(example.words):
        draw = rng.random()
        if draw < stats.deletion:
            if words and example.punct[i] != "O":
                punct[-1] = example.punct[i]
        else:
            if draw < stats.deletion + stats.substitution:
                word = misspell(word, stats, rng)
            else:
                position[i] = len(words)
            words.append(word)
            punct.append(example.punct[i])
            case.append(example.case[i])
            itn.append(example.itn[i])
        if rng.random() < stats.insertion:
            words.append(_draw(rng, stats.inserted_words, "the"))
            punct.append("O")
            case.append("LOWER")
            itn.append("O")
    if not words:  # everything deleted: keep the example's last word as it is
        return fragment(example, len(example) - 1, len(example))
    spans = [
        (position[start], position[end - 1] + 1, text)
        for start, end, text in example.spans
        if all(k in position for k in range(start, end)) and position[end - 1] - position[start] == end - 1 - start
    ]
    return LabeledText(words, punct, case, itn, spans)


def fragment(example: LabeledText, start: int, end: int) -> LabeledText:
    """Words ``start:end`` of ``example`` with their labels and the spans that lie inside."""
    spans = [(s - start, e - start, text) for s, e, text in example.spans if start <= s and e <= end]
    return LabeledText(
        example.words[start:end], example.punct[start:end], example.case[start:end], example.itn[start:end], spans
    )


def asr_like_examples(document: LabeledText, stats: ConfusionStats, rng: random.Random) -> list[LabeledText]:
    """The document cut into utterance-like fragments (:func:`fragment_windows`), each with recognition errors
    (:func:`corrupt`)."""
    return [
        corrupt(fragment(document, start, end), stats, rng)
        for start, end in fragment_windows(len(document), stats, rng)
    ]
