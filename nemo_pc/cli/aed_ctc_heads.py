"""``nemo-pc aed-ctc-heads``: the punctuated CTC model of an AED's encoder and CTC heads, as its own ``.nemo`` (see
:mod:`nemo_pc.models.aed_ctc_export`)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("aed", help="an AED trained with aux_ctc.target=punctuated and an aux_ctc.inter head (.nemo)")
    parser.add_argument("output", help="the CTC model (.nemo)")
    parser.add_argument(
        "--tokenizer-dir",
        default=None,
        help="the heads' SentencePiece folder (default: the aux_ctc.tokenizer.dir the AED was trained with)",
    )


def run(args: argparse.Namespace) -> int:
    from nemo_pc.models.aed_ctc_export import export_aed_ctc_heads

    if not Path(args.aed).is_file():
        raise FileNotFoundError(2, "No such file", args.aed)
    print(export_aed_ctc_heads(args.aed, args.output, args.tokenizer_dir))
    return 0
