"""``nemo-pc build-lm``: a token-level n-gram LM (ARPA) over a manifest's punctuated text, for NeMo's fusion."""

from __future__ import annotations

import argparse
import sys

from nemo_pc.parts.text import DEFAULT_MARKS, parse_marks

DEFAULT_ORDER = 6  # nemo_pc.parts.ngram_lm.DEFAULT_ORDER; repeated so that --help imports nothing heavy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", help="nemo_pc manifest (JSON lines) whose text the LM is trained on")
    parser.add_argument(
        "tokenizer",
        help="the ASR model's tokenizer folder (SentencePiece, a Whisper subset with kept.json, or a decoder CTC "
        "head's tokens with head_tokens.json), its tokenizer.model, or the model .nemo",
    )
    parser.add_argument(
        "output",
        help="the ARPA file to write (atomically); a .nemo name writes NGPU-LM's checkpoint, which loads faster",
    )
    parser.add_argument("--order", type=int, default=DEFAULT_ORDER, help=f"n-gram order (default {DEFAULT_ORDER})")
    parser.add_argument("--field", default="text", help="manifest field (default: text, cased and punctuated)")
    parser.add_argument(
        "--marks", default=DEFAULT_MARKS, help=f"mark set of the ASR model (default {DEFAULT_MARKS!r})"
    )
    parser.add_argument(
        "--on-bad", choices=("error", "skip"), default="error", help="stop at a bad line, or skip and count it"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from nemo_pc.data.tokenizers.token_encoder import load_token_encoder
    from nemo_pc.parts.ngram_lm import build_token_lm

    marks = parse_marks(args.marks, "--marks")
    report = build_token_lm(
        args.manifest,
        load_token_encoder(args.tokenizer),
        args.output,
        order=args.order,
        field_name=args.field,
        marks=marks,
        on_bad=args.on_bad,
        progress=not args.no_progress,
    )
    skipped = report.skipped
    reasons = ", ".join(f"{count} {reason}" for reason, count in skipped.counts.items())
    print(
        f"nemo-pc build-lm: {report.sentences} utterances, {report.tokens} tokens, vocabulary {report.vocab_size}; "
        f"n-grams per order {report.ngram_counts}; skipped {skipped.total} line(s)"
        + (f" ({reasons})" if reasons else ""),
        file=sys.stderr,
    )
    if report.fallback_orders:
        print(
            f"nemo-pc build-lm: too few counts to estimate the discounts of order(s) {report.fallback_orders}; "
            "used KenLM's fallback discounts (0.5, 1, 1.5)",
            file=sys.stderr,
        )
    print(report.output)
    return 0
