"""``nemo-pc interpolate``: a model between its start and its fine-tune, the weight chosen on dev sets (see
:mod:`nemo_pc.pipelines.interpolate`): an AED and its zero-shot Whisper, or a CTC or RNN-T model and the encoder it
started from (``--start``)."""

from __future__ import annotations

import argparse
from pathlib import Path


def _dev_set(value: str) -> tuple[str, str]:
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"--dev takes NAME=MANIFEST, got {value!r}")
    return name, path


def _weights(value: str) -> tuple[float, ...]:
    from nemo_pc.pipelines.interpolate import parse_weights

    try:
        return parse_weights(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="the fine-tuned model (.nemo)")
    parser.add_argument("output", help="the interpolated model (.nemo); the table goes beside it as .json")
    parser.add_argument(
        "--dev", type=_dev_set, action="append", required=True, help="NAME=MANIFEST, a dev set (repeatable)"
    )
    parser.add_argument("--weights", type=_weights, default="0,0.25,0.5,0.75,1", help="fine-tuned weights tried")
    parser.add_argument("--max-utterances", type=int, default=None, help="at most this many of each dev set")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument(
        "--modules",
        default=None,
        help="comma-separated top-level modules that move, e.g. encoder (the decoder stays fine-tuned); default: all",
    )
    parser.add_argument(
        "--start",
        default=None,
        help="the .nemo whose encoder is the weight-0 end (e.g. the AED a CTC model started from; use with "
        "--modules encoder); default: the pretrained weights the model was built from",
    )


def run(args: argparse.Namespace) -> int:
    from nemo_pc.pipelines.interpolate import sweep_interpolation

    for _, path in args.dev:
        if not Path(path).is_file():
            raise FileNotFoundError(2, "No such file", path)
    for path in (args.model, args.start):
        if path is not None and not Path(path).is_file():
            raise FileNotFoundError(2, "No such file", path)
    weights = args.weights if isinstance(args.weights, tuple) else _weights(args.weights)
    report = sweep_interpolation(
        args.model,
        dict(args.dev),
        args.output,
        weights=weights,
        max_utterances=args.max_utterances,
        batch_size=args.batch_size,
        modules=[name for name in args.modules.split(",") if name] if args.modules else None,
        start=args.start,
    )
    print(f"weight {report['chosen']}: {report['output']}")
    return 0
