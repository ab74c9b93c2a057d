"""Word times for a decoder that emits no frame per token: a CTC forced alignment of its normalized words, carried to
its punctuated words by the word alignment of the two modes.

* :func:`align_words`: each word's frames from a Viterbi forced alignment of its tokens to a CTC head's log
  probabilities (NeMo's ``viterbi_decoding``, the aligner of NeMo Forced Aligner); ``None`` when the tokens cannot
  fit the frames.
* :func:`spread_evenly`: the fallback, words spread evenly over a span.
* :func:`carry_times`: the punctuated words timed by the normalized words they align with
  (:func:`nemo_pc.parts.styles.align_styles`, the alignment the mixed-style transcripts use); the words the
  normalized mode has no partner for are spread over the gaps between their neighbours.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from nemo_pc.parts.longform import TimedWord
from nemo_pc.parts.styles import align_styles
from nemo_pc.parts.text import normalize


def needed_frames(tokens: Sequence[int]) -> int:
    """The fewest frames a CTC path of ``tokens`` takes: one a token, and a blank between two equal tokens."""
    return len(tokens) + sum(a == b for a, b in zip(tokens, tokens[1:], strict=False))


def align_words(log_probs: torch.Tensor, words: Sequence[Sequence[int]], blank: int) -> list[tuple[int, int]] | None:
    """Each word's frames ``[start, end)`` (its first token's first frame to its last token's last frame) on the
    best CTC path of the words' tokens through ``log_probs``.

    Args:
        log_probs: ``(T, V)`` log probabilities of one piece, the blank included.
        words: each word's token ids.
        blank: the blank's id.

    Returns:
        The spans, in order; ``None`` when a word has no token or the tokens need more than ``T`` frames.
    """
    from nemo.collections.asr.parts.utils.aligner_utils import viterbi_decoding

    tokens = [token for word in words for token in word]
    frames = int(log_probs.shape[0])
    if not words:
        return []
    if any(len(word) == 0 for word in words) or needed_frames(tokens) > frames:
        return None
    states = [blank]
    for token in tokens:
        states += [int(token), blank]
    (path,) = viterbi_decoding(
        log_probs[None].float(),
        torch.tensor([states], device=log_probs.device),
        torch.tensor([frames], device=log_probs.device),
        torch.tensor([len(states)], device=log_probs.device),
        viterbi_device=log_probs.device,
    )
    return word_spans(path, [len(word) for word in words])


def word_spans(path: Sequence[int], word_lengths: Sequence[int]) -> list[tuple[int, int]] | None:
    """Each word's frames from a CTC path over the states ``blank t1 blank t2 ... blank`` (the state of each
    frame); ``None`` for a path that goes back, skips a token or does not reach the last token."""
    path = np.asarray(path, dtype=np.int64)
    count = sum(word_lengths)
    if len(path) == 0 or np.any(np.diff(path) < 0) or path[0] > 1 or path[-1] < 2 * count - 1:
        return None
    first, last = {}, {}
    for frame, state in enumerate(path.tolist()):
        if state % 2:
            first.setdefault(state // 2, frame)
            last[state // 2] = frame
    if len(first) != count:
        return None
    spans, token = [], 0
    for length in word_lengths:
        spans.append((first[token], last[token + length - 1] + 1))
        token += length
    return spans


def spread_evenly(words: Sequence[str], start: float, end: float) -> list[TimedWord]:
    """``words`` timed in equal shares of ``[start, end]``, in order."""
    step = (end - start) / max(len(words), 1)
    return [TimedWord(word, start + k * step, start + (k + 1) * step) for k, word in enumerate(words)]


def carry_times(normalized: Sequence[TimedWord], punctuated: str, start: float, end: float) -> list[TimedWord]:
    """The punctuated words of ``punctuated`` timed by the normalized words they align with.

    In a stretch of the word alignment (:func:`nemo_pc.parts.styles.align_styles`) with as many words on both sides,
    the words take their times one by one ("Mr." that of "mister"); in another, a punctuated word takes the time of
    the next normalized word of the stretch with its normalized form, and a stretch where none has one is spread
    over its normalized words ("$5" over "five dollars"). The punctuated words left without a time are
    spread evenly over the gap between their timed neighbours (``start`` and ``end`` bound the first and the last
    gap). A transcript the alignment refuses (one that holds a style tag) is spread over its normalized words.
    """
    words = punctuated.split()
    try:
        segments = align_styles(" ".join(word.text for word in normalized), punctuated)
    except ValueError:
        return spread_evenly(words, normalized[0].start, normalized[-1].end) if normalized else []
    paired: list[tuple[str, TimedWord | None]] = []
    index = 0
    for segment in segments:
        span = normalized[index : index + len(segment.normalized)]
        index += len(span)
        if len(span) == len(segment.punctuated):
            paired += zip(segment.punctuated, span, strict=True)
            continue
        stretch, next_free = [], 0
        for word in segment.punctuated:
            hit = next((k for k in range(next_free, len(span)) if span[k].text == normalize(word)), None)
            stretch.append((word, None if hit is None else span[hit]))
            next_free = next_free if hit is None else hit + 1
        if span and all(partner is None for _, partner in stretch):  # "$5" for "five dollars"
            spread = spread_evenly(segment.punctuated, span[0].start, span[-1].end)
            stretch = list(zip(segment.punctuated, spread, strict=True))
        paired += stretch
    return _fill_gaps(paired, start, end)


def _fill_gaps(paired: Sequence[tuple[str, TimedWord | None]], start: float, end: float) -> list[TimedWord]:
    """Each word with its partner's time; a run of words without a partner spread over the gap around it."""
    timed: list[TimedWord] = []
    pending: list[str] = []
    for word, partner in paired:
        if partner is None:
            pending.append(word)
            continue
        if pending:
            timed += spread_evenly(pending, timed[-1].end if timed else min(start, partner.start), partner.start)
            pending = []
        timed.append(TimedWord(word, partner.start, partner.end))
    if pending:
        last = timed[-1].end if timed else start
        timed += spread_evenly(pending, last, max(end, last))
    return timed
