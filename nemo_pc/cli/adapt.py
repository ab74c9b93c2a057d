"""``nemo-pc adapt``: a P&C model from a stock NeMo checkpoint (:func:`nemo_pc.models.adapt.adapt_checkpoint`)."""

from __future__ import annotations

import argparse
import sys

from nemo_pc.parts.text import DEFAULT_MARKS, parse_marks


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stock", help="a stock .nemo: EncDecRNNTBPEModel (RNN-T, TDT), hybrid RNNT-CTC or CTC BPE")
    parser.add_argument("output", help="the P&C .nemo to write")
    parser.add_argument(
        "--decoders",
        choices=("conditioned", "dual"),
        default="conditioned",
        help="one predictor with a mode embedding (CTC: a style embedding), or a head per mode (default conditioned)",
    )
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="a tokenizer folder whose pieces with capitals or marks extend the stock tokenizer (default: the "
        "capitalized twins of the stock pieces and the marks)",
    )
    parser.add_argument("--marks", default=DEFAULT_MARKS, help=f"the mark set (default {DEFAULT_MARKS!r})")


def run(args: argparse.Namespace) -> int:
    from nemo_pc.models.adapt import adapt_checkpoint

    marks = parse_marks(args.marks, "--marks")
    model = adapt_checkpoint(args.stock, args.output, args.decoders, args.tokenizer, marks)
    adapted = model.cfg.pc.adapted_from
    summary = f"{adapted['added_pieces']} pieces added to the stock {adapted['stock_vocab']}"
    print(
        f"{args.output}: {type(model).__name__} from {adapted['class']} ({args.decoders}; {summary})", file=sys.stderr
    )
    print(args.output)
    return 0
