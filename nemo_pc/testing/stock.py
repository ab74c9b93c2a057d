"""Tiny stock NeMo ASR models built in code (RNN-T, TDT, hybrid RNNT-CTC, CTC) with a lower-case tokenizer, as a
released checkpoint would be, for the tests of ``nemo-pc adapt``."""

from __future__ import annotations

import copy
from pathlib import Path

from nemo_pc.testing import asr, ctc

STOCK_FAMILIES = ("rnnt", "tdt", "hybrid", "ctc")
TDT_DURATIONS = [0, 1, 2]


def train_stock_tokenizer(texts: list[str], folder: str | Path, vocab_size: int = 32) -> Path:
    """A lower-case BPE tokenizer without marks trained on ``texts`` with NeMo's trainer; returns its folder."""
    from nemo.collections.common.tokenizers.sentencepiece_tokenizer import create_spt_model

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "text.txt"
    corpus.write_text("\n".join(texts * 4) + "\n", encoding="utf-8")
    create_spt_model(str(corpus), vocab_size, sample_size=-1, do_lower_case=True, tokenizer_type="bpe",
                     output_dir=str(folder / "tokenizer"))  # fmt: skip
    return folder / "tokenizer"


def _without_pc(config: dict) -> dict:
    config = copy.deepcopy(config)
    config.pop("pc", None)
    config.pop("train_ds", None)
    config["validation_ds"] = {"manifest_filepath": None, "sample_rate": asr.SAMPLE_RATE, "batch_size": 2,
                               "shuffle": False}  # fmt: skip
    return config


def stock_config(family: str, tokenizer_dir: str | Path, predictor: str = "lstm") -> dict:
    """The config of a tiny stock model of ``family`` (``rnnt``, ``tdt``, ``hybrid`` or ``ctc``), as a dict."""
    if family == "ctc":
        return _without_pc(ctc.tiny_config(Path(tokenizer_dir), layers=2))
    config = _without_pc(asr.tiny_model_config(tokenizer_dir, decoders="single", predictor=predictor, hidden=32))
    config["loss"] = {"loss_name": "default"}
    if family == "tdt":
        config["loss"] = {"loss_name": "tdt", "tdt_kwargs": {"durations": TDT_DURATIONS, "sigma": 0.05,
                                                             "omega": 0.1}}  # fmt: skip
        config["joint"]["num_extra_outputs"] = len(TDT_DURATIONS)
        config["decoding"] = {"strategy": "greedy_batch", "model_type": "tdt", "durations": TDT_DURATIONS,
                              "greedy": {"max_symbols": 10}}  # fmt: skip
    elif family == "hybrid":
        config["aux_ctc"] = {
            "ctc_loss_weight": 0.3,
            "use_cer": False,
            "decoder": {
                "_target_": "nemo.collections.asr.modules.ConvASRDecoder",
                "feat_in": 32,
                "num_classes": -1,
                "vocabulary": [],
            },  # fmt: skip
            "decoding": {"strategy": "greedy"},
        }
    elif family != "rnnt":
        raise ValueError(f"family must be one of {STOCK_FAMILIES}, got {family!r}")
    return config


def stock_model(family: str, tokenizer_dir: str | Path, predictor: str = "lstm"):
    """A tiny stock model of ``family`` (random weights, eval mode)."""
    from nemo.collections.asr.models import EncDecCTCModelBPE, EncDecHybridRNNTCTCBPEModel, EncDecRNNTBPEModel
    from omegaconf import OmegaConf

    classes = {"rnnt": EncDecRNNTBPEModel, "tdt": EncDecRNNTBPEModel, "hybrid": EncDecHybridRNNTCTCBPEModel,
               "ctc": EncDecCTCModelBPE}  # fmt: skip
    cfg = OmegaConf.create(stock_config(family, tokenizer_dir, predictor))
    return classes[family](cfg=cfg).eval()
