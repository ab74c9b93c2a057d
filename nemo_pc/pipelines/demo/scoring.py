"""How the demo scores a prediction manifest: :func:`score_predictions` on the synthetic test splits, and
:func:`score_real_speech` on the small real recorded sets (``real_dev``, ``real_test``), where most references carry
no punctuation and one figure needs its interval."""

from __future__ import annotations

from pathlib import Path

from nemo_pc.parts.manifest import iter_manifest
from nemo_pc.pipelines.demo.claim_rules import empty_share

BOOTSTRAP_RESAMPLES = 1000
"""Resamples of the real sets' bootstrap intervals."""


def score_predictions(predictions: str | Path) -> dict:
    """The ``nemo-pc evaluate`` report of a prediction manifest's written output (``pred_text``), with the WER of
    its normalized output (``normalized_output``) and the share of empty outputs (``empty_share``)."""
    from nemo_pc.metrics.evaluate import EvalConfig, evaluate

    report = evaluate(predictions, EvalConfig(progress=False))
    normalized = evaluate(predictions, EvalConfig(pred_field="pred_text_normalized", progress=False))
    report["normalized_output"] = {"wer": normalized["metrics"]["wer"], "support": normalized["support"]["wer"]}
    report["empty_share"] = empty_share(predictions)
    return report


def score_real_speech(predictions: str | Path, num_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> dict:
    """:func:`score_predictions`'s report of a real recorded set, with what a set of a few dozen clips, most without
    punctuation, needs besides.

    Added keys:

    - ``normalized_output.ci95``: the percentile bootstrap 95% interval of the normalized output's WER, clips
      resampled (:func:`~nemo_pc.metrics.significance.bootstrap_interval`);
    - ``marked``: the written output scored on the clips whose reference carries punctuation and case
      (``has_marks``) alone, ``{"num_utterances", "metrics", "support"}``; elsewhere ``text`` is the normalized
      transcript, so a mark written there would count as an error that is none. ``metrics`` is ``None`` when no
      clip carries marks;
    - ``audio_seconds``: the clips' audio; ``bootstrap``: ``{"num_resamples", "seed"}``.

    The report's own ``metrics`` score every clip; of them, ``wer`` (the written output with case and marks removed)
    means the same on every clip.
    """
    from nemo_pc.metrics.evaluate import EvalConfig, evaluate_manifest
    from nemo_pc.metrics.significance import bootstrap_interval

    report = score_predictions(predictions)
    normalized = evaluate_manifest(predictions, EvalConfig(pred_field="pred_text_normalized", progress=False))
    report["normalized_output"]["ci95"] = bootstrap_interval(normalized.metrics, "wer", num_resamples, seed)
    written = evaluate_manifest(predictions, EvalConfig(progress=False))
    entries = [entry for _, entry in iter_manifest(predictions)]  # every line was scored, in order (on_bad="error")
    marked_ids = [key for key, entry in zip(written.metrics.ids, entries, strict=True) if entry.get("has_marks")]
    marked = written.metrics.select(marked_ids).compute() if marked_ids else None
    report["marked"] = {
        "num_utterances": len(marked_ids),
        "metrics": marked["metrics"] if marked else None,
        "support": marked["support"] if marked else None,
    }
    report["audio_seconds"] = round(sum(float(entry.get("duration") or 0.0) for entry in entries), 2)
    report["bootstrap"] = {"num_resamples": num_resamples, "seed": seed}
    return report
