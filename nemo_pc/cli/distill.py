"""``nemo-pc distill``: a teacher model's two outputs on speed-perturbed copies of a labelled manifest's audio, as
a manifest to train on beside it (see :mod:`nemo_pc.pipelines.distill`)."""

from __future__ import annotations

import argparse
import sys


def _speeds(value: str) -> list[float]:
    try:
        return [float(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--speeds takes comma-separated numbers, got {value!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("teacher", help="the teacher model (.nemo), e.g. the demo's models/aed_prompt.nemo")
    parser.add_argument("manifest", help="the labelled manifest (audio_filepath, text, text_normalized)")
    parser.add_argument("output", help="the distillation manifest; its record goes beside it (.record.json)")
    parser.add_argument("--speeds", type=_speeds, default=[0.9, 1.1], help="speeds of the copies (default 0.9,1.1)")
    parser.add_argument("--audio-dir", default=None, help="where the copies go (default: OUTPUT's stem + _audio)")
    parser.add_argument("--batch-size", type=int, default=8)


def run(args: argparse.Namespace) -> int:
    from nemo_pc.pipelines.distill import distill

    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}")
    record = distill(
        args.teacher,
        args.manifest,
        args.output,
        speeds=args.speeds,
        audio_dir=args.audio_dir,
        batch_size=args.batch_size,
        log=lambda message: print(message, file=sys.stderr),
    )
    print(f"{args.output}: {record.lines} lines, {record.dropped.get('total', 0)} dropped")
    return 0
