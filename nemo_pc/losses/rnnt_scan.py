"""An RNN-T loss in plain PyTorch whose forward is one vectorized step per encoder frame.

NeMo's CPU RNN-T losses walk the (t, u) lattice cell by cell: ``warprnnt_numba`` on CPU and ``pytorch`` both
cost seconds to tens of seconds per batch for small models. Along one frame t the forward variable obeys

    α(t, u) = logaddexp(α(t−1, u) + b(t−1, u), α(t, u−1) + e(t, u−1)),

with b the blank and e the label log-probabilities. Writing E(t, u) = Σ_{j<u} e(t, j), the whole row is

    α(t, u) = E(t, u) + logcumsumexp_k [α(t−1, k) + b(t−1, k) − E(t, k)]   (k ≤ u),

so each frame is a cumulative sum and a ``torch.logcumsumexp`` over u. Autograd gives the gradient. The loss is
exact (it equals NeMo's numba loss; tested), needs no compiler and runs on any device.
"""

from __future__ import annotations

import torch


def rnnt_loss_scan(
    logits: torch.Tensor,
    targets: torch.Tensor,
    input_lengths: torch.Tensor,
    target_lengths: torch.Tensor,
    blank: int,
) -> torch.Tensor:
    """Per-utterance RNN-T negative log-likelihood.

    Args:
        logits: joint outputs ``(B, T, U + 1, V)``, before or after log-softmax.
        targets: label ids ``(B, U)`` (padding anywhere past ``target_lengths``).
        input_lengths: frames per utterance ``(B,)``.
        target_lengths: labels per utterance ``(B,)``.
        blank: the blank id.

    Returns:
        ``(B,)`` losses.
    """
    batch, frames, width, vocab = logits.shape
    log_probs = logits.float().log_softmax(dim=-1)
    blank_lp = log_probs[..., blank]  # (B, T, U + 1)
    labels = targets[:, : width - 1].long().clamp(0, vocab - 1)
    index = labels[:, None, :, None].expand(batch, frames, width - 1, 1)
    emit_lp = log_probs[:, :, : width - 1, :].gather(-1, index)[..., 0]  # (B, T, U)
    return rnnt_lattice_loss(blank_lp, emit_lp, input_lengths, target_lengths)


def rnnt_lattice_loss(
    blank_lp: torch.Tensor, emit_lp: torch.Tensor, input_lengths: torch.Tensor, target_lengths: torch.Tensor
) -> torch.Tensor:
    """Per-utterance RNN-T negative log-likelihood from the lattice's log-probabilities alone: ``blank_lp``
    ``(B, T, U + 1)`` of the blank and ``emit_lp`` ``(B, T, U)`` of the next target at each node, for a joint that
    never materializes its whole output (:func:`rnnt_loss_scan` reads them from the joint's logits).

    Returns:
        ``(B,)`` losses.
    """
    batch, frames, width = blank_lp.shape
    zero = emit_lp.new_zeros(batch, frames, 1)
    prefix = torch.cat([zero, emit_lp.cumsum(dim=-1)], dim=-1)  # E(t, u), (B, T, U + 1)
    alpha = prefix[:, 0]
    rows = [alpha]
    for t in range(1, frames):
        carried = alpha + blank_lp[:, t - 1] - prefix[:, t]
        alpha = prefix[:, t] + torch.logcumsumexp(carried, dim=-1)
        rows.append(alpha)
    alphas = torch.stack(rows, dim=1)  # (B, T, U + 1)
    last_t = (input_lengths.long() - 1).clamp(min=0)
    last_u = target_lengths.long().clamp(max=width - 1)
    rows_index = torch.arange(batch, device=blank_lp.device)
    return -(alphas[rows_index, last_t, last_u] + blank_lp[rows_index, last_t, last_u])
