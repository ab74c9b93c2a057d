"""``nemo-pc transcribe``: long recordings to sentence segments with times, in both modes.

nemo-pc transcribe MODEL.nemo talk.wav --out out/ --formats srt,vtt,json
nemo-pc transcribe MODEL.nemo a.flac b.wav --out out/ --chunk-seconds 20 --context-seconds 4 --max-segment-seconds 7

Writes ``out/<audio name>.srt`` / ``.vtt`` (the punctuated text, or ``--subtitles normalized``) and ``.jsonl`` (one
sentence per line with both modes and word times), and prints each written path on stdout. Every file and argument
is checked before the model loads.
"""

from __future__ import annotations

import argparse
from pathlib import Path

MODEL_CLASSES = ("EncDecRNNTPCBPEModel", "EncDecCTCPCBPEModel", "EncDecAEDPCModel")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="a nemo_pc RNN-T, CTC or AED .nemo file")
    parser.add_argument("audio", nargs="+", help="audio files (wav, flac, ogg: what soundfile reads)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--formats", default="srt,vtt,json", help="comma-separated: srt, vtt, json (default: all)")
    parser.add_argument("--chunk-seconds", type=float, default=16.0, help="audio each chunk owns (default 16)")
    parser.add_argument(
        "--context-seconds", type=float, default=4.0, help="audio the encoder also reads on each side (default 4)"
    )
    parser.add_argument(
        "--max-segment-seconds", type=float, default=None, help="cut longer sentences (default: only at marks)"
    )
    parser.add_argument(
        "--subtitles", choices=("punctuated", "normalized"), default="punctuated", help="the mode SRT/VTT show"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def check_arguments(args: argparse.Namespace) -> list[str]:
    """Checks every argument and input file before a model loads; returns the format names.

    Raises:
        ValueError: a bad argument, a model file of another class, two audio files with one name.
    """
    from nemo_pc.cli.format import nemo_target
    from nemo_pc.parts.subtitles import parse_formats

    formats = parse_formats(args.formats)
    if args.chunk_seconds <= 0:
        raise ValueError(f"--chunk-seconds must be positive, got {args.chunk_seconds}")
    if args.context_seconds < 0:
        raise ValueError(f"--context-seconds must not be negative, got {args.context_seconds}")
    if args.max_segment_seconds is not None and args.max_segment_seconds <= 0:
        raise ValueError(f"--max-segment-seconds must be positive, got {args.max_segment_seconds}")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise ValueError(f"--out {args.out}: a file, not a folder")
    target = nemo_target(args.model, "model")
    if target.rsplit(".", 1)[-1] not in MODEL_CLASSES:
        raise ValueError(
            f"model {args.model}: holds {target or 'an unknown class'}, not a nemo_pc RNN-T, CTC or AED model"
        )
    stems: dict[str, str] = {}
    for path in args.audio:
        stem = Path(path).stem
        if stem in stems:
            raise ValueError(f"{path}: same output name as {stems[stem]}; transcribe them into different folders")
        stems[stem] = path
    return formats


def run(args: argparse.Namespace) -> int:
    from nemo_pc.data.audio import check_audio
    from nemo_pc.pipelines.inference import load_asr_model
    from nemo_pc.pipelines.longform import transcribe_long, write_outputs

    formats = check_arguments(args)
    for path in args.audio:  # unreadable, empty or non-finite audio is refused before the model loads
        check_audio(path)
    model = load_asr_model(args.model)
    for path in args.audio:
        result = transcribe_long(
            model,
            path,
            chunk_seconds=args.chunk_seconds,
            context_seconds=args.context_seconds,
            max_segment_seconds=args.max_segment_seconds,
            progress=not args.no_progress,
        )
        for written in write_outputs(result, args.out, Path(path).stem, formats, args.subtitles):
            print(written, flush=True)
    return 0
