"""``nemo-pc build-tokenizer``: train the cased, punctuated SentencePiece tokenizer from manifests, or with
``--whisper`` write the Whisper subset of the tokens the manifests use (``model.tokenizer.type=whisper``)."""

from __future__ import annotations

import argparse

from nemo_pc.parts.text import DEFAULT_MARKS, parse_marks


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifests", nargs="+", help="NeMo manifests with 'text' and 'text_normalized'")
    parser.add_argument("--output-dir", required=True, help="parent folder of tokenizer_spe_<type>_v<size>/")
    parser.add_argument("--vocab-size", type=int, default=256, help="number of pieces (default 256)")
    parser.add_argument("--type", dest="tokenizer_type", choices=("bpe", "unigram"), default="bpe")
    parser.add_argument(
        "--marks",
        default=DEFAULT_MARKS,
        help=f"mark set kept in the text, the model's marks (default {DEFAULT_MARKS!r}); of '! ; :', those outside "
        "it fold into '. . ,'",
    )
    parser.add_argument(
        "--no-normalized", action="store_true", help="train on 'text' only, not also on 'text_normalized'"
    )
    parser.add_argument(
        "--whisper",
        action="store_true",
        help="write Whisper tiny.en's tokens that the texts use, and every one-character token, as a CTC model's "
        "tokenizer (folder tokenizer_whisper/; --vocab-size and --type do not apply)",
    )
    parser.add_argument(
        "--style-tags",
        action="store_true",
        help="add the mixed-style tags of the CTC model as user-defined symbols (folder suffix _styles)",
    )


def run(args: argparse.Namespace) -> int:
    from nemo_pc.data.tokenizers.pc_tokenizer import build_tokenizer
    from nemo_pc.parts.styles import STYLE_TAGS

    try:
        marks = parse_marks(args.marks, "--marks")
        if args.whisper:
            print(_whisper_subset(args, marks))
            return 0
        folder = build_tokenizer(
            args.manifests,
            args.output_dir,
            vocab_size=args.vocab_size,
            tokenizer_type=args.tokenizer_type,
            marks=marks,
            include_normalized=not args.no_normalized,
            user_defined_symbols=STYLE_TAGS if args.style_tags else (),
            folder_suffix="_styles" if args.style_tags else "",
        )
    except RuntimeError as err:  # SentencePiece refuses a corpus or a vocabulary size: bad input, one line
        raise ValueError(str(err)) from err
    print(folder)
    return 0


def _whisper_subset(args: argparse.Namespace, marks: str):
    from pathlib import Path

    from nemo_pc.data.tokenizers.pc_tokenizer import tokenizer_training_lines
    from nemo_pc.data.tokenizers.whisper_subset import build_whisper_subset

    if args.style_tags:
        raise ValueError("--style-tags: a Whisper subset has no style tags (use a SentencePiece tokenizer)")
    lines = tokenizer_training_lines(args.manifests, marks, include_normalized=not args.no_normalized)
    if not lines:
        raise ValueError("the manifests hold no utterance to take tokens from")
    return build_whisper_subset(lines, Path(args.output_dir) / "tokenizer_whisper")
