"""Pieces of a long recording that an attention encoder-decoder can transcribe: cut at pauses, each short enough.

An AED trained on utterances of a few seconds writes the first words of a longer window and stops, so a long
recording is cut into pieces no longer than ``max_seconds`` (10 s by default) before it is decoded, at pauses, so
that no word is cut in two. The pauses come from a voice-activity detector on the energy of 10-ms frames:

* a frame is quiet when its energy lies below ``threshold`` of the way from the recording's floor (its 5th
  percentile, in dB) to its speech level (its 95th percentile), or below ``silence_db`` whatever the spread; a
  recording whose two percentiles lie less than ``min_range_db`` apart has no level to compare, so only its frames
  below ``silence_db`` are quiet;
* a pause is a run of at least ``min_pause_seconds`` of quiet frames (a shorter one may be the closure of a stop
  consonant inside a word).

From each piece's start, a piece may end anywhere that leaves it ``min_seconds`` to ``max_seconds`` long and
``min_seconds`` after it. It ends at the first pause of at least ``sentence_pause_seconds`` that reaches into that
span (at the pause's middle, or the nearest point of the span inside the pause): the decoder was trained on single
utterances, which begin and end at such pauses, and a piece that holds one utterance gives its words to that
utterance whatever their times inside it. Without one, a piece that can hold the rest of the recording ends with
it; otherwise it ends at the middle of the longest pause in reach (the quieter one among equally long pauses, then
the later), or, without a pause, at the quietest frame (energy smoothed over 50 ms) of the second half of the
allowed span. The pieces tile the recording without gaps or overlaps; a piece with less than ``min_voice_seconds``
of frames that are not quiet holds no speech, and the decoder skips it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PauseRules:
    """Where a recording is cut into pieces (see the module docstring); times in seconds.

    Attributes:
        max_seconds: the longest piece.
        min_seconds: the shortest piece that a cut at a pause leaves (at most half of ``max_seconds`` is used).
        min_pause_seconds: the shortest run of quiet frames that is a pause.
        sentence_pause_seconds: a pause at least this long ends a piece where both sides keep ``min_seconds``
            (``inf``: pieces are cut only where they would be too long).
        min_voice_seconds: a piece with fewer seconds of frames that are not quiet holds no speech.
        frame_seconds: the detector's frame.
        threshold: where the quiet frames end, as a fraction of the way from the floor to the speech level.
        silence_db: frames below this energy (dB relative to a full-scale square wave) are quiet.
        min_range_db: the least spread between the floor and the speech level for ``threshold`` to apply.
        edge_seconds: the quiet audio kept on each side of a piece's speech when it is decoded (a decoder trained
            on utterances has heard little silence around them).
    """

    max_seconds: float = 10.0
    min_seconds: float = 1.0
    min_pause_seconds: float = 0.15
    sentence_pause_seconds: float = 0.4
    min_voice_seconds: float = 0.1
    frame_seconds: float = 0.01
    threshold: float = 0.3
    silence_db: float = -60.0
    min_range_db: float = 10.0
    edge_seconds: float = 0.05

    def __post_init__(self) -> None:
        if not self.max_seconds > 0 or not math.isfinite(self.max_seconds):
            raise ValueError(f"the longest piece must be a positive number of seconds, got {self.max_seconds}")
        if not self.frame_seconds > 0 or self.frame_seconds > self.max_seconds:
            raise ValueError(f"frame_seconds must be positive and at most max_seconds, got {self.frame_seconds}")
        if min(self.min_seconds, self.min_pause_seconds, self.min_voice_seconds, self.edge_seconds) < 0:
            raise ValueError("min_seconds, min_pause_seconds, min_voice_seconds and edge_seconds must not be negative")
        if not self.sentence_pause_seconds > 0:
            raise ValueError(f"sentence_pause_seconds must be positive, got {self.sentence_pause_seconds}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must lie in [0, 1], got {self.threshold}")

    def frames(self, seconds: float) -> int:
        """Whole detector frames in ``seconds``."""
        return int(math.floor(seconds / self.frame_seconds + 1e-9))


@dataclass(frozen=True)
class Piece:
    """A piece of a recording, in samples ``[start, end)``, and whether it holds speech; ``speech_start`` and
    ``speech_end`` bound what is decoded (the speech and ``edge_seconds`` around it; ``None``: the whole piece)."""

    start: int
    end: int
    voiced: bool
    speech_start: int | None = None
    speech_end: int | None = None

    @property
    def span(self) -> tuple[int, int]:
        """The samples ``[first, last)`` that are decoded."""
        first = self.start if self.speech_start is None else self.speech_start
        return first, self.end if self.speech_end is None else self.speech_end


def frame_energy_db(audio: np.ndarray, frame: int) -> np.ndarray:
    """The mean square of each ``frame`` samples of ``audio`` (the last frame may be shorter), in dB."""
    if frame <= 0:
        raise ValueError(f"frame must be a positive number of samples, got {frame}")
    audio = np.asarray(audio, dtype=np.float64)
    count = math.ceil(len(audio) / frame)
    padded = np.zeros(count * frame)
    padded[: len(audio)] = audio**2
    sizes = np.full(count, frame, dtype=np.float64)
    if count and len(audio) % frame:
        sizes[-1] = len(audio) % frame
    return 10.0 * np.log10(padded.reshape(count, frame).sum(axis=1) / sizes + 1e-12)


def quiet_frames(energy_db: np.ndarray, rules: PauseRules) -> np.ndarray:
    """Which frames are quiet (see the module docstring)."""
    energy_db = np.asarray(energy_db, dtype=np.float64)
    quiet = energy_db < rules.silence_db
    if len(energy_db) == 0:
        return quiet
    floor, level = np.percentile(energy_db, [5.0, 95.0])
    if level - floor >= rules.min_range_db:
        quiet |= energy_db < floor + rules.threshold * (level - floor)
    return quiet


def quiet_runs(quiet: np.ndarray, min_frames: int) -> list[tuple[int, int]]:
    """The runs ``[start, end)`` of at least ``max(1, min_frames)`` quiet frames."""
    edges = np.diff(np.concatenate([[0], np.asarray(quiet, dtype=np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(a), int(b)) for a, b in zip(starts, ends, strict=True) if b - a >= max(1, min_frames)]


def cut_frames(energy_db: np.ndarray, rules: PauseRules) -> list[int]:
    """The frames where pieces end (each piece but the last; see the module docstring)."""
    energy_db = np.asarray(energy_db, dtype=np.float64)
    total, longest = len(energy_db), max(1, rules.frames(rules.max_seconds))
    shortest = min(rules.frames(rules.min_seconds), longest // 2)
    runs = quiet_runs(quiet_frames(energy_db, rules), rules.frames(rules.min_pause_seconds))
    sentence = rules.sentence_pause_seconds / rules.frame_seconds - 1e-9
    smooth = np.convolve(energy_db, np.ones(5) / 5, mode="same") if total >= 5 else energy_db
    cuts, start, first_run = [], 0, 0
    while True:
        # a piece of shortest to longest frames that leaves at least shortest frames after it
        low, high = start + max(shortest, 1), min(start + longest, total - shortest)
        while first_run < len(runs) and runs[first_run][1] <= low:
            first_run += 1
        reach = []
        for run in runs[first_run:] if low <= high else []:
            if run[0] > high:
                break
            reach.append(run)
        pause = next((run for run in reach if run[1] - run[0] >= sentence), None)
        if pause is not None:  # the first sentence pause in reach ends the piece
            cut = min(max((pause[0] + pause[1]) // 2, low), high)
        elif total - start <= longest:
            return cuts
        elif reach:  # the longest pause, then the quietest, then the later
            key = max(
                (
                    run_end - run_start,
                    -float(energy_db[run_start:run_end].mean()),
                    min(max((run_start + run_end) // 2, low), high),
                )
                for run_start, run_end in reach
            )
            cut = key[2]
        else:
            first = min(max(low, start + longest // 2), high)
            window = smooth[first : high + 1]
            cut = first + int(len(window) - 1 - np.argmin(window[::-1]))
        cuts.append(cut)
        start = cut


def plan_pieces(energy_db: np.ndarray, total: int, frame: int, rules: PauseRules) -> list[Piece]:
    """The pieces of a recording of ``total`` samples whose frames of ``frame`` samples have ``energy_db``.

    Raises:
        ValueError: no samples, or ``energy_db`` that does not hold one value per frame.
    """
    if total <= 0:
        raise ValueError("no audio to cut into pieces")
    if len(energy_db) != math.ceil(total / frame):
        raise ValueError(f"{len(energy_db)} frame energies for {total} samples in frames of {frame}")
    voiced = ~quiet_frames(energy_db, rules)
    bounds = [0, *cut_frames(energy_db, rules), len(energy_db)]
    pieces = []
    edge = rules.frames(rules.edge_seconds)
    for first, last in zip(bounds, bounds[1:], strict=False):
        inside = voiced[first:last]
        speech = int(inside.sum()) >= max(1, rules.frames(rules.min_voice_seconds))
        if not speech:
            pieces.append(Piece(first * frame, min(last * frame, total), False))
            continue
        begin = max(first, first + int(np.argmax(inside)) - edge)
        finish = min(last, last - int(np.argmax(inside[::-1])) + edge)
        end = min(last * frame, total)
        pieces.append(Piece(first * frame, end, True, begin * frame, min(finish * frame, end)))
    return pieces


def recording_energy_db(blocks: Iterable[np.ndarray], frame: int) -> np.ndarray:
    """:func:`frame_energy_db` of a recording read block by block (each block but the last a whole number of
    frames), so that the recording is never in memory at once."""
    parts = [frame_energy_db(block, frame) for block in blocks]
    return np.concatenate(parts) if parts else np.zeros(0)
