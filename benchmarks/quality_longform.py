"""Long-form transcription (``nemo-pc transcribe``) of trained models: error rates against the references and
against per-utterance transcription, seams, and the subtitle cues.

One recording holds a manifest's utterances in order with pauses between them (``speed_longform.write_recording``;
each utterance once by default), so every utterance's span in it is known. Per model, in one process:

* ``model.transcribe`` transcribes each utterance alone (batches of one, both modes): ``per_utterance``;
* per chunk window (``--windows``, chunk and context seconds), :func:`nemo_pc.pipelines.longform.transcribe_long`
  (the engine of ``nemo-pc transcribe``) transcribes the recording, both modes from one encoder pass per chunk; an
  AED model is measured once instead, on pieces cut at pauses (``--max-piece-seconds``, as ``nemo-pc transcribe``
  cuts them), and its seams are the pieces' bounds; ``spread_pieces`` counts its pieces without a CTC alignment;
* the long-form words are given to the utterances by their midpoints (``speed_longform.utterance_texts``), and
  each utterance is scored alone by :class:`nemo_pc.metrics.PCMetrics` (what ``nemo-pc evaluate`` uses): WER,
  WER-PC and PER (papers/002), counts summed over utterances, of the long-form transcript against the references
  (``text`` for the punctuated mode, ``text_normalized`` for the normalized one) and against the per-utterance
  transcripts, and of the per-utterance transcripts against the references. ``joined_wer`` is the WER of the
  whole long-form transcript against the joined references (one alignment, no assignment to utterances);
* ``agreement``: ``speed_longform.seam_agreement``'s word disagreement with per-utterance transcription for the
  utterances that a chunk seam cuts and for the others;
* ``boundary_times``: how far the normalized words' times lie from the utterances' starts and ends in the recording
  (:func:`boundary_times`);
* ``cues``: the SRT file's cues (rendered and read back): count, duration, lines, characters, and why each cue
  ended (a sentence mark, a pause, or a cap of lines or duration).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/quality_longform.py --manifest demo_out/manifests/test.json \\
        --model demo_out/models/rnnt_dual.nemo --model demo_out/models/aed_prompt.nemo --windows 16:4,6:1 \\
        --max-piece-seconds 10 --json benchmarks/results/longform_trained.json
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

from speed_longform import (
    is_aed,
    piece_seams,
    seam_agreement,
    seam_times,
    transcribe_each,
    utterance_texts,
    write_recording,
)
from suite import Stopwatch, results_path, write_results

SCORES = ("wer", "wer_pc", "per")
"""The corpus-level metrics of :class:`nemo_pc.metrics.PCMetrics` that each comparison keeps."""

REFERENCE_FIELDS = {"punctuated": "text", "normalized": "text_normalized"}
"""The manifest field that each mode is scored against."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", required=True, help="a trained nemo_pc .nemo (repeatable)")
    parser.add_argument("--manifest", required=True, help="utterances to concatenate (nemo_pc manifest)")
    parser.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="recording length, cycling the utterances (default: each utterance once)",
    )
    parser.add_argument("--pause", type=float, default=0.5, help="seconds of silence between utterances")
    windows = "chunk:context seconds, comma-separated (default 16:4, as nemo-pc transcribe)"
    parser.add_argument("--windows", type=parse_windows, default=[(16.0, 4.0)], help=windows)
    parser.add_argument(
        "--max-piece-seconds", type=float, default=10.0, help="AED: the longest piece, cut at pauses (default 10)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--work", default=str(results_path(__file__, "_work")), help="folder for the recording")
    parser.add_argument("--json", default=str(results_path(__file__)), help="write the results here")
    return parser.parse_args(argv)


def parse_windows(text: str) -> list[tuple[float, float]]:
    """``"16:4,6:1"`` -> ``[(16.0, 4.0), (6.0, 1.0)]``: chunk and context seconds of each window.

    Raises:
        argparse.ArgumentTypeError: an item that is not two numbers joined by ``:``.
    """
    try:
        pairs = [tuple(float(x) for x in item.split(":")) for item in text.split(",")]
    except ValueError:
        pairs = []
    if not pairs or any(len(pair) != 2 for pair in pairs):
        raise argparse.ArgumentTypeError(f"{text!r}: expected chunk:context seconds, comma-separated")
    return pairs


def corpus_scores(references: list[str], hypotheses: list[str]) -> dict:
    """WER, WER-PC and PER of ``hypotheses`` against ``references``: each pair scored alone by
    :class:`nemo_pc.metrics.PCMetrics`, the counts summed over pairs (corpus level), with the reference words
    (``words``) and PER's operations (``per_operations``) they are computed over, and the hypothesis words."""
    from nemo_pc.metrics import PCMetrics, text_variants

    metrics = PCMetrics()
    for reference, hypothesis in zip(references, hypotheses, strict=True):
        metrics.update(reference, hypothesis)
    report = metrics.compute()
    scores = {name: report["metrics"][name] for name in SCORES}
    return {
        **scores,
        "utterances": report["num_utterances"],
        "words": report["support"]["wer"],
        "hypothesis_words": sum(len(text_variants(h)["np_nc"]) for h in hypotheses),
        "per_operations": report["support"]["per"],
    }


def boundary_times(rows: list[list], spans: list[list], references: list[str], limit: float = 0.3) -> dict:
    """How far the long-form word times lie from the utterances' bounds in the recording: the long-form words
    (``[text, start, end]``) are aligned to the joined references (:func:`nemo_pc.metrics.align.align_pairs`, no
    times involved); each utterance's first reference word that a long-form word matches or replaces gives the
    distance of that word's start to the utterance's start, and its last such word the distance of its end to the
    utterance's end. Median, 90th percentile, and the share within ``limit`` seconds."""
    import numpy as np

    from nemo_pc.metrics.align import align_pairs

    reference_words, owner = [], []
    for (start, end, _), text in zip(spans, references, strict=True):
        words = text.split()
        reference_words += words
        owner += [(start, end)] * len(words)
    hypothesis = [text for text, _, _ in rows]
    matched: dict[tuple[float, float], list[int]] = {}
    for ref, hyp in align_pairs(reference_words, hypothesis):
        if ref is not None and hyp is not None:
            matched.setdefault(owner[ref], []).append(hyp)
    errors = []
    for (start, end), hyps in matched.items():
        errors += [abs(rows[hyps[0]][1] - start), abs(rows[hyps[-1]][2] - end)]
    errors = np.asarray(errors)
    if not len(errors):
        return {"bounds": 0, "median_seconds": None, "p90_seconds": None, "within_limit": None, "limit": limit}
    return {
        "bounds": int(len(errors)),
        "median_seconds": float(np.median(errors)),
        "p90_seconds": float(np.percentile(errors, 90)),
        "within_limit": float(np.mean(errors <= limit)),
        "limit": limit,
    }


def cue_figures(segments: list, rules) -> dict:
    """The SRT file of ``segments`` (punctuated, wrapped at ``rules.line_width``), read back: its cue count, mean
    and longest duration, most lines and characters of a cue and of a line; and why each cue but the last ended
    (``ended_by``: a sentence mark, a pause longer than ``rules.pause_seconds`` before the next cue, else a cap of
    lines or duration)."""
    from nemo_pc.parts.longform import ends_sentence
    from nemo_pc.parts.subtitles import render
    from nemo_pc.testing.longform import parse_srt

    cues = parse_srt(render(segments, "srt", "punctuated", rules.line_width)) if segments else []
    seconds = [end - start for start, end, _ in cues]
    lines = [text.split("\n") for _, _, text in cues]
    ended_by = {"mark": 0, "pause": 0, "cap": 0}
    for cue, following in zip(segments, segments[1:], strict=False):
        if cue.words and ends_sentence(cue.words[-1].text, rules.marks):
            ended_by["mark"] += 1
        elif following.start - cue.end > rules.pause_seconds:
            ended_by["pause"] += 1
        else:
            ended_by["cap"] += 1
    return {
        "cues": len(cues),
        "mean_seconds": sum(seconds) / len(cues) if cues else None,
        "max_seconds": max(seconds, default=None),
        "max_lines": max(map(len, lines), default=None),
        "max_line_chars": max((len(line) for cue in lines for line in cue), default=None),
        "max_cue_chars": max((len(" ".join(cue)) for cue in lines), default=None),
        "ended_by": ended_by,
    }


def measure_window(
    model,
    entries,
    spans,
    recording,
    alone,
    chunk_seconds: float | None,
    context_seconds: float | None,
    max_piece_seconds: float = 10.0,
) -> dict:
    """The long-form figures of one model and one chunk window, or of an AED's pieces (``chunk_seconds`` and
    ``context_seconds`` None; see the module docstring)."""
    from nemo_pc.parts.longform import CueRules
    from nemo_pc.pipelines.longform import transcribe_long

    rules = CueRules()
    pieces = chunk_seconds is None
    window = {} if pieces else {"chunk_seconds": chunk_seconds, "context_seconds": context_seconds}
    with Stopwatch() as watch:
        result = transcribe_long(model, recording, cue_rules=rules, max_piece_seconds=max_piece_seconds, **window)
    words = {mode: [[w.text, w.start, w.end] for w in found] for mode, found in result.words.items()}
    modes = {}
    for mode, field in REFERENCE_FIELDS.items():
        references = [entries[index][field] for _, _, index in spans]
        longform = utterance_texts(words[mode], spans)
        modes[mode] = {
            "longform_vs_reference": corpus_scores(references, longform),
            "longform_vs_per_utterance": corpus_scores([alone[index][mode] for _, _, index in spans], longform),
            "joined_wer": corpus_scores([" ".join(references)], [result.text(mode)])["wer"],
        }
    times = boundary_times(words["normalized"], spans, [entries[index]["text_normalized"] for _, _, index in spans])
    if pieces:
        seams = piece_seams(model, recording, max_piece_seconds)
    else:
        seams = seam_times(model, result.seconds, chunk_seconds, context_seconds)
    return {
        "chunk_seconds": chunk_seconds,
        "context_seconds": context_seconds,
        **({"max_piece_seconds": max_piece_seconds, "spread_pieces": result.spread} if pieces else {}),
        "audio_seconds": result.seconds,
        "chunks": result.chunks,
        "seconds": watch.seconds,
        "cpu_rtf": watch.cpu_seconds / result.seconds,
        "load_average": os.getloadavg()[0],
        "modes": modes,
        "agreement": seam_agreement({"seams": seams, "words": words}, spans, alone),
        "boundary_times": times,
        "cues": cue_figures(result.segments, rules),
    }


def measure(path: str, entries: list[dict], spans: list[list], recording: Path, args: argparse.Namespace) -> dict:
    """Every figure of one model: its per-utterance transcripts against the references, then each window's."""
    import torch

    from nemo_pc.pipelines.inference import load_asr_model

    torch.set_num_threads(args.threads)
    model = load_asr_model(path)
    with Stopwatch() as watch:
        alone = transcribe_each(model, entries, {index for _, _, index in spans})
    per_utterance = {
        mode: corpus_scores([entries[i][field] for _, _, i in spans], [alone[i][mode] for _, _, i in spans])
        for mode, field in REFERENCE_FIELDS.items()
    }
    modified = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(Path(path).stat().st_mtime))
    windows = []
    for chunk_seconds, context_seconds in [(None, None)] if is_aed(model) else args.windows:
        figures = measure_window(
            model, entries, spans, recording, alone, chunk_seconds, context_seconds, args.max_piece_seconds
        )
        windows.append(figures)
        label = (
            f"pieces <= {args.max_piece_seconds:g}"
            if chunk_seconds is None
            else f"{chunk_seconds:g}:{context_seconds:g}"
        )
        _stderr(f"{path} {label}: {figures['modes']}")
    return {
        "model": Path(path).name,
        "path": path,
        "modified": modified,
        "per_utterance_seconds": watch.seconds,
        "per_utterance_vs_reference": per_utterance,
        "windows": windows,
    }


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("NEMO_REDIRECT_LOGS_TO_STDERR", "1")
    from nemo_pc.parts.manifest import read_manifest

    entries = read_manifest(args.manifest)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    recording = work / "recording.wav"
    minutes = math.inf if args.minutes is None else args.minutes
    count = len(entries) if args.minutes is None else None
    spans = write_recording(entries, minutes * 60, args.pause, 16000, recording, count)
    report = {
        "manifest": args.manifest,
        "utterances": len(spans),
        "audio_seconds": spans[-1][1] + args.pause,
        "pause_seconds": args.pause,
        "threads": args.threads,
        "models": [],
    }
    command = [f"benchmarks/{Path(__file__).name}", *(sys.argv[1:] if argv is None else argv)]
    for path in args.model:  # the file is written after each model, so a stopped run keeps the models it measured
        report["models"].append(measure(path, entries, spans, recording, args))
        write_results(args.json, report, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
