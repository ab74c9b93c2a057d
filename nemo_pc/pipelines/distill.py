"""Distillation targets: a teacher model's two outputs on speed-perturbed copies of training audio, written as a
manifest that the CTC and RNN-T recipes read beside the labelled one.

The teacher is any nemo_pc ASR model, in practice the demo's fine-tuned AED (``aed_prompt``), whose words are far
ahead of the CTC and RNN-T systems'. Each line of the source manifest gives one line per speed: its audio played
``speed`` times as fast (pitch moves with it, as in NeMo's speed perturbation), written once under ``audio_dir``; its
``text`` and ``text_normalized`` are the teacher's punctuated and normalized outputs on that audio (both from one
encoder pass, :func:`~nemo_pc.pipelines.inference.transcribe_both`), its reference kept as ``text_reference`` and
``text_normalized_reference``. A line the teacher writes nothing for, in either mode, is dropped and counted.

The manifest's record (``OUT.record.json``: teacher, source and their SHA-256, speeds, counts, minutes) is its cache
key: a second call with the same teacher file, source content and speeds returns the record and writes nothing; an
edited source or a retrained teacher is transcribed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path

from nemo_pc.parts.manifest import (
    DropCounter,
    ManifestError,
    audio_path,
    iter_manifest,
    require_text,
    write_manifest,
    write_text_atomic,
)
from nemo_pc.pipelines.anchor_cache import file_sha256

SPEEDS = (0.9, 1.1)
"""The default speeds: the ends of the recipes' speed perturbation (0.9-1.1)."""
RECORD_VERSION = 2  # 2: each copy's utt_id names its speed
EMPTY = "teacher wrote nothing"


class DistillError(ValueError):
    """A setting or input the distillation cannot use; the message names it."""


@dataclass
class DistillRecord:
    """What a distillation manifest holds and how it was made (``OUT.record.json``).

    Attributes:
        teacher, teacher_sha256: the teacher ``.nemo`` and its content's digest.
        source, source_sha256: the labelled manifest and its content's digest.
        speeds: the speeds of the copies, one line per source line and speed.
        lines: lines written; dropped: lines left out, by reason (:class:`DropCounter`).
        audio_seconds: audio of the written lines; minutes: perturbation and transcription, wall clock.
    """

    teacher: str
    teacher_sha256: str
    source: str
    source_sha256: str
    speeds: list[float]
    lines: int = 0
    dropped: dict = field(default_factory=dict)
    audio_seconds: float = 0.0
    minutes: float = 0.0
    version: int = RECORD_VERSION

    def key(self) -> tuple:
        return self.teacher_sha256, self.source_sha256, tuple(self.speeds), self.version


def record_path(out: str | Path) -> Path:
    """Where the record of the distillation manifest ``out`` lies: ``out`` with the suffix ``.record.json``."""
    out = Path(out)
    return out.with_suffix(".record.json")


def check_speeds(speeds: Sequence[float]) -> list[float]:
    """The speeds as floats, each in (0.5, 2].

    Raises:
        DistillError: no speed, or one outside that range.
    """
    values = [float(speed) for speed in speeds]
    if not values:
        raise DistillError("no speed given")
    bad = [speed for speed in values if not 0.5 < speed <= 2.0]
    if bad:
        raise DistillError(f"speed {bad[0]:g} is outside (0.5, 2]")
    return values


def speed_perturbed(audio, speed: float):
    """``audio`` (1-D samples) played ``speed`` times as fast: resampled by ``1/speed`` and read at the same rate,
    so ``len / speed`` samples come out and the pitch moves with the tempo."""
    from scipy.signal import resample_poly

    if speed == 1.0:
        return audio
    ratio = Fraction(speed).limit_denominator(100)
    return resample_poly(audio, ratio.denominator, ratio.numerator).astype(audio.dtype, copy=False)


def _speed_tag(speed: float) -> str:
    return f"sp{speed:g}".replace(".", "")


def _write_audio(path: Path, audio, rate: int) -> None:
    import soundfile

    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        soundfile.write(str(temporary), audio, rate, format="WAV", subtype="PCM_16")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def perturbed_copies(
    source: str | Path, audio_dir: str | Path, speeds: Sequence[float], progress: Callable | None = None
) -> list[dict]:
    """One entry per line of ``source`` and speed: ``audio_filepath``, ``duration``, ``speed``, the line's other
    fields (an ``utt_id`` with ``-sp<speed>`` after it), its ``text``/``text_normalized`` as references. The
    perturbed audio goes under ``audio_dir`` as ``<stem>_<digest of the samples>_sp<speed>.wav``: a copy already there
    is kept, an edited file gets a new one.

    Raises:
        ManifestError: a line without ``audio_filepath`` or ``text``/``text_normalized``, or audio that soundfile
            cannot read (file and line named).
    """
    import soundfile

    source, audio_dir = Path(source), Path(audio_dir)
    entries = list(iter_manifest(source))
    out = []
    for index, (number, entry) in enumerate(entries):
        wav = audio_path(require_text(entry, "audio_filepath", source, number, allow_empty=False), source)
        reference = require_text(entry, "text", source, number)
        normalized = require_text(entry, "text_normalized", source, number)
        try:
            audio, rate = soundfile.read(str(wav), dtype="float32", always_2d=True)
        except (OSError, RuntimeError) as err:
            raise ManifestError(
                source, number, f"{wav}: not audio that soundfile reads ({err})", "bad audio"
            ) from None
        audio = audio.mean(axis=1) if audio.shape[1] > 1 else audio[:, 0]
        digest = hashlib.sha256(audio.tobytes()).hexdigest()[:20]  # a copy is named by the samples it comes from
        for speed in speeds:
            target = audio_dir / f"{wav.stem}_{digest}_{_speed_tag(speed)}.wav"
            if not target.is_file():
                _write_audio(target, speed_perturbed(audio, speed), rate)
            frames = soundfile.info(str(target)).frames
            extra = {
                k: v for k, v in entry.items() if k not in ("audio_filepath", "duration", "text", "text_normalized")
            }
            if "utt_id" in extra:  # one id per copy: NeMo's evaluation and lhotse's cuts want them unique
                extra["utt_id"] = f"{extra['utt_id']}-{_speed_tag(speed)}"
            out.append(
                {
                    "audio_filepath": str(target.resolve()),
                    "duration": round(frames / rate, 4),
                    **extra,
                    "speed": speed,
                    "text_reference": reference,
                    "text_normalized_reference": normalized,
                }
            )
        if progress is not None:
            progress(index + 1, len(entries))
    return out


def distill(
    teacher: str | Path,
    source: str | Path,
    out: str | Path,
    speeds: Sequence[float] = SPEEDS,
    audio_dir: str | Path | None = None,
    batch_size: int = 8,
    log: Callable[[str], None] | None = None,
) -> DistillRecord:
    """Writes the distillation manifest ``out`` (see the module docstring) and its record, and returns the record;
    returns the existing record untouched when teacher, source and speeds are those it was made from.

    Args:
        teacher: a nemo_pc ASR ``.nemo`` that transcribes in both modes.
        source: the labelled manifest (``audio_filepath``, ``text``, ``text_normalized``).
        out: the manifest to write (atomically); its record goes next to it (:func:`record_path`).
        speeds: the copies' speeds; 1.0 transcribes the audio as it is.
        audio_dir: where the perturbed audio goes (default: ``OUT`` without suffix, ``_audio`` after it).

    Raises:
        DistillError: a bad speed, or a teacher that is not a file.
        ManifestError: a bad line of ``source`` (named).
    """
    from nemo_pc.pipelines.inference import transcribe_both

    log = log or (lambda message: None)
    speeds = check_speeds(speeds)
    teacher, source, out = Path(teacher), Path(source), Path(out)
    if not teacher.is_file():
        raise DistillError(f"{teacher}: no such teacher model")
    if not source.is_file():
        raise DistillError(f"{source}: no such manifest")
    record = DistillRecord(str(teacher), file_sha256(teacher), str(source), file_sha256(source), speeds)
    previous = _read_record(out)
    if previous is not None and out.is_file() and previous.key() == record.key():
        log(f"distill: {out} is up to date ({previous.lines} lines)")
        return previous
    started = time.perf_counter()
    audio_dir = Path(audio_dir) if audio_dir else out.with_name(out.stem + "_audio")
    log(f"distill: {len(speeds)} perturbed copies of {source} under {audio_dir}")
    copies = perturbed_copies(source, audio_dir, speeds)
    listing = out.with_name(f".{out.name}.audio.json")
    write_manifest(listing, copies)
    log(f"distill: {len(copies)} utterances transcribed by {teacher.name} in both modes")
    try:
        outputs = transcribe_both(str(teacher), listing, batch_size=batch_size)
    finally:
        listing.unlink(missing_ok=True)
    dropped, lines, seconds = DropCounter(), [], 0.0
    for number, (entry, punctuated, normalized) in enumerate(
        zip(copies, outputs["punctuated"], outputs["normalized"], strict=True), 1
    ):
        if not punctuated.strip() or not normalized.strip():
            dropped.add(EMPTY, f"{entry['audio_filepath']} (copy {number})")
            continue
        lines.append({**entry, "text": punctuated.strip(), "text_normalized": normalized.strip()})
        seconds += entry["duration"]
    write_manifest(out, lines)
    record.lines, record.dropped, record.audio_seconds = len(lines), dropped.as_dict(), round(seconds, 2)
    record.minutes = round((time.perf_counter() - started) / 60, 2)
    write_text_atomic(record_path(out), json.dumps(asdict(record), indent=2) + "\n")
    log(f"distill: {out}: {len(lines)} lines, {dropped.total} dropped ({dropped.as_dict()['by_reason']})")
    return record


def _read_record(out: Path) -> DistillRecord | None:
    path = record_path(out)
    if not path.is_file():
        return None
    try:
        return DistillRecord(**json.loads(path.read_text()))
    except (ValueError, TypeError):
        return None  # a record of another version: made again
