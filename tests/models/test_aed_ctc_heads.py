"""One encoder, several heads: the punctuated CTC model's heads trained on the AED's encoder beside its decoder
(``aux_ctc.target`` and ``aux_ctc.inter``), and that CTC model written out as its own ``.nemo``."""

import pytest
import torch

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.models import EncDecAEDPCModel, EncDecCTCPCBPEModel
from nemo_pc.models.aed_ctc_export import HeadsError, aed_ctc_model, export_aed_ctc_heads
from nemo_pc.parts.manifest import read_manifest
from nemo_pc.pipelines.train import train_model
from nemo_pc.testing.whisper import tiny_aed_config, tiny_aed_corpus, tiny_aed_overrides

STEPS = 160
HEADS = [
    "model.aux_ctc.target=punctuated",
    "+model.aux_ctc.inter.layer=1",
    "+model.aux_ctc.inter.weight=0.5",
    "model.aux_ctc.ctc_loss_weight=0.5",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return tiny_aed_corpus(tmp_path_factory.mktemp("aed_ctc_heads"))


def build(corpus, *overrides):
    torch.manual_seed(0)
    cfg = tiny_aed_config(corpus["weights"], corpus["tokenizer"], corpus["manifest"], *overrides)
    return EncDecAEDPCModel(cfg=cfg)


def batch_of(model):
    return next(iter(model._train_dl))


def test_the_heads_are_the_ctc_models_and_each_has_its_loss(corpus):
    model = build(corpus, *HEADS)
    assert model.ctc_target == "punctuated" and model.ctc_inter_layer == 1 and model.ctc_inter_weight == 0.5
    assert model.ctc_inter_decoder is not None
    batch = batch_of(model)
    loss, logs, _ = model.batch_loss(batch)
    assert {"ctc_loss", "ctc_main_loss", "ctc_inter_loss"} <= set(logs)
    torch.testing.assert_close(logs["ctc_loss"], 0.5 * logs["ctc_main_loss"] + 0.5 * logs["ctc_inter_loss"])
    loss.backward()
    for head in (model.ctc_decoder, model.ctc_inter_decoder):
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in head.parameters())


def test_the_default_head_learns_the_normalized_text_alone(corpus):
    model = build(corpus)
    assert model.ctc_target == "normalized" and model.ctc_inter_decoder is None
    _, logs, _ = model.batch_loss(batch_of(model))
    assert set(logs) & {"ctc_loss", "ctc_main_loss", "ctc_inter_loss"} == {"ctc_loss"}


def test_utterances_without_a_punctuated_transcript_do_not_count_in_the_punctuated_head(corpus):
    model = build(corpus, *HEADS)
    batch = batch_of(model)
    assert 0 < int(batch.p_mask.sum()) < batch.audio.shape[0]  # the corpus has an utterance without P labels
    encoded, encoded_len = model.encode(batch.audio, batch.audio_len)
    log_probs = model.ctc_decoder(encoder_output=encoded)
    term = model._punctuated_term(log_probs, encoded_len, batch)
    keep = batch.p_mask
    alone = batch._replace(
        tokens_p=batch.tokens_p[keep], tokens_p_len=batch.tokens_p_len[keep], p_mask=batch.p_mask[keep]
    )
    torch.testing.assert_close(term, model._punctuated_term(log_probs[keep], encoded_len[keep], alone))
    none = batch._replace(p_mask=torch.zeros_like(batch.p_mask))
    assert float(model._punctuated_term(log_probs, encoded_len, none).detach()) == 0.0


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["model.aux_ctc.target=mixed"], "aux_ctc.target must be one of"),
        (["+model.aux_ctc.inter.layer=2", "+model.aux_ctc.inter.weight=0.5"], r"inter.layer must be in \[1, 1\]"),
        (["+model.aux_ctc.inter.layer=1", "+model.aux_ctc.inter.weight=1.0"], r"inter.weight must be in \(0, 1\)"),
    ],
)
def test_bad_heads_are_refused_with_the_key(corpus, overrides, match):
    with pytest.raises(ValueError, match=match):
        build(corpus, *overrides)


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    """A tiny AED trained with the heads (their own rate, the EMA recipe with the heads saved as trained) and the CTC
    model written from it."""
    folder = tmp_path_factory.mktemp("aed_ctc_heads_trained")
    overrides = tiny_aed_overrides(
        corpus["weights"],
        corpus["tokenizer"],
        corpus["manifest"],
        *HEADS,
        "model.aux_ctc.ctc_loss_weight=0.9",
        "model.optim.lr=5e-3",
        "+model.optim_param_groups.ctc_decoder.lr=0.03",
        "+model.optim_param_groups.ctc_inter_decoder.lr=0.03",
    )
    aed_path = folder / "aed.nemo"
    stats = train_model("aed", overrides, aed_path, STEPS)
    ctc_path = export_aed_ctc_heads(aed_path, folder / "ctc.nemo")
    return {"stats": stats, "aed": aed_path, "ctc": ctc_path}


def test_the_written_ctc_model_is_the_aeds_encoder_and_heads(trained, corpus):
    aed = EncDecAEDPCModel.restore_from(str(trained["aed"]), map_location="cpu").eval()
    ctc = EncDecCTCPCBPEModel.restore_from(str(trained["ctc"]), map_location="cpu").eval()
    assert ctc.heads.inter is not None and ctc.heads.inter.layer == 1 and ctc.cfg.pc.target == "punctuated"
    assert ctc.cfg.pc.inter.weight == 0.5 and ctc.cfg.pc.ctc_weight == 0.5
    batch = batch_of(build(corpus, *HEADS))  # a restored model sets up no data
    with torch.no_grad():
        encoded, encoded_len = aed.encode(batch.audio, batch.audio_len)
        want = {"main": aed.ctc_decoder(encoder_output=encoded), "inter": aed.normalized_ctc_log_probs(encoded)}
        outputs, got_len = ctc.forward_heads(batch.audio, batch.audio_len, heads=tuple(ctc.heads))
    torch.testing.assert_close(got_len, encoded_len)
    for head in ctc.heads:
        torch.testing.assert_close(outputs[head], want[head.name], msg=head.name)


def test_the_heads_learn_the_batch_and_the_ctc_model_transcribes_both_modes(trained, corpus):
    """STEPS steps on the one batch of the tone corpus: the CTC model written from the AED writes the memorized
    utterances in both modes from one encoder pass."""
    curve = trained["stats"]
    assert curve["steps"] == STEPS
    ctc = EncDecCTCPCBPEModel.restore_from(str(trained["ctc"]), map_location="cpu").eval()
    entries = read_manifest(corpus["manifest"])
    out = ctc.transcribe([e["audio_filepath"] for e in entries], batch_size=4, mode="both", verbose=False)
    out = {mode: [hyp if isinstance(hyp, str) else hyp.text for hyp in hyps] for mode, hyps in out.items()}
    # the utterances with both transcripts, each in both modes (a tone per utterance gives a CTC head only the
    # encoder's positions to spell from; the unpunctuated fourth's normalized text is not learned at 160 steps)
    with_p = [i for i, entry in enumerate(entries) if entry["pc_source"] != "none"]
    assert len(with_p) == 3
    assert [out["punctuated"][i] for i in with_p] == [entries[i]["text"] for i in with_p]
    assert [out["normalized"][i] for i in with_p] == [entries[i]["text_normalized"] for i in with_p]


def test_an_aed_without_the_heads_is_refused_with_how_to_train_them(corpus, tmp_path):
    with pytest.raises(HeadsError, match="aux_ctc.target is 'normalized'.*aux_ctc.target=punctuated"):
        aed_ctc_model(build(corpus))
    with pytest.raises(HeadsError, match="no tokenizer.model"):
        aed_ctc_model(build(corpus, *HEADS), tokenizer_dir=tmp_path)


def test_the_command_writes_the_model_and_refuses_an_aed_without_heads(trained, corpus, tmp_path, capsys):
    from nemo_pc.cli import main

    plain = tmp_path / "plain.nemo"
    build(corpus).save_to(str(plain))
    assert main(["aed-ctc-heads", str(plain), str(tmp_path / "x.nemo")]) == 2
    err = capsys.readouterr().err
    assert "nemo-pc aed-ctc-heads: error:" in err and "punctuated needed" in err
    assert not (tmp_path / "x.nemo").exists()
    out = tmp_path / "ctc.nemo"
    assert main(["aed-ctc-heads", str(trained["aed"]), str(out), "--tokenizer-dir", str(corpus["tokenizer"])]) == 0
    assert out.is_file() and EncDecCTCPCBPEModel.restore_from(str(out), map_location="cpu").heads.inter is not None


def test_with_ema_the_heads_can_be_saved_as_trained(corpus, tmp_path):
    """finetune=ema saves the averaged weights; aux_ctc.averaged=false keeps the heads' trained ones: the encoders
    of the two runs are the same average, their heads differ."""
    saved = {}
    for averaged in ("true", "false"):
        overrides = tiny_aed_overrides(
            corpus["weights"],
            corpus["tokenizer"],
            corpus["manifest"],
            *HEADS,
            "finetune=ema",
            "model.optim.lr=0.01",
            f"model.aux_ctc.averaged={averaged}",
        )
        path = tmp_path / f"aed_{averaged}.nemo"
        train_model("aed", overrides, path, 3)
        saved[averaged] = EncDecAEDPCModel.restore_from(str(path), map_location="cpu").state_dict()
    encoder = [k for k in saved["true"] if k.startswith("encoder.")]
    heads = [k for k in saved["true"] if k.startswith(("ctc_decoder.", "ctc_inter_decoder."))]
    assert encoder and heads
    for key in encoder:
        torch.testing.assert_close(saved["false"][key], saved["true"][key], msg=key)
    assert all(not torch.equal(saved["false"][key], saved["true"][key]) for key in heads)
