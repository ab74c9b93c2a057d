"""More synthetic training hours for a demo folder: the demo's corpus step at other hours, in a folder of its own, and
its training lines that share nothing with the demo folder's held-out sets, for the question whether the CTC heads'
gap is a gap of training data that more synthetic voices and text could close.

The corpus is built as ``make demo`` builds its own (``Demo.corpus``: the folder's ``config.json`` gives the seed,
sources, minutes per speaker, held-out voices and ``test_seen`` share; ``--hours`` replaces its hours). A larger
corpus of the same seed draws its voices and chapters anew, so its training lines may read what the demo folder
holds out. A line is dropped, and counted by reason, when

* its voice (``engine:name``, ``corpus/SYNTH.jsonl``) reads in one of the demo corpus's held-out-voice splits
  (``dev``, ``test``; ``test_seen`` is read by training voices);
* its chapter (book and chapter title, ``CHAPTERS.TXT``) is read by one of the demo folder's held-out manifests
  (``dev``, ``test``, ``test_seen``, whole documents as ``nemo-pc lm-text`` leaves them out);
* its text shares a 6-word run with a held-out utterance, the real-speech sets' included, or holds a short one whole
  (``nemo_pc.data.recipes.lm_text.HeldOut``);
* it is longer than the demo folder's longest training utterance (the synthesizer's rare runaway reading, e.g. of
  a script the voice spells letter by letter).

``OUT/extra_train.json`` is the kept lines (a NeMo manifest, for ``quality_cached_heads.py --extra-train``), ``--json``
the record (lines, hours, drops, the corpus's minutes).

    .venv/bin/python benchmarks/data_more_hours.py demo_out /work/runs/more_hours --hours 12 \\
        --json benchmarks/results/more_hours.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from suite import write_results

from nemo_pc.data.recipes.lm_text import held_out_documents
from nemo_pc.parts.manifest import DropCounter, ManifestError, iter_manifest, write_manifest

HELD_OUT_MANIFESTS = ("dev", "test", "test_seen")
REAL_MANIFESTS = ("real_dev", "real_test")


def corpus_voices(corpus: Path) -> dict[str, tuple[str, str]]:
    """``utt_id -> (split, voice key)`` of a synthetic corpus (its ``SYNTH.jsonl``)."""
    voices = {}
    for _line, row in iter_manifest(corpus / "SYNTH.jsonl"):
        voices[row["utt_id"]] = (row["split"], row["voice"])
    return voices


def held_out_voices(corpus: Path) -> set[str]:
    """The voices of a synthetic corpus's held-out splits: every split but ``train`` and ``test_seen``, whose
    speakers are training speakers reading other chapters."""
    from nemo_pc.data.recipes.synth import SEEN_TEST_SPLIT

    return {voice for split, voice in corpus_voices(corpus).values() if split not in ("train", SEEN_TEST_SPLIT)}


def demo_held_out(demo: Path) -> tuple[list[Path], list[Path]]:
    """The demo folder's held-out synthetic manifests and its real-speech manifests, those that exist."""
    synthetic = [demo / "manifests" / f"{name}.json" for name in HELD_OUT_MANIFESTS]
    real = [demo / "real_speech" / f"{name}.json" for name in REAL_MANIFESTS]
    return [p for p in synthetic if p.is_file()], [p for p in real if p.is_file()]


def select(demo: Path, more: Path, drops: DropCounter) -> list[dict]:
    """The training lines of the corpus in ``more`` (a demo-layout folder) that share no voice, chapter, text or
    length beyond the demo folder's training lines with what ``demo`` holds out."""
    from nemo_pc.data.recipes.books import read_chapters_txt
    from nemo_pc.data.recipes.lm_text import HeldOut, document_key, held_out_documents, held_out_texts

    synthetic, real = demo_held_out(demo)
    voices = held_out_voices(demo / "corpus")
    documents = set(held_out_documents(synthetic, demo / "corpus"))
    texts = HeldOut(held_out_texts([*synthetic, *real]))
    longest = max(row["duration"] for _line, row in iter_manifest(demo / "manifests" / "train.json"))
    chapters = read_chapters_txt(more / "corpus" / "CHAPTERS.TXT")
    utterance_voice = corpus_voices(more / "corpus")
    kept = []
    for line, row in iter_manifest(more / "manifests" / "train.json"):
        where = f"{more / 'manifests' / 'train.json'}:{line}"
        info = chapters[int(row["chapter"])]
        if utterance_voice[row["utt_id"]][1] in voices:
            drops.add("voice of a held-out split", where)
        elif document_key(info.project_title, info.chapter_title) in documents:
            drops.add("chapter of a held-out split", where)
        elif texts.overlaps(row["text_normalized"]):
            drops.add("shares 6 words with a held-out utterance", where)
        elif row["duration"] > longest:
            drops.add(f"longer than the training split's longest utterance ({longest:.1f} s)", where)
        else:
            kept.append(row)
    return kept


def spread(rows: list, share: float) -> list:
    """``share`` of ``rows``, spread evenly: row ``i`` is kept when ``floor((i + 1) * share)`` passes
    ``floor(i * share)``, so every stretch of the rows gives its share."""
    return [row for i, row in enumerate(rows) if math.floor((i + 1) * share) > math.floor(i * share)]


def build_corpus(demo: Path, more: Path, hours: float) -> float:
    """Builds the corpus of ``demo``'s settings at ``hours`` in ``more`` (resumes there); its seconds."""
    from dataclasses import fields

    from nemo_pc.pipelines.demo.config import DemoConfig
    from nemo_pc.pipelines.demo.pipeline import Demo

    saved = json.loads((demo / "config.json").read_text())
    names = ("seed", "sources", "minutes_per_speaker", "held_out_voices", "seen_test_share", "max_words")
    known = {f.name for f in fields(DemoConfig)}
    settings = {name: tuple(saved[name]) if isinstance(saved[name], list) else saved[name]
                for name in names if name in saved and name in known}  # fmt: skip
    start = time.perf_counter()
    Demo(DemoConfig(out_dir=str(more), hours=hours, **settings), log=lambda m: print(m, file=sys.stderr)).corpus()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("demo_dir", help="the demo folder whose held-out sets the new lines must not touch")
    parser.add_argument("out", help="folder for the larger corpus (demo layout) and extra_train.json")
    parser.add_argument("--hours", type=float, required=True, help="hours of the larger corpus, all its splits")
    parser.add_argument(
        "--share", type=float, default=1.0,
        help="keep this share of the kept lines, spread evenly over them (OUT/extra_train_share<S>.json when below 1)",
    )  # fmt: skip
    parser.add_argument("--json", required=True, help="the record")
    args = parser.parse_args(argv)

    demo, out = Path(args.demo_dir), Path(args.out)
    missing = [p for p in ("config.json", "corpus/SYNTH.jsonl", "corpus/CHAPTERS.TXT", "manifests/train.json")
               if not (demo / p).is_file()]  # fmt: skip
    if missing:
        print(f"error: {demo}: not a demo folder (no {', '.join(missing)})", file=sys.stderr)
        return 2
    if not args.hours > 0:
        print(f"error: --hours must be above 0, got {args.hours}", file=sys.stderr)
        return 2
    if not 0 < args.share <= 1:
        print(f"error: --share must be above 0 and at most 1, got {args.share}", file=sys.stderr)
        return 2
    try:
        held_out_documents([demo / "manifests" / f"{n}.json" for n in HELD_OUT_MANIFESTS
                            if (demo / "manifests" / f"{n}.json").is_file()], demo / "corpus")  # fmt: skip
        seconds = build_corpus(demo, out, args.hours)
        drops = DropCounter()
        kept = spread(select(demo, out, drops), args.share)
    except ManifestError as err:  # a bad manifest or CHAPTERS.TXT line, named with its file and line
        print(f"error: {err}", file=sys.stderr)
        return 2
    name = "extra_train.json" if args.share == 1 else f"extra_train_share{args.share:g}.json"
    write_manifest(out / name, kept)
    record = {
        "demo_dir": str(demo),
        "corpus_hours": args.hours,
        "corpus_minutes": round(seconds / 60, 2),
        "extra_train": str(out / name),
        "share": args.share,
        "lines": len(kept),
        "hours": round(sum(row["duration"] for row in kept) / 3600, 2),
        "demo_train_hours": round(
            sum(row["duration"] for _line, row in iter_manifest(demo / "manifests" / "train.json")) / 3600, 2
        ),
        "dropped": drops.as_dict(),
    }
    write_results(args.json, record, sys.argv if argv is None else ["data_more_hours.py", *argv])
    print(f"{out / name}: {len(kept)} lines, {record['hours']} h", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
