"""``nemo-pc synth``: make a LibriSpeech-layout corpus with offline TTS voices (see
:mod:`nemo_pc.data.recipes.synth`)."""

from __future__ import annotations

import argparse

from nemo_pc.cli.options import add_source_option, add_tn_option


def _splits(value: str) -> dict[str, float]:
    try:
        pairs = [item.split("=") for item in value.split(",")]
        splits = [(name.strip(), float(share)) for name, share in pairs]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected name=share,name=share..., got {value!r}") from None
    names = [name for name, _ in splits]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"split {', '.join(repeated)} named twice in {value!r}")
    return dict(splits)


def _range(value: str) -> tuple[float, float]:
    try:
        low, high = (float(x) for x in value.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOW,HIGH, got {value!r}") from None
    return low, high


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", help="corpus folder to create or finish (LibriSpeech's root)")
    add_source_option(parser, default_note="default: kjv")
    parser.add_argument("--hours", type=float, default=0.2, help="planned audio in hours (default 0.2)")
    parser.add_argument(
        "--splits",
        type=_splits,
        default={"train": 0.8, "dev": 0.1, "test": 0.1},
        help="split=share,... (default train=0.8,dev=0.1,test=0.1); splits never share a voice",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--deviation-rate",
        type=float,
        default=0.01,
        help="chance per plain word of a skip, repeat or substitution (default 0.01)",
    )
    parser.add_argument("--tempo", type=_range, default=(0.9, 1.15), help="tempo range LOW,HIGH per utterance")
    parser.add_argument("--pitch", type=_range, default=(-200.0, 200.0), help="pitch range in cents per speaker")
    parser.add_argument(
        "--formant", type=_range, default=(0.92, 1.08), help="formant (sox speed) factor range LOW,HIGH per speaker"
    )
    parser.add_argument("--tilt", type=_range, default=(-6.0, 3.0), help="treble tilt range in dB per speaker")
    parser.add_argument(
        "--minutes-per-speaker",
        type=float,
        default=0.6,
        help="minutes each speaker reads; chapters are read on by the next speaker (default 0.6)",
    )
    parser.add_argument(
        "--held-out-voices", type=int, default=6, help="voices of each held-out split (dev, test; default 6)"
    )
    parser.add_argument(
        "--seen-test-share",
        type=float,
        default=0.05,
        help="share of --hours added as the split test_seen: training speakers reading chapters no other split "
        "reads (default 0.05; 0 for none)",
    )
    parser.add_argument("--engines", default="espeak-ng,flite,festival", help="TTS engines to draw voices from")
    add_tn_option(
        parser, "spoken form: nemo (NeMo TN) or none (text without digits); default none for kjv only", default=None
    )
    parser.add_argument(
        "--no-audio",
        action="store_true",
        help="write transcripts, books and estimated durations only (text-only corpus)",
    )
    parser.add_argument("--num-jobs", type=int, default=1)
    parser.add_argument("--cache-dir", default=None, help="TN grammar and spoken-form cache")


def run(args: argparse.Namespace) -> int:
    from nemo_pc.data.recipes.synth import load_sources, synthesize_corpus

    sources = args.source or ["kjv"]
    tn = args.tn or ("none" if sources == ["kjv"] else "nemo")
    config = _config(args, tn)
    if args.num_jobs < 1:
        raise ValueError(f"--num-jobs must be 1 or more, got {args.num_jobs}")
    _check_root(args.root)
    root = synthesize_corpus(
        args.root, load_sources(sources), config, num_jobs=args.num_jobs, cache_dir=args.cache_dir
    )
    print(f"corpus written to {root} (CHAPTERS.TXT, books/, SYNTH.jsonl)")
    return 0


def _check_root(root: str) -> None:
    """The corpus folder must be creatable and writable before any voice is synthesized."""
    import os
    from pathlib import Path

    path = Path(root)
    parent = next((p for p in (path, *path.parents) if p.exists()), Path("."))
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{root}: cannot write here ({parent} is not a writable folder)")


def _config(args: argparse.Namespace, tn: str):
    from nemo_pc.data.recipes.synth import SynthConfig

    return SynthConfig(
        hours=args.hours,
        splits=args.splits,
        seed=args.seed,
        deviation_rate=args.deviation_rate,
        tempo=args.tempo,
        pitch=args.pitch,
        formant=args.formant,
        tilt=args.tilt,
        minutes_per_speaker=args.minutes_per_speaker,
        held_out_voices=args.held_out_voices,
        seen_test_share=args.seen_test_share,
        engines=tuple(args.engines.split(",")),
        audio=not args.no_audio,
        tn=tn,
    )
