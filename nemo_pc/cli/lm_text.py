"""``nemo-pc lm-text``: LM training text from the corpus's source books, held-out documents and utterances left out."""

from __future__ import annotations

import argparse
import sys

from nemo_pc.cli.options import add_source_option

DEFAULT_WINDOW = 6  # nemo_pc.data.recipes.lm_text.DEFAULT_WINDOW; repeated so that --help imports nothing heavy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("output", help="JSON-lines file to write (text, text_normalized), read by `nemo-pc build-lm`")
    add_source_option(parser, required=True)
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        help="manifest whose utterances must not reach the LM (dev, test, test_seen); repeat for several",
    )
    parser.add_argument(
        "--corpus",
        help="the corpus folder the --exclude manifests come from: its CHAPTERS.TXT names the book chapter of each "
        "utterance, and every chapter they read is left out whole",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=DEFAULT_WINDOW,
        help=f"leave out a sentence sharing this many consecutive words with an excluded utterance "
        f"(default {DEFAULT_WINDOW})",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from nemo_pc.data.recipes.lm_text import write_lm_text

    if not args.exclude:
        print("nemo-pc lm-text: no --exclude manifest; the LM text may hold dev and test sentences", file=sys.stderr)
    report = write_lm_text(
        args.source, args.output, args.exclude, args.window, progress=not args.no_progress, corpus=args.corpus
    )
    dropped = report.dropped
    reasons = ", ".join(f"{count} {reason}" for reason, count in dropped.counts.items())
    documents = f"{len(report.documents_left_out)} held-out documents left out whole, " if args.corpus else ""
    print(
        f"nemo-pc lm-text: {report.sentences} sentences, {report.words} words; {documents}"
        f"{dropped.total} sentences left out" + (f" ({reasons})" if reasons else ""),
        file=sys.stderr,
    )
    if args.exclude and args.corpus is None:
        print(
            "nemo-pc lm-text: no --corpus; only sentences that overlap an --exclude utterance are left out, not "
            "the rest of the chapters they read",
            file=sys.stderr,
        )
    for title in report.documents_not_in_sources:
        print(f"nemo-pc lm-text: held-out document not in the sources: {title}", file=sys.stderr)
    print(report.output)
    return 0
