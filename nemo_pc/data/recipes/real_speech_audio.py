"""The audio side of :mod:`nemo_pc.data.recipes.real_speech`: decoding to 16 kHz mono, 10 ms frame energies, the
silence level of a recording, cuts moved into silence, the length of the speech in a clip, and 16-bit WAV output.

A frame is silent when its energy is below ``floor + fraction * (loud - floor)`` dB and at least ``loud_margin`` dB
below loud, where floor and loud are the 10th and 95th percentiles of the recording's frame energies (the margin keeps
a recording with few quiet frames, whose floor lies near its loud level, from having its speech called silence), or
when it is below :data:`SILENT_DB` (digital silence).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from math import gcd
from pathlib import Path

import numpy as np

from nemo_pc.parts.manifest import atomic_open

SAMPLE_RATE = 16000
FRAMES_PER_SECOND = 100
SILENT_DB = -90.0
"""A frame below this energy (dB re full scale) is always silent: digital silence (16-bit rounding lies near -101)."""
_HOP = SAMPLE_RATE // FRAMES_PER_SECOND


def audio_seconds(data: bytes) -> float:
    """The length of an audio file's bytes from its header (0 when soundfile cannot read it)."""
    import soundfile

    try:
        return float(soundfile.info(io.BytesIO(data)).duration)
    except (RuntimeError, TypeError, ValueError, soundfile.SoundFileError):
        return 0.0


def decode_16k_mono(data: bytes) -> np.ndarray | None:
    """16 kHz mono float32 samples of an audio file's bytes (WAV, FLAC, MP3, Opus: what soundfile reads; channels
    averaged, other rates resampled), or ``None`` when soundfile cannot decode them or they hold no sample."""
    import soundfile
    from scipy.signal import resample_poly

    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (RuntimeError, TypeError, ValueError, soundfile.SoundFileError):
        return None
    if len(samples) == 0:
        return None
    mono = samples.mean(axis=1)
    if rate != SAMPLE_RATE:
        common = gcd(SAMPLE_RATE, rate)
        mono = resample_poly(mono, SAMPLE_RATE // common, rate // common).astype(np.float32)
    return mono


def frame_db(samples: np.ndarray) -> np.ndarray:
    """Energy (dB) of each 10 ms frame."""
    count = len(samples) // _HOP
    frames = samples[: count * _HOP].astype(np.float64).reshape(count, _HOP)
    return 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)


def silence_level(samples: np.ndarray, fraction: float, loud_margin: float) -> float:
    """The energy (dB) below which a frame of this recording is silent (see the module docstring)."""
    energies = frame_db(samples)
    if len(energies) == 0:
        return float("inf")
    floor, loud = np.percentile(energies, 10), np.percentile(energies, 95)
    return float(max(min(floor + fraction * (loud - floor), loud - loud_margin), SILENT_DB))


def refine_cuts(
    cuts: Iterable[float], samples: np.ndarray, level: float, window: float, min_silence: float
) -> dict[float, float | None]:
    """Each cut inside the recording -> the middle of the nearest run of ``min_silence`` seconds of silent frames
    within ``window`` seconds of it (the quieter of two equally near), or ``None`` when there is none: the cut is not
    in silence. Cuts at the recording's own start and end are left out.

    The nearest run, not the quietest: a cut just before a short word ("His", "And") would otherwise move into the
    pause after the word and carry it into the wrong clip.
    """
    energies = frame_db(samples)
    run = max(1, round(min_silence * FRAMES_PER_SECOND))
    reach = round(window * FRAMES_PER_SECOND)
    moved: dict[float, float | None] = {}
    for cut in sorted(set(cuts)):
        frame = round(cut * FRAMES_PER_SECOND)
        if frame <= 0 or frame >= len(energies) - 1:
            continue
        first, last = max(0, frame - reach - run // 2), min(len(energies) - run, frame + reach - run // 2)
        starts = np.arange(first, last + 1)
        loudest = np.array([energies[k : k + run].max() for k in starts])
        silent = np.flatnonzero(loudest < level) if len(starts) else starts
        if len(silent) == 0:
            moved[cut] = None
            continue
        distance = np.abs(starts[silent] + run / 2 - frame)
        best = silent[np.lexsort((loudest[silent], distance))[0]]
        moved[cut] = float(starts[best] + run / 2) / FRAMES_PER_SECOND
    return moved


def speech_seconds(samples: np.ndarray, level: float, min_speech: float) -> float:
    """Seconds from the first to the last run of ``min_speech`` seconds of frames that are not silent (0 when there
    is no such run); a click in a silent stretch does not start or end the speech."""
    run = max(1, round(min_speech * FRAMES_PER_SECOND))
    loud = (frame_db(samples) >= level).astype(int)
    starts = np.flatnonzero(np.convolve(loud, np.ones(run, dtype=int), mode="valid") == run)
    return 0.0 if len(starts) == 0 else float(starts[-1] + run - starts[0]) / FRAMES_PER_SECOND


def write_wav(path: Path, samples: np.ndarray) -> None:
    """16 kHz 16-bit mono WAV, written atomically."""
    import soundfile

    with atomic_open(path, "wb") as handle:
        soundfile.write(handle, np.clip(samples, -1.0, 1.0), SAMPLE_RATE, format="WAV", subtype="PCM_16")
