"""Both outputs of any nemo_pc ASR model on a manifest: what the recipes and benchmarks transcribe with."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from nemo_pc.data.audio import manifest_audio
from nemo_pc.parts.manifest import iter_manifest
from nemo_pc.parts.modes import MODES


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
    (``mode="both"``, the same for both families). Audio is read as NeMo reads it, resampled to the model's rate and
    several channels averaged into one; a file NeMo cannot use is refused by name (:mod:`nemo_pc.data.audio`).

    Raises:
        ManifestError: a line without ``audio_filepath``, or audio that cannot be used (names line and file).
    """
    if isinstance(model, (str, Path)):
        model = load_asr_model(model)
    audio = manifest_audio(manifest)  # each file checked first: a bad one is named, not met mid-batch
    outputs = model.transcribe(
        audio.paths, batch_size=batch_size, verbose=progress, mode="both", **audio.transcribe_options()
    )
    return {name: _texts(outputs[name]) for name in MODES}


@dataclass
class DecodeTiming:
    """How long a system took to transcribe a manifest: the real-time factor and what it was measured under.

    Attributes:
        system: the system's name, e.g. ``rnnt_conditioned`` or ``whisper_tiny_en``.
        utterances: utterances transcribed (decoded, not read from a cache).
        audio_seconds: their audio (the manifest's ``duration`` fields).
        decode_seconds: wall-clock seconds of the transcription, model loading left out.
        threads: CPU threads the system ran on.
        batch_size: utterances per forward pass.
        engine: what ran it, e.g. ``PyTorch`` or ``CTranslate2 int8``.
        cached: utterances of the manifest whose text came from a cache instead; they are in none of the counts
            above, so the RTF is that of the decoded audio (NaN when nothing was decoded).
    """

    system: str
    utterances: int
    audio_seconds: float
    decode_seconds: float
    threads: int
    batch_size: int
    engine: str
    cached: int = 0

    @property
    def rtf(self) -> float:
        """Decode seconds per second of audio."""
        return self.decode_seconds / self.audio_seconds if self.audio_seconds else float("nan")

    def as_dict(self) -> dict:
        return {**asdict(self), "rtf": self.rtf}


def manifest_seconds(manifest: str | Path) -> tuple[int, float]:
    """``(utterances, seconds of audio)`` of a manifest, from its ``duration`` fields."""
    durations = [float(entry.get("duration", 0.0)) for _, entry in iter_manifest(manifest)]
    return len(durations), sum(durations)
