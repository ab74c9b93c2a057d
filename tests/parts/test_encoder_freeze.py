"""freeze_encoder_steps: which optimizer steps update the encoder."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.parts.encoder_freeze import apply_encoder_freeze, encoder_trains


@given(step=st.integers(0, 10_000), freeze=st.integers(0, 10_000))
def test_the_encoder_trains_from_step_n_on(step, freeze):
    assert encoder_trains(step, freeze) == (step >= freeze)


@given(step=st.integers(0, 10_000))
def test_minus_one_never_trains_the_encoder(step):
    assert not encoder_trains(step, -1)


def test_apply_sets_requires_grad_of_every_parameter():
    encoder = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    assert not apply_encoder_freeze(encoder, 3, 5)
    assert not any(p.requires_grad for p in encoder.parameters())
    assert apply_encoder_freeze(encoder, 5, 5)
    assert all(p.requires_grad for p in encoder.parameters())


def test_values_below_minus_one_are_refused():
    with pytest.raises(ValueError, match="freeze_encoder_steps"):
        encoder_trains(0, -3)
