"""``nemo-pc export-shar``: a nemo_pc manifest as lhotse shar (see :mod:`nemo_pc.data.recipes.shar`)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", help="a nemo_pc manifest (e.g. the output of nemo-pc librispeech-pc)")
    parser.add_argument("output_dir", help="the shar folder (cuts.NNNNNN.jsonl.gz, recording.NNNNNN.tar)")
    parser.add_argument("--shard-size", type=int, default=1000, help="utterances per shard (default 1000)")
    parser.add_argument("--overwrite", action="store_true", help="replace an output folder that holds other data")


def run(args: argparse.Namespace) -> int:
    from nemo_pc.data.recipes.shar import export_shar

    paths = export_shar(args.manifest, args.output_dir, shard_size=args.shard_size, overwrite=args.overwrite)
    print(f"{args.output_dir}: {len(paths['cuts'])} shards")
    return 0
