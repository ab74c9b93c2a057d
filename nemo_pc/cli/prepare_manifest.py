"""``nemo-pc prepare-manifest``: a punctuated-only NeMo manifest with its ``text_normalized`` written ahead of time
(see :mod:`nemo_pc.data.normalized_text`; training derives the same texts itself, this saves the work at start)."""

from __future__ import annotations

import argparse
import sys

from nemo_pc.cli.options import add_tn_option


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", help="a NeMo manifest: audio_filepath, duration and punctuated, cased text")
    parser.add_argument("output", help="the manifest to write: every line with text_normalized (may be MANIFEST)")
    add_tn_option(parser, "spoken form of digits, symbols and abbreviations: nemo (NeMo TN) or none (as written)")
    parser.add_argument("--cache-dir", default=None, help="derived-text, TN grammar and spoken-form cache")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from nemo_pc.data.normalized_text import prepare_manifest

    report = prepare_manifest(
        args.manifest, args.output, tn=args.tn, cache_dir=args.cache_dir, progress=False if args.no_progress else None
    )
    if report.drops.total:
        reasons = ", ".join(f"{count} {reason}" for reason, count in report.drops.counts.items())
        first = ", ".join(report.drops.examples.values())
        print(
            f"nemo-pc prepare-manifest: {report.drops.total} lines left out ({reasons}; first: {first})",
            file=sys.stderr,
        )
    print(f"{report.path}: {report.lines} lines, {report.derived} with text_normalized derived from text")
    return 0
