"""The vectorized TDT loss equals the TDT lattice sum computed cell by cell (the TDT paper's eq. 7), value and
gradient, with and without duration 0 and with logit under-normalization."""

import pytest
import torch

from nemo_pc.losses import ModeWeightedRNNTLoss, tdt_loss_scan


def _lattice_nll(logits, targets, input_lengths, target_lengths, blank, durations, sigma):
    """The TDT negative log-likelihood of each utterance, one lattice cell at a time."""
    token = logits[..., : -len(durations)].log_softmax(-1) - sigma
    duration = logits[..., -len(durations) :].log_softmax(-1)
    losses = []
    for b in range(logits.shape[0]):
        frames, labels = int(input_lengths[b]), int(target_lengths[b])
        alpha = {(0, 0): torch.zeros(())}
        for t in range(frames + 1):
            for u in range(labels + 1):
                if (t, u) == (0, 0):
                    continue
                arcs = []
                for n, d in enumerate(durations):
                    if t - d < 0 or t - d >= frames:
                        continue
                    if d > 0 and (t - d, u) in alpha:
                        arcs.append(alpha[(t - d, u)] + token[b, t - d, u, blank] + duration[b, t - d, u, n])
                    if u > 0 and (t - d, u - 1) in alpha and not (d == 0 and t == frames):
                        label = targets[b, u - 1]
                        arcs.append(
                            alpha[(t - d, u - 1)] + token[b, t - d, u - 1, label] + duration[b, t - d, u - 1, n]
                        )
                if arcs and t < frames:
                    alpha[(t, u)] = torch.logsumexp(torch.stack(arcs), 0)
        ends = [
            alpha[(frames - d, labels)] + token[b, frames - d, labels, blank] + duration[b, frames - d, labels, n]
            for n, d in enumerate(durations)
            if d > 0 and frames - d >= 0 and (frames - d, labels) in alpha
        ]
        losses.append(-torch.logsumexp(torch.stack(ends), 0))
    return torch.stack(losses)


def _batch(seed, durations, batch=3, frames=7, labels=4, vocab=6):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, frames, labels + 1, vocab + len(durations), generator=generator, requires_grad=True)
    targets = torch.randint(0, vocab - 1, (batch, labels), generator=generator)
    input_lengths = torch.tensor([frames, frames - 2, 4])
    target_lengths = torch.tensor([labels, 2, 3])
    return logits, targets, input_lengths, target_lengths


@pytest.mark.parametrize(("durations", "sigma"), [([0, 1, 2], 0.0), ([0, 1, 2, 4], 0.05), ([1, 2], 0.0)])
def test_scan_equals_the_lattice_sum_and_its_gradient(durations, sigma):
    logits, targets, input_lengths, target_lengths = _batch(len(durations), durations)
    blank = logits.shape[-1] - len(durations) - 1
    reference = _lattice_nll(logits, targets, input_lengths, target_lengths, blank, durations, sigma)
    ours = tdt_loss_scan(logits, targets, input_lengths, target_lengths, blank, durations, sigma)
    torch.testing.assert_close(ours, reference, rtol=1e-5, atol=1e-5)
    (grad_reference,) = torch.autograd.grad(reference.sum(), logits)
    (grad_ours,) = torch.autograd.grad(ours.sum(), logits)
    torch.testing.assert_close(grad_ours, grad_reference, rtol=1e-4, atol=1e-5)


def test_one_frame_one_label_by_hand():
    # T=1, U=1, durations [0, 1]: emit the label with duration 0 at t=0, then blank with duration 1 at (0, 1).
    token = torch.log(torch.tensor([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]))
    duration = torch.log(torch.tensor([[0.6, 0.4], [0.3, 0.7]]))
    logits = torch.cat([token, duration], -1)[None, None]
    loss = tdt_loss_scan(logits, torch.tensor([[1]]), torch.tensor([1]), torch.tensor([1]), 2, [0, 1])
    torch.testing.assert_close(loss, -torch.log(torch.tensor([0.5 * 0.6 * 0.8 * 0.7])))


def test_the_mode_weighted_loss_runs_tdt_scan_on_the_token_and_duration_outputs():
    durations = [0, 1, 2]
    logits, targets, input_lengths, target_lengths = _batch(0, durations)
    blank = logits.shape[-1] - len(durations) - 1
    loss = ModeWeightedRNNTLoss(blank, {0: 1.0}, "tdt_scan", {"durations": durations, "sigma": 0.0, "omega": 0.0})
    total, terms = loss(logits, targets, input_lengths, target_lengths)
    expected = tdt_loss_scan(logits, targets, input_lengths, target_lengths, blank, durations).mean()
    torch.testing.assert_close(total, expected)
    with pytest.raises(ValueError, match="durations"):
        tdt_loss_scan(logits, targets, input_lengths, target_lengths, blank, [0])
