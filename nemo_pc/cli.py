"""``nemo-pc <command>``: thin argument parsing over library functions.

Each command lives in a small module that exposes ``add_arguments(parser)`` and ``run(args) -> int`` and imports
its heavy dependencies inside ``run``, so that ``nemo-pc --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("nemo_pc.metrics.cli", "score a NeMo prediction manifest with every metric of the five papers"),
    "synth": ("nemo_pc.data.synth_cli", "synthesize a LibriSpeech-layout corpus with offline TTS voices"),
    "librispeech-pc": ("nemo_pc.data.librispeech_pc_cli", "build LibriSpeech-PC manifests from a corpus and books"),
    "build-tokenizer": ("nemo_pc.data.tokenizer_cli", "train the cased, punctuated SentencePiece tokenizer"),
    "formatter-data": ("nemo_pc.formatter.data_cli", "build text-formatter training data from written text"),
    "format": ("nemo_pc.formatter.format_cli", "punctuate, truecase and inverse-normalize text or manifests"),
}


def _available_commands() -> dict[str, tuple[object, str]]:
    found = {}
    for name, (module_name, help_text) in COMMANDS.items():
        try:
            found[name] = (importlib.import_module(module_name), help_text)
        except ModuleNotFoundError as err:
            if err.name is None or not (module_name + ".").startswith(err.name + "."):
                raise
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nemo-pc", description="Punctuated and cased ASR tools for NeMo.")
    sub = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    for name, (module, help_text) in _available_commands().items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(command_parser)
        command_parser.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
