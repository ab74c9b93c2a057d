"""The per-mode RNN-T loss reduction: weights, inactive rows, and the same gradient however the batch is split."""

import pytest
import torch

from nemo_pc.losses import ModeWeightedRNNTLoss, mode_weighted


class _Rows(torch.nn.Module):
    """Stands in for NeMo's RNN-T loss: the per-row losses are the log_probs themselves."""

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return log_probs


def _loss(weights):
    loss = ModeWeightedRNNTLoss(num_classes=4, mode_weights=weights, loss_name="pytorch")
    loss.rnnt = _Rows()
    return loss


def _call(loss, values, modes, active):
    total, _ = loss(
        log_probs=values,
        targets=None,
        input_lengths=None,
        target_lengths=None,
        modes=torch.tensor(modes),
        active=torch.tensor(active),
    )
    return total


def test_weighted_means_over_active_rows_only():
    loss = _loss({0: 0.25, 1: 0.75})
    values = torch.tensor([1.0, 3.0, 10.0, float("inf")], requires_grad=True)
    total = _call(loss, values, [0, 0, 1, 1], [True, True, True, False])
    assert total.item() == pytest.approx(0.25 * 2.0 + 0.75 * 10.0)
    total.backward()
    assert values.grad.tolist() == [0.125, 0.125, 0.75, 0.0]


def test_split_across_processes_gives_the_global_gradient(monkeypatch):
    values = torch.tensor([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    modes, active = [0, 0, 0, 1, 1, 1], [True, True, True, True, False, True]
    whole = torch.tensor(values.tolist(), requires_grad=True)
    _call(_loss({0: 0.5, 1: 0.5}), whole, modes, active).backward()

    counts = {0: 3.0, 1: 2.0}  # active rows per mode over both processes
    calls = iter([0, 1, 0, 1])
    monkeypatch.setattr(mode_weighted, "_global_sum", lambda value: torch.tensor(counts[next(calls)]))
    monkeypatch.setattr(mode_weighted, "_world_size", lambda: 2)
    grads = []
    for rank_rows in ([0, 3, 4], [1, 2, 5]):  # a DistributedSampler-like split
        part = torch.tensor(values[rank_rows].tolist(), requires_grad=True)
        _call(_loss({0: 0.5, 1: 0.5}), part, [modes[r] for r in rank_rows], [active[r] for r in rank_rows]).backward()
        grads.append(dict(zip(rank_rows, part.grad.tolist(), strict=True)))
    averaged = [(grads[0].get(row, 0.0) + grads[1].get(row, 0.0)) / 2 for row in range(6)]  # DDP averages
    assert averaged == pytest.approx(whole.grad.tolist())
