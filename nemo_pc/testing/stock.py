"""Tiny stock NeMo ASR models built in code (RNN-T, TDT, hybrid RNNT-CTC, CTC) with a lower-case tokenizer, as a
released checkpoint would be, for the tests of ``nemo-pc adapt``."""

from __future__ import annotations

import copy
from pathlib import Path

import torch

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
    create_spt_model(
        str(corpus),
        vocab_size,
        sample_size=-1,
        do_lower_case=True,
        tokenizer_type="bpe",
        output_dir=str(folder / "tokenizer"),
    )
    return folder / "tokenizer"


def _without_pc(config: dict) -> dict:
    config = copy.deepcopy(config)
    config.pop("pc", None)
    config.pop("train_ds", None)
    config["validation_ds"] = {
        "manifest_filepath": None,
        "sample_rate": asr.SAMPLE_RATE,
        "batch_size": 2,
        "shuffle": False,
    }
    return config


def stock_config(family: str, tokenizer_dir: str | Path, predictor: str = "lstm") -> dict:
    """The config of a tiny stock model of ``family`` (``rnnt``, ``tdt``, ``hybrid`` or ``ctc``), as a dict."""
    if family == "ctc":
        return _without_pc(ctc.tiny_config(Path(tokenizer_dir), layers=2))
    config = _without_pc(asr.tiny_model_config(tokenizer_dir, decoders="single", predictor=predictor, hidden=32))
    config["loss"] = {"loss_name": "default"}
    if family == "tdt":
        config["loss"] = {"loss_name": "tdt", "tdt_kwargs": {"durations": TDT_DURATIONS, "sigma": 0.05, "omega": 0.1}}
        config["joint"]["num_extra_outputs"] = len(TDT_DURATIONS)
        config["decoding"] = {
            "strategy": "greedy_batch",
            "model_type": "tdt",
            "durations": TDT_DURATIONS,
            "greedy": {"max_symbols": 10},
        }
    elif family == "hybrid":
        config["aux_ctc"] = {
            "ctc_loss_weight": 0.3,
            "use_cer": False,
            "decoder": {
                "_target_": "nemo.collections.asr.modules.ConvASRDecoder",
                "feat_in": 32,
                "num_classes": -1,
                "vocabulary": [],
            },
            "decoding": {"strategy": "greedy"},
        }
    elif family != "rnnt":
        raise ValueError(f"family must be one of {STOCK_FAMILIES}, got {family!r}")
    return config


def stock_model(family: str, tokenizer_dir: str | Path, predictor: str = "lstm", config=None, trainer=None):
    """A tiny stock model of ``family`` (random weights, eval mode), of ``config`` if given."""
    from nemo.collections.asr.models import EncDecCTCModelBPE, EncDecHybridRNNTCTCBPEModel, EncDecRNNTBPEModel
    from omegaconf import OmegaConf

    classes = {
        "rnnt": EncDecRNNTBPEModel,
        "tdt": EncDecRNNTBPEModel,
        "hybrid": EncDecHybridRNNTCTCBPEModel,
        "ctc": EncDecCTCModelBPE,
    }
    cfg = config if config is not None else OmegaConf.create(stock_config(family, tokenizer_dir, predictor))
    return classes[family](cfg=cfg, trainer=trainer).eval()


class ScanRNNTLoss(torch.nn.Module):
    """NeMo's RNN-T loss call (``mean_batch`` reduction) computed by :func:`nemo_pc.losses.rnnt_loss_scan`, the
    same loss, which trains a tiny stock model on CPU in seconds where NeMo's numba loss takes minutes."""

    def __init__(self, blank: int) -> None:
        super().__init__()
        self.blank = blank

    def forward(self, log_probs, targets, input_lengths, target_lengths) -> torch.Tensor:
        from nemo_pc.losses import rnnt_loss_scan

        return rnnt_loss_scan(log_probs, targets, input_lengths, target_lengths, self.blank).mean()


def train_stock_model(family: str, tokenizer_dir: str | Path, manifest: str | Path, steps: int, lr: float = 0.005):
    """A tiny stock model of ``family`` (``rnnt`` or ``ctc``) trained for ``steps`` on a NeMo manifest (its
    ``text``), in eval mode."""
    from omegaconf import OmegaConf

    from nemo_pc.testing.training import tiny_trainer

    config = stock_config(family, tokenizer_dir)
    config["train_ds"] = {
        "manifest_filepath": str(manifest),
        "sample_rate": asr.SAMPLE_RATE,
        "batch_size": 4,
        "shuffle": True,
        "num_workers": 0,
    }
    config["optim"]["lr"] = lr
    trainer = tiny_trainer(steps)
    model = stock_model(family, tokenizer_dir, config=OmegaConf.create(config), trainer=trainer)
    if family != "ctc":
        model.loss = ScanRNNTLoss(model.joint.num_classes_with_blank - 1)
    model.train()
    trainer.fit(model)
    return model.eval()
