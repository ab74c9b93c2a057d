"""benchmarks/quality_whisper_transducer.py: the sampled vocabulary of a step, the joint's language-model term, and a
transducer with a (tiny) Whisper decoder as its prediction network that memorizes two utterances in both modes."""

import random
from types import SimpleNamespace

import pytest
import torch
from benchmark_loader import load_benchmark
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

BOS, MODE_TOKENS = 13, (14, 15)


def tiny_aed(vocab: int = 16, hidden: int = 16) -> SimpleNamespace:
    from nemo_pc.testing.whisper import tiny_whisper_decoder

    decoder, head = tiny_whisper_decoder(vocab, hidden)
    return SimpleNamespace(
        transf_decoder=decoder,
        log_softmax=SimpleNamespace(mlp=SimpleNamespace(layer0=head)),
        encoder_decoder_proj=nn.Identity(),
        mode_prompt=lambda mode, batch, device: torch.tensor([[BOS, MODE_TOKENS[mode]]] * batch),
    )


def test_kept_tokens_are_sorted_and_ranked_by_count():
    bench = load_benchmark("quality_whisper_transducer")
    kept, by_count = bench.kept_tokens([[7, 3, 3], [3, 9], [7]])
    assert kept == [3, 7, 9]
    assert by_count == [3, 7, 9]  # 3 three times, 7 twice, 9 once
    assert bench.kept_tokens([[5, 2], [2, 5]])[1] == [2, 5]  # a tie goes by id


@settings(max_examples=50, deadline=None)
@given(
    size=st.integers(1, 60),
    rows=st.lists(st.lists(st.integers(0, 59), max_size=8), max_size=4),
    frequent=st.lists(st.integers(0, 59), max_size=10),
    extra=st.integers(0, 20),
    seed=st.integers(0, 5),
)
def test_a_steps_vocabulary_holds_every_target_and_frequent_token(size, rows, frequent, extra, seed):
    bench = load_benchmark("quality_whisper_transducer")
    rows = [[token % size for token in row] for row in rows]
    frequent = [token % size for token in frequent]
    vocab = bench.sample_vocabulary(rows, frequent, extra, size, random.Random(seed))
    chosen = {token for row in rows for token in row} | set(frequent)
    assert vocab == sorted(set(vocab)) and chosen <= set(vocab) and set(vocab) <= set(range(size))
    assert len(vocab) == min(size, len(chosen) + extra)
    positions = {token: k for k, token in enumerate(vocab)}
    for row in rows:
        assert [vocab[k] for k in bench.remap(row, positions)] == row


def test_the_joint_adds_the_decoders_own_logits_over_the_sampled_tokens():
    bench = load_benchmark("quality_whisper_transducer")
    torch.manual_seed(0)
    aed = tiny_aed()
    kept = [1, 2, 4, 6, 8]
    model = bench.WhisperTransducer(aed, kept, frame_dim=6, stack=2, variant="lm", lm_scale=0.5)
    with torch.no_grad():
        model.token_out.zero_()
    f, g = torch.randn(2, 3, 16), torch.randn(2, 4, 16)
    vocab = torch.tensor([0, 3])
    logits = model.joint(f, g, vocab)
    assert logits.shape == (2, 3, 4, 3)  # two sampled tokens and the blank
    head = aed.log_softmax.mlp.layer0
    expected = 0.5 * (g @ head.weight[[1, 6]].T + head.bias[[1, 6]])
    assert torch.allclose(logits[..., :2], expected[:, None].expand(2, 3, 4, 2), atol=1e-5)
    assert model.joint(f, g).shape == (2, 3, 4, len(kept) + 1)  # every kept token when no sample is given
    with pytest.raises(ValueError, match="variant"):
        bench.WhisperTransducer(aed, kept, frame_dim=6, stack=2, variant="rnn", lm_scale=0.0)


@pytest.mark.parametrize("variant", ["lm", "xattn"])
def test_the_transducer_memorizes_two_utterances_in_both_modes(variant):
    bench = load_benchmark("quality_whisper_transducer")
    torch.manual_seed(0)
    aed = tiny_aed()
    kept = list(range(1, 9))  # Whisper ids 1..8; the targets below are positions in it
    targets = {"normalized": [[0, 1, 2], [3, 3, 1]], "punctuated": [[0, 1, 2, 7], [4, 5]]}
    feats = [torch.randn(12, 16), torch.randn(10, 16)]
    model = bench.WhisperTransducer(aed, kept, frame_dim=16, stack=2, variant=variant, lm_scale=1.0)
    prompts = {mode: [BOS, MODE_TOKENS[mode]] for mode in (0, 1)}
    args = SimpleNamespace(steps=300, every=150, batch_size=2, lr=3e-3, decoder_lr=3e-3, random=2, seed=0)
    points = []
    losses = bench.train(model, feats, targets, prompts, frequent=[0], args=args, on_point=points.append)
    assert points == [150, 300]
    assert losses[-1]["loss"] < losses[0]["loss"]
    model.eval()
    for mode, name in enumerate(("normalized", "punctuated")):
        for x, row in zip(feats, targets[name], strict=True):
            assert bench.greedy(model, x, prompts[mode]) == [kept[k] for k in row]


def test_the_rendered_table_has_a_row_per_results_file(tmp_path):
    import json

    render = load_benchmark("render_results")

    def results(variant: str, dev: float, n_wer: float) -> dict:
        settings = {"variant": variant, "lm_scale": 1.0, "decoder_lr": 1e-4, "kept_tokens": 32609, "stack": 2}
        return {
            "settings": settings | {"batch_size": 8},
            "utterances": {"train": 2610, "dev": 80},
            "curve": [{"step": 500, "train_minutes": 5.8, "dev_n_wer": dev}],
            "scores": {
                "test": {"n_wer": n_wer, "per": 0.391, "punct_f1": 0.702},
                "real_test": {"wer": 0.25, "ci95": [0.2, 0.31]},
            },
        }

    paths = []
    for variant, dev, n_wer in (("lm", 0.789, 0.7), ("xattn", 0.191, 0.2)):
        paths.append(tmp_path / f"{variant}.json")
        paths[-1].write_text(json.dumps(results(variant, dev, n_wer)))
    text = render.RENDERERS["whisper_transducer"](*paths)
    assert "32,609 Whisper tokens" in text
    rows = [line for line in text.splitlines() if line.startswith("| the") or line.startswith("| labels")]
    assert len(rows) == 2
    assert "| the labels alone | 1 | 0.0001 | 5.8 | 78.9% | 70.0% | 39.1% | 70.2% | 25.0% [20.0, 31.0] |" in rows
    assert rows[1].startswith("| labels and audio (cross-attention) |") and "19.1%" in rows[1]


@pytest.mark.parametrize("variant", ["lm", "xattn"])
def test_the_cached_decoder_step_gives_the_state_of_the_whole_prefix(variant):
    bench = load_benchmark("quality_whisper_transducer")
    torch.manual_seed(0)
    model = bench.WhisperTransducer(tiny_aed(), [1, 2, 3], frame_dim=16, stack=2, variant=variant, lm_scale=1.0)
    model.eval()
    x, lengths = torch.randn(1, 7, 16), torch.tensor([7])
    prefix = torch.tensor([[BOS, MODE_TOKENS[1], 3, 1, 2]])
    whole = model.predict(prefix, torch.ones_like(prefix, dtype=torch.bool), x, lengths)
    from nemo.core.classes.common import typecheck

    model.decoder.return_mems = True
    with typecheck.disable_checks():
        mems = model.predict(prefix[:, :2], torch.ones(1, 2, dtype=torch.bool), x, lengths)
        for end in (3, 4, 5):
            mems = model.predict(prefix[:, :end], torch.ones(1, end, dtype=torch.bool), x, lengths, mems)
    model.decoder.return_mems = False
    assert torch.allclose(mems[:, -1], whole, atol=1e-5)
