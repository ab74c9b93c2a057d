"""Which decoding an n-gram LM reaches: NeMo's fusion keys, applied to the decoding of one output mode only.

NeMo 3.0 fuses an n-gram LM (``NGramGPULanguageModel``) through its own decoding config keys,
``greedy.ngram_lm_model`` / ``greedy.ngram_lm_alpha`` (strategy ``greedy_batch``) and ``beam.ngram_lm_model`` /
``beam.ngram_lm_alpha`` (RNN-T ``malsd_batch`` and ``maes_batch``, CTC ``beam_batch``). A P&C model decodes each
output mode with its own decoding; an LM trained on punctuated pieces (``nemo-pc build-lm``) belongs to the
punctuated mode, so the model's decoding config is applied as it is to the mode named by ``pc.ngram_lm_mode``
(default ``punctuated``) and without the LM to the other. NeMo's ``transcribe_speech.py rnnt_decoding.greedy.
ngram_lm_model=lm.arpa`` (or ``ctc_decoding...``) and ``change_decoding_strategy`` therefore reach it as in NeMo.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from omegaconf import DictConfig, OmegaConf, open_dict

from nemo_pc.parts.modes import mode_id

LM_SECTIONS = ("greedy", "beam")
DEFAULT_LM_MODE = "punctuated"


def ngram_lm_mode(pc_cfg) -> int:
    """The mode id whose decoding gets the LM: ``pc.ngram_lm_mode`` (a mode name, its initial or its id).

    Raises:
        ValueError: an unknown mode (the message names ``pc.ngram_lm_mode``).
    """
    value = (pc_cfg or {}).get("ngram_lm_mode", DEFAULT_LM_MODE)
    return mode_id(DEFAULT_LM_MODE if value is None else value, "pc.ngram_lm_mode")


def has_ngram_lm(decoding_cfg: DictConfig) -> bool:
    """Whether a NeMo decoding config names an n-gram LM in any strategy section."""
    return any(OmegaConf.select(decoding_cfg, f"{section}.ngram_lm_model") for section in LM_SECTIONS)


def without_ngram_lm(decoding_cfg: DictConfig) -> DictConfig:
    """A copy of a NeMo decoding config with no n-gram LM (``ngram_lm_model: null`` in every section)."""
    copy = OmegaConf.create(OmegaConf.to_container(decoding_cfg))
    for section in LM_SECTIONS:
        if OmegaConf.select(copy, f"{section}.ngram_lm_model"):
            with open_dict(copy):
                copy[section].ngram_lm_model = None
    return copy


def decoding_cfg_for_mode(decoding_cfg: DictConfig, mode: int, lm_mode: int) -> DictConfig:
    """The decoding config of one output mode: as given for ``lm_mode``, without the n-gram LM for any other."""
    if mode == lm_mode or not has_ngram_lm(decoding_cfg):
        return decoding_cfg
    return without_ngram_lm(decoding_cfg)


STRATEGIES = ("greedy", "beam")


def check_fusion(strategy: str, alpha: float, beam_size: int) -> None:
    """Refuses an unknown strategy, a negative LM weight or a beam size below 1 (each named in the message)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if alpha < 0 or beam_size < 1:
        raise ValueError(f"the LM weight must be >= 0 and the beam size >= 1, got {alpha} and {beam_size}")


def fusion_decoding_cfg(
    decoding_cfg: DictConfig,
    transducer: bool,
    strategy: str,
    lm,
    alpha: float,
    beam_size: int = 8,
    beta: float | None = None,
) -> DictConfig:
    """A copy of a model's NeMo decoding config that fuses the n-gram LM ``lm`` (ARPA or NGPU-LM ``.nemo``) at
    weight ``alpha``: ``greedy`` is ``greedy_batch``; ``beam`` is RNN-T ``malsd_batch`` or CTC ``beam_batch`` of
    ``beam_size``. No ``lm`` or weight 0 gives the same strategy without the LM. ``beta``: CTC ``beam_batch``'s
    ``beam_beta``, added to the score of every emitted piece (None keeps the config's, else NeMo's default 1.0,
    which without an LM favours insertions).

    Raises:
        ValueError: an unknown strategy, a negative weight, a beam size below 1, or a ``beta`` outside CTC beam
            search.
    """
    check_fusion(strategy, alpha, beam_size)
    if beta is not None and (transducer or strategy != "beam"):
        raise ValueError(f"beta (beam_beta) is a setting of CTC beam search, not of {strategy} decoding here")
    cfg = OmegaConf.create(OmegaConf.to_container(decoding_cfg))
    with open_dict(cfg):
        cfg.strategy = "greedy_batch" if strategy == "greedy" else ("malsd_batch" if transducer else "beam_batch")
        if strategy not in cfg or cfg[strategy] is None:
            cfg[strategy] = {}
        if strategy == "beam":
            cfg.beam.beam_size = beam_size
        cfg[strategy].ngram_lm_model = str(lm) if lm is not None and alpha else None
        cfg[strategy].ngram_lm_alpha = float(alpha)
        if beta is not None:
            cfg.beam.beam_beta = float(beta)
    return cfg


@contextlib.contextmanager
def ngram_lm_decoding(
    model, mode: str, lm, alpha: float, strategy: str = "beam", beam_size: int = 8, beta: float | None = None
) -> Iterator[None]:
    """Inside the block a restored nemo_pc model decodes ``mode`` with the LM (``pc.ngram_lm_mode``) and
    ``strategy``, and the other mode with the same strategy and no LM; when the block ends (also on an error) the
    model's decoding config, ``pc.ngram_lm_mode`` and decodings are what they were before. For a lasting change,
    pass :func:`fusion_decoding_cfg`'s config to the model's ``change_decoding_strategy``.

    Raises:
        ValueError: an unknown mode, strategy, a negative weight, a beam size below 1 or a ``beta`` outside CTC beam
            search (:func:`fusion_decoding_cfg`).
    """
    mode_id(mode, "mode")
    if getattr(model, "decoder_ctc_decodes", False):
        with _decoder_ctc_lm_decoding(model, mode, lm, alpha, strategy, beam_size, beta):
            yield
        return
    decoding = OmegaConf.create(OmegaConf.to_container(model.cfg.decoding))
    fused = fusion_decoding_cfg(decoding, hasattr(model, "joint"), strategy, lm, alpha, beam_size, beta)
    before = model.cfg.pc.ngram_lm_mode  # every nemo_pc ASR model's pc section has it (PCConfig)
    try:
        with open_dict(model.cfg):
            model.cfg.pc.ngram_lm_mode = mode
        model.change_decoding_strategy(fused, verbose=False)
        yield
    finally:
        with open_dict(model.cfg):
            model.cfg.pc.ngram_lm_mode = before
            model.cfg.decoding = decoding
        model.change_decoding_strategy(decoding, verbose=False)


@contextlib.contextmanager
def _decoder_ctc_lm_decoding(
    model, mode: str, lm, alpha: float, strategy: str, beam_size: int, beta: float | None
) -> Iterator[None]:
    """:func:`ngram_lm_decoding` for an AED that transcribes with its decoder CTC head: its ``decoder_ctc.decoding``
    (:mod:`nemo_pc.models.mixins.aed_decoder_ctc`) for the block, an LM joining beam search only."""
    check_fusion(strategy, alpha, beam_size)
    fused = bool(lm is not None and alpha)
    if strategy == "greedy" and (fused or beta is not None):
        raise ValueError("the decoder CTC head reads an n-gram LM and beta in beam search only (strategy 'beam')")
    before, before_mode = model.cfg.decoder_ctc.get("decoding"), model.cfg.pc.ngram_lm_mode
    beta = float((before or {}).get("beam_beta", 1.0)) if beta is None else float(beta)  # 1.0: the head's default
    kept = OmegaConf.to_container(before) if isinstance(before, DictConfig) else dict(before or {})
    decoding = kept | {"strategy": strategy, "beam_size": int(beam_size), "beam_beta": beta}
    decoding |= {"ngram_lm_model": str(lm) if fused else None, "ngram_lm_alpha": float(alpha)}
    try:
        with open_dict(model.cfg):
            model.cfg.decoder_ctc.decoding = decoding
            model.cfg.pc.ngram_lm_mode = mode
        yield
    finally:
        with open_dict(model.cfg):
            model.cfg.decoder_ctc.decoding = before
            model.cfg.pc.ngram_lm_mode = before_mode
