"""Mode-conditioned predictors, per-mode heads and the mode-taking export step, on tiny random modules."""

import math

import pytest
import torch
from nemo.collections.asr.modules import RNNTJoint
from nemo.collections.asr.parts.submodules.rnnt_decoding import RNNTDecoding
from nemo.collections.asr.parts.utils.rnnt_utils import Hypothesis
from omegaconf import OmegaConf

from nemo_pc.modules import (
    DualRNNTDecoder,
    DualRNNTJoint,
    ModeConditionedRNNTDecoder,
    ModeConditionedStatelessDecoder,
    ModeDecoderJoint,
    route_rows,
)
from nemo_pc.modules.mode_conditioning import ModeBoundPredictor

VOCAB = 11


def _lstm():
    torch.manual_seed(0)
    return ModeConditionedRNNTDecoder({"pred_hidden": 32, "pred_rnn_layers": 1}, VOCAB, mode_dim=12).eval()


def _stateless():
    torch.manual_seed(0)
    return ModeConditionedStatelessDecoder({"pred_hidden": 32}, VOCAB, context_size=2, mode_dim=12).eval()


def _joint():
    torch.manual_seed(1)
    jointnet = {"joint_hidden": 16, "activation": "relu", "dropout": 0.0, "encoder_hidden": 24, "pred_hidden": 32}
    return RNNTJoint(jointnet=jointnet, num_classes=VOCAB).eval()


STRATEGIES = ("greedy", "greedy_batch", "beam", "alsd", "maes", "malsd_batch")
"""NeMo's greedy searches (frame-looping, label-looping) first, then its beam searches (NeMo's stateless predictor
has no batched beam search, ``malsd_batch``)."""


def _strategies(make) -> tuple[str, ...]:
    return STRATEGIES if make is _lstm else STRATEGIES[:-1]


TARGETS = torch.tensor([[1, 2, 3], [4, 5, 0]])
LENGTHS = torch.tensor([3, 2])


@pytest.mark.parametrize("make", [_lstm, _stateless])
def test_the_mode_changes_every_position_the_start_included(make):
    decoder = make()
    normalized = decoder(targets=TARGETS, target_length=LENGTHS, modes=0)[0]
    punctuated = decoder(targets=TARGETS, target_length=LENGTHS, modes=1)[0]
    assert normalized.shape == (2, 32, 4)
    assert ((normalized - punctuated).abs().sum(dim=1) > 0).all()  # at every position, the start symbol too


@pytest.mark.parametrize("make", [_lstm, _stateless])
def test_one_mode_per_row_equals_one_mode_per_batch(make):
    decoder = make()
    mixed = decoder(targets=TARGETS, target_length=LENGTHS, modes=torch.tensor([1, 0]))[0]
    for row, mode in enumerate([1, 0]):
        alone = decoder(targets=TARGETS, target_length=LENGTHS, modes=mode)[0]
        assert torch.allclose(mixed[row], alone[row], atol=1e-6)


@pytest.mark.parametrize("make", [_lstm, _stateless])
def test_a_call_without_a_mode_is_refused_and_for_mode_binds_one(make):
    decoder = make()
    with pytest.raises(ValueError, match="for_mode"):
        decoder.predict(TARGETS, add_sos=True)
    bound = decoder.for_mode(1)
    assert type(bound) is ModeBoundPredictor and bound.mode == 1 and bound.predictor is decoder
    assert isinstance(bound, type(decoder))  # NeMo's beam search checks its decoder's class
    assert torch.equal(bound.predict(TARGETS)[0], decoder.predict(TARGETS, modes=1)[0])
    assert torch.equal(
        bound(targets=TARGETS, target_length=LENGTHS)[0], decoder(targets=TARGETS, target_length=LENGTHS, modes=1)[0]
    )
    assert not torch.equal(decoder.for_mode(0).predict(TARGETS)[0], bound.predict(TARGETS)[0])


@pytest.mark.parametrize("make", [_lstm, _stateless])
def test_nemo_helpers_that_call_self_predict_get_the_bound_mode(make):
    decoder = make()
    for mode in (0, 1):
        hypothesis = Hypothesis(score=0.0, y_sequence=[3], dec_state=None)
        scored = decoder.for_mode(mode).score_hypothesis(hypothesis, {})[0]
        expected = decoder.predict(torch.tensor([[3]]), state=None, add_sos=False, batch_size=1, modes=mode)[0]
        assert torch.equal(scored, expected)


def test_a_bound_predictor_is_no_copy_and_has_the_predictors_flag():
    decoder = _lstm()
    bound = decoder.for_mode(0)
    assert bound.mode_embed is decoder.mode_embed and bound.prediction is decoder.prediction
    assert "training" not in dir(type(bound)) and not hasattr(bound, "__dict__")  # nothing of its own to go stale
    assert list(bound.named_parameters()) == list(decoder.named_parameters())
    decoder.train()
    assert bound.training and bound.prediction.training
    bound.eval()  # what NeMo's greedy search does around a decode
    assert not decoder.training and not decoder.prediction.training
    bound.train(True)
    assert decoder.training
    bound.training = False
    assert not decoder.training and not decoder.for_mode(1).training


@pytest.mark.parametrize(
    ("make", "strategy"), [(make, strategy) for make in (_lstm, _stateless) for strategy in _strategies(make)]
)
def test_the_shared_lstm_stays_in_training_mode_after_a_decode_during_training(make, strategy):
    """Lightning restores each module's flag after validation by assignment, not through ``train()``; NeMo's decoding
    then saves the flag of the decoder it holds, sets eval mode and restores the saved flag. A mode-bound decoder
    with a flag of its own left the shared LSTM in eval mode for the rest of training (on CUDA, cuDNN refuses that
    backward)."""
    decoder, joint = make(), _joint()
    decoding = _decoding(decoder.for_mode(1), joint, strategy)
    decoder.eval()  # Lightning's validation loop: eval() before, each module's flag assigned back after
    for module in decoder.modules():
        module.training = True
    decoding.rnnt_decoder_predictions_tensor(torch.randn(2, 24, 6), torch.tensor([6, 4]))
    assert all(module.training for module in decoder.modules())


def _decoding(decoder, joint, strategy: str) -> RNNTDecoding:
    search = {"beam": "default", "alsd": "alsd", "maes": "maes", "malsd_batch": None}.get(strategy)
    cfg = {
        "strategy": "beam" if search else strategy,
        "greedy": {"max_symbols": 3},
        "beam": {"beam_size": 2, "search_type": search or "default", "return_best_hypothesis": True},
    }
    vocabulary = [chr(ord("a") + index) for index in range(VOCAB)]
    return RNNTDecoding(OmegaConf.create(cfg), decoder=decoder, joint=joint, vocabulary=vocabulary)


@pytest.mark.parametrize("make", [_lstm, _stateless])
def test_greedy_label_looping_and_beam_decoding_run_in_each_mode(make):
    """Every search of NeMo's decodes with the bound mode (a ``predict`` call without one would be refused): the
    frame-looping and label-looping greedy searches agree, and every beam search scores what the mode's predictor
    gives."""
    decoder, joint = make(), _joint()
    torch.manual_seed(2)
    encoded, lengths = torch.randn(2, 24, 6), torch.tensor([6, 4])
    outputs = {}
    for mode in (0, 1):
        for strategy in _strategies(make):
            hyps = _decoding(decoder.for_mode(mode), joint, strategy).rnnt_decoder_predictions_tensor(
                encoded, lengths, return_hypotheses=True
            )
            outputs[mode, strategy] = [
                (
                    hyp.y_sequence.tolist() if torch.is_tensor(hyp.y_sequence) else list(hyp.y_sequence),
                    float(hyp.score),
                )
                for hyp in hyps
            ]
        greedy = [sequence for sequence, _ in outputs[mode, "greedy"]]
        assert greedy == [sequence for sequence, _ in outputs[mode, "greedy_batch"]]
        for strategy in _strategies(make)[2:]:
            assert all(math.isfinite(score) for _, score in outputs[mode, strategy])
    assert any(outputs[0, strategy] != outputs[1, strategy] for strategy in _strategies(make))


def test_the_token_embedding_leaves_room_for_the_mode():
    decoder = _lstm()
    assert decoder.prediction["embed"].embedding_dim == 20 and decoder.mode_embed.embedding_dim == 12
    with pytest.raises(ValueError, match="mode_dim"):
        ModeConditionedRNNTDecoder({"pred_hidden": 12, "pred_rnn_layers": 1}, VOCAB, mode_dim=12)
    with pytest.raises(ValueError, match="mode must be in"):
        decoder.for_mode(2)
    with pytest.raises(ValueError, match="modes must be in"):
        decoder(targets=TARGETS, target_length=LENGTHS, modes=torch.tensor([0, 2]))


def test_route_rows_puts_outputs_back_in_row_order():
    modes = torch.tensor([1, 0, 1])
    out = route_rows(modes, lambda mode, rows: (rows * 10 + mode).float().unsqueeze(1))
    assert out.squeeze(1).tolist() == [1.0, 10.0, 21.0]


def _dual():
    torch.manual_seed(0)
    decoder = DualRNNTDecoder({"prednet": {"pred_hidden": 32, "pred_rnn_layers": 1}}, VOCAB).eval()
    jointnet = {"joint_hidden": 16, "activation": "relu", "dropout": 0.0, "encoder_hidden": 24, "pred_hidden": 32}
    return decoder, DualRNNTJoint(jointnet, VOCAB).eval()


def test_dual_heads_route_rows_by_their_mode():
    decoder, joint = _dual()
    encoded = torch.randn(2, 24, 5)
    modes = torch.tensor([0, 1])
    g = decoder(targets=TARGETS, target_length=LENGTHS, modes=modes)[0]
    mixed = joint(encoder_outputs=encoded, decoder_outputs=g, modes=modes)
    for row in range(2):
        head_g = decoder.for_mode(row)(targets=TARGETS, target_length=LENGTHS)[0]
        expected = joint.for_mode(row)(encoder_outputs=encoded, decoder_outputs=head_g)
        assert torch.allclose(mixed[row], expected[row], atol=1e-6)
    assert decoder.for_mode(1) is decoder.head(1) and decoder.blank_idx == VOCAB
    assert joint.num_classes_with_blank == VOCAB + 1 and not joint.fuse_loss_wer
    joint.temperature = 2.0  # what NeMo's change_decoding_strategy sets
    assert [head.temperature for head in joint.heads] == [2.0, 2.0]
    assert sum(p.numel() for p in decoder.parameters()) == 2 * sum(p.numel() for p in decoder.head(0).parameters())
    with pytest.raises(TypeError):
        decoder(targets=TARGETS, target_length=LENGTHS)  # the rows' modes are a required argument
    with pytest.raises(ValueError, match=r"modes must be in \[0, 2\), got \[0, 2\]"):
        joint(encoder_outputs=encoded, decoder_outputs=g, modes=torch.tensor([0, 2]))
    with pytest.raises(AttributeError):
        decoder.predict  # noqa: B018  (no delegation: decoding runs on a head)


@pytest.mark.parametrize("make", ["conditioned_lstm", "conditioned_stateless", "dual"])
def test_export_step_takes_the_mode_per_row(make):
    if make == "dual":
        decoder, joint = _dual()
    else:
        decoder, joint = (_lstm() if make == "conditioned_lstm" else _stateless()), _joint()
    step = ModeDecoderJoint(decoder, joint).eval()
    encoded = torch.randn(2, 24, 1)
    targets = torch.tensor([[3], [VOCAB]])
    states = step.initial_states(2)
    out = step(encoded, targets, torch.ones(2, dtype=torch.long), torch.tensor([1, 0]), *states)
    assert out[0].shape == (2, 1, 1, VOCAB + 1) and len(out) == 2 + len(states)
    for row, mode in enumerate([1, 0]):
        alone = step(encoded, targets, torch.ones(2, dtype=torch.long), torch.tensor([mode, mode]), *states)
        assert torch.allclose(out[0][row], alone[0][row], atol=1e-6)
    names = list(step.input_types)
    assert names[:4] == ["encoder_outputs", "targets", "target_length", "mode"] and len(names) == 4 + len(states)


def test_stateless_states_split_into_rows_and_back():
    decoder = _stateless()
    states = [torch.tensor([[1], [2], [3]])]
    rows = decoder.batch_split_states(states)
    assert len(rows) == 3 and [row[0].tolist() for row in rows] == [[1], [2], [3]]
    assert torch.equal(decoder.batch_unsplit_states(rows)[0], states[0])
