"""``nemo-pc evaluate``: score a NeMo prediction manifest with every metric of the five papers."""

from __future__ import annotations

import argparse

from nemo_pc.parts.text import DEFAULT_MARKS, SEGMENT_MARKS, parse_marks


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", help="NeMo prediction manifest (JSON lines)")
    parser.add_argument("--pred-field", default="pred_text", help="hypothesis field (default: pred_text)")
    parser.add_argument("--ref-field", default="text", help="punctuated, cased reference field (default: text)")
    parser.add_argument(
        "--spoken-field",
        default="text_normalized",
        help="spoken form of the reference, for I-WER (default: text_normalized; '' disables I-WER)",
    )
    parser.add_argument("--key-field", default="utt_id", help="utterance id for --compare (default: utt_id)")
    parser.add_argument(
        "--marks",
        default=DEFAULT_MARKS,
        help=f"mark set, one column per mark in the per-mark tables (default: {DEFAULT_MARKS!r}); marks outside it "
        "are not scored",
    )
    parser.add_argument(
        "--segment-marks", default=SEGMENT_MARKS, help=f"marks that end a segment (default: {SEGMENT_MARKS!r})"
    )
    parser.add_argument("--json", metavar="OUT.json", help="write the full report as JSON")
    parser.add_argument("--png", metavar="OUT.png", help="write the per-mark PER bars and substitution matrix")
    parser.add_argument("--compare", metavar="OTHER.json", help="second system's manifest: adds paired tests")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for --compare")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument(
        "--on-bad", choices=("error", "skip"), default="error", help="stop at a bad line, or skip and count it"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from nemo_pc.metrics.evaluate import EvalConfig, evaluate
    from nemo_pc.metrics.report import format_report, plot_per, write_json

    marks, segment_marks = parse_marks(args.marks, "--marks"), parse_marks(args.segment_marks, "--segment-marks")
    if args.compare and args.resamples < 1:
        raise ValueError(f"--resamples must be 1 or more with --compare, got {args.resamples}")
    for option, target in (("--json", args.json), ("--png", args.png)):
        if target and Path(target).is_dir():
            raise ValueError(f"{option} {target} is a folder; give a file name")
    config = EvalConfig(
        pred_field=args.pred_field,
        ref_field=args.ref_field,
        spoken_field=args.spoken_field,
        key_field=args.key_field,
        marks=marks,
        segment_marks=segment_marks,
        on_bad=args.on_bad,
        progress=not args.no_progress,
    )
    report = evaluate(args.manifest, config, compare=args.compare, num_resamples=args.resamples, seed=args.seed)
    print(format_report(report))
    if args.json:
        print(f"\nreport: {write_json(report, args.json)}")
    if args.png:
        print(f"plot: {plot_per(report, args.png)}")
    return 0
