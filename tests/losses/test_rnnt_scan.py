"""The vectorized RNN-T loss equals NeMo's numba loss, value and gradient."""

import pytest
import torch
from nemo.collections.asr.losses.rnnt import RNNTLoss

from nemo_pc.losses import ModeWeightedRNNTLoss, rnnt_loss_scan


def _batch(seed: int, batch: int = 4, frames: int = 17, labels: int = 9, vocab: int = 12):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, frames, labels + 1, vocab, generator=generator, requires_grad=True)
    targets = torch.randint(0, vocab - 1, (batch, labels), generator=generator)
    input_lengths = torch.randint(1, frames + 1, (batch,), generator=generator)
    input_lengths[0] = frames
    target_lengths = torch.randint(0, labels + 1, (batch,), generator=generator)
    target_lengths[0] = labels
    return logits, targets, input_lengths, target_lengths


@pytest.mark.parametrize("seed", range(4))
def test_scan_equals_numba_loss_and_gradient(seed):
    logits, targets, input_lengths, target_lengths = _batch(seed)
    vocab = logits.shape[-1]
    reference = RNNTLoss(num_classes=vocab - 1, reduction=None)(
        log_probs=logits, targets=targets, input_lengths=input_lengths, target_lengths=target_lengths
    )
    ours = rnnt_loss_scan(logits, targets, input_lengths, target_lengths, blank=vocab - 1)
    torch.testing.assert_close(ours, reference, rtol=1e-5, atol=1e-4)
    (grad_reference,) = torch.autograd.grad(reference.sum(), logits)
    (grad_ours,) = torch.autograd.grad(ours.sum(), logits)
    torch.testing.assert_close(grad_ours, grad_reference, rtol=1e-4, atol=1e-4)


def test_one_frame_one_label_by_hand():
    # T=1, U=1: the only path emits the label at t=0 then blank at (0, 1).
    logits = torch.log(torch.tensor([[[[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]]]))
    loss = rnnt_loss_scan(logits, torch.tensor([[1]]), torch.tensor([1]), torch.tensor([1]), blank=2)
    torch.testing.assert_close(loss, -torch.log(torch.tensor([0.5 * 0.8])))


def test_mode_weighted_scan_matches_default():
    logits, targets, input_lengths, target_lengths = _batch(7)
    vocab = logits.shape[-1]
    args = (logits, targets, input_lengths, target_lengths)
    scan = ModeWeightedRNNTLoss(vocab - 1, {0: 1.0}, "scan")(*args)
    numba = ModeWeightedRNNTLoss(vocab - 1, {0: 1.0}, "default")(*args)
    torch.testing.assert_close(scan, numba, rtol=1e-5, atol=1e-4)
