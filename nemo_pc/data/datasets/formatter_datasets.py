"""Datasets and collators of the text formatter's two models.

* Tagger examples are JSON lines of :class:`~nemo_pc.formatter.labels.LabeledText` (``words``, ``punct``,
  ``case``, ``itn``); labels sit on the first subtoken of each word and every other position is ``-100``.
* Rewriter (and full seq2seq) examples are JSON lines with ``input`` and ``target`` text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from nemo_pc.parts.formatter_labels import CASE_LABELS, ITN_LABELS, PUNCT_LABELS
from nemo_pc.parts.manifest import ManifestError, iter_manifest, require_text

IGNORE_INDEX = -100
TASK_LABELS = {"punct": PUNCT_LABELS, "case": CASE_LABELS, "itn": ITN_LABELS}
"""The tagger's heads and their classes, in class-index order."""


def _manifest_paths(manifest_filepath: str | Sequence[str]) -> list[Path]:
    if isinstance(manifest_filepath, str):
        return [Path(p) for p in manifest_filepath.split(",") if p]
    return [Path(p) for p in manifest_filepath]


class TaggerDataset(Dataset):
    """Labelled spoken-word sequences; sequences longer than ``max_words`` are cut into consecutive windows.

    Args:
        manifest_filepath: one JSON-lines file, several separated by commas, or a list.
        max_words: the longest word sequence of one example.

    Raises:
        ManifestError: a line without ``words`` or a label sequence of another length.
    """

    def __init__(self, manifest_filepath: str | Sequence[str], max_words: int = 128) -> None:
        self.examples: list[dict[str, list[str]]] = []
        for path in _manifest_paths(manifest_filepath):
            for line, entry in iter_manifest(path):
                self.examples.extend(_windows(_checked(entry, path, line), max_words))

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> dict[str, list[str]]:
        return self.examples[index]


def _checked(entry: Mapping, path: Path, line: int) -> dict[str, list[str]]:
    words = entry.get("words")
    if not isinstance(words, list):
        raise ManifestError(path, line, "field 'words' must be a list of spoken words", "missing words")
    example = {"words": [str(w) for w in words]}
    for task, labels in TASK_LABELS.items():
        values = entry.get(task, [])
        if len(values) != len(words) or any(v not in labels for v in values):
            raise ManifestError(path, line, f"field {task!r} must hold one of {labels} per word", f"bad {task}")
        example[task] = list(values)
    return example


def _windows(example: dict[str, list[str]], max_words: int) -> list[dict[str, list[str]]]:
    size = len(example["words"])
    return [
        {key: values[start : start + max_words] for key, values in example.items()}
        for start in range(0, size, max_words)
    ]


def encode_words(tokenizer, words_batch: Sequence[Sequence[str]], max_length: int):
    """Tokenizes pre-split words; returns the encoding and, per sequence, the position of each word's first
    subtoken (``None`` for words cut off by ``max_length``)."""
    encoding = tokenizer(
        [list(words) for words in words_batch],
        is_split_into_words=True,
        truncation=True,
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )
    firsts = []
    for b, words in enumerate(words_batch):
        first: list[int | None] = [None] * len(words)
        previous = None
        for position, word_id in enumerate(encoding.word_ids(b)):
            if word_id is not None and word_id != previous:
                first[word_id] = position
            previous = word_id
        firsts.append(first)
    return encoding, firsts


class TaggerCollate:
    """Batches tagger examples: ``input_ids``, ``attention_mask`` and ``<task>_labels`` for each task."""

    def __init__(self, tokenizer, tasks: Sequence[str], max_length: int) -> None:
        self.tokenizer = tokenizer
        self.tasks = list(tasks)
        self.max_length = max_length

    def __call__(self, examples: Sequence[Mapping[str, list[str]]]) -> dict[str, torch.Tensor]:
        encoding, firsts = encode_words(self.tokenizer, [e["words"] for e in examples], self.max_length)
        batch = {"input_ids": encoding["input_ids"], "attention_mask": encoding["attention_mask"]}
        for task in self.tasks:
            index = {label: k for k, label in enumerate(TASK_LABELS[task])}
            labels = torch.full(encoding["input_ids"].shape, IGNORE_INDEX, dtype=torch.long)
            for b, example in enumerate(examples):
                for word, position in enumerate(firsts[b]):
                    if position is not None:
                        labels[b, position] = index[example[task][word]]
            batch[f"{task}_labels"] = labels
        return batch


class PairDataset(Dataset):
    """``input`` -> ``target`` text pairs for the rewriter and the full seq2seq baseline."""

    def __init__(self, manifest_filepath: str | Sequence[str]) -> None:
        self.pairs: list[tuple[str, str]] = []
        for path in _manifest_paths(manifest_filepath):
            for line, entry in iter_manifest(path):
                source = require_text(entry, "input", path, line)
                self.pairs.append((source, require_text(entry, "target", path, line)))

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> tuple[str, str]:
        return self.pairs[index]


class PairCollate:
    """Batches text pairs: ``input_ids``, ``attention_mask`` and ``labels`` (padding set to ``-100``)."""

    def __init__(self, tokenizer, max_source_length: int, max_target_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_source_length = max_source_length
        self.max_target_length = max_target_length

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> dict[str, torch.Tensor]:
        source = self.tokenizer(
            [p[0] for p in pairs],
            truncation=True,
            max_length=self.max_source_length,
            padding=True,
            return_tensors="pt",
        )
        target = self.tokenizer(
            [p[1] for p in pairs],
            truncation=True,
            max_length=self.max_target_length,
            padding=True,
            return_tensors="pt",
        )
        labels = target["input_ids"].masked_fill(target["attention_mask"] == 0, IGNORE_INDEX)
        return {"input_ids": source["input_ids"], "attention_mask": source["attention_mask"], "labels": labels}


def build_dataloader(cfg: Mapping, dataset: Dataset, collate_fn) -> DataLoader:
    """A DataLoader from a NeMo ``*_ds`` config: ``batch_size``, ``shuffle``, ``num_workers``."""
    return DataLoader(
        dataset,
        batch_size=int(cfg.get("batch_size", 32)),
        shuffle=bool(cfg.get("shuffle", False)),
        num_workers=int(cfg.get("num_workers", 0)),
        collate_fn=collate_fn,
    )
