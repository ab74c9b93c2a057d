"""The AED's decoder as a non-autoregressive CTC head (:mod:`nemo_pc.models.mixins.aed_decoder_ctc` puts it on the
model).

A copy of the AED's Whisper decoder reads, after the mode prompt (``<|startoftranscript|> <mode>``), one query per
group of ``stack`` encoder frames: a projection of the group (started as its mean, scaled to the size of the
decoder's token embeddings) plus the decoder's learned position. Its self-attention sees every position (no causal
mask), its cross-attention reads the encoder's states as the AED's does, and each query's output is a CTC
distribution over Whisper's tokens and a blank. One network writes both modes, read from the prompt (papers/000's
conditioned predictor, made a CTC head); the outputs are independent given the audio, as CTC's are, and the whole
utterance is one pass. The output rows start as the AED's; the vocabulary is Whisper's 50k tokens, of which the loss
and decoding read those the head may write (``token_counts``, counted over its training targets, and
``extra_tokens``, those of its training transcripts and extra texts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from nemo_pc.modules.token_rows import TokenRows


class DecoderCTCHead(TokenRows):
    """The parts of the head beside the decoder copy: the queries and the CTC output.

    Args:
        frame_dim: the width of the states it reads (the AED's cross-attention states).
        width: the decoder's hidden size.
        vocab_size: the AED's output rows.
        stack: encoder frames per query.
    """

    def __init__(self, frame_dim: int, width: int, vocab_size: int, stack: int = 4) -> None:
        super().__init__()
        if stack < 1:
            raise ValueError(f"decoder_ctc.stack must be at least 1, got {stack}")
        self.stack, self.frame_dim = stack, frame_dim
        self.query = nn.Linear(frame_dim * stack, width)
        self.query_scale = nn.Parameter(torch.tensor(1.0))
        self._add_token_rows(vocab_size, width)

    def start_from(self, embedding: torch.Tensor, out_rows: torch.Tensor) -> None:
        """The start of training: queries as the mean of their frames at the token embeddings' size (``embedding``:
        the decoder's token rows), output rows ``out_rows`` (the AED's), zero biases and blank."""
        width = self.query.weight.shape[0]
        with torch.no_grad():
            self.query.weight.copy_(torch.eye(width, self.frame_dim).repeat(1, self.stack) / self.stack)
            self.query.bias.zero_()
            self.query_scale.fill_(float(embedding.norm(dim=1).mean()) / self.frame_dim**0.5)
            self.token_out.copy_(out_rows)
            self.token_bias.zero_()
            nn.init.zeros_(self.blank_out.weight)
            nn.init.zeros_(self.blank_out.bias)

    def queries(self, states: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, T, D)`` states (zero past each length) as ``(B, ceil(T / stack), width)`` queries and their
        lengths."""
        steps = -(-states.shape[1] // self.stack)
        padded = states.new_zeros(states.shape[0], steps * self.stack, states.shape[2])
        padded[:, : states.shape[1]] = states
        grouped = padded.reshape(states.shape[0], steps, self.stack * states.shape[2])
        return self.query(grouped) * self.query_scale, -(-lengths // self.stack)

    def log_probs(self, hidden: torch.Tensor, vocab: torch.Tensor) -> torch.Tensor:
        """CTC log-probabilities ``(B, T, len(vocab) + 1)`` over the token ids ``vocab`` and the blank (last), in
        float32 under bfloat16 autocast too (the products may run in bfloat16; the softmax's normalizer does not)."""
        tokens = hidden @ self.token_out[vocab].T + self.token_bias[vocab]
        return torch.cat([tokens, self.blank_out(hidden)], dim=-1).float().log_softmax(-1)


def decoder_ctc_hidden(
    decoder: nn.Module,
    prompts: torch.Tensor,
    queries: torch.Tensor,
    lengths: torch.Tensor,
    states: torch.Tensor,
    mask: torch.Tensor,
    blocks: Sequence[int] | None = None,
    condition: Callable[[int, torch.Tensor], torch.Tensor | None] | None = None,
) -> list[torch.Tensor]:
    """The decoder's output ``(B, T, width)`` at each query after each of ``blocks`` (1-based; default: the last),
    each through the decoder's final layer norm as its output is: ``prompts`` ``(B, P)`` token ids, then ``queries``
    ``(B, T, width)`` (``lengths`` valid), every position seeing every other, attending to ``states``
    ``(B, T_enc, D)`` under ``mask``. ``decoder`` is NeMo's ``TransformerDecoderNM`` (``_embedding``, ``_decoder``).

    ``condition(block, output)``, where given, is called with each of ``blocks`` but the last and its output; a
    ``(B, T, width)`` tensor it returns is added to the queries' states before the next block (self-conditioned CTC:
    the next blocks read what an intermediate CTC wrote), ``None`` adds nothing.

    Raises:
        ValueError: more positions than the decoder has (the message says how to fit), or a block out of range.
    """
    from nemo.collections.asr.modules.transformer.transformer_decoders import form_attention_mask

    embedding, body = decoder._embedding, decoder._decoder
    count = len(body.layers)
    blocks = [count] if blocks is None else list(blocks)
    if any(not 1 <= block <= count for block in blocks):
        raise ValueError(f"decoder_ctc: blocks must be in [1, {count}], got {blocks}")
    width, steps = prompts.shape[1], queries.shape[1]
    limit = embedding.position_embedding.num_embeddings
    if width + steps > limit:
        raise ValueError(
            f"{steps} decoder_ctc queries and the {width}-token prompt exceed the decoder's {limit} positions: "
            "raise decoder_ctc.stack or cut the audio"
        )
    positions = torch.arange(width + steps, device=queries.device)
    hidden = torch.cat([embedding.token_embedding(prompts), queries], dim=1) + embedding.position_embedding(positions)
    valid = (positions[None] < width + lengths[:, None]).to(hidden.dtype)
    self_mask = form_attention_mask(valid)  # no diagonal: no causal mask
    cross_mask = form_attention_mask(mask.to(hidden.dtype))
    final = body.final_layer_norm if body.final_layer_norm is not None else nn.Identity()
    out = {}
    for index, layer in enumerate(body.layers[: max(blocks)], start=1):
        hidden, _ = layer(hidden, self_mask, hidden, states, cross_mask)
        if index in blocks:
            out[index] = final(hidden)[:, width:]
            added = condition(index, out[index]) if condition is not None and index < max(blocks) else None
            if added is not None:
                hidden = torch.cat([hidden[:, :width], hidden[:, width:] + added], dim=1)
    return [out[block] for block in blocks]


def greedy_ctc(log_probs: torch.Tensor, lengths: torch.Tensor) -> list[list[int]]:
    """Greedy CTC: per utterance the best index per frame, repeats merged, blanks (the last index) dropped."""
    blank, out = log_probs.shape[-1] - 1, []
    for row, length in zip(log_probs.argmax(-1).tolist(), lengths.tolist(), strict=True):
        ids, previous = [], None
        for index in row[:length]:
            if index != previous and index != blank:
                ids.append(index)
            previous = index
        out.append(ids)
    return out


def frame_candidates(log_probs: torch.Tensor, lengths: torch.Tensor, top_k: int) -> torch.Tensor:
    """The sorted indices (blank excluded, the last index) that are among the ``top_k`` most likely of some frame
    within ``lengths`` of ``log_probs`` ``(B, T, V + 1)``: the tokens a pruned beam search may write."""
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    tokens = log_probs[..., :-1]
    best = tokens.topk(min(top_k, tokens.shape[-1]), dim=-1).indices  # (B, T, k)
    inside = torch.arange(log_probs.shape[1], device=lengths.device)[None] < lengths[:, None]
    return torch.unique(best[inside.to(best.device)])


class BeamCTC:
    """Batched CTC beam search (NeMo's ``BatchedBeamCTCComputer``, the search of ``BeamBatchedCTCInfer``) over
    log-probabilities whose last index is the blank, with an optional n-gram LM over the other indices (an NGPU-LM
    ``.nemo`` or ARPA file whose token ids are those indices) at weight ``alpha`` and ``beta`` added per emitted token
    (NeMo's ``beam_beta``).

    ``top_k``: the search of a batch reads only the tokens among the ``top_k`` most likely of one of its frames
    (:func:`frame_candidates`), and the LM scores only those (:class:`~nemo_pc.parts.ngram_lm_subset.SubsetNgramLM`):
    over the head's 32k tokens this is what makes LM fusion affordable on CPU. None reads every token.
    """

    def __init__(
        self,
        vocab_size: int,
        beam_size: int,
        lm: str | None = None,
        alpha: float = 0.0,
        beta: float = 1.0,
        top_k: int | None = None,
    ):
        if beam_size < 1 or alpha < 0 or (top_k is not None and top_k < 1):
            raise ValueError(
                f"the beam size and top_k must be >= 1 and the LM weight >= 0, got {beam_size}, {top_k} and {alpha}"
            )
        self.key = (vocab_size, beam_size, str(lm) if lm and alpha else None, float(alpha), float(beta), top_k)
        self.lm = None  # the NGPU-LM, loaded on the first call

    def _language_model(self):
        if self.lm is None:
            from nemo.collections.asr.parts.submodules.ngram_lm import NGramGPULanguageModel

            self.lm = NGramGPULanguageModel.from_file(lm_path=self.key[2], vocab_size=self.key[0])
        return self.lm

    def __call__(self, log_probs: torch.Tensor, lengths: torch.Tensor) -> list[list[int]]:
        """The best path's indices per utterance, blanks and repeats removed (as :func:`greedy_ctc` returns them)."""
        from nemo.collections.asr.parts.submodules.ctc_batched_beam_decoding import BatchedBeamCTCComputer

        from nemo_pc.parts.ngram_lm_subset import SubsetNgramLM

        vocab_size, beam_size, lm, alpha, beta, top_k = self.key
        if log_probs.shape[-1] != vocab_size + 1:
            raise ValueError(f"log_probs: {log_probs.shape[-1]} outputs; the search reads {vocab_size} and a blank")
        log_probs, tokens = log_probs.float(), None
        if top_k is not None:
            tokens = frame_candidates(log_probs, lengths, top_k)
            log_probs = torch.cat([log_probs[..., tokens], log_probs[..., -1:]], dim=-1)
        fusion = None
        if lm is not None:
            fusion = [self._language_model() if tokens is None else SubsetNgramLM(self._language_model(), tokens)]
        search = BatchedBeamCTCComputer(
            blank_index=log_probs.shape[-1] - 1,
            beam_size=beam_size,
            fusion_models=fusion,
            fusion_models_alpha=[alpha] if fusion else None,
            beam_beta=beta,
            allow_cuda_graphs=False,
        )
        with torch.inference_mode():
            hyps = search(log_probs, lengths).to_hyps_list(score_norm=False)[: len(lengths)]
        out = [torch.as_tensor(hyp.y_sequence, dtype=torch.long).cpu() for hyp in hyps]
        if tokens is not None:
            out = [tokens.cpu()[ids] for ids in out]
        return [ids.tolist() for ids in out]
