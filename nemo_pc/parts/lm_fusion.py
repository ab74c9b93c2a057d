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

from omegaconf import DictConfig, OmegaConf, open_dict

from nemo_pc.data.pc_dataset import mode_id

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
