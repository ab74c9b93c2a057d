"""``nemo-pc format``: punctuate, truecase and inverse-normalize text, prediction manifests or training manifests.

nemo-pc format --tagger T.nemo --rewriter R.nemo --input in.txt --output out.txt   # one text per line
nemo-pc format --tagger T.nemo --rewriter R.nemo < in.txt > out.txt
nemo-pc format --tagger T.nemo --rewriter R.nemo --manifest pred.json --field pred_text --output out.json
nemo-pc format --tagger T.nemo --rewriter R.nemo --manifest train.json --auto-punctuate --output train_p.json
"""

from __future__ import annotations

import argparse
import sys
import tarfile
from pathlib import Path

from nemo_pc.formatter.hybrid import DEFAULT_DETECT_SPANS, DEFAULT_SPAN_ITN, POLICIES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tagger", required=True, help="PCTaggerModel .nemo file")
    parser.add_argument("--rewriter", default=None, help="SpanRewriterModel .nemo file (without it spans keep words)")
    parser.add_argument("--input", default=None, help="text file, one text per line (default: stdin)")
    parser.add_argument("--output", default=None, help="output file (default: stdout; required with --manifest)")
    parser.add_argument("--manifest", default=None, help="a NeMo JSON-lines manifest to format instead of text")
    parser.add_argument("--field", default="pred_text", help="manifest field to format (default pred_text)")
    parser.add_argument("--output-field", default=None, help="field to write (default: the same as --field)")
    parser.add_argument(
        "--auto-punctuate",
        action="store_true",
        help="P' for a training manifest: text <- format(text_normalized), pc_source=formatter (book entries kept)",
    )
    parser.add_argument("--replace-book", action="store_true", help="with --auto-punctuate, also redo book entries")
    parser.add_argument("--context-words", type=int, default=2, help="spoken context words each side of a span")
    parser.add_argument("--chunk-words", type=int, default=128, help="tagger window length in words")
    parser.add_argument("--chunk-overlap", type=int, default=32, help="overlap of tagger windows in words")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--span-itn",
        choices=POLICIES,
        default=DEFAULT_SPAN_ITN,
        help=f"whose written form each ITN span takes: the rewriter's (neural) or NeMo WFST ITN's by a policy "
        f"(docs/formatter.md; default {DEFAULT_SPAN_ITN})",
    )
    parser.add_argument(
        "--detect-spans",
        action=argparse.BooleanOptionalAction,
        default=DEFAULT_DETECT_SPANS,
        help="also make spans of the words NeMo WFST ITN changes (docs/formatter.md; default "
        f"{'on' if DEFAULT_DETECT_SPANS else 'off'})",
    )
    parser.add_argument(
        "--itn-threshold",
        type=float,
        default=0.9,
        help="rewriter confidence that keeps its form under --span-itn confidence (0 to 1)",
    )


def nemo_target(path: str | Path, option: str) -> str:
    """The model class a ``.nemo`` file holds (its config's ``target``), read without loading the model."""
    import yaml

    path = Path(path)
    if path.suffix != ".nemo":
        raise ValueError(f"{option} {path}: expected a .nemo file")
    if not path.is_file():
        raise ValueError(f"{option} {path}: no such file")
    try:
        with tarfile.open(path) as tar:
            member = next(m for m in tar.getmembers() if Path(m.name).name == "model_config.yaml")
            config = yaml.safe_load(tar.extractfile(member)) or {}
    except (tarfile.TarError, StopIteration, yaml.YAMLError, OSError, AttributeError):
        raise ValueError(f"{option} {path}: not a NeMo checkpoint (a tar with model_config.yaml)") from None
    return str(config.get("target", "")) if isinstance(config, dict) else ""


def check_arguments(args: argparse.Namespace) -> None:
    """Every argument checked before a model loads; a bad one raises ``ValueError`` naming it."""
    if args.auto_punctuate and not args.manifest:
        raise ValueError("--auto-punctuate needs --manifest")
    if args.manifest and not args.output:
        raise ValueError("--manifest needs --output")
    if args.chunk_words < 1:
        raise ValueError(f"--chunk-words must be 1 or more, got {args.chunk_words}")
    if not 0 <= args.chunk_overlap < args.chunk_words:
        raise ValueError(f"--chunk-overlap must be from 0 to --chunk-words - 1, got {args.chunk_overlap}")
    if not 0.0 <= args.itn_threshold <= 1.0:
        raise ValueError(f"--itn-threshold must be from 0 to 1, got {args.itn_threshold}")
    if args.context_words < 0 or args.batch_size < 1:
        raise ValueError("--context-words must be 0 or more and --batch-size 1 or more")
    for option, path in (("--input", args.input), ("--manifest", args.manifest)):
        if path is not None and not Path(path).is_file():
            raise ValueError(f"{option} {path}: no such file")
    for option, path, expected in (
        ("--tagger", args.tagger, "PCTaggerModel"),
        ("--rewriter", args.rewriter, "SpanRewriterModel"),
    ):
        if path is None:
            continue
        target = nemo_target(path, option)
        if target.rpartition(".")[2] != expected:
            raise ValueError(f"{option} {path}: holds a {target or 'model of unknown class'}, not a {expected}")


def read_lines(handle, name: str) -> list[str]:
    """Lines of a UTF-8 text stream; a line that is not UTF-8 raises ``ValueError`` naming the file and line."""
    lines = []
    for number, raw in enumerate(handle, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"{name}:{number}: not UTF-8 (byte {err.start + 1} of the line)") from None
        if "\x00" in line:
            raise ValueError(f"{name}:{number}: a NUL byte (binary input?)")
        lines.append(line)
    return lines


def run(args: argparse.Namespace) -> int:
    check_arguments(args)
    if not args.manifest:
        if args.input:
            with open(args.input, "rb") as handle:
                lines = read_lines(handle, args.input)
        elif hasattr(sys.stdin, "buffer"):
            lines = read_lines(sys.stdin.buffer, "<stdin>")
        else:  # a text stream without bytes underneath (e.g. io.StringIO)
            lines = sys.stdin.readlines()
    from nemo_pc.formatter.pipeline import TextFormatter
    from nemo_pc.parts.manifest import write_text_atomic

    formatter = TextFormatter.from_files(
        args.tagger,
        args.rewriter,
        context_words=args.context_words,
        chunk_words=args.chunk_words,
        chunk_overlap=args.chunk_overlap,
        batch_size=args.batch_size,
        span_itn=args.span_itn,
        threshold=args.itn_threshold,
        detect_spans=args.detect_spans,
    )
    if args.manifest and args.auto_punctuate:
        formatter.auto_punctuate_manifest(args.manifest, args.output, replace_book=args.replace_book)
    elif args.manifest:
        formatter.format_manifest(args.manifest, args.output, field=args.field, output_field=args.output_field)
    else:
        text = "".join(line + "\n" for line in formatter.format_lines(lines))
        if args.output:
            write_text_atomic(args.output, text)
        else:
            sys.stdout.write(text)
    return 0
