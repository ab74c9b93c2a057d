"""Options several ``nemo-pc`` commands share, defined once."""

from __future__ import annotations

import argparse

TN_CHOICES = ("nemo", "none")


def add_tn_option(parser: argparse.ArgumentParser, help: str, default: str | None = "nemo") -> None:
    """``--tn nemo|none``: how written forms (digits, symbols, abbreviations) become spoken ones, by NeMo's text
    normalization or not at all; ``help`` says what it applies to."""
    parser.add_argument("--tn", choices=TN_CHOICES, default=default, help=help)
