"""Both outputs of any nemo_pc ASR model on a manifest: what the recipes and benchmarks transcribe with."""

from __future__ import annotations

from pathlib import Path

from nemo_pc.data.manifest import iter_manifest, require_text


def load_asr_model(path: str | Path):
    """Restores a nemo_pc RNN-T or CTC ``.nemo`` on CPU, in eval mode."""
    from nemo.core.classes import ModelPT

    model = ModelPT.restore_from(str(path), map_location="cpu")
    return model.eval()


def _texts(hypotheses) -> list[str]:
    return [getattr(h, "text", h) for h in hypotheses]


def transcribe_both(model, manifest: str | Path, batch_size: int = 16, progress: bool = True) -> dict[str, list[str]]:
    """``{"normalized": [...], "punctuated": [...]}`` for every line of ``manifest``, in order.

    ``model`` is a restored model or a ``.nemo`` path. The encoder runs once per batch for both outputs
    (``mode="both"``, the same for both families).
    """
    if isinstance(model, (str, Path)):
        model = load_asr_model(model)
    audio = [require_text(entry, "audio_filepath", manifest, line) for line, entry in iter_manifest(manifest)]
    if not audio:
        raise ValueError(f"{manifest}: no utterances to transcribe")
    outputs = model.transcribe(audio, batch_size=batch_size, verbose=progress, mode="both")
    return {name: _texts(outputs[name]) for name in ("normalized", "punctuated")}
