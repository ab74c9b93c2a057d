"""n-gram LM shallow fusion through NeMo's decoding keys reaches the punctuated decoding only."""

import json

import pytest
import torch
from omegaconf import OmegaConf

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)
from nemo_pc.parts.lm_fusion import decoding_cfg_for_mode, has_ngram_lm, ngram_lm_mode, without_ngram_lm
from nemo_pc.parts.ngram_lm import build_token_lm, load_sentencepiece

NORMALIZED, PUNCTUATED = 0, 1
LM_TEXT = [("Who is there?", "book")] * 20 + [("Yes, go home.", "book")] * 5


def decoding(strategy: str, arpa=None, alpha: float = 0.0) -> dict:
    section = "greedy" if strategy == "greedy_batch" else "beam"
    options = {"max_symbols": 10} if section == "greedy" else {"beam_size": 3, "return_best_hypothesis": True}
    if arpa is not None:
        options.update(ngram_lm_model=str(arpa), ngram_lm_alpha=alpha)
    return {"strategy": strategy, section: options}


def lm_log_prob(arpa, vocab_size: int, tokens: list[int]) -> float:
    from nemo.collections.asr.parts.submodules.ngram_lm import NGramGPULanguageModel

    lm = NGramGPULanguageModel.from_file(arpa, vocab_size=vocab_size, use_triton=False)
    with torch.no_grad():
        return float(lm.score_sentences(torch.tensor([tokens]), bos=True).sum()) if tokens else 0.0


def test_the_lm_config_reaches_one_mode_only():
    cfg = OmegaConf.create(
        {"strategy": "greedy_batch", "greedy": {"ngram_lm_model": "lm.arpa", "ngram_lm_alpha": 0.5}}
    )
    assert has_ngram_lm(cfg) and not has_ngram_lm(without_ngram_lm(cfg))
    assert without_ngram_lm(cfg).greedy.ngram_lm_alpha == 0.5 and cfg.greedy.ngram_lm_model == "lm.arpa"
    assert decoding_cfg_for_mode(cfg, PUNCTUATED, ngram_lm_mode({})) is cfg
    assert not has_ngram_lm(decoding_cfg_for_mode(cfg, NORMALIZED, ngram_lm_mode(None)))
    assert ngram_lm_mode({"ngram_lm_mode": "normalized"}) == NORMALIZED
    with pytest.raises(ValueError, match="pc.ngram_lm_mode"):
        ngram_lm_mode({"ngram_lm_mode": "loud"})


# RNN-T


@pytest.fixture(scope="module")
def rnnt(tmp_path_factory):
    from nemo_pc.models import EncDecRNNTPCBPEModel
    from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest

    folder = tmp_path_factory.mktemp("rnnt_lm")
    manifest = write_pc_manifest(folder / "data")
    tokenizer = train_tokenizer(manifest, folder / "tokenizer")
    lm_manifest = write_pc_manifest(folder / "lm", LM_TEXT, duration=0.1)
    arpa = build_token_lm(lm_manifest, tokenizer, folder / "lm.arpa", order=3, progress=False).output
    torch.manual_seed(0)
    model = EncDecRNNTPCBPEModel(OmegaConf.create(tiny_model_config(tokenizer))).eval()
    encoded = torch.randn(2, 64, 12, generator=torch.Generator().manual_seed(1))
    return model, arpa, encoded, manifest


def rnnt_tokens(model, strategy, encoded, mode, arpa=None, alpha=0.0) -> list[list[int]]:
    model.change_decoding_strategy(OmegaConf.create(decoding(strategy, arpa, alpha)), verbose=False)
    lengths = torch.tensor([12, 9])
    hyps = model.decode_mode(encoded, lengths, mode, OmegaConf.create({"return_hypotheses": True}))
    return [[int(t) for t in hyp.y_sequence] for hyp in hyps]


@pytest.mark.parametrize("strategy", ["greedy_batch", "malsd_batch"])
def test_rnnt_fusion_with_weight_0_equals_plain_decoding(rnnt, strategy):
    model, arpa, encoded, _ = rnnt
    plain = rnnt_tokens(model, strategy, encoded, PUNCTUATED)
    assert any(plain)
    assert rnnt_tokens(model, strategy, encoded, PUNCTUATED, arpa, 0.0) == plain


def test_rnnt_fusion_moves_the_punctuated_output_towards_the_lm_only(rnnt):
    model, arpa, encoded, manifest = rnnt
    vocab = model.tokenizer.vocab_size
    plain = rnnt_tokens(model, "greedy_batch", encoded, PUNCTUATED)
    fused = rnnt_tokens(model, "greedy_batch", encoded, PUNCTUATED, arpa, 2.0)
    assert fused != plain
    for before, after in zip(plain, fused, strict=True):
        assert len(after) == len(before)  # NeMo's greedy fusion keeps the blank decisions of the acoustic model
        assert lm_log_prob(arpa, vocab, after) > lm_log_prob(arpa, vocab, before)
    normalized_plain = rnnt_tokens(model, "greedy_batch", encoded, NORMALIZED)
    assert rnnt_tokens(model, "greedy_batch", encoded, NORMALIZED, arpa, 2.0) == normalized_plain
    # the transcribe API on audio, with the LM kept in the model's decoding config
    path = json.loads(manifest.read_text().splitlines()[0])["audio_filepath"]
    both = model.transcribe([path], mode="both", verbose=False)
    assert set(both) == {"normalized", "punctuated"}
    assert model.cfg.decoding.greedy.ngram_lm_model == str(arpa)


# CTC


@pytest.fixture(scope="module")
def ctc(tmp_path_factory):
    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel
    from nemo_pc.testing.asr import write_pc_manifest
    from nemo_pc.testing.ctc import DURATION, memorized_corpus, tiny_config

    folder = tmp_path_factory.mktemp("ctc_lm")
    manifest, tokenizer = memorized_corpus(folder)
    lm_manifest = write_pc_manifest(
        folder / "lm", [("Yes, it is.", "book")] * 10 + [("Is it? No.", "book")], duration=DURATION
    )
    arpa = build_token_lm(lm_manifest, tokenizer, folder / "lm.arpa", order=3, progress=False).output
    torch.manual_seed(0)
    model = EncDecCTCPCBPEModel(OmegaConf.create(tiny_config(tokenizer, pc={"inter": {"weight": 0.5}}))).eval()
    return model, arpa, load_sentencepiece(tokenizer)


def tied_frames(vocab: int, tie: tuple[int, int], rest: list[int]) -> torch.Tensor:
    """Log-probs (1, T, V + 1): a first frame where ``tie[0]`` is a little more likely than ``tie[1]``, then each
    piece of ``rest`` in a sure frame, every piece followed by a sure blank frame."""
    frames = [{tie[0]: 0.5, tie[1]: 0.45}] + [{token: 0.99} for token in rest]
    probs = torch.full((1, 2 * len(frames), vocab + 1), 1e-4)
    for index, frame in enumerate(frames):
        for token, prob in frame.items():
            probs[0, 2 * index, token] = prob
        probs[0, 2 * index + 1, vocab] = 0.99
    return (probs / probs.sum(-1, keepdim=True)).log()


def ctc_text(model, head, log_probs, strategy="greedy_batch", arpa=None, alpha=0.0) -> str:
    model.change_decoding_strategy(OmegaConf.create(decoding(strategy, arpa, alpha)), verbose=False)
    hyps = model.head_decoding(head).ctc_decoder_predictions_tensor(
        log_probs, decoder_lengths=torch.tensor([log_probs.shape[1]]), return_hypotheses=True
    )
    return hyps[0].text


@pytest.mark.parametrize("strategy", ["greedy_batch", "beam_batch"])
def test_ctc_fusion_with_weight_0_equals_plain_decoding(ctc, strategy):
    model, arpa, _ = ctc
    log_probs = torch.randn(1, 20, model.tokenizer.vocab_size + 1, generator=torch.Generator().manual_seed(2))
    log_probs = log_probs.log_softmax(-1)
    plain = ctc_text(model, model.heads.main, log_probs, strategy)
    assert plain
    assert ctc_text(model, model.heads.main, log_probs, strategy, arpa, 0.0) == plain


@pytest.mark.parametrize("strategy", ["greedy_batch", "beam_batch"])
def test_ctc_fusion_picks_the_lm_preferred_piece_on_the_punctuated_head_only(ctc, strategy):
    model, arpa, processor = ctc
    vocab = model.tokenizer.vocab_size
    likely, *rest = processor.encode("Yes, it is.", out_type=int)  # 10 of the 11 LM sentences
    unlikely = processor.encode("No.", out_type=int)[0]  # "No" only ever follows "?" in the LM text
    frames = tied_frames(vocab, (unlikely, likely), rest)
    unlikely_text, likely_text = processor.decode([unlikely, *rest]), processor.decode([likely, *rest])
    assert unlikely_text != likely_text
    assert ctc_text(model, model.heads.main, frames, strategy, arpa, 0.0) == unlikely_text
    assert ctc_text(model, model.heads.main, frames, strategy, arpa, 1.0) == likely_text
    assert ctc_text(model, model.heads.inter, frames, strategy, arpa, 1.0) == unlikely_text  # normalized head: no LM


@pytest.mark.parametrize("lm_mode", ["punctuated", "normalized"])
def test_ctc_mixed_head_decodes_without_the_lm(ctc, lm_mode):
    """A mixed transcript is in neither mode: whichever mode the LM belongs to, the mixed head decodes without it."""
    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel
    from nemo_pc.testing.ctc import tiny_config

    model, arpa, processor = ctc
    pc = {"target": "mixed", "ngram_lm_mode": lm_mode}
    mixed = EncDecCTCPCBPEModel(OmegaConf.create(tiny_config(model.cfg.tokenizer.dir, pc=pc))).eval()
    likely, *rest = processor.encode("Yes, it is.", out_type=int)
    unlikely = processor.encode("No.", out_type=int)[0]
    frames = tied_frames(model.tokenizer.vocab_size, (unlikely, likely), rest)
    assert ctc_text(mixed, mixed.heads.main, frames, "greedy_batch", arpa, 1.0) == processor.decode([unlikely, *rest])
    fused = mixed.decodings[ngram_lm_mode(mixed.cfg.pc)].ctc_decoder_predictions_tensor(
        frames, decoder_lengths=torch.tensor([frames.shape[1]]), return_hypotheses=True
    )
    assert fused[0].text == processor.decode([likely, *rest])  # the LM's own mode decodes with it


def test_fusion_decoding_cfg_maps_the_strategy_per_family_and_refuses_bad_settings():
    from nemo_pc.parts.lm_fusion import fusion_decoding_cfg

    base = OmegaConf.create({"strategy": "greedy_batch", "greedy": {"max_symbols": 10}})
    rnnt = fusion_decoding_cfg(base, True, "beam", "lm.nemo", 0.4, beam_size=8)
    assert (rnnt.strategy, rnnt.beam.beam_size, rnnt.beam.ngram_lm_model, rnnt.beam.ngram_lm_alpha) == (
        "malsd_batch",
        8,
        "lm.nemo",
        0.4,
    )
    assert base.strategy == "greedy_batch" and "beam" not in base  # a copy: the model's config is untouched
    assert fusion_decoding_cfg(base, False, "beam", "lm.nemo", 0.4).strategy == "beam_batch"
    greedy = fusion_decoding_cfg(base, True, "greedy", "lm.nemo", 0.0)
    assert greedy.strategy == "greedy_batch" and greedy.greedy.max_symbols == 10 and not has_ngram_lm(greedy)
    for strategy, alpha, beam, message in (
        ("maes", 0.4, 8, "strategy must be"),
        ("beam", -0.1, 8, "weight must"),
        ("beam", 0.4, 0, "beam size >= 1"),
    ):
        with pytest.raises(ValueError, match=message):
            fusion_decoding_cfg(base, True, strategy, "lm.nemo", alpha, beam)
    # CTC beam search's per-piece bonus: set when given, the config's own (NeMo's default) kept when not
    ctc = fusion_decoding_cfg(base, False, "beam", "lm.nemo", 0.4, beta=0.25)
    assert ctc.beam.beam_beta == 0.25 and ctc.strategy == "beam_batch"
    assert "beam_beta" not in fusion_decoding_cfg(base, False, "beam", "lm.nemo", 0.4).beam
    for transducer, strategy in ((True, "beam"), (False, "greedy")):
        with pytest.raises(ValueError, match="beta \\(beam_beta\\) is a setting of CTC beam search"):
            fusion_decoding_cfg(base, transducer, strategy, "lm.nemo", 0.4, beta=0.5)


def test_lm_tuning_scores_wer_for_the_normalized_mode_and_wer_pc_for_the_punctuated_mode():
    from nemo_pc.pipelines.lm import error_rate

    refs, hyps = ["Yes, go home.", "Who is there?"], ["yes go home", "who is there?"]
    assert error_rate(refs, hyps, "normalized", ".,?") == 0.0  # case and marks do not count
    # WER-PC: "Yes," -> "yes" and "." -> "" in utterance 1 (Yes / , / . : 3 errors), "Who" -> "who" in 2: 4 of 9 tokens
    assert error_rate(refs, hyps, "punctuated", ".,?") == pytest.approx(4 / 9)


@pytest.mark.parametrize("alphas", [(), (0.4, -0.1)])
def test_lm_weight_tuning_refuses_an_empty_or_negative_grid_before_decoding(alphas):
    from nemo_pc.pipelines.lm import tune_lm_weight

    with pytest.raises(ValueError, match="alphas must be one or more LM weights of 0 or more"):
        tune_lm_weight(None, "normalized", "lm.nemo", "missing.json", alphas)


@pytest.mark.parametrize(
    ("cfg", "marks"),
    [({"marks": ".,?!", "pc": {"decoders": "dual"}}, ".,?!"), ({"pc": {"marks": ".,?;"}}, ".,?;"), ({}, ".,?")],
)
def test_lm_tuning_scores_with_the_model_mark_set(cfg, marks):
    from types import SimpleNamespace

    from nemo_pc.pipelines.lm import _marks

    assert _marks(SimpleNamespace(cfg=OmegaConf.create(cfg))) == marks  # RNN-T: marks; CTC: pc.marks


def test_an_lm_decoding_block_leaves_the_model_as_it_was(rnnt):
    from nemo_pc.parts.lm_fusion import ngram_lm_decoding

    model, arpa, encoded, _ = rnnt
    model.change_decoding_strategy(OmegaConf.create(decoding("greedy_batch")), verbose=False)
    config_before = OmegaConf.to_container(model.cfg)
    lengths = torch.tensor([12, 9])

    def tokens(mode):
        hyps = model.decode_mode(encoded, lengths, mode, OmegaConf.create({"return_hypotheses": True}))
        return [[int(t) for t in hyp.y_sequence] for hyp in hyps]

    plain = tokens(PUNCTUATED)
    with ngram_lm_decoding(model, "normalized", arpa, 2.0, strategy="greedy"):
        assert model.cfg.pc.ngram_lm_mode == "normalized"
        assert model.cfg.decoding.greedy.ngram_lm_model == str(arpa)
        fused_normalized = tokens(NORMALIZED)
    assert OmegaConf.to_container(model.cfg) == config_before
    assert tokens(PUNCTUATED) == plain
    assert fused_normalized != tokens(NORMALIZED)  # the LM reached the normalized mode inside the block only
    with pytest.raises(RuntimeError, match="inside"), ngram_lm_decoding(model, "punctuated", arpa, 2.0, "greedy"):
        raise RuntimeError("inside")
    assert OmegaConf.to_container(model.cfg) == config_before
    with pytest.raises(ValueError, match="mode must be one of"), ngram_lm_decoding(model, "loud", arpa, 1.0):
        pass
