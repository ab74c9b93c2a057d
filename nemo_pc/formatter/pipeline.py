"""TextFormatter: spoken-form text in, written text out (papers/003 Fig. 1).

1. The tagger labels every word (mark, truecasing class, ITN span). Long texts are cut into overlapping windows;
   each word takes its labels from the window in which it sits farthest from an edge.
2. Runs of ITN or MIXED words become spans, each with a few words of spoken context on both sides.
3. The rewriter converts all spans of all texts in length-sorted batches (greedy decoding).
4. :func:`~nemo_pc.formatter.labels.compose` writes the result. Words outside spans keep their letters; only
   the tagger's case and mark change them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from nemo_pc.formatter.hybrid import (
    DEFAULT_DETECT_SPANS,
    DEFAULT_SPAN_ITN,
    POLICIES,
    SpanCandidates,
    WfstSpans,
    chosen_text,
)
from nemo_pc.formatter.labels import LabeledText, find_spans, span_input
from nemo_pc.parts.manifest import iter_manifest, require_text, write_manifest
from nemo_pc.parts.text import join_word_marks, normalize, word_marks


def chunk_windows(num_words: int, size: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """Overlapping windows over ``num_words`` words as ``(start, end, own_start, own_end)``.

    Windows are ``size`` words long and overlap by ``overlap`` words; the ``own`` ranges tile ``0:num_words``
    exactly, each word owned by the window where it is farthest from an edge.
    """
    if size <= overlap or size < 1:
        raise ValueError(f"chunk size ({size}) must be positive and larger than the overlap ({overlap})")
    step = size - overlap
    starts = list(range(0, max(num_words - overlap, 1), step))
    windows = []
    for k, start in enumerate(starts):
        end = min(start + size, num_words)
        own_start = 0 if k == 0 else start + overlap // 2
        own_end = num_words if k + 1 == len(starts) else starts[k + 1] + overlap // 2
        windows.append((start, end, own_start, own_end))
    return windows


def merge_spans(spans: Sequence[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """``(text, start, end)`` word ranges with every group of overlapping ranges of a text joined into one, sorted."""
    merged: list[tuple[int, int, int]] = []
    for k, start, end in sorted(spans):
        if merged and merged[-1][0] == k and start < merged[-1][2]:
            merged[-1] = (k, merged[-1][1], max(end, merged[-1][2]))
        else:
            merged.append((k, start, end))
    return merged


class TextFormatter:
    """Punctuation, truecasing and ITN for spoken-form text with a tagger and a span rewriter.

    Args:
        tagger: a :class:`~nemo_pc.models.tagger.PCTaggerModel`, or any object with the same ``tag`` method
            (e.g. :class:`~nemo_pc.formatter.baselines.SeparateTaggers`).
        rewriter: a :class:`~nemo_pc.models.rewriter.SpanRewriterModel`; without one, spans keep their words.
        context_words: spoken words of context on each side of a span.
        chunk_words, chunk_overlap: the tagger's window length and overlap, in words.
        batch_size: tagger windows and rewriter spans per batch.
        max_growth: a rewrite longer than ``max_growth`` times its span's spoken text (plus 8 characters) is
            treated as a hallucination and the span keeps its words.
        span_itn: whose written form each span takes, a policy of :mod:`nemo_pc.formatter.hybrid`: ``neural`` (the
            rewriter's, always: papers/003's formatter), or a hybrid with NeMo WFST ITN (``wfst``, ``confidence``,
            ``agreement``, ``class``). The default, shared with ``nemo-pc format``, is
            :data:`~nemo_pc.formatter.hybrid.DEFAULT_SPAN_ITN`.
        wfst: a :class:`~nemo_pc.formatter.hybrid.WfstSpans` for the hybrid policies (default: made at first use).
        threshold: the rewriter confidence the ``confidence`` policy needs to keep the rewriter's form.
        detect_spans: also treat as spans the words that WFST ITN over the whole text changes
            (:meth:`~nemo_pc.formatter.hybrid.WfstSpans.changed_spans`); a tagger span and a WFST span that overlap
            become one span, and ``span_itn`` chooses the written form of every span (default
            :data:`~nemo_pc.formatter.hybrid.DEFAULT_DETECT_SPANS`). ``span_itn="neural", detect_spans=False`` is
            the pure neural formatter, which runs no WFST.
    """

    def __init__(
        self,
        tagger,
        rewriter=None,
        context_words: int = 2,
        chunk_words: int = 128,
        chunk_overlap: int = 32,
        batch_size: int = 32,
        max_growth: float = 2.0,
        span_itn: str = DEFAULT_SPAN_ITN,
        wfst=None,
        threshold: float = 0.9,
        detect_spans: bool = DEFAULT_DETECT_SPANS,
    ) -> None:
        chunk_windows(1, chunk_words, chunk_overlap)
        if span_itn not in POLICIES:
            raise ValueError(f"unknown span ITN policy {span_itn!r}; known: {', '.join(POLICIES)}")
        self.tagger = tagger
        self.rewriter = rewriter
        self.context_words = context_words
        self.chunk_words = chunk_words
        self.chunk_overlap = chunk_overlap
        self.batch_size = batch_size
        self.max_growth = max_growth
        self.span_itn = span_itn
        self.wfst = wfst
        self.threshold = threshold
        self.detect_spans = detect_spans

    @classmethod
    def from_files(cls, tagger: str | Path, rewriter: str | Path | None = None, **kwargs) -> TextFormatter:
        """Restores the two models from ``.nemo`` files (on CPU) and builds the pipeline."""
        from nemo_pc.models.rewriter import SpanRewriterModel
        from nemo_pc.models.tagger import PCTaggerModel

        tagger_model = PCTaggerModel.restore_from(str(tagger), map_location="cpu")
        rewriter_model = SpanRewriterModel.restore_from(str(rewriter), map_location="cpu") if rewriter else None
        return cls(tagger_model, rewriter_model, **kwargs)

    def format(self, texts: Sequence[str]) -> list[str]:
        """The written form of each spoken-form text."""
        return [labeled.reference() for labeled in self.annotate(texts)]

    def annotate(self, texts: Sequence[str]) -> list[LabeledText]:
        """Predicted labels and spans (with their rewrites) of each text."""
        labeled, candidates = self.span_candidates(texts, self.span_itn != "neural", self.detect_spans)
        return self.compose_policy(labeled, candidates, self.span_itn)[0]

    def span_candidates(
        self, texts: Sequence[str], wfst: bool = True, detect: bool = False
    ) -> tuple[list[LabeledText], list[tuple[tuple[int, int, int], SpanCandidates]]]:
        """The tagger's labels of each text (spans not filled in) and, for every span ``(text, start, end)``, its
        rewriter and (with ``wfst``) WFST written forms, for :meth:`compose_policy` under any policy. With
        ``detect``, the spans include those WFST finds outside the tagger's (see ``detect_spans``)."""
        labeled = self._tag([normalize(text).split() for text in texts])
        requests = self._requests(labeled, detect)
        return labeled, list(zip(requests, self._candidates(labeled, requests, wfst), strict=True))

    def _requests(self, labeled: list[LabeledText], detect: bool, mixed: bool = True) -> list[tuple[int, int, int]]:
        """``(text, start, end)`` of every span: runs of ITN (and, with ``mixed``, MIXED-case) words, joined with
        the ranges WFST ITN changes when ``detect``."""
        requests = [
            (k, start, end)
            for k, item in enumerate(labeled)
            for start, end in find_spans(item.itn, item.case if mixed else ["LOWER"] * len(item))
        ]
        if detect:
            found = self._wfst().changed_spans([" ".join(item.words) for item in labeled])
            requests = merge_spans([*requests, *((k, a, b) for k, spans in enumerate(found) for a, b in spans)])
        return requests

    def compose_policy(
        self, labeled: list[LabeledText], candidates: list[tuple[tuple[int, int, int], SpanCandidates]], policy: str
    ) -> tuple[list[LabeledText], list[str]]:
        """Copies of ``labeled`` with each span written as ``policy`` chooses, and the choice of every span."""
        out = [LabeledText(item.words, item.punct, item.case, item.itn, []) for item in labeled]
        chosen = []
        for (k, start, end), span in candidates:
            written, source = chosen_text(span, policy, self.threshold)
            out[k].spans.append((start, end, written))
            chosen.append(source)
        return out, chosen

    def itn_only(self, texts: Sequence[str]) -> list[str]:
        """ITN of already punctuated, cased text (the hybrid of papers/003 with an E2E P&C ASR model).

        The tagger's ITN head finds the spans (with ``detect_spans``, joined with WFST's) and the rewriter or WFST
        writes them, as ``span_itn`` chooses; every word outside a span keeps its
        own case and the mark after it, and a span keeps the mark after its last word. A span that starts a
        capitalized word starts with a capital.
        """
        pairs = [word_marks(text) for text in texts]
        spoken = [[normalize(word) for word, _ in item] for item in pairs]
        spoken = [
            [w if w and " " not in w else word.lower() for w, (word, _) in zip(ws, item, strict=True)]
            for ws, item in zip(spoken, pairs, strict=True)
        ]
        labeled = self._tag(spoken)
        requests = self._requests(labeled, self.detect_spans, mixed=False)
        requests = [piece for request in requests for piece in _split_at_marks(request, pairs[request[0]])]
        spans = self._candidates(labeled, requests, self.span_itn != "neural")
        rewrites = {
            request: chosen_text(span, self.span_itn, self.threshold)[0]
            for request, span in zip(requests, spans, strict=True)
        }
        out = []
        for k, item in enumerate(pairs):
            starts = {start: (end, rewrites[(k, start, end)]) for kk, start, end in requests if kk == k}
            merged, i = [], 0
            while i < len(item):
                if i in starts:
                    end, written = starts[i]
                    if item[i][0][:1].isupper() and written[:1].islower():
                        written = written[0].upper() + written[1:]
                    merged.append((written, item[end - 1][1]))
                    i = end
                else:
                    merged.append(item[i])
                    i += 1
            out.append(join_word_marks(merged))
        return out

    def _tag(self, all_words: list[list[str]]) -> list[LabeledText]:
        windows = [
            (k, w)
            for k, words in enumerate(all_words)
            for w in chunk_windows(len(words), self.chunk_words, self.chunk_overlap)
        ]
        predicted = self.tagger.tag([all_words[k][w[0] : w[1]] for k, w in windows], batch_size=self.batch_size)
        labeled = [LabeledText(words, [], [], []) for words in all_words]
        for (k, (start, _, own_start, own_end)), labels in zip(windows, predicted, strict=True):
            item = labeled[k]
            item.punct += labels["punct"][own_start - start : own_end - start]
            item.case += labels["case"][own_start - start : own_end - start]
            item.itn += labels["itn"][own_start - start : own_end - start]
        return labeled

    def _wfst(self) -> WfstSpans:
        if self.wfst is None:
            self.wfst = WfstSpans()
        return self.wfst

    def _candidates(
        self, labeled: list[LabeledText], requests: list[tuple[int, int, int]], wfst: bool
    ) -> list[SpanCandidates]:
        """Each span's rewrite with its confidence (a hallucinated or missing rewrite: the spoken words, confidence
        0) and, with ``wfst``, WFST's output of the span."""
        spoken = [" ".join(labeled[k].words[start:end]) for k, start, end in requests]
        scored = [(src, 0.0) for src in spoken]
        if self.rewriter is not None and requests:
            inputs = [span_input(labeled[k].words, start, end, self.context_words) for k, start, end in requests]
            outputs = self.rewriter.rewrite_scored(inputs, batch_size=self.batch_size)
            scored = [
                (out, score) if out and len(out) <= self.max_growth * len(src) + 8 else (src, 0.0)
                for (out, score), src in zip(outputs, spoken, strict=True)
            ]
        converted: list[str | None] = [None] * len(spoken)
        if wfst and spoken:
            converted = self._wfst().convert(spoken)
        return [
            SpanCandidates(src, out, score, conv)
            for src, (out, score), conv in zip(spoken, scored, converted, strict=True)
        ]

    def format_manifest(
        self,
        input_path: str | Path,
        output_path: str | Path,
        field: str = "pred_text",
        output_field: str | None = None,
        block: int = 256,
    ) -> Path:
        """Formats ``field`` of every entry of a NeMo manifest (e.g. ``pred_text`` of a prediction manifest) into
        ``output_field`` (default: ``field``); other fields are kept. Writes atomically."""
        entries = [(line, entry) for line, entry in iter_manifest(input_path)]
        texts = [require_text(entry, field, input_path, line) for line, entry in entries]
        formatted = self._format_blocks(texts, block)
        out = []
        for (_, entry), text in zip(entries, formatted, strict=True):
            out.append({**entry, (output_field or field): text})
        return write_manifest(output_path, out)

    def auto_punctuate_manifest(
        self, input_path: str | Path, output_path: str | Path, replace_book: bool = False, block: int = 256
    ) -> Path:
        """P' (papers/000 §III-B): writes a formatted ``text`` from ``text_normalized`` for training entries.

        Entries whose ``pc_source`` is ``book`` keep their text unless ``replace_book``; every formatted entry
        gets ``pc_source: formatter`` and keeps (or gains) ``text_normalized``.
        """
        entries = list(iter_manifest(input_path))
        todo = [k for k, (_, e) in enumerate(entries) if replace_book or e.get("pc_source") != "book"]
        sources = []
        for k in todo:
            line, entry = entries[k]
            if "text_normalized" in entry:
                sources.append(require_text(entry, "text_normalized", input_path, line))
            else:
                sources.append(normalize(require_text(entry, "text", input_path, line)))
        formatted = self._format_blocks(sources, block)
        out = [dict(entry) for _, entry in entries]
        for k, source, text in zip(todo, sources, formatted, strict=True):
            out[k].update(text=text, text_normalized=source, pc_source="formatter")
        return write_manifest(output_path, out)

    def _format_blocks(self, texts: Sequence[str], block: int) -> list[str]:
        from tqdm import tqdm

        out: list[str] = []
        progress = tqdm(total=len(texts), desc="format", unit="text", disable=len(texts) <= block)
        for start in range(0, len(texts), block):
            out.extend(self.format(texts[start : start + block]))
            progress.update(min(block, len(texts) - start))
        progress.close()
        return out

    def format_lines(self, lines: Iterable[str], block: int = 256) -> list[str]:
        """One formatted line per input line (a trailing newline is not part of a text)."""
        return self._format_blocks([line.rstrip("\n") for line in lines], block)


def _split_at_marks(request: tuple[int, int, int], words: Sequence[tuple[str, str]]) -> list[tuple[int, int, int]]:
    """A span ``(k, start, end)`` of already punctuated text cut after each of its words that carries a mark, so that
    no mark inside a span is lost when the span is written again (the spans come from unpunctuated words)."""
    k, start, end = request
    pieces, piece_start = [], start
    for i in range(start, end - 1):
        if words[i][1]:
            pieces.append((k, piece_start, i + 1))
            piece_start = i + 1
    return [*pieces, (k, piece_start, end)]
