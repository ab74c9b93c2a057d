"""The transducer head of the AED (nemo_pc.models.mixins.aed_transducer, nemo_pc.modules.aed_transducer): its sampled
vocabulary, the joint's language-model term, the cached decoder step, memorization by the modules, and the head
trained from a tiny AED's .nemo through the AED recipe, saved, restored and transcribing with either head."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_pc.modules.aed_transducer import (
    TransducerJoint,
    TransducerPredictor,
    greedy,
    greedy_batch,
    sample_vocabulary,
    transducer_loss,
)
from nemo_pc.testing.whisper import tiny_whisper_decoder

BOS, MODE_TOKENS = 13, (14, 15)


@settings(max_examples=50, deadline=None)
@given(
    size=st.integers(1, 60),
    rows=st.lists(st.lists(st.integers(0, 59), max_size=8), max_size=4),
    frequent=st.lists(st.integers(0, 59), max_size=10, unique=True),
    pool=st.lists(st.integers(0, 59), max_size=40, unique=True),
    extra=st.integers(0, 20),
    seed=st.integers(0, 5),
)
def test_a_steps_vocabulary_holds_every_target_and_frequent_token(size, rows, frequent, pool, extra, seed):
    rows = [[token % size for token in row] for row in rows]
    frequent = torch.tensor(sorted({token % size for token in frequent}), dtype=torch.long)
    pool = torch.tensor(sorted({token % size for token in pool}), dtype=torch.long)
    vocab = sample_vocabulary(rows, frequent, pool, extra, torch.Generator().manual_seed(seed)).tolist()
    chosen = {token for row in rows for token in row} | set(frequent.tolist())
    assert vocab == sorted(set(vocab)) and chosen <= set(vocab)
    assert set(vocab) - chosen <= set(pool.tolist())  # the random ones come from the pool
    assert len(vocab) == len(chosen) + min(extra, len(set(pool.tolist()) - chosen))


def test_the_joint_adds_the_decoders_own_logits_over_the_sampled_tokens():
    torch.manual_seed(0)
    _, head = tiny_whisper_decoder()
    joint = TransducerJoint(frame_dim=6, width=16, vocab_size=16, stack=2, lm_scale=0.5)
    with torch.no_grad():
        joint.token_out.zero_()
    f, g = torch.randn(2, 3, 16), torch.randn(2, 4, 16)
    logits = joint(f, g, head, torch.tensor([1, 6]))
    assert logits.shape == (2, 3, 4, 3)  # two sampled tokens and the blank
    expected = 0.5 * (g @ head.weight[[1, 6]].T + head.bias[[1, 6]])
    assert torch.allclose(logits[..., :2], expected[:, None].expand(2, 3, 4, 2), atol=1e-5)
    assert joint(f, g, head).shape == (2, 3, 4, 17)  # every token when no sample is given
    assert joint(f, g, None).shape == (2, 3, 4, 17)
    frames, lengths = joint.frames(torch.randn(2, 5, 6), torch.tensor([5, 3]))
    assert frames.shape == (2, 3, 16) and lengths.tolist() == [3, 2]  # 2 frames joined, the last one padded
    with pytest.raises(ValueError, match="stack"):
        TransducerJoint(6, 16, 16, stack=0)


def test_the_kept_tokens_are_those_counted_and_those_of_the_extra_text():
    joint = TransducerJoint(frame_dim=4, width=8, vocab_size=10)
    assert not joint.kept().any()
    joint.count([[3, 3, 5], [], [7]])
    joint.extra_tokens[9] = True
    assert torch.nonzero(joint.kept()).squeeze(1).tolist() == [3, 5, 7, 9]
    assert joint.token_counts[3] == 2


@pytest.mark.parametrize("cross_attention", [True, False])
def test_the_cached_decoder_step_gives_the_state_of_the_whole_prefix(cross_attention):
    from nemo.core.classes.common import typecheck

    torch.manual_seed(0)
    decoder, _ = tiny_whisper_decoder()
    predictor = TransducerPredictor(decoder, "conditioned", cross_attention).eval()
    states, mask = torch.randn(1, 7, 16), torch.ones(1, 7)
    prefix = torch.tensor([[BOS, MODE_TOKENS[1], 3, 1, 2]])
    whole = predictor(1, prefix, torch.ones_like(prefix), states, mask)
    predictor.decoder(1).return_mems = True
    with typecheck.disable_checks():
        mems = predictor(1, prefix[:, :2], torch.ones(1, 2), states, mask)
        for end in (3, 4, 5):
            mems = predictor(1, prefix[:, :end], torch.ones(1, end), states, mask, mems)
    predictor.decoder(1).return_mems = False
    assert torch.allclose(mems[:, -1], whole, atol=1e-5)


def test_dual_keeps_a_decoder_per_mode_and_conditioned_one():
    decoder, _ = tiny_whisper_decoder()
    dual, one = TransducerPredictor(decoder, "dual"), TransducerPredictor(decoder, "conditioned")
    assert len(dual.decoders) == 2 and dual.decoder(0) is not dual.decoder(1)
    assert one.decoder(0) is one.decoder(1)
    with pytest.raises(ValueError, match="decoders"):
        TransducerPredictor(decoder, "triple")


@pytest.mark.parametrize(
    "decoders,cross_attention,prune",
    [("conditioned", True, 0), ("dual", True, 0), ("conditioned", False, 0), ("conditioned", True, 2)],
)
def test_the_modules_memorize_two_utterances_in_both_modes(decoders, cross_attention, prune):
    torch.manual_seed(0)
    decoder, head = tiny_whisper_decoder()
    predictor = TransducerPredictor(decoder, decoders, cross_attention)
    joint = TransducerJoint(16, 16, 16, stack=2, lm_scale=1.0)
    targets = {0: [[1, 2, 3], [4, 4, 2]], 1: [[1, 2, 3, 8], [5, 6]]}
    states = torch.randn(2, 12, 16)
    lengths, mask = torch.tensor([12, 10]), torch.ones(2, 12)
    mask[1, 10:] = 0
    params = list(predictor.parameters()) + list(joint.parameters())
    optimizer = torch.optim.Adam(params, lr=3e-3)
    vocab = torch.arange(1, 9)
    first = None
    for step in range(300):
        mode = step % 2
        prompt = [BOS, MODE_TOKENS[mode]]
        width = 2 + max(map(len, targets[mode]))
        prefix = torch.zeros(2, width, dtype=torch.long)
        prefix_mask = torch.zeros(2, width)
        for row, ids in enumerate(targets[mode]):
            prefix[row, : 2 + len(ids)] = torch.tensor(prompt + ids)
            prefix_mask[row, : 2 + len(ids)] = 1
        g = predictor(mode, prefix, prefix_mask, states, mask)[:, 1:]
        f, f_len = joint.frames(states, lengths)
        loss = transducer_loss(joint, f, f_len, g, head, targets[mode], vocab, prune=prune).mean()
        first = float(loss.detach()) if first is None else first
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        joint.count(targets[mode])
    assert float(loss.detach()) < first / 10
    predictor.eval()
    for mode in (0, 1):
        for row, ids in enumerate(targets[mode]):
            out = greedy(predictor, joint, head, mode, [BOS, MODE_TOKENS[mode]], states[row], int(lengths[row]))
            assert out == ids


# The head on a tiny AED, trained through the AED recipe from the AED's .nemo (as the demo trains its RNN-Ts)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from lightning.pytorch.callbacks import Callback

    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.whisper import tiny_aed_overrides, train_tiny_aed

    folder = tmp_path_factory.mktemp("aed_transducer")
    corpus, aed = train_tiny_aed(folder)
    losses = []

    class Losses(Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            losses.append(float(outputs["loss"]))

    text = folder / "extra.json"
    text.write_text('{"text": "Zebras graze."}\n')
    overrides = tiny_aed_overrides(
        corpus["weights"],
        corpus["tokenizer"],
        corpus["manifest"],
        "transducer=conditioned",
        f"+init_from_nemo_model={aed}",
        f"model.transducer.vocab_text={text}",
        "model.optim.lr=0.01",
        "model.optim_param_groups.transducer_predictor.lr=0.003",
    )
    path = folder / "transducer.nemo"
    train_model("aed", overrides, path, 40, callbacks=[Losses()])
    return {"corpus": corpus, "aed": aed, "path": path, "losses": losses, "text": text}


def _restore(path):
    from nemo_pc.models import EncDecAEDPCModel

    return EncDecAEDPCModel.restore_from(str(path), map_location="cpu").eval()


def test_the_transducer_trains_alone_from_the_aed(trained):
    aed, model = _restore(trained["aed"]), _restore(trained["path"])
    assert model.cfg.transducer.decoders == "conditioned"
    frozen = {k: v for k, v in model.state_dict().items() if not k.startswith("transducer_")}
    for key, value in aed.state_dict().items():  # the encoder, the AED's decoder and head, the CTC head
        torch.testing.assert_close(frozen[key], value, msg=key)
    copy_state = model.transducer_predictor.decoders[0].state_dict()
    moved = [k for k, v in aed.transf_decoder.state_dict().items() if not torch.equal(copy_state[k], v)]
    assert moved, "the prediction network did not train"
    losses = trained["losses"]
    assert sum(losses[-10:]) / 10 < sum(losses[:10]) / 10
    kept = model.transducer_joint.kept()
    assert model.transducer_joint.token_counts.sum() > 0
    for token in model.tokenizer.text_to_ids("Zebras graze."):  # the extra text's tokens, restored with the model
        assert kept[token]


def test_the_transducer_starts_as_the_aeds_decoder(trained):
    from nemo_pc.models import EncDecAEDPCModel
    from nemo_pc.parts.configs import compose_config
    from nemo_pc.testing.whisper import tiny_aed_overrides

    corpus = trained["corpus"]
    cfg = compose_config(
        "aed",
        tiny_aed_overrides(
            corpus["weights"],
            corpus["tokenizer"],
            corpus["manifest"],
            "transducer=dual",
            f"+init_from_nemo_model={trained['aed']}",
        ),
    )
    model = EncDecAEDPCModel(cfg=cfg.model)
    model.maybe_init_from_pretrained_checkpoint(cfg)
    aed = _restore(trained["aed"])
    assert len(model.transducer_predictor.decoders) == 2
    for decoder in model.transducer_predictor.decoders:
        for key, value in aed.transf_decoder.state_dict().items():
            torch.testing.assert_close(decoder.state_dict()[key], value, msg=key)
    torch.testing.assert_close(model.transducer_joint.token_out, aed.log_softmax.mlp.layer0.weight)
    trainable = {name.split(".")[0] for name, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"transducer_predictor", "transducer_joint"}
    model.setup_optimization(cfg.model.optim)  # the copies at their own rate (optim_param_groups), fused AdamW
    rates = {group["lr"] for group in model._optimizer.param_groups}
    assert rates == {1e-3, 1e-4} and model._optimizer.defaults["fused"] is True
    # a trained transducer is kept when its checkpoint is loaded again
    cond = compose_config(
        "aed",
        tiny_aed_overrides(
            corpus["weights"],
            corpus["tokenizer"],
            corpus["manifest"],
            "transducer=conditioned",
            f"+init_from_nemo_model={trained['path']}",
        ),
    )
    again = EncDecAEDPCModel(cfg=cond.model)
    again.maybe_init_from_pretrained_checkpoint(cond)
    torch.testing.assert_close(
        again.transducer_predictor.state_dict(), _restore(trained["path"]).transducer_predictor.state_dict()
    )


def test_a_saved_transducer_transcribes_with_either_head(trained, tmp_path):
    from nemo_pc.testing.asr import audio_paths

    paths = audio_paths(trained["corpus"]["manifest"])[:3]
    model = _restore(trained["path"])
    both = model.transcribe(paths, batch_size=2, mode="both")
    again = _restore(trained["path"]).transcribe(paths, batch_size=3, mode="both")
    assert both == again  # restored twice, batched otherwise: the same greedy output
    hyps = model.transcribe(paths, batch_size=2, mode="punctuated", return_hypotheses=True)
    assert [model.tokenizer.ids_to_text(h.y_sequence.tolist()).strip() for h in hyps] == both["punctuated"]
    model.decode_with("aed")
    assert model.transcribe(paths, batch_size=2) == _restore(trained["aed"]).transcribe(paths, batch_size=2)
    with pytest.raises(ValueError, match="head must be"):
        model.decode_with("ctc")
    with pytest.raises(ValueError, match="no transducer"):
        _restore(trained["aed"]).decode_with("transducer")
    model.decode_with("transducer")
    saved = tmp_path / "saved.nemo"
    model.save_to(str(saved))
    assert _restore(saved).transcribe(paths, batch_size=2, mode="both") == both


def test_a_punctuated_only_transducer_learns_p_rows_and_normalizes_its_output(trained):
    from nemo_pc.data.datasets.pc_batch import PCBatch
    from nemo_pc.parts.modes import NORMALIZED_ID, PUNCTUATED_ID

    model = _restore(trained["path"])
    with open_cfg(model):
        model.cfg.transducer.train_modes = ["punctuated"]
    assert model.transducer_modes == (PUNCTUATED_ID,)
    batch = PCBatch(
        audio=torch.zeros(2, 1600),
        audio_len=torch.tensor([1600, 1600]),
        tokens_n=torch.tensor([[5, 6], [7, 0]]),
        tokens_n_len=torch.tensor([2, 1]),
        tokens_p=torch.tensor([[5, 6, 8], [0, 0, 0]]),
        tokens_p_len=torch.tensor([3, 0]),
        p_mask=torch.tensor([True, False]),
    )
    model.train()
    assert model.transducer_rows(batch) == [(0, PUNCTUATED_ID, [5, 6, 8])]  # no normalized row, no P-less row
    model.eval()
    states, mask = torch.randn(1, 6, model.transf_decoder.hidden_size), torch.ones(1, 6)
    out = model.transducer_decode_modes(states, mask, [NORMALIZED_ID, PUNCTUATED_ID])
    from nemo_pc.parts.text import normalize

    assert out[NORMALIZED_ID] == [normalize(out[PUNCTUATED_ID][0])]
    with open_cfg(model):
        model.cfg.transducer.train_modes = ["normalized"]
    with pytest.raises(ValueError, match="only normalized"):
        model.transducer_decode_modes(states, mask, [PUNCTUATED_ID])


def test_bad_transducer_settings_are_refused(trained):
    from nemo_pc.models.mixins.aed_transducer import transducer_options

    with pytest.raises(ValueError, match=r"unknown key\(s\) \['decoder'\]"):
        transducer_options({"decoder": "dual"})
    assert transducer_options(None) is None
    assert transducer_options({"stack": 3})["stack"] == 3


def open_cfg(model):
    from omegaconf import open_dict

    return open_dict(model.cfg)


def test_the_lattice_equals_the_log_softmax_of_the_joints_whole_output():
    from nemo_pc.losses.rnnt_scan import rnnt_loss_scan

    torch.manual_seed(0)
    _, head = tiny_whisper_decoder()
    joint = TransducerJoint(frame_dim=6, width=16, vocab_size=16, stack=1, lm_scale=0.7)
    with torch.no_grad():
        joint.token_bias.normal_()
    f, g = torch.randn(2, 5, 16), torch.randn(2, 4, 16)
    vocab, labels = torch.tensor([1, 3, 6, 9]), torch.tensor([[0, 2, 3], [1, 1, 0]])
    blank_lp, emit_lp = joint.lattice(f, g, head, vocab, labels)
    log_probs = joint(f, g, head, vocab).log_softmax(-1)  # (B, T, U + 1, V' + 1), the blank last
    torch.testing.assert_close(blank_lp, log_probs[..., -1])
    expected = log_probs[:, :, :3].gather(-1, labels[:, None, :, None].expand(2, 5, 3, 1))[..., 0]
    torch.testing.assert_close(emit_lp, expected)
    lengths, label_lengths = torch.tensor([5, 4]), torch.tensor([3, 2])
    loss = transducer_loss(
        joint, f, lengths, g, head, [vocab[labels[0]].tolist(), vocab[labels[1, :2]].tolist()], vocab
    )
    reference = rnnt_loss_scan(joint(f, g, head, vocab), labels, lengths, label_lengths, blank=len(vocab))
    torch.testing.assert_close(loss, reference)


def test_under_bfloat16_autocast_the_lattice_and_the_pruned_parts_are_float32_and_close_to_it():
    """The products may run in bfloat16 (trainer.precision=bf16-mixed); normalizers and log-probabilities do not."""
    torch.manual_seed(0)
    _, head = tiny_whisper_decoder()
    joint = TransducerJoint(frame_dim=6, width=16, vocab_size=16, stack=1, lm_scale=0.7)
    f, g = torch.randn(2, 5, 16), torch.randn(2, 4, 16)
    vocab, labels = torch.tensor([1, 3, 6, 9]), torch.tensor([[0, 2, 3], [1, 1, 0]])
    exact = joint.lattice(f, g, head, vocab, labels)
    starts = torch.zeros(2, 5, dtype=torch.long)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = joint.lattice(f, g, head, vocab, labels)
        windows = joint.window_lattice(f, g, head, vocab, labels, starts, 2)
        am, lm = joint.simple_logits(f, g, head, vocab)
    for value, reference in zip(mixed, exact, strict=True):
        assert value.dtype == torch.float32
        torch.testing.assert_close(value, reference, atol=0.1, rtol=0.05)
    assert {t.dtype for t in (*windows, am, lm)} == {torch.float32}


def test_the_encoder_states_are_read_back_from_the_cache(trained, monkeypatch):
    from nemo_pc.data.datasets.pc_batch import PCBatch

    model = _restore(trained["path"])
    model.train()
    torch.manual_seed(0)
    audio = torch.randn(2, 3200) * 0.1
    lengths = torch.tensor([3200, 2400])
    tokens = torch.ones(2, 1, dtype=torch.long)

    def batch(samples):
        return PCBatch(
            samples, lengths, tokens, lengths * 0 + 1, tokens, lengths * 0 + 1, torch.ones(2, dtype=torch.bool)
        )

    encode, calls = model._encode_for_transducer, []
    monkeypatch.setattr(model, "_encode_for_transducer", lambda a, n: calls.append(len(a)) or encode(a, n))
    first = model.transducer_states(batch(audio))
    again = model.transducer_states(batch(audio))
    assert calls == [2]  # the second batch read the cache
    for a, b in zip(first, again, strict=True):
        torch.testing.assert_close(a, b)
    edited = audio.clone()
    edited[1, 5] += 0.01
    mixed = model.transducer_states(batch(edited))
    assert calls == [2, 1]  # the edited utterance alone is encoded again
    torch.testing.assert_close(mixed[0][0], first[0][0])  # the other one read back
    assert mixed[2].tolist() == first[2].tolist()
    with open_cfg(model):
        model.cfg.transducer.cache_states_gb = 0
    fresh = _restore(trained["path"])
    with open_cfg(fresh):
        fresh.cfg.transducer.cache_states_gb = 0
    fresh.transducer_states(batch(audio))
    assert not fresh.__dict__.get("_transducer_cache")  # nothing kept without a budget


def reference_greedy(predictor, joint, head, mode, prompt, states, length, max_symbols=5):
    """Plain greedy decoding: the whole prefix through the decoder at every token, every token's logit from the
    joint's whole output (the tokens not kept masked), at most ``max_symbols`` per frame and 2 per frame in all."""
    states = states[None, :length]
    mask = torch.ones(1, length)
    f, f_len = joint.frames(states, torch.tensor([length]))
    blocked = torch.cat([~joint.kept(), torch.zeros(1, dtype=torch.bool)])
    prefix, out = list(prompt), []
    for t in range(int(f_len[0])):
        for _ in range(max_symbols):
            ids = torch.tensor([prefix])
            g = predictor(mode, ids, torch.ones_like(ids), states, mask)[:, -1:]
            best = int(joint(f[:, t : t + 1], g, head)[0, 0, 0].masked_fill(blocked, float("-inf")).argmax())
            if best == joint.vocab_size or len(out) >= 2 * int(f_len[0]):
                break
            out.append(best)
            prefix.append(best)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batched_greedy_decoding_equals_plain_greedy_per_utterance(seed):
    torch.manual_seed(seed)
    decoder, head = tiny_whisper_decoder()
    predictor = TransducerPredictor(decoder, "dual", cross_attention=True).eval()
    joint = TransducerJoint(16, 16, 16, stack=2, lm_scale=1.0)
    with torch.no_grad():  # blank rarely best, so that most frames write tokens, up to the limits
        joint.blank_out.bias.fill_(-2.0 if seed else 1.0)
    joint.count([[1, 2, 3, 4, 5, 6, 8, 9, 11]])
    states, lengths = torch.randn(3, 9, 16), torch.tensor([9, 4, 7])
    for mode in (0, 1):
        prompt = [BOS, MODE_TOKENS[mode]]
        batched = greedy_batch(predictor, joint, head, mode, prompt, states, lengths, max_symbols=3)
        for row in range(3):
            expected = reference_greedy(predictor, joint, head, mode, prompt, states[row], int(lengths[row]), 3)
            assert batched[row] == expected
            assert set(expected) <= {1, 2, 3, 4, 5, 6, 8, 9, 11}  # kept tokens only
    empty = TransducerJoint(16, 16, 16)
    assert greedy_batch(predictor, empty, head, 0, [BOS, 14], states, lengths) == [[], [], []]


def test_a_token_after_max_repeats_copies_of_itself_ends_the_frame():
    """A joint whose best token is always the same writes it up to the length limit without the rule, and
    ``max_repeats`` times with it; the rule leaves a decoding without a longer run as it is, and cuts every longer
    run to ``max_repeats``."""
    torch.manual_seed(0)
    decoder, head = tiny_whisper_decoder()
    predictor = TransducerPredictor(decoder, "conditioned", cross_attention=True).eval()
    joint = TransducerJoint(16, 16, 16, stack=2, lm_scale=1.0)
    joint.count([[1, 2, 5]])
    with torch.no_grad():
        joint.blank_out.bias.fill_(-100.0)
        joint.token_bias[5] = 100.0
    states, lengths, prompt = torch.randn(2, 12, 16), torch.tensor([12, 6]), [BOS, MODE_TOKENS[0]]
    looping = greedy_batch(predictor, joint, head, 0, prompt, states, lengths, max_symbols=5)
    assert looping == [[5] * 12, [5] * 6]  # two a joint frame in all
    assert greedy_batch(predictor, joint, head, 0, prompt, states, lengths, 5, max_repeats=3) == [[5] * 3, [5] * 3]
    with torch.no_grad():  # blank rarely best: the random joint writes runs of a token, of different lengths
        joint.token_bias[5] = 0.0
        joint.blank_out.bias.fill_(-2.0)
    plain = greedy_batch(predictor, joint, head, 0, prompt, states, lengths, max_symbols=3)
    longest = max(_longest_run(row) for row in plain)
    assert all(plain) and longest > 3
    assert greedy_batch(predictor, joint, head, 0, prompt, states, lengths, 3, max_repeats=longest) == plain
    ruled = greedy_batch(predictor, joint, head, 0, prompt, states, lengths, 3, max_repeats=3)
    assert all(ruled) and max(_longest_run(row) for row in ruled) == 3 and ruled != plain


def _longest_run(row: list[int]) -> int:
    """The most copies of one token in a row in ``row``."""
    longest = run = 0
    for index, token in enumerate(row):
        run = run + 1 if index and token == row[index - 1] else 1
        longest = max(longest, run)
    return longest


@pytest.mark.parametrize("eval_loss", [True, False])
def test_validation_scores_the_transducer_with_or_without_its_loss(trained, eval_loss):
    from nemo_pc.data.datasets.pc_batch import PCBatch

    model = _restore(trained["path"])
    with open_cfg(model):
        model.cfg.compute_eval_loss = eval_loss
    ids = model.tokenizer.text_to_ids("who")
    tokens = torch.tensor([ids, ids])
    lengths = torch.tensor([len(ids)] * 2)
    batch = PCBatch(torch.randn(2, 3200) * 0.1, torch.tensor([3200, 2400]), tokens, lengths, tokens, lengths,
                    torch.tensor([True, False]))  # fmt: skip
    out = model.validation_pass(batch, 0)
    assert ("val_loss" in out) is eval_loss
    assert int(out["val_wer_denom_normalized"]) == 2 and int(out["val_wer_denom_punctuated"]) == 1
    assert 0.0 <= float(out["val_wer"])


def test_the_windows_of_the_pruned_joint_read_the_same_log_probabilities_as_its_lattice():
    from nemo_pc.losses.rnnt_scan import rnnt_lattice_loss

    torch.manual_seed(0)
    _, head = tiny_whisper_decoder()
    joint = TransducerJoint(frame_dim=16, width=16, vocab_size=16, stack=1, lm_scale=0.7)
    f, g = torch.randn(2, 6, 16), torch.randn(2, 5, 16)
    vocab, labels = torch.tensor([1, 3, 6, 9, 12]), torch.tensor([[0, 2, 3, 4], [1, 1, 0, 0]])
    blank_lp, emit_lp = joint.lattice(f, g, head, vocab, labels)
    starts = torch.tensor([[0, 0, 1, 1, 2, 3], [0, 1, 1, 2, 2, 2]])
    blank_win, emit_win = joint.window_lattice(f, g, head, vocab, labels, starts, size=2)
    for b in range(2):
        for t in range(6):
            for k in range(2):
                u = int(starts[b, t]) + k
                torch.testing.assert_close(blank_win[b, t, k], blank_lp[b, t, u])
                if u < 4:
                    torch.testing.assert_close(emit_win[b, t, k], emit_lp[b, t, u])
    lengths = torch.tensor([6, 5])
    targets = [vocab[labels[0]].tolist(), vocab[labels[1, :2]].tolist()]
    full = transducer_loss(joint, f, lengths, g, head, targets, vocab)
    torch.testing.assert_close(transducer_loss(joint, f, lengths, g, head, targets, vocab, prune=5), full)
    torch.testing.assert_close(full, rnnt_lattice_loss(blank_lp, emit_lp, lengths, torch.tensor([4, 2])))
    pruned = transducer_loss(joint, f, lengths, g, head, targets, vocab, prune=2, simple_scale=0.0)
    assert (pruned >= full - 1e-4).all()  # fewer paths
    pruned.sum().backward()  # gradients reach the joint through the windows
    assert joint.token_out.grad is not None and joint.token_out.grad.abs().sum() > 0


def test_a_model_trains_with_the_pruned_loss_and_validates_on_the_whole_lattice(trained):
    from nemo_pc.data.datasets.pc_batch import PCBatch

    model = _restore(trained["path"])
    ids = model.tokenizer.text_to_ids("who is here")
    tokens, lengths = torch.tensor([ids, ids]), torch.tensor([len(ids)] * 2)
    audio = torch.randn(2, 8000) * 0.1
    batch = PCBatch(audio, torch.tensor([8000, 8000]), tokens, lengths, tokens, lengths, torch.tensor([True, True]))
    model.eval()
    whole, _, _ = model.transducer_batch_loss(batch)
    with open_cfg(model):
        model.cfg.transducer.prune = 2
    pruned_eval, _, _ = model.transducer_batch_loss(batch)
    torch.testing.assert_close(pruned_eval, whole)  # validation reads the whole lattice
    model.train()
    loss, logs, _ = model.transducer_batch_loss(batch)
    loss.backward()
    assert torch.isfinite(loss) and model.transducer_joint.token_out.grad is not None


def test_the_prune_speed_benchmark_times_each_setting_on_the_same_batches(trained, tmp_path):
    """benchmarks/speed_transducer_prune.py on the tiny head: a row per setting, the first the ratios' base."""
    import json

    from benchmark_loader import load_benchmark

    bench = load_benchmark("speed_transducer_prune")
    out = tmp_path / "speed.json"
    args = ["--model", str(trained["path"]), "--manifest", str(trained["corpus"]["manifest"]), "--batch-size", "1"]
    assert bench.main([*args, "--prune", "0,2", "--batches", "2", "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    rows = results["seconds"]
    assert set(rows) == {"0", "2"} and results["settings"]["batches_timed"] == 2
    assert rows["0"]["ratio_to_first"] == 1.0
    for row in rows.values():
        assert all(row[part] > 0 for part in bench.PARTS)
        assert row["step"] == pytest.approx(sum(row[part] for part in bench.PARTS), abs=1e-3)
        assert row["mean_loss"] > 0
    assert "provenance" in results
    with pytest.raises(SystemExit) as exit_info:
        bench.main([*args, "--prune", "0,x", "--json", str(out)])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--model", str(tmp_path / "missing.nemo"), *args[2:], "--json", str(out)])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit, match="not an AED with a transducer head"):
        bench.main(["--model", str(trained["aed"]), *args[2:], "--json", str(out)])
    # other transducer settings: the frozen parts leave fewer weights to the optimizer, the loss stays the same
    settings = "prune=0;freeze_embedding=true;freeze_embedding=true,frozen_layers=1"
    assert bench.main([*args, "--settings", settings, "--batches", "2", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["seconds"]
    assert list(rows) == ["0", "freeze_embedding=True", "freeze_embedding=True,frozen_layers=1"]
    weights = [row["trainable_weights"] for row in rows.values()]
    assert weights[0] > weights[1] > weights[2] > 0
    assert len({row["mean_loss"] for row in rows.values()}) == 1  # lr 0: every setting sees the same weights
    # a new head on the AED alone, started from its decoder: the same step's parts
    aed_args = ["--model", str(trained["aed"]), "--head", "dual", *args[2:], "--batches", "2", "--json", str(out)]
    assert bench.main([*aed_args, "--settings", "prune=0;freeze_embedding=true"]) == 0
    rows = json.loads(out.read_text())["seconds"]
    assert rows["freeze_embedding=True"]["trainable_weights"] < rows["0"]["trainable_weights"]
    # torch's AdamW implementations: the same weights to the optimizer and the same loss
    assert bench.main([*args, "--settings", "adamw=foreach;adamw=fused", "--batches", "2", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["seconds"]
    assert list(rows) == ["adamw=foreach", "adamw=fused"]
    assert len({row["trainable_weights"] for row in rows.values()}) == 1
    assert len({row["mean_loss"] for row in rows.values()}) == 1
    for bad in ("prune=0;", "frozen=1", "prune", "adamw=sgd"):
        with pytest.raises(SystemExit) as exit_info:
            bench.main([*args, "--settings", bad, "--json", str(out)])
        assert exit_info.value.code == 2


def test_the_copies_embeddings_and_lower_blocks_stay_the_aeds_when_frozen(trained):
    from nemo_pc.data.datasets.pc_batch import PCBatch
    from nemo_pc.models import EncDecAEDPCModel
    from nemo_pc.parts.configs import compose_config
    from nemo_pc.testing.whisper import tiny_aed_overrides

    corpus = trained["corpus"]
    cfg = compose_config(
        "aed",
        tiny_aed_overrides(
            corpus["weights"],
            corpus["tokenizer"],
            corpus["manifest"],
            "transducer=dual",
            f"+init_from_nemo_model={trained['aed']}",
            "model.transducer.freeze_embedding=true",
            "model.transducer.frozen_layers=1",
        ),
    )
    model = EncDecAEDPCModel(cfg=cfg.model)
    model.maybe_init_from_pretrained_checkpoint(cfg)
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    for index in (0, 1):  # both copies of the dual head
        copy_ = f"transducer_predictor.decoders.{index}."
        assert not any(name.startswith((copy_ + "_embedding.", copy_ + "_decoder.layers.0.")) for name in trainable)
        assert any(name.startswith(copy_ + "_decoder.layers.1.") for name in trainable)
    assert "transducer_joint.token_out" in trainable
    before = {k: v.clone() for k, v in model.transducer_predictor.state_dict().items()}
    model.setup_optimization(cfg.model.optim)
    ids = model.tokenizer.text_to_ids("who is here")
    tokens, lengths = torch.tensor([ids, ids]), torch.tensor([len(ids)] * 2)
    batch = PCBatch(
        torch.randn(2, 8000) * 0.1, torch.tensor([8000, 8000]), tokens, lengths, tokens, lengths, torch.tensor([1, 1])
    )
    model.train()
    for _ in range(2):
        model._optimizer.zero_grad()
        loss, _, _ = model.transducer_batch_loss(batch)
        loss.backward()
        model._optimizer.step()
    after = model.transducer_predictor.state_dict()
    frozen = model.transducer_predictor.frozen_names(True, 1)
    assert frozen and all(torch.equal(after[name], before[name]) for name in frozen)
    assert any(not torch.equal(after[k], before[k]) for k in after if k not in frozen)  # the rest trained
    with pytest.raises(ValueError, match=r"frozen_layers must be in \[0, "):
        model.transducer_predictor.frozen_names(False, 99)


def test_a_decoding_weight_of_the_decoders_logits_applies_to_decoding_only(trained):
    """``transducer.decode_lm_scale``: transcription decodes as the joint with that weight does, and the joint keeps
    its trained weight (the loss's) after; a bad weight is refused by name."""
    from omegaconf import open_dict

    from nemo_pc.testing.asr import audio_paths

    paths = audio_paths(trained["corpus"]["manifest"])[:3]
    model = _restore(trained["path"])
    assert model.transducer_options["decode_lm_scale"] is None and model.transducer_joint.lm_scale == 1.0
    model.transducer_joint.lm_scale = 4.0  # what decoding at weight 4 writes, set by hand
    by_hand = model.transcribe(paths, batch_size=2, mode="both")
    model.transducer_joint.lm_scale = 1.0
    trained_weight = model.transcribe(paths, batch_size=2, mode="both")
    with open_dict(model.cfg):
        model.cfg.transducer.decode_lm_scale = 4.0
    assert model.transcribe(paths, batch_size=2, mode="both") == by_hand
    assert model.transducer_joint.lm_scale == 1.0  # restored after decoding
    with open_dict(model.cfg):
        model.cfg.transducer.decode_lm_scale = None
    assert model.transcribe(paths, batch_size=2, mode="both") == trained_weight
    with open_dict(model.cfg):
        model.cfg.transducer.decode_lm_scale = -1.0
    with pytest.raises(ValueError, match="transducer.decode_lm_scale must be null or a weight of 0 or more"):
        model.setup_transducer()
    with open_dict(model.cfg):
        model.cfg.transducer.decode_lm_scale = float("nan")  # would decode garbage without a word
    with pytest.raises(ValueError, match="transducer.decode_lm_scale must be null or a weight of 0 or more"):
        model.setup_transducer()
    for bad in (-1, 1.5, True):
        with open_dict(model.cfg):
            model.cfg.transducer.decode_lm_scale, model.cfg.transducer.max_repeats = None, bad
        with pytest.raises(ValueError, match="transducer.max_repeats must be an integer of 0 or more"):
            model.setup_transducer()


def test_the_head_decodes_in_float32_when_the_states_come_in_bfloat16(trained):
    """The head's decoding runs in float32 (its caches and rows are float32) when the states come in bfloat16."""
    from nemo_pc.testing.asr import assert_head_decodes_under_bf16_autocast

    model = _restore(trained["path"])
    bias = model.transducer_joint.blank_out.bias
    assert_head_decodes_under_bf16_autocast(model, bias, trained["corpus"]["manifest"])


def test_the_fit_parts_benchmark_cuts_every_step_of_a_real_head_fit(trained, tmp_path):
    """benchmarks/speed_head_fit.py's meter inside a tiny head's fit: a row per step, the encoder timed on the
    steps whose utterances are not cached yet (the first epoch) and not after, the parts inside the fit's time."""
    from benchmark_loader import load_benchmark

    from nemo_pc.pipelines.train import train_model

    bench = load_benchmark("speed_head_fit")
    corpus = trained["corpus"]
    overrides = _new_head_overrides(
        trained,
        "model.train_ds.shuffle=false",
        "trainer.log_every_n_steps=2",
    )
    utterances = sum(1 for _ in open(corpus["manifest"]))
    per_epoch = -(-utterances // 4)  # batches of 4
    meter = bench.PartMeter()
    stats = train_model("aed", overrides, tmp_path / "head.nemo", per_epoch + 2, callbacks=[meter.callback()])
    steps = meter.steps
    assert len(steps) == per_epoch + 2 and steps[0]["loader"] is None
    assert all(step["loader"] is not None and step["loader"] >= 0 for step in steps[1:])
    assert all(step["encoder"] > 0 for step in steps[:per_epoch])  # the first epoch encodes its batches
    assert all(step["encoder"] == 0 for step in steps[per_epoch:])  # the cache serves the second
    assert [step["training_wer"] > 0 for step in steps[:3]] == [False, True, False]  # every 2nd step
    assert all(step[part] > 0 for step in steps for part in ("forward", "backward", "optimizer"))
    parts = sum(value for step in steps for value in step.values() if value is not None)
    assert parts <= stats["seconds"] + 0.05  # the fit's seconds are rounded to 0.1
    summary = bench.summarize(steps, per_epoch)
    assert summary["windows"][1]["encoder"] == 0 and summary["windows"][0]["encoder"] > 0


def test_the_head_trains_on_the_map_style_loaders_duration_buckets(trained, tmp_path):
    """The demo's heads read their training batches with the map-style loader, in batches of similar durations
    (``use_lhotse: false``, ``bucketing_window``): the AED's recipe takes it, and the head learns from them."""
    from lightning.pytorch.callbacks import Callback

    from nemo_pc.data.datasets.pc_dataset import DurationBucketSampler
    from nemo_pc.pipelines.train import train_model

    seen = {}

    class Batches(Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            seen.setdefault("sampler", trainer.train_dataloader.sampler)
            seen.setdefault("losses", []).append(float(outputs["loss"]))

    overrides = _new_head_overrides(
        trained,
        "model.train_ds.use_lhotse=false",
        "model.train_ds.bucketing_window=2",
        "model.train_ds.batch_size=2",
        "model.optim.lr=0.01",
    )
    train_model("aed", overrides, tmp_path / "head.nemo", 6, callbacks=[Batches()])
    assert isinstance(seen["sampler"], DurationBucketSampler)
    assert len(seen["losses"]) == 6 and all(math.isfinite(loss) for loss in seen["losses"])
    assert min(seen["losses"][3:]) < seen["losses"][0]


def _new_head_overrides(trained, *extra: str) -> list[str]:
    """A new conditioned head on the ``trained`` fixture's tiny AED, through the AED recipe."""
    from nemo_pc.testing.whisper import tiny_aed_overrides

    corpus = trained["corpus"]
    return tiny_aed_overrides(
        corpus["weights"],
        corpus["tokenizer"],
        corpus["manifest"],
        "transducer=conditioned",
        f"+init_from_nemo_model={trained['aed']}",
        *extra,
    )
