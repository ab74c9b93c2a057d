"""The AED's decoder as a CTC head (nemo_pc.models.mixins.aed_decoder_ctc, nemo_pc.modules.aed_decoder_ctc): the
queries, the kept tokens, no causal mask, memorization by the modules in both modes, and the head trained from a tiny
AED's .nemo through the AED recipe, saved, restored and transcribing with either head."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_pc.modules.aed_decoder_ctc import DecoderCTCHead, decoder_ctc_hidden, greedy_ctc
from nemo_pc.testing.whisper import tiny_whisper_decoder

BOS, MODE_TOKENS = 13, (14, 15)


def _nar(decoder):
    decoder._decoder.diagonal = None
    return decoder


@settings(max_examples=50, deadline=None)
@given(
    rows=st.lists(st.lists(st.integers(0, 4), min_size=0, max_size=12), min_size=1, max_size=4),
    data=st.data(),
)
def test_greedy_ctc_merges_repeats_and_drops_blanks(rows, data):
    width = max(len(row) for row in rows) or 1
    lengths = [data.draw(st.integers(0, len(row))) for row in rows]
    best = torch.full((len(rows), width), 4)
    for k, row in enumerate(rows):
        best[k, : len(row)] = torch.tensor(row, dtype=torch.long)
    log_probs = torch.nn.functional.one_hot(best, 5).float().log()
    out = greedy_ctc(log_probs, torch.tensor(lengths))
    for row, length, ids in zip(rows, lengths, out, strict=True):
        expected = [t for k, t in enumerate(row[:length]) if t != 4 and (k == 0 or row[k - 1] != t)]
        assert ids == expected


def test_the_queries_start_as_the_mean_of_their_frames_at_the_embeddings_size():
    head = DecoderCTCHead(frame_dim=4, width=4, vocab_size=10, stack=2)
    embedding, rows = torch.randn(10, 4), torch.randn(10, 4)
    head.start_from(embedding, rows)
    states = torch.randn(2, 5, 4)
    states[1, 3:] = 0
    queries, lengths = head.queries(states, torch.tensor([5, 3]))
    assert queries.shape == (2, 3, 4) and lengths.tolist() == [3, 2]
    scale = float(embedding.norm(dim=1).mean()) / 2.0
    torch.testing.assert_close(queries[0, 0], (states[0, 0] + states[0, 1]) / 2 * scale)
    torch.testing.assert_close(queries[0, 2], states[0, 4] / 2 * scale)  # the last group padded with a zero frame
    torch.testing.assert_close(head.token_out, rows)
    log_probs = head.log_probs(torch.randn(2, 3, 4), torch.tensor([2, 7]))
    assert log_probs.shape == (2, 3, 3)  # two tokens and the blank
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(2, 3))
    assert not head.kept().any()
    head.count([[3, 3], [5]])
    head.extra_tokens[9] = True
    assert torch.nonzero(head.kept()).squeeze(1).tolist() == [3, 5, 9]
    with pytest.raises(ValueError, match="stack"):
        DecoderCTCHead(4, 4, 10, stack=0)


def test_under_bfloat16_autocast_the_log_probabilities_are_float32_and_close_to_them():
    torch.manual_seed(0)
    head = DecoderCTCHead(frame_dim=4, width=8, vocab_size=10, stack=2)
    head.start_from(torch.randn(10, 8), torch.randn(10, 8))
    hidden, vocab = torch.randn(2, 3, 8), torch.tensor([1, 4, 7])
    exact = head.log_probs(hidden, vocab)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = head.log_probs(hidden, vocab)
    assert mixed.dtype == torch.float32
    torch.testing.assert_close(mixed, exact, atol=0.1, rtol=0.05)
    torch.testing.assert_close(mixed.exp().sum(-1), torch.ones(2, 3))


def test_every_query_sees_every_other_and_padding_is_masked():
    torch.manual_seed(0)
    decoder = _nar(tiny_whisper_decoder()[0]).eval()
    prompts = torch.tensor([[BOS, MODE_TOKENS[0]]])
    queries, states, mask = torch.randn(1, 5, 16), torch.randn(1, 7, 16), torch.ones(1, 7)
    (base,) = decoder_ctc_hidden(decoder, prompts, queries, torch.tensor([5]), states, mask)
    later = queries.clone()
    later[0, 4] += torch.randn(16)  # not a constant: the blocks' layer norms take out a vector's mean
    (moved,) = decoder_ctc_hidden(decoder, prompts, later, torch.tensor([5]), states, mask)
    assert not torch.allclose(base[0, 0], moved[0, 0])  # no causal mask: the first query reads the last
    (unused,) = decoder_ctc_hidden(decoder, prompts, later, torch.tensor([4]), states, mask)
    (short,) = decoder_ctc_hidden(decoder, prompts, queries, torch.tensor([4]), states, mask)
    torch.testing.assert_close(unused[0, :4], short[0, :4])  # a query past the length is not read
    other = states.clone()
    other[0, 6] += 5.0
    mask[0, 6] = 0
    torch.testing.assert_close(
        decoder_ctc_hidden(decoder, prompts, queries, torch.tensor([5]), other, mask),
        decoder_ctc_hidden(decoder, prompts, queries, torch.tensor([5]), states, mask),
    )  # a masked frame is not read
    with pytest.raises(ValueError, match="decoder_ctc.stack"):
        decoder_ctc_hidden(decoder, prompts, torch.randn(1, 31, 16), torch.tensor([31]), states, mask)


def test_the_blocks_run_as_the_decoders_own_forward_and_any_block_is_read():
    from nemo_pc.modules.whisper_decoder import WhisperTransformerDecoderNM

    torch.manual_seed(0)
    decoder = WhisperTransformerDecoderNM(
        vocab_size=16, hidden_size=16, num_layers=3, inner_size=32, num_attention_heads=2, max_sequence_length=32
    )
    decoder = _nar(decoder).eval()
    prompts = torch.tensor([[BOS, MODE_TOKENS[1]]] * 2)
    queries, states = torch.randn(2, 6, 16), torch.randn(2, 9, 16)
    lengths, mask = torch.tensor([6, 4]), torch.ones(2, 9)
    mask[1, 7:] = 0
    first, last = decoder_ctc_hidden(decoder, prompts, queries, lengths, states, mask, blocks=[1, 3])
    embedding = decoder._embedding
    x = torch.cat([embedding.token_embedding(prompts), queries], 1) + embedding.position_embedding(torch.arange(8))
    valid = (torch.arange(8)[None] < 2 + lengths[:, None]).float()
    whole = decoder._decoder(x, valid, states, mask)[0][:, 2:]
    torch.testing.assert_close(last[0], whole[0])
    torch.testing.assert_close(last[1, :4], whole[1, :4])  # the valid queries of the shorter row
    assert not torch.allclose(first, last)
    with pytest.raises(ValueError, match="blocks must be in"):
        decoder_ctc_hidden(decoder, prompts, queries, lengths, states, mask, blocks=[4])


def test_a_condition_adds_to_the_queries_states_before_the_next_block_alone():
    """decoder_ctc_hidden's ``condition`` (self-conditioned CTC): what it returns for block 1 reaches blocks 2 and 3
    and neither block 1's output nor the prompt's positions; ``None`` adds nothing, and the last block is not
    offered."""
    from nemo_pc.modules.whisper_decoder import WhisperTransformerDecoderNM

    torch.manual_seed(0)
    decoder = WhisperTransformerDecoderNM(
        vocab_size=16, hidden_size=16, num_layers=3, inner_size=32, num_attention_heads=2, max_sequence_length=32
    )
    decoder = _nar(decoder).eval()
    prompts = torch.tensor([[BOS, MODE_TOKENS[1]]])
    queries, states = torch.randn(1, 5, 16), torch.randn(1, 9, 16)
    args = (decoder, prompts, queries, torch.tensor([5]), states, torch.ones(1, 9))
    plain = decoder_ctc_hidden(*args, blocks=[1, 2, 3])
    offered, added = [], torch.randn(1, 5, 16)  # not a constant row: a layer norm would take that away

    def shift(block, output):
        offered.append((block, output.shape))
        return added if block == 1 else None

    shifted = decoder_ctc_hidden(*args, blocks=[1, 2, 3], condition=shift)
    assert offered == [(1, (1, 5, 16)), (2, (1, 5, 16))]
    torch.testing.assert_close(shifted[0], plain[0])
    assert not torch.allclose(shifted[1], plain[1]) and not torch.allclose(shifted[2], plain[2])
    by_hand = decoder_ctc_hidden(*args[:2], queries, torch.tensor([5]), states, torch.ones(1, 9), blocks=[1])
    torch.testing.assert_close(by_hand[0], plain[0])
    nothing = decoder_ctc_hidden(*args, blocks=[1, 2, 3], condition=lambda block, output: None)
    for a, b in zip(nothing, plain, strict=True):
        torch.testing.assert_close(a, b)


def test_the_modules_memorize_two_utterances_in_both_modes():
    torch.manual_seed(0)
    decoder, out = tiny_whisper_decoder()
    decoder = _nar(decoder)
    head = DecoderCTCHead(16, 16, 16, stack=2)
    head.start_from(decoder._embedding.token_embedding.weight.detach(), out.weight.detach())
    targets = {0: [[1, 2, 3], [4, 4, 2]], 1: [[1, 2, 3, 8], [5, 6]]}
    states = torch.randn(2, 16, 16)
    lengths, mask = torch.tensor([16, 14]), torch.ones(2, 16)
    mask[1, 14:] = 0
    states = states * mask[..., None]
    vocab = torch.arange(1, 9)
    optimizer = torch.optim.Adam([*decoder.parameters(), *head.parameters()], lr=3e-3)
    first = None
    for _ in range(200):
        loss = 0.0
        for mode in (0, 1):
            queries, query_len = head.queries(states, lengths)
            prompts = torch.tensor([[BOS, MODE_TOKENS[mode]]] * 2)
            log_probs = head.log_probs(
                decoder_ctc_hidden(decoder, prompts, queries, query_len, states, mask)[0], vocab
            )
            flat = torch.tensor([t - 1 for row in targets[mode] for t in row])
            loss = loss + torch.nn.functional.ctc_loss(
                log_probs.transpose(0, 1), flat, query_len, torch.tensor([len(r) for r in targets[mode]]), blank=8
            )
        first = float(loss.detach()) if first is None else first
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert float(loss.detach()) < first / 10
    decoder.eval()
    with torch.no_grad():
        for mode in (0, 1):
            queries, query_len = head.queries(states, lengths)
            prompts = torch.tensor([[BOS, MODE_TOKENS[mode]]] * 2)
            log_probs = head.log_probs(
                decoder_ctc_hidden(decoder, prompts, queries, query_len, states, mask)[0], vocab
            )
            decoded = [[int(vocab[i]) for i in row] for row in greedy_ctc(log_probs, query_len)]
            assert decoded == targets[mode]


# The head on a tiny AED, trained through the AED recipe from the AED's .nemo (as the demo trains its RNN-Ts)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from lightning.pytorch.callbacks import Callback

    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.whisper import tiny_decoder_ctc_overrides, train_tiny_aed

    folder = tmp_path_factory.mktemp("aed_decoder_ctc")
    corpus, aed = train_tiny_aed(folder)
    losses = []

    class Losses(Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            losses.append(float(outputs["loss"]))

    text = folder / "extra.json"
    text.write_text('{"text": "Zebras graze."}\n')
    overrides = tiny_decoder_ctc_overrides(
        corpus,
        aed,
        f"model.decoder_ctc.vocab_text={text}",
        "model.decoder_ctc.stack=2",
        "model.optim.lr=0.01",
        "model.optim_param_groups.decoder_ctc_decoder.lr=0.003",
    )
    path = folder / "decoder_ctc.nemo"
    train_model("aed", overrides, path, 40, callbacks=[Losses()])
    return {"corpus": corpus, "aed": aed, "path": path, "losses": losses, "text": text}


def _restore(path):
    from nemo_pc.models import EncDecAEDPCModel

    return EncDecAEDPCModel.restore_from(str(path), map_location="cpu").eval()


def test_the_head_trains_alone_from_the_aed(trained):
    from nemo_pc.parts.manifest import read_manifest

    aed, model = _restore(trained["aed"]), _restore(trained["path"])
    assert model.cfg.decoder_ctc.stack == 2
    frozen = {k: v for k, v in model.state_dict().items() if not k.startswith("decoder_ctc_")}
    for key, value in aed.state_dict().items():  # the encoder, the AED's decoder and head, the CTC head
        torch.testing.assert_close(frozen[key], value, msg=key)
    copy_state = model.decoder_ctc_decoder.state_dict()
    moved = [k for k, v in aed.transf_decoder.state_dict().items() if not torch.equal(copy_state[k], v)]
    assert moved, "the decoder's copy did not train"
    embedding = "_embedding.token_embedding.weight"
    torch.testing.assert_close(copy_state[embedding], aed.transf_decoder.state_dict()[embedding])  # frozen
    losses = trained["losses"]
    assert sum(losses[-10:]) / 10 < sum(losses[:10]) / 10
    kept, head = model.decoder_ctc_head.kept(), model.decoder_ctc_head
    assert head.token_counts.sum() > 0
    for text in ["Zebras graze.", *(line["text"] for line in read_manifest(trained["corpus"]["manifest"]))]:
        for token in model.tokenizer.text_to_ids(text):  # the extra text's and training text's tokens, restored
            assert kept[token]
    assert int(kept.sum()) < kept.shape[0] // 100  # and not Whisper's whole vocabulary


def test_the_head_starts_as_the_aeds_decoder(trained):
    from nemo_pc.models import EncDecAEDPCModel
    from nemo_pc.parts.configs import compose_config
    from nemo_pc.testing.whisper import tiny_decoder_ctc_overrides

    corpus = trained["corpus"]

    def built(source, *extra):
        cfg = compose_config("aed", tiny_decoder_ctc_overrides(corpus, source, *extra))
        model = EncDecAEDPCModel(cfg=cfg.model)
        model.maybe_init_from_pretrained_checkpoint(cfg)
        return model, cfg

    model, cfg = built(trained["aed"])
    aed = _restore(trained["aed"])
    for key, value in aed.transf_decoder.state_dict().items():
        torch.testing.assert_close(model.decoder_ctc_decoder.state_dict()[key], value, msg=key)
    torch.testing.assert_close(model.decoder_ctc_head.token_out, aed.log_softmax.mlp.layer0.weight)
    assert model.decoder_ctc_decoder._decoder.diagonal is None and aed.transf_decoder._decoder.diagonal is not None
    trainable = {name.split(".")[0] for name, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"decoder_ctc_decoder", "decoder_ctc_head"}
    model.setup_optimization(cfg.model.optim)  # the copy at its own rate (optim_param_groups)
    assert {group["lr"] for group in model._optimizer.param_groups} == {1e-3, 1e-4}
    assert model._optimizer.defaults["foreach"] is True  # multi-tensor AdamW: bf16 autocast clips gradients
    # a trained head is kept when its checkpoint is loaded again
    again, _ = built(trained["path"], "model.decoder_ctc.stack=2")
    torch.testing.assert_close(
        again.decoder_ctc_decoder.state_dict(), _restore(trained["path"]).decoder_ctc_decoder.state_dict()
    )
    with pytest.raises(ValueError, match="alternatives"):
        built(trained["aed"], "transducer=conditioned")


def test_a_saved_head_transcribes_with_either_head(trained, tmp_path):
    from nemo_pc.testing.asr import audio_paths

    paths = audio_paths(trained["corpus"]["manifest"])[:3]
    model = _restore(trained["path"])
    both = model.transcribe(paths, batch_size=2, mode="both")
    assert both == _restore(trained["path"]).transcribe(paths, batch_size=3, mode="both")  # batched otherwise
    hyps = model.transcribe(paths, batch_size=2, mode="punctuated", return_hypotheses=True)
    assert [model.tokenizer.ids_to_text(h.y_sequence.tolist()).strip() for h in hyps] == both["punctuated"]
    model.decode_with("aed")
    assert model.transcribe(paths, batch_size=2) == _restore(trained["aed"]).transcribe(paths, batch_size=2)
    with pytest.raises(ValueError, match="no decoder_ctc"):
        _restore(trained["aed"]).decode_with("decoder_ctc")
    with pytest.raises(ValueError, match="no transducer"):
        model.decode_with("transducer")
    model.decode_with("decoder_ctc")
    saved = tmp_path / "saved.nemo"
    model.save_to(str(saved))
    assert _restore(saved).transcribe(paths, batch_size=2, mode="both") == both


def test_bad_decoder_ctc_settings_are_refused():
    from nemo_pc.models.mixins.aed_decoder_ctc import decoder_ctc_options

    with pytest.raises(ValueError, match=r"unknown key\(s\) \['stacks'\]"):
        decoder_ctc_options({"stacks": 3})
    assert decoder_ctc_options(None) is None
    assert decoder_ctc_options({"stack": 3})["stack"] == 3


def test_nemos_transcribe_speech_calls_decode_with_the_head(trained):
    """What NeMo's examples/asr/transcribe_speech.py does with the .nemo: restore through ``setup_model``, take
    ``get_transcribe_config()`` and the prompt's mode; the head writes what ``transcribe(mode=...)`` writes."""
    from nemo.collections.asr.models.aed_multitask_models import parse_multitask_prompt
    from nemo.collections.asr.parts.utils.transcribe_utils import setup_model
    from omegaconf import OmegaConf

    from nemo_pc.testing.asr import audio_paths

    asr_model, _ = setup_model(OmegaConf.create({"model_path": str(trained["path"])}), torch.device("cpu"))
    assert asr_model.decoder_ctc_decodes
    files = audio_paths(trained["corpus"]["manifest"])[:3]
    model = _restore(trained["path"])
    for prompt, mode in (({"mode": "normalized"}, "normalized"), ({}, "punctuated")):
        override = asr_model.get_transcribe_config()
        override.batch_size, override.num_workers, override.return_hypotheses = 2, 0, True
        override.channel_selector, override.augmentor, override.text_field = None, None, "text"
        override.prompt = parse_multitask_prompt(OmegaConf.to_container(OmegaConf.create(prompt)))
        got = [hyp.text for hyp in asr_model.eval().transcribe(audio=files, override_config=override)]
        assert got == model.transcribe(files, mode=mode, verbose=False), prompt


def test_inter_block_reads_both_modes_from_one_pass(trained):
    from omegaconf import open_dict

    from nemo_pc.parts.modes import NORMALIZED_ID, PUNCTUATED_ID

    model = _restore(trained["path"])
    with open_dict(model.cfg):
        model.cfg.decoder_ctc.inter_block = 1
    torch.manual_seed(0)
    width = model.transf_decoder.hidden_size
    states, lengths = torch.randn(2, 8, width), torch.tensor([8, 6])
    states[1, 6:] = 0
    vocab = torch.tensor([3, 5, 9])
    with torch.no_grad():
        rows, row_len = model.decoder_ctc_log_probs(
            [0, 0, 1], [NORMALIZED_ID, PUNCTUATED_ID, NORMALIZED_ID], states, lengths, vocab
        )
        head = model.decoder_ctc_head
        queries, query_len = head.queries(states, lengths)
        mask = (torch.arange(8)[None] < lengths[:, None]).float()
        prompts = model.mode_prompt(PUNCTUATED_ID, 2, states.device)
        inter, last = decoder_ctc_hidden(model.decoder_ctc_decoder, prompts, queries, query_len, states, mask, [1, 2])
    assert row_len.tolist() == [query_len[0], query_len[0], query_len[1]]
    torch.testing.assert_close(rows[0], head.log_probs(inter, vocab)[0])  # normalized: block 1 of 2
    torch.testing.assert_close(rows[1], head.log_probs(last, vocab)[0])  # punctuated: the last block
    torch.testing.assert_close(rows[2, : query_len[1]], head.log_probs(inter, vocab)[1, : query_len[1]])
    from nemo_pc.parts.text import normalize
    from nemo_pc.testing.asr import audio_paths

    paths = audio_paths(trained["corpus"]["manifest"])[:3]
    assert not _restore(trained["path"]).normalized_by_rules  # without inter_block each mode has its own CTC
    assert model.normalized_by_rules  # papers/004: the last block's punctuated text, normalized
    both = model.transcribe(paths, batch_size=2, mode="both", verbose=False)
    assert both["normalized"] == [normalize(text) for text in both["punctuated"]]
    assert both["normalized"] == model.transcribe(paths, batch_size=3, mode="normalized", verbose=False)
    with open_dict(model.cfg):
        model.cfg.decoder_ctc.inter_transcribe = True
    assert not model.normalized_by_rules
    both = model.transcribe(paths, batch_size=2, mode="both", verbose=False)  # both modes from one pass
    for mode in ("normalized", "punctuated"):
        assert both[mode] == model.transcribe(paths, batch_size=3, mode=mode, verbose=False)


def test_the_head_trains_in_bf16_autocast_with_the_recipes_gradient_clipping(trained, tmp_path):
    """The demo trains the head under ``trainer.precision=bf16-mixed``, where Lightning clips gradients itself and
    refuses an optimizer that unscales them (a fused AdamW): the packaged recipe's optimizer trains there."""
    from nemo_pc.parts.configs import compose_config
    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.whisper import tiny_decoder_ctc_overrides

    overrides = tiny_decoder_ctc_overrides(
        trained["corpus"], trained["aed"], "model.decoder_ctc.stack=2", "trainer.precision=bf16-mixed"
    )
    assert compose_config("aed", overrides).trainer.gradient_clip_val > 0
    path = tmp_path / "bf16.nemo"
    train_model("aed", overrides, path, 2)
    assert path.is_file()


def test_bad_decoder_ctc_settings_are_refused_when_built(trained):
    from nemo_pc.models import EncDecAEDPCModel
    from nemo_pc.parts.configs import compose_config
    from nemo_pc.testing.whisper import tiny_decoder_ctc_overrides

    corpus = trained["corpus"]
    for extra, message in (("model.decoder_ctc.inter_block=2", "inter_block"), ("variant=mixed", "pc.variant")):
        cfg = compose_config("aed", tiny_decoder_ctc_overrides(corpus, None, extra))
        with pytest.raises(ValueError, match=message):
            EncDecAEDPCModel(cfg=cfg.model)


def test_the_training_manifests_read_for_the_token_set(tmp_path):
    from omegaconf import OmegaConf

    from nemo_pc.models.mixins.aed_decoder_ctc import _train_manifests

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text('{"text": "x"}\n')
    b.write_text('{"text": "y"}\n')
    assert _train_manifests(OmegaConf.create({"manifest_filepath": f"{a}, {b}"})) == [str(a), str(b)]
    assert _train_manifests(OmegaConf.create({"manifest_filepath": [str(a), str(tmp_path / "gone.json")]})) == [str(a)]
    assert _train_manifests(OmegaConf.create({"manifest_filepath": None})) == []  # lhotse shards or none: no files
    assert _train_manifests(None) == []


def test_frozen_rows_and_negatives_train_the_head_over_the_targets_tokens_and_a_draw_of_the_others(trained, tmp_path):
    """``freeze_rows``: the output rows stay the AED's through training; ``negatives``: a step's loss reads the
    training targets' tokens (read from the manifests when built) and that many others; decoding reads every token."""
    from lightning.pytorch.callbacks import Callback

    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.whisper import tiny_decoder_ctc_overrides

    corpus, losses = trained["corpus"], []

    class Losses(Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            losses.append(float(outputs["loss"]))

    overrides = tiny_decoder_ctc_overrides(
        corpus,
        trained["aed"],
        f"model.decoder_ctc.vocab_text={trained['text']}",
        "model.decoder_ctc.stack=2",
        "model.decoder_ctc.freeze_rows=true",
        "model.decoder_ctc.negatives=2",
        "model.optim.lr=0.01",
        "model.optim_param_groups.decoder_ctc_decoder.lr=0.003",
    )
    path = tmp_path / "frozen.nemo"
    train_model("aed", overrides, path, 30, callbacks=[Losses()])
    assert sum(losses[-10:]) / 10 < sum(losses[:10]) / 10
    aed, restored = _restore(trained["aed"]), _restore(path)
    torch.testing.assert_close(restored.decoder_ctc_head.token_out, aed.log_softmax.mlp.layer0.weight)
    assert not restored.decoder_ctc_head.token_bias.any()
    from nemo_pc.models import EncDecAEDPCModel
    from nemo_pc.parts.configs import compose_config

    model = EncDecAEDPCModel(cfg=compose_config("aed", overrides).model)  # as built before training
    trainable = {name for name, p in model.named_parameters() if p.requires_grad and "token_" in name}
    assert not trainable  # the rows and biases: frozen
    head = model.decoder_ctc_head
    targets = _manifest_tokens(model, corpus["manifest"])
    assert set(torch.nonzero(head.target_rows).squeeze(1).tolist()) == targets
    extra = set(torch.nonzero(head.kept() & ~head.target_rows).squeeze(1).tolist())
    assert extra, "the extra text gives tokens no target uses"
    model.train()
    vocab = model.decoder_ctc_step_vocab(head.kept()).tolist()
    assert vocab == sorted(vocab) and targets <= set(vocab) and len(set(vocab) - targets) == min(2, len(extra))
    with pytest.raises(ValueError, match="negatives must be null or an integer >= 0"):
        EncDecAEDPCModel(cfg=compose_config("aed", [*overrides, "model.decoder_ctc.negatives=-1"]).model)


def _manifest_tokens(model, manifest) -> set[int]:
    from nemo_pc.modules.token_rows import text_token_ids

    return text_token_ids(model.tokenizer, "".join(model.cfg.pc.marks), str(manifest))[0]


def test_beam_search_follows_the_best_path_without_an_lm_and_an_lm_moves_a_close_call(tmp_path):
    """Five tokens: the audio says 0, then 1 or 2 (1 a little likelier), then 3; an LM that has seen "0 2 3" alone
    turns the close call to 2 at a high weight and leaves the sure tokens as they are."""
    from nemo_pc.modules.aed_decoder_ctc import BeamCTC
    from nemo_pc.parts.ngram_lm import estimate, write_arpa

    probs = torch.full((1, 5, 6), 0.01)
    for frame, best in enumerate([0, 5, 1, 5, 3]):
        probs[0, frame, best] = 0.95
    probs[0, 2, 1], probs[0, 2, 2] = 0.50, 0.45
    probs[0, 1, 0], probs[0, 3, 3] = 0.02, 0.02  # each blank frame's likeliest token: the one before it
    log_probs = (probs / probs.sum(-1, keepdim=True)).log()
    lengths = torch.tensor([5])
    assert greedy_ctc(log_probs, lengths) == [[0, 1, 3]]
    assert BeamCTC(5, 4, beta=0.0)(log_probs, lengths) == [[0, 1, 3]]
    lm = tmp_path / "lm.arpa"
    with lm.open("w") as handle:
        write_arpa(estimate([[0, 2, 3]] * 20 + [[4]], vocab_size=5, order=3), handle)
    assert BeamCTC(5, 4, lm, alpha=2.0, beta=0.0)(log_probs, lengths) == [[0, 2, 3]]
    assert BeamCTC(5, 4, lm, alpha=0.0, beta=0.0).key[2] is None  # weight 0: no LM read
    # pruned to each frame's 2 likeliest tokens, 2 stays a candidate at frame 2; pruned to 1, no frame offers it
    # (the LM, which never saw 1 after 0, then drops the 1 instead)
    assert BeamCTC(5, 4, lm, alpha=2.0, beta=0.0, top_k=2)(log_probs, lengths) == [[0, 2, 3]]
    assert BeamCTC(5, 4, lm, alpha=2.0, beta=0.0, top_k=1)(log_probs, lengths) == [[0, 3]]
    with pytest.raises(ValueError, match="6 outputs; the search reads 4 and a blank"):
        BeamCTC(4, 4)(log_probs, lengths)
    with pytest.raises(ValueError, match="beam size and top_k must be >= 1"):
        BeamCTC(5, 0)
    with pytest.raises(ValueError, match="beam size and top_k must be >= 1"):
        BeamCTC(5, 4, top_k=0)


def test_frame_candidates_are_each_frames_best_tokens_within_the_lengths():
    from nemo_pc.modules.aed_decoder_ctc import frame_candidates

    log_probs = torch.arange(6.0).expand(2, 3, 6) * -1.0 - 9.0  # below every best: 0 likelier than 1, ...
    log_probs = log_probs.clone()
    log_probs[0, 0, 1], log_probs[0, 1, 5], log_probs[0, 1, 4], log_probs[0, 2, 4] = -0.1, 0.0, -1.0, -0.2
    log_probs[1, 0, 2], log_probs[1, 1, 3], log_probs[1, 2, 0] = -0.1, -0.1, -0.1  # frame 2: past the length
    lengths = torch.tensor([3, 2])
    assert frame_candidates(log_probs, lengths, 1).tolist() == [1, 2, 3, 4]  # the blank (index 5) is never one
    assert frame_candidates(log_probs, lengths, 2).tolist() == [0, 1, 2, 3, 4]
    assert frame_candidates(log_probs, torch.tensor([1, 1]), 1).tolist() == [1, 2]  # the first frames only
    with pytest.raises(ValueError, match="top_k must be >= 1"):
        frame_candidates(log_probs, lengths, 0)


def test_an_lm_over_the_heads_tokens_is_built_and_fused_in_beam_search(trained, tmp_path):
    from nemo_pc.data.tokenizers.token_encoder import HeadTokensEncoder, load_token_encoder
    from nemo_pc.modules.aed_decoder_ctc import BeamCTC
    from nemo_pc.parts.lm_fusion import ngram_lm_decoding
    from nemo_pc.parts.manifest import read_manifest
    from nemo_pc.parts.ngram_lm import build_token_lm
    from nemo_pc.pipelines.lm import tune_lm_weight
    from nemo_pc.testing.asr import audio_paths

    model = _restore(trained["path"])
    ids = model.decoder_ctc_token_ids()
    encoder = load_token_encoder(model.write_decoder_ctc_tokens(tmp_path / "tokens"))
    assert isinstance(encoder, HeadTokensEncoder) and encoder.get_piece_size() == len(ids)
    for line in read_manifest(trained["corpus"]["manifest"]):
        assert [ids[k] for k in encoder.encode(line["text"])] == model.tokenizer.text_to_ids(line["text"])
    with pytest.raises(ValueError, match=r"head_tokens.json: the head does not write token"):
        encoder.encode("Quixotic xylophones")
    lm = tmp_path / "punctuated.arpa"
    built = build_token_lm(trained["corpus"]["manifest"], encoder, lm, order=3, progress=False)
    assert built.vocab_size == len(ids) and built.sentences > 0
    paths = audio_paths(trained["corpus"]["manifest"])[:3]
    greedy = model.transcribe(paths, batch_size=2, mode="both", verbose=False)
    with ngram_lm_decoding(model, "normalized", lm, 0.5, "beam", beam_size=4, beta=0.0):
        assert model.cfg.decoder_ctc.decoding.ngram_lm_model == str(lm)
        fused = model.decoder_ctc_search(len(ids), True)
        assert isinstance(fused, BeamCTC) and fused.key == (len(ids), 4, str(lm), 0.5, 0.0, 16)
        assert model.decoder_ctc_search(len(ids), False).key[2] is None  # the other mode: no LM
    assert model.cfg.decoder_ctc.get("decoding") is None and model.cfg.pc.ngram_lm_mode == "punctuated"
    with ngram_lm_decoding(model, "punctuated", None, 0.0, "beam", beam_size=4, beta=0.0):
        beam = model.transcribe(paths, batch_size=2, mode="both", verbose=False)
    assert beam == greedy  # the memorized utterances: one path holds nearly all the mass
    choice = tune_lm_weight(model, "punctuated", lm, trained["corpus"]["manifest"], [0.0, 0.5], beam_size=4)
    assert set(choice.grid) == {"0", "0.5"} and all(0 <= v <= 1 for v in choice.grid.values())
    with pytest.raises(ValueError, match="beam search only"):
        with ngram_lm_decoding(model, "punctuated", lm, 0.5, "greedy"):
            pass
    assert model.transcribe(paths, batch_size=2, mode="both", verbose=False) == greedy  # restored after


def test_bad_decoder_ctc_decoding_settings_are_refused():
    from nemo_pc.models.mixins.aed_decoder_ctc import decoder_ctc_decoding

    assert decoder_ctc_decoding(None)["strategy"] == "greedy"
    for bad, message in (
        ({"strategy": "beams"}, "strategy must be one of"),
        ({"strategy": "beam", "beam_size": 0}, "beam_size must be an integer >= 1"),
        ({"strategy": "beam", "ngram_lm_alpha": -1}, "ngram_lm_alpha must be a number >= 0"),
        ({"ngram_lm_model": "lm.nemo"}, "beam search only"),
        ({"beam": 4}, r"unknown key\(s\) \['beam'\]"),
        ({"strategy": "beam", "top_k": 0}, "top_k must be an integer >= 1 or null"),
    ):
        with pytest.raises(ValueError, match=message):
            decoder_ctc_decoding(bad)


def test_the_head_decodes_in_float32_when_the_states_come_in_bfloat16(trained):
    """The head's decoding runs in float32 (its caches and rows are float32) when the states come in bfloat16."""
    from nemo_pc.testing.asr import assert_head_decodes_under_bf16_autocast

    model = _restore(trained["path"])
    bias = model.decoder_ctc_head.blank_out.bias
    assert_head_decodes_under_bf16_autocast(model, bias, trained["corpus"]["manifest"])
