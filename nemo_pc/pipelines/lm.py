"""Decoding with n-gram LMs: each output mode with its own LM (``nemo-pc build-lm``), the weight tuned on dev.

A P&C model fuses an LM into one output mode at a time (``pc.ngram_lm_mode``, :mod:`nemo_pc.parts.lm_fusion`), so
:func:`transcribe_with_lms` decodes each mode in its own pass with its own LM. :func:`tune_lm_weight` picks a mode's
weight on a dev manifest: WER of the normalized output (against ``text``, case and marks ignored), WER-PC of the
punctuated one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nemo_pc.data.audio import ManifestAudio, manifest_audio
from nemo_pc.metrics.accumulator import PCMetrics
from nemo_pc.parts.lm_fusion import ngram_lm_decoding
from nemo_pc.parts.modes import MODES

TUNE_METRIC = {"normalized": "wer", "punctuated": "wer_pc"}  # the error rate each mode's LM weight is tuned on


@dataclass
class LMChoice:
    """One mode's LM and its weight, with the dev grid the weight was picked from (``{weight: error rate}``)."""

    lm: str | None
    alpha: float
    grid: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"lm": self.lm, "alpha": self.alpha, "dev_grid": self.grid}


def _audio_and_refs(manifest: str | Path) -> tuple[ManifestAudio, list[str]]:
    audio = manifest_audio(manifest, ("text",))
    return audio, audio.texts[0]


def _decode(model, audio: ManifestAudio, mode: str, batch_size: int) -> list[str]:
    hypotheses = model.transcribe(
        audio.paths, batch_size=batch_size, verbose=False, mode=mode, **audio.transcribe_options()
    )
    return [getattr(h, "text", h) for h in hypotheses]


def error_rate(refs: Sequence[str], hyps: Sequence[str], mode: str, marks: str) -> float:
    """Corpus WER (``normalized``) or WER-PC (``punctuated``) of the hypotheses, by :class:`PCMetrics`."""
    metrics = PCMetrics(marks)
    for ref, hyp in zip(refs, hyps, strict=True):
        metrics.update(ref, hyp)
    return float(metrics.compute()["metrics"][TUNE_METRIC[mode]])


def _marks(model) -> str:
    from nemo_pc.parts.text import DEFAULT_MARKS

    # both families keep their mark set in pc.marks; RNN-T checkpoints written before that kept it in marks
    return str((model.cfg.get("pc") or {}).get("marks") or model.cfg.get("marks") or DEFAULT_MARKS)


def tune_lm_weight(
    model,
    mode: str,
    lm: str | Path,
    dev_manifest: str | Path,
    alphas: Sequence[float],
    strategy: str = "beam",
    beam_size: int = 8,
    batch_size: int = 16,
) -> LMChoice:
    """The weight of ``alphas`` with the lowest dev error rate of ``mode``; ties go to the smaller weight. A weight
    of 0 (no LM) is tried only when ``alphas`` has it: each weight is one beam-search pass over dev."""
    if not alphas or any(float(alpha) < 0 for alpha in alphas):
        raise ValueError(f"alphas must be one or more LM weights of 0 or more, got {list(alphas)}")
    audio, refs = _audio_and_refs(dev_manifest)
    grid = {}
    for alpha in sorted(set(map(float, alphas))):
        with ngram_lm_decoding(model, mode, lm, alpha, strategy, beam_size):
            hyps = _decode(model, audio, mode, batch_size)
        grid[f"{alpha:g}"] = error_rate(refs, hyps, mode, _marks(model))
    best = min(grid, key=lambda a: (grid[a], float(a)))
    return LMChoice(str(lm) if float(best) else None, float(best), grid)


def transcribe_with_lms(
    model,
    manifest: str | Path,
    lms: Mapping[str, LMChoice],
    strategy: str = "beam",
    beam_size: int = 8,
    batch_size: int = 16,
    modes: Sequence[str] = MODES,
) -> dict[str, list[str]]:
    """``{mode: [...]}`` for each of ``modes``: each mode decoded with its own LM choice (a mode missing from
    ``lms`` decodes with ``strategy`` and no LM)."""
    audio, _ = _audio_and_refs(manifest)
    outputs = {}
    for mode in modes:
        choice = lms.get(mode) or LMChoice(None, 0.0)
        with ngram_lm_decoding(model, mode, choice.lm, choice.alpha, strategy, beam_size):
            outputs[mode] = _decode(model, audio, mode, batch_size)
    return outputs
