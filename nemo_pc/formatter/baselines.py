"""The baselines of papers/003 Table 2, trained and run on the same data as the text formatter.

* :class:`SeparateTaggers`: one single-head :class:`~nemo_pc.models.tagger.PCTaggerModel` per task (no
  parameter sharing), usable wherever the joint tagger is, e.g. inside :class:`TextFormatter`.
* :class:`Seq2SeqFormatter`: the full seq2seq model, a :class:`~nemo_pc.models.rewriter.SpanRewriterModel`
  trained on whole examples (``task=full``), run over the whole text in consecutive chunks.
* :class:`WfstItn`: NeMo's WFST inverse text normalization, for the ITN part only (no punctuation or case).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nemo_pc.data.datasets.formatter_datasets import TASK_LABELS
from nemo_pc.data.recipes.spoken import default_cache_dir
from nemo_pc.formatter.spoken_numbers import NUMBER_WORDS
from nemo_pc.parts.text import normalize


def _word_chunks(text: str, size: int) -> list[str]:
    """``size``-word chunks; a boundary inside a run of number words moves forward to the end of the run (at most
    ``size`` words further)."""
    spoken = normalize(text).split()
    chunks, start = [], 0
    while start < len(spoken):
        end = min(start + size, len(spoken))
        limit = min(end + size, len(spoken))
        while end < limit and spoken[end - 1] in NUMBER_WORDS and spoken[end] in NUMBER_WORDS:
            end += 1
        chunks.append(" ".join(spoken[start:end]))
        start = end
    return chunks


def format_by_chunks(texts: Sequence[str], size: int, convert) -> list[str]:
    """Cuts each text into ``size``-word chunks, converts all chunks in one call and joins them back."""
    chunks = [_word_chunks(text, size) for text in texts]
    flat = convert([c for text_chunks in chunks for c in text_chunks])
    out, k = [], 0
    for text_chunks in chunks:
        out.append(" ".join(piece for piece in flat[k : k + len(text_chunks)] if piece))
        k += len(text_chunks)
    return out


class SeparateTaggers:
    """Single-task taggers combined: ``tag`` returns each task's labels from the model trained for it.

    Args:
        models: ``{task: PCTaggerModel}``, each with that task among its heads.
    """

    def __init__(self, models: dict) -> None:
        missing = set(TASK_LABELS) - set(models)
        if missing:
            raise ValueError(f"no tagger for {sorted(missing)}")
        self.models = models

    @classmethod
    def from_files(cls, paths: dict[str, str | Path]) -> SeparateTaggers:
        from nemo_pc.models.tagger import PCTaggerModel

        return cls({task: PCTaggerModel.restore_from(str(path), map_location="cpu") for task, path in paths.items()})

    def tag(self, words_batch: Sequence[Sequence[str]], batch_size: int = 32) -> list[dict[str, list[str]]]:
        per_task = {task: model.tag(words_batch, batch_size=batch_size) for task, model in self.models.items()}
        return [{task: per_task[task][k][task] for task in TASK_LABELS} for k in range(len(words_batch))]


class Seq2SeqFormatter:
    """Whole-text formatting with one seq2seq model, ``chunk_words`` spoken words per decoder input."""

    def __init__(self, model, chunk_words: int = 48, batch_size: int = 32) -> None:
        self.model = model
        self.chunk_words = chunk_words
        self.batch_size = batch_size

    def format(self, texts: Sequence[str]) -> list[str]:
        return format_by_chunks(texts, self.chunk_words, lambda c: self.model.rewrite(c, batch_size=self.batch_size))


class WfstItn:
    """NeMo WFST inverse normalization of spoken text, ``chunk_words`` words at a time (``normalizer``: an
    ``InverseNormalizer``; default: English, grammars compiled once into ``cache_dir``)."""

    def __init__(self, cache_dir: str | Path | None = None, chunk_words: int = 50, normalizer=None) -> None:
        if normalizer is None:
            from nemo_text_processing.inverse_text_normalization.inverse_normalize import InverseNormalizer

            folder = Path(cache_dir) if cache_dir else default_cache_dir() / "itn_grammars"
            folder.mkdir(parents=True, exist_ok=True)
            normalizer = InverseNormalizer(lang="en", cache_dir=str(folder))
        self.normalizer = normalizer
        self.chunk_words = chunk_words

    def format(self, texts: Sequence[str]) -> list[str]:
        def convert(chunks: list[str]) -> list[str]:
            return [self.normalizer.inverse_normalize(chunk, verbose=False) for chunk in chunks]

        return format_by_chunks(texts, self.chunk_words, convert)
