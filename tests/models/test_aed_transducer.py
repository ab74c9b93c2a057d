"""The transducer head of the AED (nemo_pc.models.mixins.aed_transducer, nemo_pc.modules.aed_transducer): its sampled
vocabulary, the joint's language-model term, the cached decoder step, memorization by the modules, and the head
trained from a tiny AED's .nemo through the AED recipe, saved, restored and transcribing with either head."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from nemo_pc.modules.aed_transducer import (
    TransducerJoint,
    TransducerPredictor,
    greedy,
    sample_vocabulary,
    transducer_loss,
)

BOS, MODE_TOKENS = 13, (14, 15)


def tiny_decoder(vocab: int = 16, hidden: int = 16):
    from nemo_pc.modules.whisper_decoder import WhisperTransformerDecoderNM

    decoder = WhisperTransformerDecoderNM(
        vocab_size=vocab,
        hidden_size=hidden,
        num_layers=1,
        inner_size=32,
        num_attention_heads=2,
        max_sequence_length=32,
    )
    head = nn.Linear(hidden, vocab)
    head.weight = decoder.embedding.token_embedding.weight  # tied, as the AED's output rows are Whisper's embedding
    return decoder, head


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
    _, head = tiny_decoder()
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
    decoder, _ = tiny_decoder()
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
    decoder, _ = tiny_decoder()
    dual, one = TransducerPredictor(decoder, "dual"), TransducerPredictor(decoder, "conditioned")
    assert len(dual.decoders) == 2 and dual.decoder(0) is not dual.decoder(1)
    assert one.decoder(0) is one.decoder(1)
    with pytest.raises(ValueError, match="decoders"):
        TransducerPredictor(decoder, "triple")


@pytest.mark.parametrize("decoders,cross_attention", [("conditioned", True), ("dual", True), ("conditioned", False)])
def test_the_modules_memorize_two_utterances_in_both_modes(decoders, cross_attention):
    torch.manual_seed(0)
    decoder, head = tiny_decoder()
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
        loss = transducer_loss(joint, f, f_len, g, head, targets[mode], vocab).mean()
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
