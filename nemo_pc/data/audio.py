"""The audio files a transcription reads: what NeMo's loader takes goes through, the rest is refused by name.

NeMo reads an audio file with soundfile (WAV, FLAC, OGG/Vorbis and, with libsndfile 1.1 or later, MP3), resamples
any sample rate to the model's with librosa, and downmixes several channels by averaging them when transcription is
asked for ``channel_selector="average"`` (:data:`DOWNMIX`), which its manifest dataset does and its lhotse loader does
not: :meth:`ManifestAudio.transcribe_options` picks the former for a manifest with a multi-channel file.
Silence, clipping and sub-second files are valid audio and are transcribed. A file whose header soundfile reads but
whose data stops early is read as far as it goes, as NeMo does.

Refused, each with one line that names the file (``docs/reliability.md`` has the table): a path that does not exist,
a folder, a file soundfile cannot open (not audio, or a header cut off), a file without samples (NeMo fails on it with
an IndexError), and float samples that are NaN or infinite (the model would turn them into a row of unknown pieces).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nemo_pc.parts.manifest import ManifestError, audio_path, iter_manifest, require_text

DOWNMIX = "average"
"""NeMo's ``channel_selector`` that averages the channels of a multi-channel file into one."""

_FLOAT_SUBTYPES = ("FLOAT", "DOUBLE")  # the only stored samples that can be NaN or infinite
_BLOCK = 1 << 18


class AudioError(ValueError):
    """An audio file that transcription cannot use; the message starts with the file's path."""


def check_audio(path: str | Path) -> int:
    """The number of channels of ``path``.

    Raises:
        AudioError: NeMo's loader would fail on ``path``, or read samples that are not finite.
    """
    import numpy as np
    import soundfile

    path = Path(path)
    if path.is_dir():
        raise AudioError(f"{path}: a folder, not an audio file")
    if not path.exists():
        raise AudioError(f"{path}: no such file")
    try:
        info = soundfile.info(str(path))
    except (RuntimeError, TypeError) as err:  # libsndfile's errors are RuntimeErrors
        reason = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        raise AudioError(f"{path}: not audio that soundfile reads ({reason})") from None
    if info.frames == 0:
        raise AudioError(f"{path}: no samples")
    if info.subtype in _FLOAT_SUBTYPES:
        for block in soundfile.blocks(str(path), blocksize=_BLOCK, dtype="float64"):
            if not np.isfinite(block).all():
                raise AudioError(f"{path}: NaN or infinite samples")
    return info.channels


@dataclass
class ManifestAudio:
    """The checked audio files of a manifest (:func:`manifest_audio`).

    Attributes:
        paths: ``audio_filepath`` of each line.
        texts: per requested field, its text on each line.
        channels: the most channels of any file.
    """

    paths: list[str]
    texts: list[list[str]]
    channels: int

    def transcribe_options(self) -> dict:
        """Keywords for ``model.transcribe``: with a multi-channel file, NeMo's own downmix (its manifest dataset
        averages the channels; its lhotse loader, the default, can only pick one); else none, NeMo's defaults."""
        return {} if self.channels == 1 else {"use_lhotse": False, "channel_selector": DOWNMIX}


def manifest_audio(manifest: str | Path, fields: Sequence[str] = ()) -> ManifestAudio:
    """The ``audio_filepath`` of every line of ``manifest``, each checked by :func:`check_audio`, and the text of
    each of ``fields`` per line.

    Raises:
        ManifestError: a line without ``audio_filepath`` (or a field), or with audio that cannot be used; the
            message names the manifest, the line and the audio file.
        ValueError: a manifest with no line.
    """
    audio, texts, channels = [], [[] for _ in fields], 1
    for line, entry in iter_manifest(manifest):
        path = str(audio_path(require_text(entry, "audio_filepath", manifest, line), manifest))
        try:
            channels = max(channels, check_audio(path))
        except AudioError as err:
            raise ManifestError(manifest, line, f"audio {err}", "bad audio") from None
        audio.append(path)
        for column, name in zip(texts, fields, strict=True):
            column.append(require_text(entry, name, manifest, line))
    if not audio:
        raise ValueError(f"{manifest}: no utterances to transcribe")
    return ManifestAudio(audio, texts, channels)
