"""NeMo's NGPU-LM read over a few tokens at a time, for CTC beam search over a large vocabulary on CPU.

``NGramGPULanguageModel.advance`` scores every token of the vocabulary from every state: without Triton (on CPU) it
builds several ``(states, V)`` tensors per back-off level, so over the decoder CTC head's 32k Whisper tokens a beam
of 8 on a batch of 16 spends most of a second per frame there. :class:`SubsetNgramLM` answers the same question for
the ``K`` tokens a batch's search can write (:class:`~nemo_pc.modules.aed_decoder_ctc.BeamCTC` keeps each frame's
most likely tokens): each state's arcs are found by binary search over the arcs sorted by (state, token), level by
level down the back-off chain, so a step costs ``states * K * order`` look-ups. Its scores and next states are the
NGPU-LM's own for those tokens (``tests/parts/test_ngram_lm_subset.py`` compares them); it keeps the NGPU-LM's
interface (``get_init_states``, ``advance``, ``get_final``, ``vocab_size``), so NeMo's ``BatchedBeamCTCComputer``
reads it as a fusion model over the reduced vocabulary.
"""

from __future__ import annotations

import torch


class ArcIndex:
    """An NGPU-LM's arcs sorted by ``state * (V + 1) + token``: built once per LM (:func:`arc_index`)."""

    def __init__(self, lm) -> None:
        starts, ends = lm.start_end_arcs.long().unbind(dim=1)
        counts = ends - starts
        states = torch.repeat_interleave(torch.arange(len(starts)), counts)
        first = torch.cumsum(counts, 0) - counts  # each state's first place in ``states``
        arc_ids = starts[states] + torch.arange(len(states)) - first[states]
        self.stride = int(lm.vocab_size) + 1
        keys = states * self.stride + lm.ilabels.long()[arc_ids]
        self.keys, order = torch.sort(keys)
        self.order = arc_ids[order]

    def find(self, states: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """For every state of ``states`` ``(N,)`` and token of ``tokens`` ``(K,)``: whether the state has an arc
        for the token ``(N, K)``, and that arc's index (meaningless where it has none)."""
        keys = states.long()[:, None] * self.stride + tokens.long()[None, :]
        where = torch.searchsorted(self.keys, keys).clamp(max=len(self.keys) - 1)
        return self.keys[where] == keys, self.order[where]


def arc_index(lm) -> ArcIndex:
    """The :class:`ArcIndex` of ``lm``, built on the first call and kept on the LM object."""
    index = getattr(lm, "_nemo_pc_arc_index", None)
    if index is None:
        index = ArcIndex(lm)
        lm._nemo_pc_arc_index = index
    return index


class SubsetNgramLM:
    """``lm`` (an ``NGramGPULanguageModel``) over the tokens ``tokens`` ``(K,)`` of its vocabulary: token
    ``k`` of this model is ``tokens[k]`` of the LM; states are the LM's."""

    def __init__(self, lm, tokens: torch.Tensor) -> None:
        if tokens.ndim != 1 or (len(tokens) and (int(tokens.min()) < 0 or int(tokens.max()) >= lm.vocab_size)):
            raise ValueError(f"tokens must be a 1-d tensor of ids below the LM's {lm.vocab_size}")
        self.lm, self.tokens, self.index = lm, tokens.long(), arc_index(lm)
        self.vocab_size = len(tokens)

    def to(self, device) -> SubsetNgramLM:
        self.lm.to(device)
        self.tokens = self.tokens.to(device)
        self.index.keys, self.index.order = self.index.keys.to(device), self.index.order.to(device)
        return self

    def get_init_states(self, batch_size: int, bos: bool = True) -> torch.Tensor:
        return self.lm.get_init_states(batch_size=batch_size, bos=bos)

    def get_final(self, states: torch.Tensor) -> torch.Tensor:
        return self.lm.get_final(states)

    def advance(self, states: torch.Tensor, eos_id: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores ``(N, K)`` and next states ``(N, K)`` of ``tokens`` from each of ``states`` ``(N,)``, as the LM's
        ``advance`` gives them for those columns (a token no level of the chain has: score 0, state -1)."""
        if eos_id is not None:
            raise ValueError("SubsetNgramLM scores tokens only; the end of sentence is get_final's")
        lm, count = self.lm, len(states)
        current = states.clone()
        shape, device = (count, self.vocab_size), states.device
        scores = torch.zeros(shape, device=device)
        next_states = torch.full(shape, -1, dtype=states.dtype, device=device)
        pending = torch.ones(shape, dtype=torch.bool, device=device)
        backoff = torch.zeros(count, device=device)
        active = torch.ones(count, dtype=torch.bool, device=device)  # the chain has not passed the start state
        for _ in range(lm.max_order + 1):
            found, arcs = self.index.find(current, self.tokens)
            found &= pending & active[:, None]
            scores = torch.where(found, backoff[:, None] + lm.arcs_weights.detach()[arcs], scores)
            next_states = torch.where(found, lm.to_states[arcs].to(states.dtype), next_states)
            pending &= ~found
            active &= current != lm.START_STATE
            if not bool(active.any()):
                break
            backoff += lm.backoff_weights.detach()[current] * active
            current = torch.where(active, lm.backoff_to_states[current], current)
        return scores, next_states
