"""A transducer on a P&C AED: the prediction network is a copy of the AED's Whisper decoder, the joint adds that
decoder's own next-token logits (:mod:`nemo_pc.models.mixins.aed_transducer` puts them on the model).

The prediction network reads the mode prompt of the AED (``<|startoftranscript|> <mode>``) and the tokens written so
far, so one network is conditioned on the mode as papers/000's conditioned predictor is; ``dual`` gives each mode a
copy of its own (papers/000's two decoders). With ``cross_attention`` its blocks attend to the encoder's states as
the AED's do (the transducer/AED hybrid of Tang et al. 2023, TAED); without it they read one zero frame, and the
network sees the labels alone (a transducer in papers/000's sense).

The joint is ``tanh(W_f f_t + W_g g_u)`` with an output row per token of the AED's vocabulary (started from the
AED's output rows), a blank row, and ``lm_scale`` times the decoder's own logits of ``g_u`` added, so that decoding
reads the language the decoder knows. The vocabulary is Whisper's 50k tokens: each training step's loss runs over a
sample of them (the batch's targets, the most frequent and some drawn at random: :func:`sample_vocabulary`), and
decoding reads the tokens the transducer has learned (``token_counts``, counted over its training targets) and the
tokens of an extra text (``extra_tokens``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn

from nemo_pc.losses.pruned_rnnt import node_occupancy, prune_ranges, pruned_lattice, simple_lattice
from nemo_pc.losses.rnnt_scan import rnnt_lattice_loss
from nemo_pc.modules.decoder_cache import DecoderCache
from nemo_pc.modules.token_rows import TokenRows


class TransducerJoint(TokenRows):
    """The joint over the AED's vocabulary, with the decoder's logits added.

    Args:
        frame_dim: the width of the states it reads (the AED's cross-attention states).
        width: the prediction network's width (the decoder's hidden size).
        vocab_size: the AED's output rows.
        stack: encoder frames joined into one joint frame.
        lm_scale: the weight of the decoder's own logits; 0 leaves them out.
    """

    def __init__(self, frame_dim: int, width: int, vocab_size: int, stack: int = 2, lm_scale: float = 1.0) -> None:
        super().__init__()
        if stack < 1:
            raise ValueError(f"transducer.stack must be at least 1, got {stack}")
        self.stack, self.lm_scale = stack, float(lm_scale)
        self.enc = nn.Linear(frame_dim * stack, width)
        self.pred = nn.Linear(width, width)
        self._add_token_rows(vocab_size, width)

    def frames(self, states: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, T, D)`` states as ``(B, ceil(T / stack), width)`` joint inputs and their lengths."""
        steps = -(-states.shape[1] // self.stack)
        padded = states.new_zeros(states.shape[0], steps * self.stack, states.shape[2])
        padded[:, : states.shape[1]] = states
        return self.enc(padded.reshape(states.shape[0], steps, -1)), -(-lengths // self.stack)

    def forward(
        self, f: torch.Tensor, g: torch.Tensor, lm_head: nn.Linear | None, vocab: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits ``(B, T, U, V' + 1)`` of ``f`` ``(B, T, width)`` and ``g`` ``(B, U, width)`` over ``vocab``
        (token ids; every token when None), the blank last. ``lm_head``: the decoder's output layer (its logits of
        ``g`` are added, times ``lm_scale``); None leaves them out."""
        token_out = self.token_out if vocab is None else self.token_out[vocab]
        token_bias = self.token_bias if vocab is None else self.token_bias[vocab]
        z = torch.tanh(f[:, :, None] + self.pred(g)[:, None])
        tokens = z @ token_out.T + token_bias
        if self.lm_scale and lm_head is not None:
            weight = lm_head.weight if vocab is None else lm_head.weight[vocab]
            bias = lm_head.bias if vocab is None else lm_head.bias[vocab]
            tokens = tokens + self.lm_scale * (g @ weight.T + bias)[:, None]
        return torch.cat([tokens, self.blank_out(z)], dim=-1)

    def lattice(
        self, f: torch.Tensor, g: torch.Tensor, lm_head: nn.Linear | None, vocab: torch.Tensor, labels: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The RNN-T lattice's log-probabilities over ``vocab`` and the blank, as
        :func:`~nemo_pc.losses.rnnt_scan.rnnt_lattice_loss` reads them: of the blank ``(B, T, U + 1)`` and of each
        next label ``(B, T, U)`` (``labels`` ``(B, U)``: positions in ``vocab``), for ``f`` ``(B, T, width)`` and ``g``
        ``(B, U + 1, width)``. The same values as the log-softmax of :meth:`forward`, without its whole output: the
        bias and the decoder's logits (which vary with u only) are added once in place, the softmax's normalizer is a
        log-sum-exp and the blank joins it by ``logaddexp``."""
        batch, width_u, frames = g.shape[0], g.shape[1], f.shape[1]
        rowwise = self._rowwise(g, lm_head, vocab)
        z = torch.tanh(self.pred(g)[:, :, None] + f[:, None])  # (B, U + 1, T, width)
        tokens = (z.reshape(-1, z.shape[-1]) @ self.token_out[vocab].T).float().view(batch, width_u, frames, -1)
        tokens = tokens.add_(rowwise[:, :, None])  # float32 from here under bfloat16 autocast too
        blank = self.blank_out(z)[..., 0].float()  # (B, U + 1, T)
        norm = torch.logaddexp(torch.logsumexp(tokens, dim=-1), blank)
        index = labels[:, : width_u - 1, None, None].expand(batch, width_u - 1, frames, 1)
        emit = tokens[:, : width_u - 1].gather(-1, index)[..., 0] - norm[:, : width_u - 1]
        return (blank - norm).transpose(1, 2), emit.transpose(1, 2)

    def _rowwise(self, g: torch.Tensor, lm_head: nn.Linear | None, vocab: torch.Tensor) -> torch.Tensor:
        """The logits' terms that vary with the label position only ``(B, U + 1, V')``: the bias over ``vocab`` and,
        with ``lm_head``, the decoder's own logits times ``lm_scale``."""
        rowwise = self.token_bias[vocab].expand(g.shape[0], g.shape[1], -1)
        if self.lm_scale and lm_head is not None:
            rowwise = rowwise + self.lm_scale * (g @ lm_head.weight[vocab].T + lm_head.bias[vocab])
        return rowwise

    def simple_logits(
        self, f: torch.Tensor, g: torch.Tensor, lm_head: nn.Linear | None, vocab: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The joint without its ``tanh``, split into a frame part ``(B, T, V' + 1)`` and a label-state part
        ``(B, U + 1, V' + 1)`` (the blank last) whose sum is its logits: what the pruned loss's simple lattice reads
        (:func:`~nemo_pc.losses.pruned_rnnt.simple_lattice`), with this joint's own weights."""
        token_out = self.token_out[vocab]
        blank_w = self.blank_out.weight[0]
        am = torch.cat([f @ token_out.T, (f @ blank_w)[..., None] + self.blank_out.bias], dim=-1)
        p = self.pred(g)
        lm_tokens = p @ token_out.T + self._rowwise(g, lm_head, vocab)
        return am.float(), torch.cat([lm_tokens, (p @ blank_w)[..., None]], dim=-1).float()

    def window_lattice(
        self,
        f: torch.Tensor,
        g: torch.Tensor,
        lm_head: nn.Linear | None,
        vocab: torch.Tensor,
        labels: torch.Tensor,
        starts: torch.Tensor,
        size: int,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`lattice`'s log-probabilities on each frame's window of ``size`` label positions only (from
        ``starts`` ``(B, T)``): blank and next label, each ``(B, T, size)``; positions past the labels read the last
        one (their values are cut away by :func:`~nemo_pc.losses.pruned_rnnt.pruned_lattice`)."""
        batch, frames = f.shape[:2]
        width_u = g.shape[1]
        position = (starts[..., None] + torch.arange(size, device=f.device)).clamp(max=width_u - 1)  # (B, T, S)
        flat = position.reshape(batch, -1)
        rowwise = self._rowwise(g, lm_head, vocab)
        p = self.pred(g)
        p_win = p.gather(1, flat[..., None].expand(-1, -1, p.shape[-1])).view(batch, frames, size, -1)
        z = torch.tanh(f[:, :, None] + p_win)  # (B, T, S, width)
        tokens = (z.reshape(-1, z.shape[-1]) @ self.token_out[vocab].T).float().view(batch, frames, size, -1)
        row_win = rowwise.gather(1, flat[..., None].expand(-1, -1, rowwise.shape[-1]))
        tokens = tokens.add_(row_win.view(batch, frames, size, -1))  # float32 under bfloat16 autocast too
        blank = self.blank_out(z)[..., 0].float()
        norm = torch.logaddexp(torch.logsumexp(tokens, dim=-1), blank)
        label = labels.gather(1, flat.clamp(max=max(labels.shape[1] - 1, 0))).view(batch, frames, size)
        emit = tokens.gather(-1, label[..., None])[..., 0] - norm
        return blank - norm, emit


class TransducerPredictor(nn.Module):
    """Copies of the AED's decoder as prediction networks: one for every mode (``conditioned``), or one per mode
    (``dual``).

    Args:
        decoder: the AED's decoder (a ``TransformerDecoderNM``), copied.
        decoders: ``conditioned`` or ``dual``.
        cross_attention: the blocks attend to the encoder's states (else to one zero frame).
    """

    VARIANTS = ("conditioned", "dual")

    def __init__(self, decoder: nn.Module, decoders: str = "conditioned", cross_attention: bool = True) -> None:
        super().__init__()
        if decoders not in self.VARIANTS:
            raise ValueError(f"transducer.decoders must be one of {self.VARIANTS}, got {decoders!r}")
        self.variant, self.cross_attention = decoders, bool(cross_attention)
        count = 2 if decoders == "dual" else 1
        self.decoders = nn.ModuleList(copy.deepcopy(decoder) for _ in range(count))

    def decoder(self, mode: int) -> nn.Module:
        return self.decoders[mode if self.variant == "dual" else 0]

    def frozen_names(self, embedding: bool, layers: int) -> set[str]:
        """The names (under this module) of the copies' weights that stay as the AED's: the embeddings with
        ``embedding``, and the lower ``layers`` blocks (NeMo's ``TransformerDecoderNM``: ``_embedding``,
        ``_decoder.layers``).

        Raises:
            ValueError: ``layers`` out of range.
        """
        blocks = len(self.decoders[0]._decoder.layers)
        if not 0 <= layers <= blocks:
            raise ValueError(f"transducer.frozen_layers must be in [0, {blocks}], got {layers}")
        prefixes = (("_embedding.",) if embedding else ()) + tuple(f"_decoder.layers.{i}." for i in range(layers))
        return {
            f"decoders.{index}.{name}"
            for index, copy_ in enumerate(self.decoders)
            for name, _ in copy_.named_parameters()
            if name.startswith(prefixes)
        }

    def copy_from(self, decoder: nn.Module) -> None:
        """Every copy takes ``decoder``'s weights."""
        state = decoder.state_dict()
        for copy_ in self.decoders:
            copy_.load_state_dict(state)

    def forward(
        self,
        mode: int,
        prefix: torch.Tensor,
        prefix_mask: torch.Tensor,
        states: torch.Tensor,
        mask: torch.Tensor,
        mems: list | None = None,
    ) -> torch.Tensor:
        """The decoder's state after each prefix token ``(B, L, width)``; with ``mems`` (and ``return_mems`` set on
        the decoder, as :func:`greedy` does) the cached states with the last prefix token's added."""
        if not self.cross_attention:
            states = states.new_zeros(states.shape[0], 1, states.shape[2])
            mask = mask.new_ones(mask.shape[0], 1)
        return self.decoder(mode)(
            input_ids=prefix,
            decoder_mask=prefix_mask.to(states.dtype),
            encoder_embeddings=states,
            encoder_mask=mask.to(states.dtype),
            decoder_mems=mems,
        )

    def cache(self, mode: int, prompt: Sequence[int], states: torch.Tensor, mask: torch.Tensor) -> DecoderCache:
        """The :class:`DecoderCache` of ``mode``'s decoder over a batch, each prefix started with ``prompt``."""
        if not self.cross_attention:
            states = states.new_zeros(states.shape[0], 1, states.shape[2])
            mask = mask.new_ones(mask.shape[0], 1)
        return DecoderCache(self.decoder(mode), prompt, states, mask)


def sample_vocabulary(
    targets: Sequence[Sequence[int]], frequent: torch.Tensor, pool: torch.Tensor, extra: int, generator=None
) -> torch.Tensor:
    """The token ids one training step's loss runs over, sorted: every target of the batch, ``frequent`` and
    ``extra`` more drawn from ``pool`` (without repeats)."""
    chosen = {int(token) for row in targets for token in row} | set(frequent.tolist())
    rest = [token for token in pool.tolist() if token not in chosen] if extra else []
    if rest:
        chosen |= {rest[i] for i in torch.randperm(len(rest), generator=generator)[:extra].tolist()}
    return torch.tensor(sorted(chosen), dtype=torch.long)


def transducer_loss(
    joint: TransducerJoint,
    f: torch.Tensor,
    f_len: torch.Tensor,
    g: torch.Tensor,
    lm_head: nn.Linear | None,
    targets: Sequence[Sequence[int]],
    vocab: torch.Tensor,
    prune: int = 0,
    simple_scale: float = 0.5,
) -> torch.Tensor:
    """Per-row RNN-T loss ``(B,)`` over the tokens of ``vocab``: ``g`` ``(B, U + 1, width)`` holds the state after
    the mode token and after each target token; ``lm_head`` as :meth:`TransducerJoint.forward` reads it.

    ``prune`` > 0 (and fewer than the label positions): the pruned loss (:mod:`nemo_pc.losses.pruned_rnnt`) on
    windows of ``prune`` label positions, plus ``simple_scale`` times the simple joint's loss that picks them."""
    position = torch.full((joint.vocab_size,), -1, dtype=torch.long, device=f.device)
    position[vocab] = torch.arange(len(vocab), device=f.device)
    width = max(1, max(len(row) for row in targets))
    y = torch.zeros(len(targets), width, dtype=torch.long, device=f.device)
    for row, ids in enumerate(targets):
        if ids:
            y[row, : len(ids)] = position[torch.tensor(ids, device=f.device)]
    y_len = torch.tensor([len(row) for row in targets], device=f.device)
    g = g[:, : width + 1]
    if not prune or prune >= width + 1:
        blank_lp, emit_lp = joint.lattice(f, g, lm_head, vocab, y)
        return rnnt_lattice_loss(blank_lp, emit_lp, f_len, y_len)
    am, lm = joint.simple_logits(f, g, lm_head, vocab)
    simple_blank, simple_emit = simple_lattice(am, lm, y)
    simple = rnnt_lattice_loss(simple_blank, simple_emit, f_len, y_len)
    starts = prune_ranges(node_occupancy(simple_blank, simple_emit, f_len, y_len), f_len, y_len, prune)
    blank_win, emit_win = joint.window_lattice(f, g, lm_head, vocab, y, starts, prune)
    blank_lp, emit_lp = pruned_lattice(blank_win, emit_win, starts, width + 1)
    return rnnt_lattice_loss(blank_lp, emit_lp, f_len, y_len) + simple_scale * simple


@torch.no_grad()
def greedy(
    predictor: TransducerPredictor,
    joint: TransducerJoint,
    lm_head: nn.Module | None,
    mode: int,
    prompt: Sequence[int],
    states: torch.Tensor,
    length: int,
    max_symbols: int = 5,
    max_repeats: int = 0,
) -> list[int]:
    """:func:`greedy_batch` of one utterance's states ``(T, D)``, ``length`` of them valid."""
    lengths = torch.tensor([length], device=states.device)
    return greedy_batch(predictor, joint, lm_head, mode, prompt, states[None], lengths, max_symbols, max_repeats)[0]


@torch.no_grad()
def greedy_batch(
    predictor: TransducerPredictor,
    joint: TransducerJoint,
    lm_head: nn.Module | None,
    mode: int,
    prompt: Sequence[int],
    states: torch.Tensor,
    lengths: torch.Tensor,
    max_symbols: int = 5,
    max_repeats: int = 0,
) -> list[list[int]]:
    """Greedy transducer decoding of a batch's states ``(B, T, D)``: each utterance's token ids, at most
    ``max_symbols`` per joint frame and two per joint frame in all, over the tokens of :meth:`TransducerJoint.kept`.
    With ``max_repeats`` > 0 a token that would follow that many copies of itself ends the frame as a blank would: a
    joint led by the decoder's logits can otherwise write one token over and over until the limit (0: no such rule).

    Each utterance walks its own frames; every step scores one (frame, state) pair per unfinished utterance in one
    matrix product over the kept tokens' rows (gathered once), so the weights are read once per step for the whole
    batch. The decoder's states are cached per utterance (:class:`DecoderCache`, NeMo's ``decoder_mems`` with each
    prefix at its own length), so the utterances that wrote a token in a step take one decoder step together, and the
    decoder's logits of a state (its part of the joint) are computed once per written token. The result equals
    decoding each utterance alone."""
    device, batch = states.device, states.shape[0]
    f, f_len = joint.frames(states, lengths)
    kept = torch.nonzero(joint.kept()).squeeze(1)
    if not len(kept):  # nothing learned yet: every frame is blank
        return [[] for _ in range(batch)]
    token_out, token_bias = joint.token_out[kept], joint.token_bias[kept]
    lm_weight = lm_head.weight[kept] if joint.lm_scale and lm_head is not None else None
    lm_bias = lm_head.bias[kept] if lm_weight is not None else None
    outs: list[list[int]] = [[] for _ in range(batch)]
    frame, emitted = [0] * batch, [0] * batch
    limit = [2 * int(n) for n in f_len]
    mask = (torch.arange(states.shape[1], device=device)[None, :] < lengths.to(device)[:, None]).to(states.dtype)
    cache = predictor.cache(mode, prompt, states, mask)
    g = cache.output  # (B, width): the last block's output for the last token
    pred = joint.pred(g)
    rowwise = token_bias.expand(batch, -1).clone()
    if lm_weight is not None:
        rowwise += joint.lm_scale * (g @ lm_weight.T + lm_bias)
    while True:
        active = [b for b in range(batch) if frame[b] < int(f_len[b])]
        if not active:
            break
        index = torch.tensor(active, device=device)
        frames = f[index, torch.tensor([frame[b] for b in active], device=device)]
        z = torch.tanh(frames + pred[index])
        tokens = z @ token_out.T + rowwise[index]
        blank = joint.blank_out(z)[:, 0]
        best_value, best = tokens.max(dim=-1)
        writes, written = [], []
        for k, b in enumerate(active):
            stop = emitted[b] >= max_symbols or len(outs[b]) >= limit[b]
            token = int(kept[best[k]])
            if max_repeats > 0 and len(outs[b]) >= max_repeats:
                stop = stop or all(previous == token for previous in outs[b][-max_repeats:])
            if stop or blank[k] > best_value[k]:  # a tie goes to the token
                frame[b], emitted[b] = frame[b] + 1, 0
                continue
            outs[b].append(token)
            emitted[b] += 1
            writes.append(b)
            written.append(token)
        if writes:
            changed = torch.tensor(writes, device=device)
            g_new = cache.step(changed, torch.tensor(written, device=device))
            pred[changed] = joint.pred(g_new)
            if lm_weight is not None:
                rowwise[changed] = token_bias + joint.lm_scale * (g_new @ lm_weight.T + lm_bias)
    return outs
