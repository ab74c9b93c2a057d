"""Limits on the attention encoder-decoder's search: a decoder that stops, and a normalized mode that writes
normalized text.

Whisper was trained on input padded to 30 s; on short unpadded audio its decoder often writes the transcript and then
writes it again until the length cap. NeMo's AED searches (``GreedySequenceGenerator``,
``BeamSearchSequenceGenerator``) bound a hypothesis only by encoder frames + ``max_generation_delta``. The searches
here are those two with three limits applied to each step's scores (``decoding.limits`` of the AED's config):

* ``tokens_per_second``, ``min_tokens``: a row that has written ``min_tokens + tokens_per_second * seconds`` tokens
  (its seconds of audio from its encoder frames) can only write ``<|endoftext|>``;
* ``repeat_tokens`` (greedy only): when the tail of a hypothesis is the same block written twice back to back, at
  least ``2 * repeat_tokens`` tokens in all (a block of one token eight times with the default 4), the search stops
  that row and drops the copies after the first;
* ``normalized_vocabulary``: under the normalized prompt only the tokens that normalized text can hold (lower-case
  letters, digits, apostrophes, a leading space; :func:`normalized_token_ids`) and ``<|endoftext|>`` can be written,
  in greedy and beam search alike.

A limited search is a copy of NeMo's search object in the subclass here (the same state, one overridden step) put
in its place in NeMo's decoding, so every caller of NeMo's decoding (``transcribe``, validation,
``transcribe_speech.py``) gets the limits from the config.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from nemo.collections.asr.modules.transformer.transformer_decoders import TransformerDecoderBlock
from nemo.collections.asr.modules.transformer.transformer_generators import (
    BeamSearchSequenceGenerator,
    GreedySequenceGenerator,
)
from omegaconf import DictConfig

NEG_INF = -1e30


@dataclass(frozen=True)
class SearchLimits:
    """``decoding.limits`` (see the module docstring); None switches a limit off."""

    tokens_per_second: float | None = 8.0
    min_tokens: int = 10
    repeat_tokens: int | None = 4
    normalized_vocabulary: bool = True

    @classmethod
    def from_config(cls, cfg: DictConfig | dict | None) -> SearchLimits:
        """The limits of a ``decoding.limits`` block (absent: the defaults; null: every limit off).

        Raises:
            ValueError: an unknown key or a value out of range, named in the message.
        """
        if cfg is None:
            return cls(tokens_per_second=None, repeat_tokens=None, normalized_vocabulary=False)
        values = dict(cfg)
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(
                f"decoding.limits: unknown keys {sorted(unknown)}; known: {sorted(cls.__dataclass_fields__)}"
            )
        limits = cls(**values)
        if limits.tokens_per_second is not None and limits.tokens_per_second <= 0:
            raise ValueError(f"decoding.limits.tokens_per_second must be > 0 or null, got {limits.tokens_per_second}")
        if limits.min_tokens < 1:
            raise ValueError(f"decoding.limits.min_tokens must be >= 1, got {limits.min_tokens}")
        if limits.repeat_tokens is not None and limits.repeat_tokens < 1:
            raise ValueError(f"decoding.limits.repeat_tokens must be >= 1 or null, got {limits.repeat_tokens}")
        return limits


def normalized_token_ids(tokenizer, eos_id: int) -> torch.Tensor:
    """A boolean row over the vocabulary: the text tokens (ids below ``eos_id``) whose text normalized text can hold
    (:func:`nemo_pc.parts.text.normalize` keeps every character: lower-case letters and digits, an apostrophe, a
    leading space), and ``<|endoftext|>``. A byte-level piece that is not whole UTF-8 text is left out."""
    allowed = torch.zeros(tokenizer.vocab_size, dtype=torch.bool)
    for token_id in range(eos_id):
        text = tokenizer.tokenizer.decode([token_id], skip_special_tokens=False)
        body = text[1:] if text.startswith(" ") else text
        allowed[token_id] = bool(body) and all(_normalized_char(ch) for ch in body)
    allowed[eos_id] = True
    return allowed


def _normalized_char(ch: str) -> bool:
    return ch == "'" or (ch.isalnum() and ch == ch.lower() and ch != "\ufffd")


def repeated_tail(tokens: list[int], repeat_tokens: int) -> int:
    """The length of the block whose two back-to-back copies end ``tokens`` with at least ``2 * repeat_tokens``
    tokens in the repeated run, or 0. A block shorter than ``repeat_tokens`` must repeat until the run is that
    long (``a a a a a a a a`` for 4), and then the whole run past the first block counts as the repetition."""
    size = len(tokens)
    for period in range(1, size // 2 + 1):
        if tokens[-1] != tokens[-1 - period]:  # the cheap test first: most periods fail it
            continue
        run = 1  # tokens (from the end) that equal the token one period earlier, plus the first block
        while run < size - period and tokens[-1 - run] == tokens[-1 - run - period]:
            run += 1
        copies = (run + period) // period
        if copies >= 2 and copies * period >= 2 * repeat_tokens:
            return (copies - 1) * period
    return 0


@contextmanager
def fast_steps(search: GreedySequenceGenerator) -> Iterator[int]:
    """Within the block, two costs of NeMo's search steps on a CPU are gone, with the outputs unchanged:

    * every cross-attention of the decoder (``TransformerDecoderBlock.second_sub_layer``) projects the encoder states
      to keys and values once per encoder-state tensor, not at every step (each step calls the decoder with the same
      tensor); a projection is reused only while its input is that tensor, unchanged (its version counter; an
      inference-mode tensor has none, and there the same tensor is enough);
    * the classifier reads a contiguous copy of the last position's hidden states: NeMo passes a strided slice, on
      which PyTorch's CPU linear over Whisper's 50k-token vocabulary is slower than on a contiguous input
      (``tests/modules/test_aed_search.py`` checks the outputs, ``benchmarks/speed_aed_decoding.py`` the time).

    Yields the number of cross-attentions cached."""
    patched = []
    for block in search.decoder.modules():
        if isinstance(block, TransformerDecoderBlock):
            for linear in (block.second_sub_layer.key_net, block.second_sub_layer.value_net):
                linear.forward = _memo_forward(linear.forward)
                patched.append(linear)
    classifier = search.classifier
    classifier.forward = _contiguous_forward(classifier.forward)
    patched.append(classifier)
    try:
        yield (len(patched) - 1) // 2
    finally:
        for module in patched:
            del module.forward  # the class's forward again


def _contiguous_forward(forward):
    def contiguous(*args, hidden_states: torch.Tensor | None = None, **kwargs):
        if hidden_states is not None:
            kwargs["hidden_states"] = hidden_states.contiguous()
        return forward(*args, **kwargs)

    return contiguous


def _memo_forward(forward):
    last: list = []  # [input, its version, output] of the latest call

    def cached(x: torch.Tensor) -> torch.Tensor:
        if last and last[0] is x and last[1] == _version(x):
            return last[2]
        out = forward(x)
        last[:] = [x, _version(x), out]
        return out

    return cached


def _version(x: torch.Tensor) -> int:
    """The tensor's in-place version counter; -1 for an inference-mode tensor, which has none."""
    try:
        return x._version
    except RuntimeError:
        return -1


class _LimitedStep:
    """The step shared by both searches: the search's scores, then the vocabulary mask and the length cap."""

    limits: SearchLimits
    allowed: torch.Tensor | None  # (V,) or None: no vocabulary mask
    frame_seconds: float

    def _budget(self, encoder_input_mask: torch.Tensor) -> torch.Tensor:
        seconds = encoder_input_mask.sum(dim=1).float() * self.frame_seconds
        return torch.ceil(seconds * self.limits.tokens_per_second).long() + self.limits.min_tokens

    def _limit(self, scores: torch.Tensor, encoder_input_mask: torch.Tensor | None, written: torch.Tensor):
        """``scores`` ``(B, 1, V)`` with the vocabulary mask, and only ``<|endoftext|>`` left to the rows that have
        written (``written``, ``(B,)``) their budget."""
        last = scores[:, -1]
        if self.allowed is not None:
            keep = torch.zeros(last.shape[-1], dtype=torch.bool, device=last.device)
            keep[: len(self.allowed)] = self.allowed.to(last.device)
            last = last.masked_fill(~keep, NEG_INF)
        if self.limits.tokens_per_second is not None and encoder_input_mask is not None:
            over = self._budget(encoder_input_mask) <= written.to(last.device)
            if bool(over.any()):
                stop = torch.full_like(last[0], NEG_INF)
                stop[self.eos] = 0.0
                last = torch.where(over[:, None], stop, last)
        return torch.cat([scores[:, :-1], last[:, None]], dim=1)


class LimitedGreedySearch(_LimitedStep, GreedySequenceGenerator):
    """NeMo's greedy search with :class:`SearchLimits` (the repetition guard included)."""

    def _forward(self, decoder_input_ids=None, encoder_hidden_states=None, encoder_input_mask=None, **kwargs):
        self._prompt_len = 0 if decoder_input_ids is None else decoder_input_ids.shape[1]
        self._history: list[list[int]] = []
        self._cut: dict[int, int] = {}
        with fast_steps(self):
            tgt, *rest = super()._forward(decoder_input_ids, encoder_hidden_states, encoder_input_mask, **kwargs)
        for row, cut in self._cut.items():
            end = self._prompt_len + len(self._history[row])
            tgt[row, end - cut : end] = self.pad
        return (tgt, *rest)

    def _one_step_forward(self, decoder_input_ids=None, encoder_hidden_states=None, encoder_input_mask=None,
                          decoder_mems_list=None, pos=0, return_scores: bool = True):  # fmt: skip
        scores, mems, xatt = super()._one_step_forward(
            decoder_input_ids, encoder_hidden_states, encoder_input_mask, decoder_mems_list, pos, return_scores
        )
        if decoder_mems_list is None:
            self._history = [[] for _ in range(decoder_input_ids.shape[0])]
        else:
            for row, token in enumerate(decoder_input_ids[:, -1].tolist()):
                if token not in (self.eos, self.pad):
                    self._history[row].append(token)
        written = torch.tensor([len(history) for history in self._history])
        scores = self._limit(scores, encoder_input_mask, written)
        if self.limits.repeat_tokens is not None:
            scores = self._stop_repeats(scores)
        return scores, mems, xatt

    def _stop_repeats(self, scores: torch.Tensor) -> torch.Tensor:
        for row, history in enumerate(self._history):
            if row in self._cut or not history:
                continue
            cut = repeated_tail(history, self.limits.repeat_tokens)
            if cut:
                self._cut[row] = cut
                scores[row, -1] = NEG_INF
                scores[row, -1, self.eos] = 0.0
        return scores


class LimitedBeamSearch(_LimitedStep, BeamSearchSequenceGenerator):
    """NeMo's beam search with the vocabulary mask and the length cap of :class:`SearchLimits`."""

    def _forward(self, decoder_input_ids=None, encoder_hidden_states=None, encoder_input_mask=None, **kwargs):
        self._prompt_len = 0 if decoder_input_ids is None else decoder_input_ids.shape[1]
        with fast_steps(self):
            return super()._forward(decoder_input_ids, encoder_hidden_states, encoder_input_mask, **kwargs)

    def _one_step_forward(self, decoder_input_ids=None, encoder_hidden_states=None, encoder_input_mask=None,
                          decoder_mems_list=None, pos=0, return_scores: bool = True):  # fmt: skip
        scores, mems, xatt = super()._one_step_forward(
            decoder_input_ids, encoder_hidden_states, encoder_input_mask, decoder_mems_list, pos, return_scores
        )
        written = 0 if decoder_mems_list is None else pos - self._prompt_len + 1
        return self._limit(scores, encoder_input_mask, torch.full((scores.shape[0],), written)), mems, xatt


_LIMITED = {GreedySequenceGenerator: LimitedGreedySearch, BeamSearchSequenceGenerator: LimitedBeamSearch}


def limit_search(
    search: GreedySequenceGenerator,
    limits: SearchLimits,
    allowed: torch.Tensor | None,
    frame_seconds: float,
) -> GreedySequenceGenerator:
    """A copy of NeMo's search object ``search`` that applies the limits at every step (the same state, in the
    limited subclass); a search of another class (e.g. with LM fusion) is returned as it is.

    Args:
        search: the ``greedy_search`` or ``beam_search`` of NeMo's AED decoding.
        limits: the limits.
        allowed: the vocabulary mask of :func:`normalized_token_ids`, or None for every token.
        frame_seconds: seconds of audio per encoder frame (the cap's clock).
    """
    limited_class = _LIMITED.get(type(search))
    if limited_class is None:
        return search
    limited = object.__new__(limited_class)
    limited.__dict__.update(vars(search))
    limited.limits, limited.allowed, limited.frame_seconds = limits, allowed, frame_seconds
    return limited
