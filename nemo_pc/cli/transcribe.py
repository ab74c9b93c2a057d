"""``nemo-pc transcribe``: long recordings to timed subtitle cues, in both modes.

nemo-pc transcribe MODEL.nemo talk.wav --out out/ --formats srt,vtt,json
nemo-pc transcribe MODEL.nemo a.flac b.wav --out out/ --chunk-seconds 20 --context-seconds 4 --max-cue-seconds 6

An RNN-T or CTC model reads the recording in chunks (``--chunk-seconds``, ``--context-seconds``) whose seams are
exact; an AED model reads it in pieces cut at pauses, none longer than ``--max-piece-seconds``
(:mod:`nemo_pc.pipelines.longform_aed`), with word times from its CTC head.

Writes ``out/<audio name>.srt`` / ``.vtt`` (the punctuated text, or ``--subtitles normalized``) and ``.jsonl`` (one
cue per line with both modes and word times), and prints each written path on stdout. A cue ends at a sentence
mark, at a pause, and before the word that would pass its line or duration cap
(:class:`nemo_pc.parts.longform.CueRules`). Every file and argument is checked before the model loads.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from nemo_pc.parts.longform import CueRules

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
        "--max-piece-seconds",
        type=float,
        default=10.0,
        help="AED: the longest piece of audio it decodes, cut at pauses (default 10; RNN-T and CTC read chunks)",
    )
    cues = CueRules()
    parser.add_argument(
        "--cue-pause-seconds",
        type=float,
        default=cues.pause_seconds,
        help=f"a longer gap between two words ends a cue (default {cues.pause_seconds:g}; inf: pauses end none)",
    )
    parser.add_argument(
        "--max-cue-seconds",
        "--max-segment-seconds",
        type=float,
        default=cues.max_seconds,
        help=f"the longest cue; a single longer word is a cue alone (default {cues.max_seconds:g}; inf: no limit)",
    )
    parser.add_argument(
        "--max-cue-lines", type=int, default=cues.max_lines, help=f"lines a cue holds (default {cues.max_lines})"
    )
    parser.add_argument(
        "--max-line-chars",
        type=int,
        default=cues.line_width,
        help=f"characters a cue line holds; a longer word is a cue alone (default {cues.line_width})",
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
    if not 0 < args.max_piece_seconds < math.inf:
        raise ValueError(f"--max-piece-seconds must be a positive number, got {args.max_piece_seconds}")
    if not args.cue_pause_seconds >= 0:
        raise ValueError(f"--cue-pause-seconds must not be negative, got {args.cue_pause_seconds}")
    if not args.max_cue_seconds > 0:
        raise ValueError(f"--max-cue-seconds must be positive, got {args.max_cue_seconds}")
    for option, value in (("--max-cue-lines", args.max_cue_lines), ("--max-line-chars", args.max_line_chars)):
        if value < 1:
            raise ValueError(f"{option} must be at least 1, got {value}")
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


def cue_rules(args: argparse.Namespace) -> CueRules:
    """The cue rules of the ``--cue-*``, ``--max-cue-*`` and ``--max-line-chars`` options."""
    return CueRules(args.cue_pause_seconds, args.max_cue_seconds, args.max_cue_lines, args.max_line_chars)


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
            cue_rules=cue_rules(args),
            progress=not args.no_progress,
            max_piece_seconds=args.max_piece_seconds,
        )
        for written in write_outputs(result, args.out, Path(path).stem, formats, args.subtitles, args.max_line_chars):
            print(written, flush=True)
    return 0
