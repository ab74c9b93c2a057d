"""``nemo-pc format``: punctuate, truecase and inverse-normalize text, prediction manifests or training manifests.

nemo-pc format --tagger T.nemo --rewriter R.nemo --input in.txt --output out.txt   # one text per line
nemo-pc format --tagger T.nemo --rewriter R.nemo < in.txt > out.txt
nemo-pc format --tagger T.nemo --rewriter R.nemo --manifest pred.json --field pred_text --output out.json
nemo-pc format --tagger T.nemo --rewriter R.nemo --manifest train.json --auto-punctuate --output train_p.json
"""

from __future__ import annotations

import argparse
import sys


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


def run(args: argparse.Namespace) -> int:
    if args.auto_punctuate and not args.manifest:
        print("nemo-pc format: --auto-punctuate needs --manifest", file=sys.stderr)
        return 2
    if args.manifest and not args.output:
        print("nemo-pc format: --manifest needs --output", file=sys.stderr)
        return 2
    from nemo_pc.data.manifest import write_text_atomic
    from nemo_pc.formatter.pipeline import TextFormatter

    formatter = TextFormatter.from_files(
        args.tagger,
        args.rewriter,
        context_words=args.context_words,
        chunk_words=args.chunk_words,
        chunk_overlap=args.chunk_overlap,
        batch_size=args.batch_size,
    )
    if args.manifest and args.auto_punctuate:
        formatter.auto_punctuate_manifest(args.manifest, args.output, replace_book=args.replace_book)
    elif args.manifest:
        formatter.format_manifest(args.manifest, args.output, field=args.field, output_field=args.output_field)
    else:
        if args.input:
            with open(args.input, encoding="utf-8") as handle:
                lines = handle.readlines()
        else:
            lines = sys.stdin.readlines()
        text = "".join(line + "\n" for line in formatter.format_lines(lines))
        if args.output:
            write_text_atomic(args.output, text)
        else:
            sys.stdout.write(text)
    return 0
