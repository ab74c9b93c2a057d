"""The pruned RNN-T loss (nemo_pc.losses.pruned_rnnt): the simple joint's lattice against its whole output, the
windows' constraints (property test), and the pruned loss equal to the full one where the windows hold every label
position."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_pc.losses.pruned_rnnt import PRUNED, node_occupancy, prune_ranges, pruned_lattice, simple_lattice
from nemo_pc.losses.rnnt_scan import rnnt_lattice_loss, rnnt_loss_scan


def test_the_simple_lattice_is_the_log_softmax_of_the_summed_logits():
    torch.manual_seed(0)
    am, lm = torch.randn(2, 5, 7), torch.randn(2, 4, 7)
    labels = torch.tensor([[0, 3, 5], [2, 2, 1]])
    blank_lp, emit_lp = simple_lattice(am, lm, labels)
    log_probs = (am[:, :, None] + lm[:, None]).log_softmax(-1)  # (B, T, U + 1, V + 1)
    torch.testing.assert_close(blank_lp, log_probs[..., -1])
    expected = log_probs[:, :, :3].gather(-1, labels[:, None, :, None].expand(2, 5, 3, 1))[..., 0]
    torch.testing.assert_close(emit_lp, expected)
    lengths, label_lengths = torch.tensor([5, 4]), torch.tensor([3, 2])
    torch.testing.assert_close(
        rnnt_lattice_loss(blank_lp, emit_lp, lengths, label_lengths),
        rnnt_loss_scan(am[:, :, None] + lm[:, None], labels, lengths, label_lengths, blank=6),
    )


def test_occupancy_sums_to_one_per_frame_on_a_single_label_lattice():
    torch.manual_seed(0)
    blank_lp, emit_lp = torch.randn(1, 4, 3).log_softmax(-1), torch.randn(1, 4, 2).log_softmax(-1)
    occupancy = node_occupancy(blank_lp, emit_lp, torch.tensor([4]), torch.tensor([2]))
    assert occupancy.shape == (1, 4, 3) and (occupancy >= -1e-6).all()
    assert torch.allclose(occupancy[0, 0, 0], torch.tensor(1.0), atol=1e-5)  # every path starts at (0, 0)
    assert torch.allclose(occupancy[0, -1, 2], torch.tensor(1.0), atol=1e-5)  # and leaves from (T - 1, U)


@settings(max_examples=60, deadline=None)
@given(
    frames=st.integers(1, 12),
    labels=st.integers(0, 10),
    size=st.integers(2, 5),
    seed=st.integers(0, 100),
)
def test_windows_start_at_zero_end_on_the_last_label_and_overlap(frames, labels, size, seed):
    torch.manual_seed(seed)
    occupancy = torch.rand(1, frames, labels + 1)
    starts = prune_ranges(occupancy, torch.tensor([frames]), torch.tensor([labels]), size)[0].tolist()
    assert starts[0] == 0
    steps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert all(0 <= step <= size - 1 for step in steps)
    if labels <= (frames - 1) * (size - 1) + size - 1:  # reachable: the last window holds the last label
        assert starts[-1] <= labels < starts[-1] + size
    assert all(0 <= s <= max(0, labels + 1 - size) for s in starts)


def test_the_pruned_loss_equals_the_full_one_where_the_windows_hold_every_position():
    torch.manual_seed(0)
    logits = torch.randn(2, 6, 4, 5)
    labels, lengths, label_lengths = torch.tensor([[1, 3, 0], [2, 2, 0]]), torch.tensor([6, 5]), torch.tensor([3, 2])
    log_probs = logits.log_softmax(-1)
    blank, emit = (
        log_probs[..., 4],
        log_probs[:, :, :3].gather(-1, labels[:, None, :, None].expand(2, 6, 3, 1))[..., 0],
    )
    full = rnnt_lattice_loss(blank, emit, lengths, label_lengths)
    starts = torch.zeros(2, 6, dtype=torch.long)
    window_emit = torch.nn.functional.pad(emit, (0, 1), value=-5.0)  # the position past the last label: cut away
    blank_lp, emit_lp = pruned_lattice(blank, window_emit, starts, 4)
    torch.testing.assert_close(rnnt_lattice_loss(blank_lp, emit_lp, lengths, label_lengths), full)
    narrow = pruned_lattice(blank[..., :2], window_emit[..., :2], starts, 4)
    assert (narrow[0][..., 2:] == PRUNED).all()  # outside the windows
    assert (rnnt_lattice_loss(*narrow, lengths, label_lengths) >= full - 1e-4).all()  # fewer paths: a bound
