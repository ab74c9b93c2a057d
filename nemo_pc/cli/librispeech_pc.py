"""``nemo-pc librispeech-pc``: LibriSpeech-PC manifests from a corpus and its books
(see :mod:`nemo_pc.data.recipes.librispeech_pc`)."""

from __future__ import annotations

import argparse

from nemo_pc.cli.options import add_tn_option


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("corpus_dir", help="LibriSpeech root (CHAPTERS.TXT and the split folders)")
    parser.add_argument("output_dir", help="where manifests, drops.jsonl and the retention table go")
    parser.add_argument("--books-dir", default=None, help="original-books folder (default: CORPUS_DIR/books)")
    parser.add_argument("--num-jobs", type=int, default=1)
    parser.add_argument("--splits", default=None, help="comma-separated split folders (default: all)")
    parser.add_argument(
        "--fallback",
        choices=("drop", "formatter"),
        default="drop",
        help="formatter: keep unrestorable utterances with pc_source none (text = text_normalized) "
        "until the text formatter can punctuate them",
    )
    parser.add_argument(
        "--marks",
        default=None,
        help="keep only these marks, papers/002 §5 (e.g. '.,?' or '.,?!;:'); default: the book's punctuation",
    )
    parser.add_argument(
        "--mark-map",
        choices=("default", "none"),
        default="default",
        help="with --marks: default folds those of ! ; : that are not in --marks into . . , first; none drops them",
    )
    parser.add_argument("--separate-marks", action="store_true", help="with --marks: write 'done .' for 'done.'")
    parser.add_argument("--min-duration", type=float, default=1.0, help="drop utterances shorter than this (s)")
    parser.add_argument("--max-deviation", type=int, default=2, help="drop utterances with more word edits")
    add_tn_option(parser, "spoken form of the books: nemo (NeMo TN, numbers as words) or none (as written)")
    parser.add_argument(
        "--durations",
        default=None,
        help="JSON lines with utt_id and duration, for corpora without audio (e.g. SYNTH.jsonl)",
    )
    parser.add_argument("--cache-dir", default=None, help="TN grammar and spoken-form cache")


def run(args: argparse.Namespace) -> int:
    from nemo_pc.data.recipes.librispeech_pc import RestoreOptions, prepare_librispeech_pc
    from nemo_pc.parts.text import parse_marks

    options = RestoreOptions(
        fallback=args.fallback,
        marks=None if args.marks is None else parse_marks(args.marks, "--marks"),
        mark_map=args.mark_map,
        separate_marks=args.separate_marks,
        min_duration=args.min_duration,
        max_deviation=args.max_deviation,
        tn=args.tn,
    )
    splits = args.splits.split(",") if args.splits else None
    paths = prepare_librispeech_pc(
        args.corpus_dir,
        args.books_dir,
        args.output_dir,
        args.num_jobs,
        splits=splits,
        options=options,
        durations=args.durations,
        cache_dir=args.cache_dir,
    )
    from pathlib import Path

    print((Path(args.output_dir) / "retention.txt").read_text(encoding="utf-8"), end="")
    for split, path in paths.items():
        print(f"{split}: {path}")
    return 0
