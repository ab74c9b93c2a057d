"""Choose the weight between a fine-tuned model and its start on several dev sets together, and save the
interpolated model (:mod:`nemo_pc.models.interpolation`). The start of an AED is its zero-shot Whisper; that of a CTC
or RNN-T model, the encoder of the model it started from (``start``)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from nemo_pc.parts.manifest import read_manifest, spread_subset, write_manifest, write_text_atomic
from nemo_pc.parts.modes import NORMALIZED, PUNCTUATED

DEFAULT_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def check_weights(weights: Sequence[float]) -> tuple[float, ...]:
    """``weights`` as a tuple, each a fine-tuned weight in [0, 1] (0: the zero-shot start, 1: the fine-tune).

    Raises:
        ValueError: no weight, or one outside [0, 1].
    """
    weights = tuple(float(weight) for weight in weights)
    if not weights or any(not 0.0 <= weight <= 1.0 for weight in weights):
        raise ValueError(f"expected one or more weights in [0, 1], got {list(weights)}")
    return weights


def parse_weights(text: str) -> tuple[float, ...]:
    """``"0,0.5,1"`` -> ``(0.0, 0.5, 1.0)``, checked by :func:`check_weights`.

    Raises:
        ValueError: a part that is not a number, no weight, or one outside [0, 1].
    """
    try:
        weights = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as err:
        raise ValueError(f"expected comma-separated numbers, got {text!r}") from err
    return check_weights(weights)


def _dev_subset(manifest: str | Path, max_utterances: int | None, folder: Path, name: str) -> tuple[Path, list]:
    rows = spread_subset(read_manifest(manifest), max_utterances)
    return write_manifest(folder / f"{name}.json", rows), rows


def _mode_wer(hypotheses: list[str], rows: list[dict], mode: str) -> dict:
    """The WER of one mode's output: the normalized output against ``text_normalized`` (both put through the text
    rules), the punctuated output against ``text`` as written."""
    from nemo_pc.metrics.mode_wer import text_errors
    from nemo_pc.parts.text import normalize

    if mode == NORMALIZED:
        references = [normalize(row.get("text_normalized") or row["text"]) for row in rows]
        hypotheses = [normalize(text) for text in hypotheses]
    else:
        references = [row["text"] for row in rows]
    errors, words = text_errors(hypotheses, references)
    return {"wer": errors / max(words, 1), "errors": errors, "words": words}


def start_state(model, start: str | Path | None = None) -> dict:
    """The state dict at weight 0: the pretrained weights the model was built from (``start`` None), or the model
    with the encoder of the ``.nemo`` at ``start`` (:func:`~nemo_pc.models.interpolation.encoder_start_state`)."""
    from nemo_pc.models.interpolation import encoder_start_state, zero_shot_state

    if start is None:
        return zero_shot_state(model)
    from nemo_pc.pipelines.inference import load_asr_model

    if not Path(start).is_file():
        raise FileNotFoundError(2, "No such file", str(start))
    return encoder_start_state(model, load_asr_model(start).state_dict())


def interpolate_at(
    model_path: str | Path,
    output: str | Path,
    weight: float,
    modules: Sequence[str] | None = None,
    start: str | Path | None = None,
) -> Path:
    """Saves the model of ``model_path`` at ``weight`` between its start (0: :func:`start_state`) and its fine-tuned
    weights (1) to ``output`` (atomically; its config records ``interpolation``), with no dev set scored."""

    from nemo_pc.models.interpolation import interpolated_state
    from nemo_pc.pipelines.inference import load_asr_model

    (weight,) = check_weights([weight])
    model = load_asr_model(model_path)
    fine_tuned = {key: value.clone() for key, value in model.state_dict().items()}
    model.load_state_dict(interpolated_state(start_state(model, start), fine_tuned, weight, modules))
    return _save_interpolated(model, model_path, output, weight, modules, start)


def _save_interpolated(model, model_path, output, weight: float, modules, start=None) -> Path:
    from omegaconf import open_dict

    output = Path(output)
    with open_dict(model.cfg):
        model.cfg.interpolation = {
            "weight": weight,
            "fine_tuned": str(model_path),
            "modules": None if modules is None else list(modules),
            "start": None if start is None else str(start),
        }
    tmp = output.with_name(output.name + ".tmp")
    model.save_to(str(tmp))
    tmp.replace(output)
    return output


def sweep_interpolation(
    model_path: str | Path,
    dev_manifests: dict[str, str | Path],
    output: str | Path,
    weights: tuple[float, ...] = DEFAULT_WEIGHTS,
    max_utterances: int | None = None,
    batch_size: int = 16,
    results: str | Path | None = None,
    modules: Sequence[str] | None = None,
    start: str | Path | None = None,
) -> dict:
    """Scores the model at each weight between its start (0) and its fine-tuned weights (1) on every dev
    manifest, picks the weight with the lowest mean normalized-output WER over the dev sets (ties: the higher
    weight), and saves that model to ``output`` (its config records ``interpolation.weight``).

    Args:
        model_path: the fine-tuned AED's ``.nemo``.
        dev_manifests: name -> manifest (``text`` and ``text_normalized``).
        output: where the chosen model is saved.
        weights: the weights tried.
        max_utterances: at most this many utterances of each dev set, spread over it (None: all).
        batch_size: transcription batch size.
        results: where the table goes as JSON (default: ``output`` with ``.json``).
        modules: only these top-level modules move between the ends (e.g. ``["encoder"]``: the decoder stays as
            fine-tuned); ``None``: the whole model.
        start: the ``.nemo`` whose encoder is the weight-0 end (a CTC or RNN-T model's start, with
            ``modules=["encoder"]``); ``None``: the pretrained weights the model was built from (an AED's zero-shot).

    Returns:
        ``{"chosen": weight, "rows": [{"weight", "set", "normalized": {...}, "punctuated": {...}}, ...], ...}``.
    """
    import json

    from nemo_pc.models.interpolation import interpolated_state
    from nemo_pc.pipelines.inference import load_asr_model, transcribe_both

    output = Path(output)
    model = load_asr_model(model_path)
    fine_tuned = {key: value.clone() for key, value in model.state_dict().items()}
    zero_shot = start_state(model, start)
    folder = output.parent / f".{output.stem}_dev"
    folder.mkdir(parents=True, exist_ok=True)
    subsets = {name: _dev_subset(path, max_utterances, folder, name) for name, path in dev_manifests.items()}
    rows, means = [], {}
    for weight in weights:
        model.load_state_dict(interpolated_state(zero_shot, fine_tuned, weight, modules))
        scores = []
        for name, (manifest, entries) in subsets.items():
            began = time.perf_counter()
            outputs = transcribe_both(model, manifest, batch_size=batch_size, progress=False)
            row = {
                "weight": weight,
                "set": name,
                "utterances": len(entries),
                NORMALIZED: _mode_wer(outputs[NORMALIZED], entries, NORMALIZED),
                PUNCTUATED: _mode_wer(outputs[PUNCTUATED], entries, PUNCTUATED),
                "seconds": round(time.perf_counter() - began, 1),
            }
            rows.append(row)
            scores.append(row[NORMALIZED]["wer"])
            print(
                f"interpolate: weight {weight:.2f} {name}: N-WER {100 * row[NORMALIZED]['wer']:.1f}% "
                f"P-WER {100 * row[PUNCTUATED]['wer']:.1f}%",
                file=sys.stderr,
            )
        means[weight] = sum(scores) / len(scores)
    chosen = min(weights, key=lambda w: (means[w], -w))
    model.load_state_dict(interpolated_state(zero_shot, fine_tuned, chosen, modules))
    _save_interpolated(model, model_path, output, chosen, modules, start)
    report = {
        "model": str(model_path),
        "start": None if start is None else str(start),
        "output": str(output),
        "chosen": chosen,
        "modules": None if modules is None else list(modules),
        "mean_normalized_wer": {str(w): means[w] for w in weights},
        "max_utterances": max_utterances,
        "rows": rows,
    }
    write_text_atomic(results or output.with_suffix(".json"), json.dumps(report, indent=2) + "\n")
    return report
