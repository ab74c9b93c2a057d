"""The token-and-duration transducer (TDT) loss in plain PyTorch, one vectorized step per encoder frame.

NeMo's TDT losses run on CUDA only (the numba kernel, and the "pytorch" reference, which allocates on CUDA). This
one runs on any device, so TDT variants train in CPU tests. With label log-probabilities e (after the logit
under-normalization σ), blank log-probabilities b and duration log-probabilities D_d, the forward variable is

    α(t, u) = logsumexp[ C(t, u),  α(t, u−1) + e(t, u−1) + D_0(t, u−1) ]     (the second term when 0 is a duration)
    C(t, u) = logsumexp over durations d ≥ 1 of  α(t−d, u) + b(t−d, u) + D_d(t−d, u)  and
              α(t−d, u−1) + e(t−d, u−1) + D_d(t−d, u−1),

so, as in :mod:`nemo_pc.losses.rnnt_scan`, each frame is a cumulative sum and a ``torch.logcumsumexp`` over u. The
log-likelihood sums the final blanks of every duration d ≥ 1 that ends at the last frame.
"""

from __future__ import annotations

import torch

NEG_INF = -1e30


def tdt_loss_scan(
    logits: torch.Tensor,
    targets: torch.Tensor,
    input_lengths: torch.Tensor,
    target_lengths: torch.Tensor,
    blank: int,
    durations: list[int],
    sigma: float = 0.0,
) -> torch.Tensor:
    """Per-utterance TDT negative log-likelihood.

    Args:
        logits: joint outputs ``(B, T, U + 1, V + len(durations))``: token logits (blank included) then duration
            logits, before or after a log-softmax over all of them.
        targets: label ids ``(B, U)``.
        input_lengths: frames per utterance ``(B,)``.
        target_lengths: labels per utterance ``(B,)``.
        blank: the blank id.
        durations: the durations of the duration outputs, in order (e.g. ``[0, 1, 2, 3, 4]``).
        sigma: the logit under-normalization of the TDT paper, subtracted from every token log-probability.

    Returns:
        ``(B,)`` losses.
    """
    if not durations or min(durations) < 0 or not any(d > 0 for d in durations):
        raise ValueError(f"durations must be non-negative and include one above 0, got {durations}")
    batch, frames, width, _ = logits.shape
    logits = logits.float()
    token_lp = logits[..., : -len(durations)].log_softmax(dim=-1) - sigma
    duration_lp = logits[..., -len(durations) :].log_softmax(dim=-1)  # (B, T, U + 1, N)
    blank_lp = token_lp[..., blank]  # (B, T, U + 1)
    labels = targets[:, : width - 1].long().clamp(0, token_lp.shape[-1] - 1)
    index = labels[:, None, :, None].expand(batch, frames, width - 1, 1)
    emit_lp = token_lp[:, :, : width - 1, :].gather(-1, index)[..., 0]  # (B, T, U)
    skips = [(n, d) for n, d in enumerate(durations) if d > 0]
    stay = durations.index(0) if 0 in durations else None
    if stay is not None:
        step = emit_lp + duration_lp[:, :, : width - 1, stay]
        prefix = torch.cat([emit_lp.new_zeros(batch, frames, 1), step.cumsum(dim=-1)], dim=-1)
    edge = emit_lp.new_full((batch, 1), NEG_INF)
    alphas: list[torch.Tensor] = []
    for t in range(frames):
        if t == 0:
            arrivals = torch.cat([emit_lp.new_zeros(batch, 1), emit_lp.new_full((batch, width - 1), NEG_INF)], -1)
        else:
            terms = []
            for n, d in skips:
                if t - d < 0:
                    continue
                source = alphas[t - d]
                terms.append(source + blank_lp[:, t - d] + duration_lp[:, t - d, :, n])
                emitted = source[:, :-1] + emit_lp[:, t - d] + duration_lp[:, t - d, :-1, n]
                terms.append(torch.cat([edge, emitted], dim=-1))
            arrivals = torch.logsumexp(torch.stack(terms), dim=0) if terms else edge.expand(batch, width)
        if stay is not None:
            arrivals = prefix[:, t] + torch.logcumsumexp(arrivals - prefix[:, t], dim=-1)
        alphas.append(arrivals)
    alpha = torch.stack(alphas, dim=1)  # (B, T, U + 1)
    rows = torch.arange(batch, device=logits.device)
    last_u = target_lengths.long().clamp(max=width - 1)
    ends = []
    for n, d in skips:
        t = input_lengths.long() - d
        valid = t >= 0
        t = t.clamp(min=0)
        term = alpha[rows, t, last_u] + blank_lp[rows, t, last_u] + duration_lp[rows, t, last_u, n]
        ends.append(torch.where(valid, term, torch.full_like(term, NEG_INF)))
    return -torch.logsumexp(torch.stack(ends), dim=0)
