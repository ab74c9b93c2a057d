"""A pruned RNN-T loss (the method of Kuang et al. 2022, k2's ``rnnt_loss_pruned``) in plain PyTorch, on the lattice
form of :func:`~nemo_pc.losses.rnnt_scan.rnnt_lattice_loss`.

A joint network's output over the whole lattice is ``(B, T, U + 1, V)``. A "simple" joint whose logits are a sum
``am[t, v] + lm[u, v]`` costs only ``(B, T, V) + (B, U + 1, V)``, and its softmax normalizer over every node is one
batched product of ``exp(am)`` and ``exp(lm)``. Its loss's gradient gives each node's posterior occupancy, and from it
each frame keeps a window of ``size`` label positions (:func:`prune_ranges`: starting at 0, ending at the last label,
never moving back, and overlapping the next frame's, so that a path through the windows exists). The full joint is
then computed on those ``(B, T, size)`` nodes only, and every other node of the lattice takes log-probability
:data:`PRUNED` (its paths count for nothing).
"""

from __future__ import annotations

import torch

from nemo_pc.losses.rnnt_scan import rnnt_lattice_loss

PRUNED = -30.0
"""The log-probability of an arc outside the windows: e^-30 is nothing beside a kept path, and the scan's cumulative
sums stay small enough for float32 (a large negative constant would cancel badly in them)."""


def simple_lattice(am: torch.Tensor, lm: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The lattice of the joint ``am[t] + lm[u]``: log-probabilities of the blank ``(B, T, U + 1)`` and of each next
    label ``(B, T, U)``.

    Args:
        am: ``(B, T, V + 1)`` the frames' logits, the blank last.
        lm: ``(B, U + 1, V + 1)`` the label states' logits, the blank last.
        labels: ``(B, U)`` label ids in ``[0, V)``.
    """
    am_max = am.max(dim=-1, keepdim=True).values.detach()
    lm_max = lm.max(dim=-1, keepdim=True).values.detach()
    # normalizer of every node: log sum_v exp(am[t, v] + lm[u, v]), one batched product in exp space
    norm = torch.log(torch.bmm((am - am_max).exp(), (lm - lm_max).exp().transpose(1, 2)).clamp_min(1e-30))
    norm = norm + am_max + lm_max.transpose(1, 2)  # (B, T, U + 1)
    blank = am[..., -1:] + lm[..., -1].unsqueeze(1)  # (B, T, U + 1)
    width = labels.shape[1]
    am_label = am.gather(-1, labels[:, None, :].expand(-1, am.shape[1], -1))  # (B, T, U)
    lm_label = lm[:, :width].gather(-1, labels[..., None])[..., 0]  # (B, U)
    emit = am_label + lm_label[:, None] - norm[:, :, :width]
    return blank - norm, emit


def node_occupancy(
    blank_lp: torch.Tensor, emit_lp: torch.Tensor, input_lengths: torch.Tensor, target_lengths: torch.Tensor
) -> torch.Tensor:
    """Each node's posterior occupancy ``(B, T, U + 1)`` under a lattice: the posterior of the arcs that leave it,
    from the gradient of the lattice's loss (no gradient flows back from it)."""
    blank_lp, emit_lp = blank_lp.detach().requires_grad_(), emit_lp.detach().requires_grad_()
    with torch.enable_grad():
        loss = rnnt_lattice_loss(blank_lp, emit_lp, input_lengths, target_lengths).sum()
        blank_grad, emit_grad = torch.autograd.grad(loss, (blank_lp, emit_lp))
    return -(blank_grad + torch.nn.functional.pad(emit_grad, (0, 1)))


def prune_ranges(
    occupancy: torch.Tensor, input_lengths: torch.Tensor, target_lengths: torch.Tensor, size: int
) -> torch.Tensor:
    """Each frame's window start ``(B, T)``: the window of ``size`` label positions ``[s_t, s_t + size)`` with the
    most occupancy, then moved (as little as needed) so that ``s_0 = 0``, the last frame's window holds the last
    label position, ``s_t`` never decreases and moves by at most ``size - 1`` a frame. A row whose labels cannot be
    reached that way (more than ``size - 1`` a frame) keeps the closest windows; its pruned loss is then large.
    """
    batch, frames, width = occupancy.shape
    device = occupancy.device
    last = (target_lengths.long() + 1 - size).clamp(min=0)  # the last frame's start: its window holds U
    if width <= size:
        return torch.zeros(batch, frames, dtype=torch.long, device=device)
    sums = torch.nn.functional.pad(occupancy.cumsum(dim=-1), (1, 0))
    window = sums[..., size:] - sums[..., :-size]  # (B, T, U + 2 - size): occupancy of each start
    starts = window.argmax(dim=-1)
    t = torch.arange(frames, device=device)[None]
    steps = t * (size - 1)
    remaining = ((input_lengths.long()[:, None] - 1 - t).clamp(min=0)) * (size - 1)
    low = (last[:, None] - remaining).clamp(min=0)
    high = torch.minimum(steps, last[:, None].expand(-1, frames))
    starts = torch.minimum(torch.maximum(starts, low), high)
    starts = torch.cummax(starts, dim=1).values
    starts = torch.cummin(starts - steps, dim=1).values + steps  # at most size - 1 a frame
    return starts.clamp(min=0, max=width - size)


def pruned_lattice(
    blank: torch.Tensor, emit: torch.Tensor, starts: torch.Tensor, width: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The lattice ``(B, T, width)`` (blank) and ``(B, T, width - 1)`` (next label) of a joint computed on the windows
    only: ``blank`` and ``emit`` ``(B, T, size)`` at label positions ``starts[b, t] + k``; every other arc
    :data:`PRUNED`."""
    batch, frames, size = blank.shape
    index = starts[..., None] + torch.arange(size, device=starts.device)  # (B, T, size)
    full = blank.new_full((batch, frames, width + size), PRUNED)
    blank_lp = full.scatter(2, index, blank)[..., :width]
    emit_lp = full.scatter(2, index, emit)[..., : width - 1]
    return blank_lp, emit_lp
