"""benchmarks/quality_cached_heads.py: stacked frames, and CTC heads that memorize cached encoder outputs."""

import pytest
import torch
from benchmark_loader import load_benchmark


def test_frames_are_stacked_side_by_side_and_the_last_group_padded():
    bench = load_benchmark("quality_cached_heads")
    frames = torch.arange(10.0).reshape(5, 2)
    stacked = bench.stack_frames(frames, 2)
    assert stacked.shape == (3, 4)
    assert stacked[0].tolist() == [0.0, 1.0, 2.0, 3.0] and stacked[2].tolist() == [8.0, 9.0, 0.0, 0.0]


def test_the_heads_memorize_two_utterances_in_both_modes():
    bench = load_benchmark("quality_cached_heads")
    torch.manual_seed(0)
    feats = [torch.randn(12, 8), torch.randn(9, 8)]
    targets = {"normalized": [[1, 2, 3], [4, 4, 2]], "punctuated": [[1, 2, 5], [4, 6]]}
    heads = bench.CachedHeads(8, vocab_size=7, hidden=32, layers=1, heads=2)
    points = []
    losses = bench.train_heads(heads, feats, targets, 300, batch_size=2, lr=3e-3, every=150, on_point=points.append)
    assert points == [150, 300]
    assert losses[-1]["loss"] < losses[0]["loss"]
    out = bench.transcribe(heads, feats, detokenize=lambda ids: " ".join(map(str, ids)))
    assert out["punctuated"] == ["1 2 5", "4 6"]
    assert out["normalized"] == ["1 2 3", "4 4 2"]  # a repeated piece needs a blank between: CTC learned it


def test_the_heads_read_the_aeds_tokenizer_or_one_of_the_size_asked(tmp_path):
    from types import SimpleNamespace

    from omegaconf import OmegaConf

    from nemo_pc.parts.manifest import write_manifest

    bench = load_benchmark("quality_cached_heads")
    model = SimpleNamespace(ctc_tokenizer="the AED's", cfg=OmegaConf.create({"train_ds": {"marks": [".", ",", "?"]}}))
    assert bench.head_tokenizer(model, 0, tmp_path / "unused.json", tmp_path) == "the AED's"
    text = "And God said, let there be light: and there was light. Who is like unto thee? They went out, two by two."
    manifest = write_manifest(tmp_path / "train.json", [{"audio_filepath": "a.wav", "duration": 1, "text": text}] * 30)
    tokenizer = bench.head_tokenizer(model, 48, manifest, tmp_path / "tok")
    assert tokenizer.vocab_size == 48
    assert tokenizer.ids_to_text(tokenizer.text_to_ids("Who is like unto thee?")) == "Who is like unto thee?"


def test_kept_tokens_renumber_the_tokens_the_texts_use_and_read_back():
    bench = load_benchmark("quality_cached_heads")

    class Words:  # a tokenizer with a large id per word, as Whisper's ids are
        ids = {"the": 9000, "light": 40, ",": 13, ".": 500}

        def text_to_ids(self, text):
            return [self.ids[word] for word in text.split()]

        def ids_to_text(self, ids):
            words = {v: k for k, v in self.ids.items()}
            return " ".join(words[i] for i in ids)

    kept = bench.KeptTokens(Words(), ["the light .", "light , light"])
    assert kept.kept == [13, 40, 500, 9000] and kept.vocab_size == 4
    assert kept.text_to_ids("the light ,") == [3, 1, 0]
    assert kept.ids_to_text([3, 1, 2]) == "the light ."


def test_the_output_rows_start_as_the_rows_given_with_a_zero_blank():
    bench = load_benchmark("quality_cached_heads")
    heads = bench.CachedHeads(8, vocab_size=3, hidden=4, layers=0, norm=True)
    rows = torch.arange(12.0).reshape(3, 4)
    heads.init_rows(rows)
    for head in heads.out.values():
        assert torch.equal(head.weight[:3], rows) and not head.weight[3].any() and not head.bias.any()
    heads.eval()
    out = heads(torch.randn(1, 5, 8), torch.tensor([5]))
    assert out["normalized"].shape == (1, 5, 4)  # 3 tokens and the blank


def test_the_rendered_table_has_a_row_per_results_file(tmp_path):
    import json

    render = load_benchmark("render_results")

    def results(vocab: int, curve: list, n_wer: float) -> dict:
        settings = {"vocab_size": vocab, "layers": 0, "parameters": 1_380_000, "stack": 4, "batch_size": 32}
        return {
            "settings": settings,
            "utterances": {"train": 2610, "dev": 80},
            "curve": [{"step": step, "train_minutes": step / 250, "dev_n_wer": wer} for step, wer in curve],
            "scores": {
                "test": {"n_wer": n_wer, "per": 0.457, "punct_f1": 0.543},
                "real_test": {"wer": 0.63, "ci95": [0.546, 0.708]},
            },
        }

    paths = []
    for vocab, curve, n_wer in ((512, [(500, 0.41), (1000, 0.398)], 0.607), (1024, [(1000, 0.364)], 0.573)):
        paths.append(tmp_path / f"v{vocab}.json")
        paths[-1].write_text(json.dumps(results(vocab, curve, n_wer)))
    text = render.render_cached_heads(*paths)
    assert "4 frames stacked, batches of 32, 2610 training utterances; dev: 80 utterances" in text
    assert "| vocabulary | layers | parameters | train minutes | dev N-WER at 500 | dev N-WER at 1000 |" in text
    assert "| 512 | 0 | 1.38 M | 4.0 | 41.0% | 39.8% | 60.7% | 45.7% | 54.3% | 63.0% [54.6, 70.8] |" in text
    assert "| 1024 | 0 | 1.38 M | 4.0 | - | 36.4% | 57.3% |" in text  # a point the run did not take: "-"


def _write_report(path, settings: dict):
    """A 1,024-piece MLP head's results file with ``settings`` over the defaults (one curve point, test and
    ``real_test`` scores), as quality_cached_heads.py writes it."""
    import json

    defaults = {"vocab_size": 1024, "layers": 0, "parameters": 1_380_000, "stack": 4, "batch_size": 32}
    report = {
        "settings": defaults | settings,
        "utterances": {"train": 2610, "dev": 80},
        "curve": [{"step": 2000, "train_minutes": 3.0, "dev_n_wer": 0.5}],
        "scores": {"test": {"n_wer": 0.7}, "real_test": {"wer": 0.77, "ci95": [0.74, 0.82]}},
    }
    path.write_text(json.dumps(report))
    return path


def test_an_encoder_column_names_whisper_and_the_block_read(tmp_path):
    import json

    render = load_benchmark("render_results")
    paths = []
    for name, model, layer in (("aed", "demo_out/models/aed_prompt.nemo", None), ("w3", "whisper", 3)):
        settings = {"model": model} | ({"layer": layer} if layer is not None else {})
        paths.append(_write_report(tmp_path / f"{name}.json", settings))
    text = render.render_cached_heads(*paths)
    assert "| encoder | vocabulary |" in text
    assert "| the AED's, top | 1024 |" in text and "| Whisper tiny.en's, block 3 | 1024 |" in text
    assert "| encoder |" not in render.render_cached_heads(paths[0])  # the AED's top alone: no column
    report = json.loads(paths[0].read_text())
    report["settings"] |= {"whisper_tokens": "init", "pieces": 6052}
    paths[0].write_text(json.dumps(report))
    assert "| 6052 Whisper tokens, the AED's rows | 0 |" in render.render_cached_heads(paths[0])


def test_a_frame_column_where_the_files_stack_differently(tmp_path):

    render = load_benchmark("render_results")
    paths = []
    for stack in (4, 2):
        settings = {"model": "demo_out/models/aed_prompt.nemo", "stack": stack}
        paths.append(_write_report(tmp_path / f"s{stack}.json", settings))
    text = render.render_cached_heads(*paths)
    assert "(20 ms frames stacked, batches of 32" in text
    assert "| frame | vocabulary |" in text
    assert "| 80 ms | 1024 | 0 |" in text and "| 40 ms | 1024 | 0 |" in text
    alone = render.render_cached_heads(paths[1])
    assert "(2 frames stacked" in alone and "| frame |" not in alone


def test_the_decoder_head_is_named_and_a_batch_column_where_the_files_differ_in_it(tmp_path):
    render = load_benchmark("render_results")
    mlp = _write_report(tmp_path / "mlp.json", {"whisper_tokens": "init", "pieces": 5312})
    decoder = _write_report(
        tmp_path / "decoder.json",
        {"whisper_tokens": "init", "pieces": 5312, "head": "decoder", "layers": 1, "batch_size": 16},
    )
    text = render.render_cached_heads(mlp, decoder)
    assert "(4 frames stacked, 2610 training utterances" in text and "batches of" not in text
    assert "| batch | vocabulary | layers |" in text
    assert "| 32 | 5312 Whisper tokens, the AED's rows | 0 |" in text
    assert "| 16 | 5312 Whisper tokens, the AED's rows | the AED's decoder |" in text
    assert "| batch |" not in render.render_cached_heads(decoder)
    inter = _write_report(
        tmp_path / "inter.json",
        {"whisper_tokens": "init", "pieces": 5312, "head": "decoder", "layers": 1, "batch_size": 16, "inter_block": 2},
    )
    assert "| the AED's decoder, one pass, normalized at block 2 |" in render.render_cached_heads(inter)
    settings = {"whisper_tokens": "init", "pieces": 5312, "head": "decoder", "layers": 1, "inter_block": 3}
    conditioned = _write_report(tmp_path / "sc.json", settings | {"condition_blocks": [3, 2]})
    masked = _write_report(tmp_path / "tm.json", settings | {"time_masks": 2, "time_mask_width": 5})
    text = render.render_cached_heads(conditioned, masked)
    assert "| the AED's decoder, one pass, normalized at block 3, self-conditioned after blocks 2, 3 |" in text
    assert "| the AED's decoder, one pass, normalized at block 3, 2 time masks of up to 5 steps |" in text
    wide = settings | {"pieces": 32609, "vocab_text": "demo_out/lm/text.json"}
    frozen = _write_report(tmp_path / "frozen.json", wide | {"rows_lr": 0.0})
    sampled = _write_report(tmp_path / "sampled.json", wide | {"rows_lr": 0.0, "negatives": 2048})
    slow = _write_report(tmp_path / "slow.json", wide | {"rows_lr": 1e-4})
    text = render.render_cached_heads(frozen, sampled, slow)
    named = "32609 Whisper tokens (those of the training targets and of `text.json`), the AED's rows"
    assert f"| {named}, frozen | the AED's decoder" in text
    assert f"| {named}, frozen; a step's loss over the targets' rows and 2,048 others |" in text
    assert f"| {named} at learning rate 0.0001 |" in text
    kept = _write_report(tmp_path / "kept.json", wide | {"rows_lr": 0.0, "negatives": 2048, "kept_targets": 512})
    assert (
        "frozen; a step's loss over its batch's target rows, the 512 most frequent target rows and 2,048 others |"
        in (render.render_cached_heads(kept))
    )


def test_encode_reads_the_output_of_the_block_asked(tmp_path):
    from types import SimpleNamespace

    import numpy as np
    import soundfile
    from torch import nn

    bench = load_benchmark("quality_cached_heads")

    class Encoder(nn.Module):  # block 1 adds 1, block 2 doubles, the top multiplies by 10
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Identity(), nn.Identity()])

        def forward(self, x):
            h = self.layers[0](x + 1)
            h = self.layers[1](h * 2)
            return h * 10

    encoder = Encoder()

    def encode(signal, lengths):  # (B, T) audio -> (B, 1, T), as the AED's encode gives
        return encoder(signal[..., None]).transpose(1, 2), lengths

    model = SimpleNamespace(encoder=encoder, encode=encode, ctc_decoder=None)
    rows = []
    for k, samples in enumerate(([0.5, 0.25, 0.0], [0.125, 0.5])):
        path = tmp_path / f"{k}.wav"
        soundfile.write(path, np.array(samples, dtype="float32"), 16000, subtype="FLOAT")
        rows.append({"audio_filepath": str(path), "duration": len(samples) / 16000})
    top, _ = bench.encode(model, rows, stack=1)
    first, _ = bench.encode(model, rows, stack=1, layer=1)
    second, _ = bench.encode(model, rows, stack=1, layer=2)
    assert top[1][:, 0].tolist() == [22.5, 30.0]  # (x + 1) * 2 * 10
    assert first[1][:, 0].tolist() == [1.125, 1.5] and second[1][:, 0].tolist() == [2.25, 3.0]
    assert first[0].shape == (3, 1)  # each utterance cut to its own length
    assert not encoder.layers[0]._forward_hooks  # the tap is removed


def test_a_column_names_the_more_training_lines_of_a_file(tmp_path):
    render = load_benchmark("render_results")
    base = _write_report(tmp_path / "base.json", {"extra_train": []})
    more = _write_report(tmp_path / "more.json", {"extra_train": ["/x/pool.json:20", "/y/real_dev.json"]})
    text = render.render_cached_heads(base, more)
    assert "| more training lines | vocabulary |" in text
    assert "| none | 1024 |" in text and "| pool x20, real_dev x1 | 1024 |" in text
    assert "more training lines" not in render.render_cached_heads(base)  # no file with them: no column


def test_more_training_lines_are_read_with_their_repeats(tmp_path):
    """``--extra-train MANIFEST:REPEAT`` adds each line of the manifest REPEAT times to the training rows."""
    import json

    bench = load_benchmark("quality_cached_heads")
    demo = tmp_path / "demo"
    (demo / "manifests").mkdir(parents=True)
    (demo / "real_speech").mkdir()
    line = {"audio_filepath": "a.wav", "duration": 1.0, "text": "a b"}
    for name in ("manifests/train", "manifests/dev_curve", "manifests/test", "real_speech/real_test"):
        (demo / f"{name}.json").write_text(json.dumps(line) + "\n")
    extra = tmp_path / "pool.json"
    extra.write_text(json.dumps(line | {"text": "c"}) + "\n")
    rows = bench.training_rows(demo, [f"{extra}:3"])
    assert [row["text"] for row in rows["train"]] == ["a b", "c", "c", "c"]
    assert len(rows["test"]) == 1


def test_a_bad_extra_train_value_is_named(tmp_path, capsys):
    """A manifest that is not there, or a REPEAT of 0, stops the run with a line naming it (exit code 2)."""
    bench = load_benchmark("quality_cached_heads")
    pool = tmp_path / "pool.json"
    pool.write_text("")
    assert bench.split_extra_train(f"{pool}:20") == (str(pool), 20)
    assert bench.split_extra_train(str(pool)) == (str(pool), 1)
    for value, message in ((f"{tmp_path / 'absent.json'}:3", "absent.json: no such manifest"),
                           (f"{pool}:0", "REPEAT must be 1 or more")):  # fmt: skip
        with pytest.raises(SystemExit) as stop:
            bench.main(["--model", "m.nemo", "--demo-dir", str(tmp_path), "--extra-train", value, "--json", "r.json"])
        assert stop.value.code == 2
        assert message in capsys.readouterr().err


def _tiny_aed(vocab: int = 16, hidden: int = 16, layers: int = 1):
    from types import SimpleNamespace

    from torch import nn

    from nemo_pc.testing.whisper import tiny_whisper_decoder

    decoder, head = tiny_whisper_decoder(vocab, hidden, layers)
    prompts = {"normalized": 14, "punctuated": 15}
    return SimpleNamespace(
        transf_decoder=decoder,
        log_softmax=SimpleNamespace(mlp=SimpleNamespace(layer0=head)),
        encoder_decoder_proj=nn.Identity(),
        mode_prompt=lambda mode, batch, device: torch.tensor([[13, prompts[mode]]] * batch),
    )


def _decoder_head(bench, kept=(2, 5, 7, 9), stack=2, layers=1, inter_block=None, condition_blocks=()):
    aed = _tiny_aed(layers=layers)
    prompts = {mode: aed.mode_prompt(mode, 1, None)[0].tolist() for mode in bench.MODES}
    rows = aed.log_softmax.mlp.layer0.weight.detach()[list(kept)]
    head = bench.DecoderHead(aed, rows, 16, stack, prompts, inter_block=inter_block, condition_blocks=condition_blocks)
    return aed, head


def test_the_decoder_head_starts_from_the_aeds_rows_and_reads_every_frame():
    bench = load_benchmark("quality_cached_heads")
    torch.manual_seed(0)
    aed, head = _decoder_head(bench)
    assert torch.equal(head.head.token_out, aed.log_softmax.mlp.layer0.weight[[2, 5, 7, 9]])
    assert head.blank == 4 and not head.head.blank_out.weight.any()
    assert not head.decoder._embedding.token_embedding.weight.requires_grad  # it embeds the prompt alone
    head.eval()
    x = bench.stack_frames(torch.randn(10, 16), 2)[None]
    out = head(x, torch.tensor([5]))
    assert out["normalized"].shape == (1, 5, 5) and out["punctuated"].shape == (1, 5, 5)
    assert not torch.allclose(out["normalized"], out["punctuated"])  # the prompt tells the modes apart
    later = x.clone()
    later[0, 4] += 1.0
    changed = head(later, torch.tensor([5]))["normalized"]
    assert not torch.allclose(changed[0, 0], out["normalized"][0, 0])  # no causal mask: the first sees the last
    padded = torch.cat([x, torch.zeros(1, 3, 32)], dim=1)
    alone = head(padded, torch.tensor([5]))["normalized"][0, :5]
    torch.testing.assert_close(alone, out["normalized"][0], atol=1e-5, rtol=1e-5)  # padding is masked out
    with pytest.raises(ValueError, match="exceed the decoder's 32 positions"):
        head(torch.zeros(1, 31, 32), torch.tensor([31]))  # 31 queries and 2 prompt tokens


@pytest.mark.parametrize("inter_block", [None, 1])
def test_the_decoder_head_memorizes_two_utterances_in_both_modes(inter_block):
    """A pass per mode, or one pass with the normalized CTC on the first of two blocks (--inter-block 1)."""
    bench = load_benchmark("quality_cached_heads")
    torch.manual_seed(0)
    _, head = _decoder_head(bench, layers=2, inter_block=inter_block)
    feats = [bench.stack_frames(torch.randn(16, 16), 2), bench.stack_frames(torch.randn(12, 16), 2)]
    targets = {"normalized": [[0, 1, 2], [3, 3, 1]], "punctuated": [[0, 1, 2, 3], [3, 2]]}
    losses = bench.train_heads(head, feats, targets, 300, batch_size=2, lr=1e-2, decoder_lr=3e-3)
    assert losses[-1]["loss"] < losses[0]["loss"]
    out = bench.transcribe(head, feats, detokenize=lambda ids: " ".join(map(str, ids)))
    assert out["punctuated"] == ["0 1 2 3", "3 2"]
    assert out["normalized"] == ["0 1 2", "3 3 1"]


def test_frozen_rows_keep_the_aeds_rows_while_the_head_learns_and_rows_of_their_own_rate_move():
    """--rows-lr 0: the token rows and biases stay the AED's (a token no target uses keeps its row) and the head still
    memorizes two utterances; a rows rate of its own puts them in a group of their own."""
    bench = load_benchmark("quality_cached_heads")
    torch.manual_seed(0)
    aed, head = _decoder_head(bench, kept=(2, 5, 7, 9, 11), layers=2, inter_block=1)
    start = head.head.token_out.detach().clone()
    feats = [bench.stack_frames(torch.randn(16, 16), 2), bench.stack_frames(torch.randn(12, 16), 2)]
    targets = {"normalized": [[0, 1, 2], [3, 3, 1]], "punctuated": [[0, 1, 2, 3], [3, 2]]}  # row 4: no target
    losses = bench.train_heads(head, feats, targets, 300, batch_size=2, lr=1e-2, decoder_lr=3e-3, rows_lr=0.0)
    assert losses[-1]["loss"] < losses[0]["loss"]
    assert torch.equal(head.head.token_out, start) and not head.head.token_bias.any()
    assert torch.equal(head.head.token_out, aed.log_softmax.mlp.layer0.weight[[2, 5, 7, 9, 11]])
    out = bench.transcribe(head, feats, detokenize=lambda ids: " ".join(map(str, ids)))
    assert out == {"punctuated": ["0 1 2 3", "3 2"], "normalized": ["0 1 2", "3 3 1"]}
    _, other = _decoder_head(bench)
    groups = other.param_groups(1e-3, 1e-4, rows_lr=3e-4)
    assert [group["lr"] for group in groups] == [1e-4, 1e-3, 3e-4]
    assert groups[-1]["params"] == [other.head.token_out, other.head.token_bias]
    rows = {id(other.head.token_out), id(other.head.token_bias)}
    assert not rows & {id(p) for group in groups[:2] for p in group["params"]}
    assert [group["lr"] for group in other.param_groups(1e-3, 1e-4)] == [1e-4, 1e-3, 1e-3]  # default: --lr


def test_with_negatives_a_step_reads_the_targets_rows_and_some_others_and_the_head_still_learns():
    bench = load_benchmark("quality_cached_heads")
    torch.manual_seed(0)
    aed, head = _decoder_head(bench, kept=(2, 3, 4, 5, 6, 7, 8, 9), layers=2, inter_block=1)
    head.negatives = 2
    head.set_target_rows([[0, 1], [3], []])
    draws = torch.Generator().manual_seed(0)
    vocabs = [head.step_vocab(draws).tolist() for _ in range(20)]
    assert all(len(v) == 5 and {0, 1, 3} <= set(v) and v == sorted(v) for v in vocabs)
    assert len({tuple(v) for v in vocabs}) > 1  # the others are drawn afresh
    head.eval()
    x = bench.stack_frames(torch.randn(10, 16), 2)[None]
    full, part = head(x, torch.tensor([5])), head(x, torch.tensor([5]), torch.tensor([0, 3, 6]))
    assert part["punctuated"].shape == (1, 5, 4)
    torch.testing.assert_close(  # the same logits, normalized over fewer rows
        part["punctuated"].exp().sum(-1), torch.ones(1, 5)
    )
    assert not torch.allclose(part["punctuated"][..., 0], full["punctuated"][..., 0])
    feats = [bench.stack_frames(torch.randn(16, 16), 2), bench.stack_frames(torch.randn(12, 16), 2)]
    targets = {"normalized": [[0, 1, 2], [3, 3, 1]], "punctuated": [[0, 1, 2, 3], [3, 2]]}  # rows 4-7: no target
    losses = bench.train_heads(head, feats, targets, 300, batch_size=2, lr=1e-2, decoder_lr=3e-3, rows_lr=0.0)
    assert losses[-1]["loss"] < losses[0]["loss"]
    assert head.target_rows.tolist() == [True] * 4 + [False] * 4
    out = bench.transcribe(head, feats, detokenize=lambda ids: " ".join(map(str, ids)))  # decoded over every row
    assert out == {"punctuated": ["0 1 2 3", "3 2"], "normalized": ["0 1 2", "3 3 1"]}
    _, plain = _decoder_head(bench)
    assert plain.step_vocab(draws) is None  # without negatives: every row


def test_with_kept_targets_a_step_reads_its_batch_the_most_frequent_targets_and_some_others():
    bench = load_benchmark("quality_cached_heads")
    torch.manual_seed(0)
    _, head = _decoder_head(bench, kept=(2, 3, 4, 5, 6, 7, 8, 9), layers=2, inter_block=1)
    head.negatives, head.kept_targets = 2, 1
    head.set_target_rows([[0, 1, 1], [3, 1], [0]])
    assert head.frequent_rows.tolist() == [1, 0, 3]  # by falling count, ties by row
    draws = torch.Generator().manual_seed(0)
    vocabs = [head.step_vocab(draws, [[5], [5, 6]]).tolist() for _ in range(20)]
    assert all(len(v) == 5 and {1, 5, 6} <= set(v) and v == sorted(v) for v in vocabs)
    assert len({tuple(v) for v in vocabs}) > 1
    feats = [bench.stack_frames(torch.randn(16, 16), 2), bench.stack_frames(torch.randn(12, 16), 2)]
    targets = {"normalized": [[0, 1, 2], [3, 3, 1]], "punctuated": [[0, 1, 2, 3], [3, 2]]}
    losses = bench.train_heads(head, feats, targets, 300, batch_size=2, lr=1e-2, decoder_lr=3e-3, rows_lr=0.0)
    assert losses[-1]["loss"] < losses[0]["loss"]
    out = bench.transcribe(head, feats, detokenize=lambda ids: " ".join(map(str, ids)))
    assert out == {"punctuated": ["0 1 2 3", "3 2"], "normalized": ["0 1 2", "3 3 1"]}


def test_a_self_conditioned_head_feeds_its_intermediate_ctcs_to_the_blocks_above():
    """--condition-blocks 1 --inter-block 2 over three blocks: the block-1 CTC is trained (its own output key), not
    scored, and what it writes reaches the blocks above; the first two blocks do not see it."""
    bench = load_benchmark("quality_cached_heads")
    torch.manual_seed(0)
    _, head = _decoder_head(bench, layers=3, inter_block=2, condition_blocks=[1])
    assert head.condition_blocks == [1, 2]
    head.eval()
    x = bench.stack_frames(torch.randn(10, 16), 2)[None]
    out = head(x, torch.tensor([5]))
    assert set(out) == {"normalized", "punctuated", "normalized@1"}
    with torch.no_grad():
        head.condition_scale.fill_(0.0)
    plain = head(x, torch.tensor([5]))
    torch.testing.assert_close(plain["normalized@1"], out["normalized@1"])  # block 1 reads nothing conditioned
    assert not torch.allclose(plain["normalized"], out["normalized"])  # block 2 reads block 1's CTC
    assert not torch.allclose(plain["punctuated"], out["punctuated"])
    soft = head.soft_rows(out["normalized@1"], torch.arange(head.blank))
    assert soft.shape == (1, 5, 16) and not soft.any()  # the scale is 0 now


def test_a_self_conditioned_head_memorizes_two_utterances_and_transcribes_its_two_outputs():
    bench = load_benchmark("quality_cached_heads")
    torch.manual_seed(0)
    _, head = _decoder_head(bench, layers=3, inter_block=2, condition_blocks=[1])
    feats = [bench.stack_frames(torch.randn(16, 16), 2), bench.stack_frames(torch.randn(12, 16), 2)]
    targets = {"normalized": [[0, 1, 2], [3, 3, 1]], "punctuated": [[0, 1, 2, 3], [3, 2]]}
    losses = bench.train_heads(head, feats, targets, 300, batch_size=2, lr=1e-2, decoder_lr=3e-3)
    assert losses[-1]["loss"] < losses[0]["loss"]
    out = bench.transcribe(head, feats, detokenize=lambda ids: " ".join(map(str, ids)))
    assert out == {"punctuated": ["0 1 2 3", "3 2"], "normalized": ["0 1 2", "3 3 1"]}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--condition-blocks", "1"], "--condition-blocks needs --head decoder and --inter-block"),
        (["--head", "decoder", "--condition-blocks", "1"], "--condition-blocks needs --head decoder"),
        (["--head", "decoder", "--inter-block", "2", "--condition-blocks", "3"], "each in [1, --inter-block 2]"),
        (["--head", "decoder", "--inter-block", "2", "--condition-blocks", "0,1"], "each in [1, --inter-block 2]"),
        (["--time-masks", "-1"], "--time-masks and --time-mask-width must be >= 0"),
        (["--time-mask-width", "-2"], "--time-masks and --time-mask-width must be >= 0"),
        (["--rows-lr", "0"], "--rows-lr 0.0: needs --head decoder"),
        (["--negatives", "8"], "--negatives 8: needs --head decoder"),
        (["--head", "decoder", "--negatives=-1"], "--negatives -1: needs --head decoder and a value >= 0"),
        (["--head", "decoder", "--kept-targets", "4"], "--kept-targets 4: needs --negatives"),
        (["--head", "decoder", "--negatives", "8", "--kept-targets=-1"], "--kept-targets -1: needs --negatives"),
        (["--head", "decoder", "--rows-lr=-1e-3"], "--rows-lr -0.001: needs --head decoder and a value >= 0"),
    ],
)
def test_bad_self_conditioning_or_time_masks_are_refused(argv, message, capsys):
    bench = load_benchmark("quality_cached_heads")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--model", "m.nemo", "--demo-dir", "d", "--json", "o.json", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def _pieces(tmp_path, vocab_size=30):
    """A tiny cased, punctuated SentencePiece trained here, as a NeMo BPE model holds it (``ASRBPEMixin`` gives the
    inner processor the vocabulary that NeMo's CTC decoding reads)."""
    from nemo.collections.common.tokenizers.sentencepiece_tokenizer import SentencePieceTokenizer

    from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest

    lines = [("The cat sat.", "book"), ("A dog ran?", "book"), ("The dog, sat.", "book")] * 4
    manifest = write_pc_manifest(tmp_path / "audio", lines)
    folder = train_tokenizer(manifest, tmp_path / "tok", vocab_size=vocab_size)
    pieces = SentencePieceTokenizer(model_path=str(folder / "tokenizer.model"))
    vocabulary = {pieces.tokenizer.id_to_piece(i): i for i in range(pieces.vocab_size)}
    pieces.tokenizer.vocab_size, pieces.tokenizer.get_vocab = len(vocabulary), lambda: vocabulary  # as NeMo's models
    return pieces


def test_a_pieces_rows_start_as_the_mean_of_the_aeds_rows_of_its_whisper_tokens(tmp_path):
    """--pieces-from with --head decoder: each piece's row is the mean of the AED's rows of the Whisper tokens that
    spell it (the word-start mark read as a space), all rows' mean where Whisper gives nothing."""
    from types import SimpleNamespace

    bench = load_benchmark("quality_cached_heads")
    pieces = _pieces(tmp_path)
    spelled = {}

    def whisper_ids(text):  # a stand-in for Whisper's BPE: one id per character
        spelled[text] = [ord(c) % 16 for c in text]
        return spelled[text]

    torch.manual_seed(0)
    out = torch.nn.Linear(8, 16, bias=False)
    aed = SimpleNamespace(tokenizer=SimpleNamespace(text_to_ids=whisper_ids), log_softmax=SimpleNamespace(
        mlp=SimpleNamespace(layer0=out)))  # fmt: skip
    rows = bench.piece_rows(aed, pieces)
    assert rows.shape == (pieces.vocab_size, 8)
    weight = out.weight.detach()
    for index in range(pieces.vocab_size):
        piece = pieces.ids_to_tokens([index])[0].replace("\u2581", " ")
        want = weight[spelled[piece]].mean(0) if piece.strip() else weight.mean(0)
        torch.testing.assert_close(rows[index], want)
    assert " cat" in spelled or " c" in spelled  # a word-start piece reaches Whisper with its space


def test_lm_decode_reads_the_punctuated_output_through_nemos_ctc_beam_search(tmp_path):
    """Beam search without an LM over a head whose punctuated frames say one piece each: the pieces' text."""
    from nemo.collections.asr.parts.submodules.ctc_decoding import CTCBPEDecoding, CTCBPEDecodingConfig
    from omegaconf import OmegaConf

    bench = load_benchmark("quality_cached_heads")
    pieces = _pieces(tmp_path)
    ids = pieces.text_to_ids("The dog sat.")
    blank = pieces.vocab_size

    class Fixed(torch.nn.Module):  # frames: each piece, then a blank
        def forward(self, x, lengths):
            frames = [i for piece in ids for i in (piece, blank)]
            log_probs = torch.full((x.shape[0], len(frames), blank + 1), -20.0)
            log_probs[:, torch.arange(len(frames)), torch.tensor(frames)] = 0.0
            return {"punctuated": log_probs.log_softmax(-1), "normalized": log_probs.log_softmax(-1)}

    cfg = OmegaConf.structured(CTCBPEDecodingConfig(strategy="beam_batch"))
    cfg.beam.beam_size = 4
    decoding = CTCBPEDecoding(cfg, tokenizer=pieces)
    feats = [torch.zeros(2 * len(ids), 4), torch.zeros(2 * len(ids), 4)]
    assert bench.lm_decode(Fixed(), feats, decoding) == ["The dog sat.", "The dog sat."]


def test_an_lm_without_its_pieces_is_refused(capsys):
    bench = load_benchmark("quality_cached_heads")
    with pytest.raises(SystemExit) as stop:
        bench.main(["--model", "m.nemo", "--demo-dir", "d", "--lm", "lm.nemo", "--json", "r.json"])
    assert stop.value.code == 2
    assert "--lm needs --pieces-from" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        bench.main(["--model", "m.nemo", "--demo-dir", "d", "--load", "absent.pt", "--json", "r.json"])
    assert stop.value.code == 2
    assert "--load absent.pt: no such file" in capsys.readouterr().err
    refusals = [
        (["--vocab-size", "64"], "leave out --whisper-tokens and --vocab-size"),
        (["--lm", "lm.nemo", "--lm-alphas", "0.4,-1"], "--lm-alphas must be weights >= 0"),
    ]
    for extra, message in refusals:
        with pytest.raises(SystemExit) as stop:
            bench.main(["--model", "m.nemo", "--demo-dir", "d", "--pieces-from", "p.nemo", *extra, "--json", "r.json"])
        assert stop.value.code == 2
        assert message in capsys.readouterr().err


def test_lm_scores_tune_the_weight_on_dev_and_score_test_and_real_test_at_it(tmp_path):
    """The LM rows: each weight decoded on the full dev and scored by WER-PC, the best kept, test and real_test
    decoded at it; the normalized output is the punctuated one normalized. Weight 0 is beam search without the LM."""
    from types import SimpleNamespace

    from nemo.collections.asr.parts.submodules.ctc_decoding import CTCBPEDecodingConfig
    from omegaconf import OmegaConf

    bench = load_benchmark("quality_cached_heads")
    pieces = _pieces(tmp_path)
    ids = pieces.text_to_ids("The dog sat.")
    blank = pieces.vocab_size

    class Fixed(torch.nn.Module):
        def forward(self, x, lengths):
            frames = [i for piece in ids for i in (piece, blank)]
            log_probs = torch.full((x.shape[0], len(frames), blank + 1), -20.0)
            log_probs[:, torch.arange(len(frames)), torch.tensor(frames)] = 0.0
            return {"punctuated": log_probs.log_softmax(-1)}

    row = {"audio_filepath": "a.wav", "duration": 1.0, "text": "The dog sat.", "text_normalized": "the dog sat"}
    rows = {
        "dev_full": [row, row | {"audio_filepath": "b.wav", "text": "The cat sat."}],
        "test": [row],
        "real_test": [row | {"has_marks": True}],
    }
    feats = {split: [torch.zeros(2 * len(ids), 4)] * len(split_rows) for split, split_rows in rows.items()}
    model = SimpleNamespace(
        cfg=SimpleNamespace(decoding=OmegaConf.structured(CTCBPEDecodingConfig())), tokenizer=pieces
    )
    args = SimpleNamespace(lm="absent.nemo", lm_alphas=[0.0], beam_size=4)
    out = bench.lm_scores(Fixed(), feats, rows, model, args, tmp_path)
    assert out["alpha"] == 0.0
    assert out["dev_wer_pc"] == {"0.0": pytest.approx(1 / 8)}  # "dog" for "cat": one of 8 tokens, marks counted
    assert out["scores"]["test"] == {"n_wer": 0.0, "per": 0.0, "punct_f1": 1.0}
    assert out["scores"]["real_test"]["wer"] == 0.0


def test_the_lm_table_sets_greedy_beside_the_lm_for_a_head_over_a_ctc_models_pieces(tmp_path):
    """render_results' ``cached_heads_lm`` block: per file a greedy and an LM row, the weights tried with their dev
    WER-PC and the one kept; the ``cached_heads`` block names the pieces' model."""
    import json

    render = load_benchmark("render_results")
    real = {"wer": 0.5, "ci95": [0.4, 0.6]}
    report = {
        "settings": {
            "head": "decoder",
            "inter_block": 3,
            "pieces_from": "d/models/ctc_inter.nemo",
            "pieces": 512,
            "lm": "d/lm/punctuated_order6_bpe_v512.nemo",
            "beam_size": 8,
            "parameters": 2e6,
            "stack": 4,
            "batch_size": 16,
        },  # fmt: skip
        "utterances": {"train": 10, "dev": 4},
        "curve": [{"step": 100, "train_minutes": 1.0, "dev_n_wer": 0.3}],
        "scores": {"test": {"n_wer": 0.6, "per": 0.45, "punct_f1": 0.55}, "real_test": real},
        "lm": {
            "alpha": 0.8,
            "dev_wer_pc": {"0.4": 0.33, "0.8": 0.3},
            "scores": {"test": {"n_wer": 0.37, "per": 0.48, "punct_f1": 0.58}, "real_test": real},
            "greedy_normalized_from_punctuated": {
                "test": {"n_wer": 0.57, "per": 0.45, "punct_f1": 0.55},
                "real_test": real,
            },
        },
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    table = render.render_cached_heads_lm(path)
    greedy, lm = table.strip().splitlines()[-2:]
    assert greedy.startswith(
        "| 512 pieces of `ctc_inter`, the AED's decoder, one pass, normalized at block 3 | greedy"
    )
    assert "| 57.0% | 45.0% | 55.0% | 50.0% [40.0, 60.0] |" in greedy
    assert "| LM | 0.4: 33.0%, 0.8: 30.0% | 0.8 | 37.0% | 48.0% | 58.0% |" in lm
    assert "`punctuated_order6_bpe_v512.nemo`" in table
    assert "| 512 pieces of `ctc_inter` |" in render.render_cached_heads(path)


def test_time_masks_zero_spans_inside_each_row_and_leave_the_rest():
    import random

    bench = load_benchmark("quality_cached_heads")
    x = torch.ones(3, 8, 4)
    lengths = torch.tensor([8, 3, 1])
    masked = bench.mask_time(x, lengths, masks=2, width=3, rng=random.Random(0))
    assert torch.equal(x, torch.ones(3, 8, 4))  # the input is not changed
    zero = (masked.abs().sum(-1) == 0).int()
    assert 0 < int(zero[0].sum()) <= 6 and int(zero[1].sum()) <= 2 and int(zero[2].sum()) == 0
    assert bool((masked[zero.bool()] == 0).all()) and bool((masked[~zero.bool()] == 1).all())
    for row, length in enumerate(lengths.tolist()):
        assert int(zero[row, :length].sum()) < length  # something of every row stays seen
