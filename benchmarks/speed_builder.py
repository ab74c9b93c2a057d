"""The LibriSpeech-PC builder at LibriSpeech's size: wall time, utterances/s and peak memory, 1 and 2 jobs.

Makes (or reuses) text-only corpora in LibriSpeech's layout from the KJV Bible, regrouped to LibriSpeech's
proportions, then runs ``nemo-pc librispeech-pc --tn none --durations SYNTH.jsonl`` on each, as a user would, once
per ``--num-jobs`` value. The corpora are cached under ``--work`` by size, so a rerun times the builder only.

LibriSpeech (all 7 subsets) has 292,367 utterances, about 34 words each (12.3 s at 2.7 words/s), in 5,832 chapter
readings of about 50 utterances, from Project Gutenberg books of tens of thousands of words. Here:
    * a chapter is consecutive Bible chapters joined to at least ``--chapter-words`` (1,700) words, and a reader
      reads about as long (``minutes_per_speaker``) in utterances of 20-48 words. A reader whose stretch crosses a
      chapter's end goes on in another chapter as a new reading, so readings are shorter than that: 30 utterances
      on average (1 to 58) in a corpus of 20,621 utterances, which therefore has 688 readings where LibriSpeech
      would have about 410. Per-chapter costs are overstated here, not understated;
    * a book is consecutive chapters joined to at least ``--book-words`` (60,000) words; the KJV gives 12 such
      books, repeated under new book ids until the text covers the corpus (the builder aligns each reading with
      its whole book, so book length is what costs);
    * 1% of the words are read with a deviation (skip, repeat, substitute), as in speed_librispeech_pc.py.

Peak memory is the largest sum of the resident memory of the builder and its workers, sampled from /proc every
0.1 s. ``--fractions`` builds smaller corpora too: memory that stays flat from 1/8 to the full size does not grow
with the number of chapters.

    .venv/bin/python benchmarks/speed_builder.py --work /tmp/builder_scale --json benchmarks/results/builder_scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from suite import Stopwatch, results_path, write_results

LIBRISPEECH_UTTERANCES = 292_367
GOAL_SECONDS = 300.0


def regroup(books: list, chapter_words: int, book_words: int, copies: int) -> list:
    """KJV books regrouped into chapters of at least ``chapter_words`` and books of at least ``book_words``,
    ``copies`` times under distinct book ids."""
    from nemo_pc.data.recipes.books import Book, Chapter

    chapters: list[Chapter] = []
    pending: list[str] = []
    for chapter in (c for book in books for c in book.chapters if c.text.strip()):
        pending.append(chapter.text)
        if sum(len(t.split()) for t in pending) >= chapter_words:
            chapters.append(Chapter(f"Chapter {len(chapters) + 1}", "\n\n".join(pending)))
            pending = []
    grouped: list[list[Chapter]] = [[]]
    for chapter in chapters:
        if sum(len(c.text.split()) for c in grouped[-1]) >= book_words:
            grouped.append([])
        grouped[-1].append(chapter)
    return [
        Book(50001 + copy * len(grouped) + k, f"Book {copy * len(grouped) + k + 1}", group)
        for copy in range(copies)
        for k, group in enumerate(grouped)
    ]


def make_corpus(folder: Path, utterances: int, args: argparse.Namespace) -> Path:
    """A text-only corpus of about ``utterances`` utterances (reused when its stamp is there)."""
    from nemo_pc.data.recipes.synth import SynthConfig, load_sources, synthesize_corpus

    words_per_utterance = (args.min_words + args.max_words) / 2 * 0.95
    words = utterances * words_per_utterance
    kjv = load_sources(["kjv"])
    kjv_words = sum(len(c.text.split()) for b in kjv for c in b.chapters)
    books = regroup(kjv, args.chapter_words, args.book_words, copies=int(words * 1.15 // kjv_words) + 1)
    config = SynthConfig(
        hours=words / 2.6 / 3600,
        audio=False,
        tn="none",
        deviation_rate=0.01,
        seed=0,
        min_words=args.min_words,
        max_words=args.max_words,
        minutes_per_speaker=args.chapter_words / 2.6 / 60,
        splits=dict(SPLITS),
        seen_test_share=0,
    )
    synthesize_corpus(folder, books, config, num_jobs=args.synth_jobs)
    return folder


# LibriSpeech's subsets by hours: train 100 + 360 + 500, dev and test clean + other 5.4 h each
SPLITS = {"train": 960 / 981.6, "dev": 10.7 / 981.6, "test": 10.9 / 981.6}


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` and every descendant, from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    family, frontier = {pid}, [pid]
    while frontier:
        current = frontier.pop()
        for child, parent in parents.items():
            if parent == current and child not in family:
                family.add(child)
                frontier.append(child)
    total = 0
    for member in family:
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def run_builder(corpus: Path, out: Path, num_jobs: int) -> dict:
    """Wall seconds and peak tree memory of one build from scratch."""
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    command = [
        sys.executable,
        "-m",
        "nemo_pc.cli",
        "librispeech-pc",
        str(corpus),
        str(out),
        "--tn",
        "none",
        "--durations",
        str(corpus / "SYNTH.jsonl"),
        "--num-jobs",
        str(num_jobs),
    ]
    peak = [0]
    with Stopwatch() as watch:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

        def sample() -> None:
            while process.poll() is None:
                peak[0] = max(peak[0], tree_rss_bytes(process.pid))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, stderr = process.communicate()
    seconds = watch.seconds
    sampler.join()
    if process.returncode:
        raise SystemExit(f"builder failed ({process.returncode}): {stderr[-2000:]}")
    kept = sum(1 for split in SPLITS if (out / f"{split}.json").is_file() for _ in (out / f"{split}.json").open())
    dropped = sum(1 for _ in (out / "drops.jsonl").open())
    return {
        "seconds": round(seconds, 1),
        "peak_rss_mib": round(peak[0] / 2**20, 1),
        "kept_utterances": kept,
        "dropped_utterances": dropped,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default="/tmp/builder_scale", help="corpora are cached here, by size")
    parser.add_argument("--utterances", type=int, default=LIBRISPEECH_UTTERANCES)
    parser.add_argument("--fractions", default="0.125,0.5,1", help="corpus sizes as fractions of --utterances")
    parser.add_argument("--num-jobs", default="1,2", help="builder processes to time, comma-separated")
    parser.add_argument("--chapter-words", type=int, default=1700)
    parser.add_argument("--book-words", type=int, default=60000)
    parser.add_argument("--min-words", type=int, default=20)
    parser.add_argument("--max-words", type=int, default=48)
    parser.add_argument("--synth-jobs", type=int, default=2, help="processes that write the corpora")
    parser.add_argument("--json", default=str(results_path(__file__)))
    args = parser.parse_args(argv)

    work = Path(args.work)
    rows = []
    for fraction in (float(f) for f in args.fractions.split(",")):
        size = round(args.utterances * fraction)
        corpus = make_corpus(work / f"corpus_{size}", size, args)
        made = sum(1 for _ in (corpus / "SYNTH.jsonl").open())
        chapters = sum(1 for line in (corpus / "CHAPTERS.TXT").open() if not line.startswith(";"))
        for jobs in (int(j) for j in args.num_jobs.split(",")):
            print(f"building {made} utterances, {chapters} chapters, --num-jobs {jobs}", file=sys.stderr, flush=True)
            row = {
                "fraction": fraction,
                "utterances": made,
                "chapters": chapters,
                "num_jobs": jobs,
                "load_before": os.getloadavg()[0],
            } | run_builder(corpus, work / "out", jobs)
            if row["kept_utterances"] + row["dropped_utterances"] != made:
                raise SystemExit(
                    f"the build accounts for {row['kept_utterances']} kept and "
                    f"{row['dropped_utterances']} dropped utterances of {made}"
                )
            row["utterances_per_second"] = round(made / row["seconds"], 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    full = [row for row in rows if row["fraction"] == 1.0]
    results = {
        "command": "python benchmarks/speed_builder.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "cpus": os.cpu_count(),
        "settings": vars(args),
        "rows": rows,
        "goal_seconds": GOAL_SECONDS,
        "goal_met": bool(full) and min(row["seconds"] for row in full) < GOAL_SECONDS,
    }
    write_results(args.json, results)
    print(f"wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
