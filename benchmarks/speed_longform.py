"""Long-form transcription (``nemo-pc transcribe``) on synthetic recordings of several lengths.

Each recording concatenates the utterances of a manifest (cycled, in order) with pauses between them, written to
one wav file. Per length, a fresh process loads the model and runs :func:`nemo_pc.pipelines.longform.transcribe_long`
(both modes from one encoder pass per chunk), and reports:

* ``peak_rss_mb``: the process's peak resident memory; ``loaded_rss_mb``: its memory after loading the model, so
  ``peak_rss_mb - loaded_rss_mb`` is what transcribing the recording added;
* ``rtf``: transcription seconds (audio reading, encoder, both decodings, segments) over audio seconds, and
  ``cpu_rtf``: the same with the process's CPU seconds, which other work on the machine disturbs less (the
  1-minute load average at the end is recorded as ``load_average``);
* per mode, the word disagreement with per-utterance transcription (``model.transcribe`` of each utterance alone):
  whitespace-token edit distance, words of case and marks included, as a share of the per-utterance words, for the
  utterances that a chunk seam cuts (``seam``) and for the others (``inside``). Long-form words are given to the
  utterance nearest to their midpoint (:func:`nemo_pc.parts.longform.assign_to_spans`).

``--model`` takes a trained nemo_pc RNN-T, CTC or AED ``.nemo`` (an AED is read in pieces cut at pauses, at most
``--max-piece-seconds`` long, and its seams are the pieces' bounds; ``per_utterance`` then gives the CPU RTF of
transcribing each utterance alone, the figure long-form RTF is compared with); ``--untrained rnnt|ctc`` builds
the packaged default config of a family (``backbone=fastconformer``) with seeded random weights and
``--tokenizer``, which measures memory and speed of the architecture; its word figures then only say how much
chunking changes a random model.

    .venv/bin/python benchmarks/speed_longform.py --untrained ctc \\
        --tokenizer demo_out/tokenizers/tokenizer_spe_bpe_v128 --manifest demo_out/manifests/test.json \\
        --minutes 10,30,60 --json benchmarks/results/longform.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from suite import Stopwatch, results_path, write_results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="a trained nemo_pc RNN-T or CTC .nemo")
    source.add_argument("--untrained", choices=("rnnt", "ctc"), help="the packaged default config, random weights")
    parser.add_argument("--tokenizer", help="tokenizer folder for --untrained")
    parser.add_argument("--manifest", required=True, help="utterances to concatenate (nemo_pc manifest)")
    parser.add_argument("--minutes", default="10,30,60", help="comma-separated recording lengths in minutes")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds of silence between utterances")
    parser.add_argument("--chunk-seconds", type=float, default=16.0)
    parser.add_argument("--context-seconds", type=float, default=4.0)
    parser.add_argument(
        "--max-piece-seconds", type=float, default=10.0, help="an AED's longest piece (pieces cut at pauses)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--work", default=str(results_path(__file__, "_work")), help="folder for recordings (ignored)")
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "RECORDING"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.untrained and not args.tokenizer:
        parser.error("--untrained needs --tokenizer")
    return args


def build_untrained(family: str, tokenizer: str, path: Path) -> Path:
    """Saves the packaged default config of ``family`` with seeded random weights to ``path``."""
    import torch

    from nemo_pc.pipelines.train import FAMILIES, compose_config

    config = compose_config(family, ["backbone=fastconformer", f"model.tokenizer.dir={tokenizer}"]).model
    for split in ("train_ds", "validation_ds", "test_ds"):
        if split in config:
            config[split].manifest_filepath = None
    module, _, name = FAMILIES[family][2].rpartition(".")
    torch.manual_seed(0)
    model = getattr(__import__(module, fromlist=[name]), name)(cfg=config)
    model.save_to(str(path))
    return path


def write_recording(
    entries: list[dict], seconds: float, pause: float, rate: int, path: Path, count: int | None = None
) -> list[list]:
    """Cycles the manifest's utterances (with ``pause`` seconds between them) into one wav of at least ``seconds``,
    or of ``count`` utterances when that comes first; returns each occurrence as ``[start, end, entry index]`` in
    seconds. Written block by block."""
    import numpy as np
    import soundfile

    from nemo_pc.pipelines.longform import AudioReader

    spans, position, index = [], 0, 0
    silence = np.zeros(int(pause * rate), dtype=np.float32)
    with soundfile.SoundFile(str(path), "w", samplerate=rate, channels=1, subtype="PCM_16") as out:
        while position < seconds * rate and (count is None or index < count):
            entry_index = index % len(entries)
            reader = AudioReader(entries[entry_index]["audio_filepath"], rate)
            audio = reader.read(0, reader.samples)
            reader.close()
            out.write(audio)
            spans.append([position / rate, (position + len(audio)) / rate, entry_index])
            out.write(silence)
            position += len(audio) + len(silence)
            index += 1
    return spans


def rss_mb(field: str = "VmRSS") -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(model_path: str, recording: str, args: argparse.Namespace) -> None:
    """Runs in a fresh process: loads the model, transcribes one recording, prints its figures as JSON."""
    import torch

    from nemo_pc.pipelines.inference import load_asr_model
    from nemo_pc.pipelines.longform import transcribe_long

    torch.set_num_threads(args.threads)
    model = load_asr_model(model_path)
    loaded = rss_mb()
    with Stopwatch() as watch:
        result = transcribe_long(
            model, recording, args.chunk_seconds, args.context_seconds, max_piece_seconds=args.max_piece_seconds
        )
    seconds, cpu_seconds = watch.seconds, watch.cpu_seconds
    pieces = is_aed(model)
    if pieces:
        seams = piece_seams(model, Path(recording), args.max_piece_seconds)
    else:
        seams = seam_times(model, result.seconds, args.chunk_seconds, args.context_seconds)
    print(
        json.dumps(
            {
                "audio_seconds": result.seconds,
                "decode_seconds": seconds,
                "rtf": seconds / result.seconds,
                "cpu_seconds": cpu_seconds,
                "cpu_rtf": cpu_seconds / result.seconds,
                "load_average": os.getloadavg()[0],
                "loaded_rss_mb": loaded,
                "peak_rss_mb": rss_mb("VmHWM"),
                "chunks": result.chunks,
                "segments": len(result.segments),
                "pieces": pieces,
                "seams": seams,
                "words": {mode: [[w.text, w.start, w.end] for w in words] for mode, words in result.words.items()},
            }
        )
    )


def is_aed(model) -> bool:
    """Whether ``model`` is read in pieces cut at pauses rather than in chunk windows."""
    from nemo_pc.models import EncDecAEDPCModel

    return isinstance(model, EncDecAEDPCModel)


def piece_seams(model, recording: Path, max_piece_seconds: float) -> list[float]:
    """Seconds at which the AED's pieces of ``recording`` meet (:func:`nemo_pc.pipelines.longform_aed.plan_recording`,
    the cut that :func:`transcribe_long` makes)."""
    from nemo_pc.parts.segmentation import PauseRules
    from nemo_pc.pipelines.longform import AudioReader, model_sample_rate
    from nemo_pc.pipelines.longform_aed import plan_recording

    reader = AudioReader(recording, model_sample_rate(model))
    try:
        pieces = plan_recording(reader, PauseRules(max_seconds=max_piece_seconds))
    finally:
        reader.close()
    return [piece.start / reader.sample_rate for piece in pieces[1:]]


def seam_times(model, seconds: float, chunk_seconds: float, context_seconds: float) -> list[float]:
    """Seconds at which :func:`transcribe_long`'s chunks of a ``seconds`` long recording meet (its seams)."""
    from nemo_pc.parts.longform import plan_chunks
    from nemo_pc.pipelines.longform import frame_geometry, model_sample_rate

    rate = model_sample_rate(model)
    samples_per_frame, _ = frame_geometry(model)
    chunks = plan_chunks(
        round(seconds * rate), round(chunk_seconds * rate), round(context_seconds * rate), samples_per_frame
    )
    return [chunk.start / rate for chunk in chunks[1:]]


def transcribe_each(model, entries: list[dict], used: set[int]) -> dict[int, dict[str, str]]:
    """Both modes of each used utterance, transcribed alone (``model.transcribe``, batches of one)."""
    order = sorted(used)
    both = model.transcribe([entries[i]["audio_filepath"] for i in order], batch_size=1, verbose=False, mode="both")
    return {i: {mode: getattr(hyps[k], "text", hyps[k]) for mode, hyps in both.items()} for k, i in enumerate(order)}


def per_utterance(
    model_path: str, entries: list[dict], used: set[int], threads: int, timing: dict | None = None
) -> dict[int, dict[str, str]]:
    """Both modes of each used utterance transcribed alone, by the model at ``model_path``; ``timing`` (when given)
    adds the audio seconds, wall seconds and CPU seconds of the transcription (the model's loading aside)."""
    import torch

    from nemo_pc.pipelines.inference import load_asr_model

    torch.set_num_threads(threads)
    model = load_asr_model(model_path)
    with Stopwatch() as watch:
        found = transcribe_each(model, entries, used)
    if timing is not None:
        timing["audio_seconds"] = timing.get("audio_seconds", 0.0) + sum(float(entries[i]["duration"]) for i in used)
        timing["seconds"] = timing.get("seconds", 0.0) + watch.seconds
        timing["cpu_seconds"] = timing.get("cpu_seconds", 0.0) + watch.cpu_seconds
    return found


def cut_by_seams(spans: list[list], seams: list[float]) -> list[bool]:
    """Whether a seam falls inside each utterance span (``[start, end, entry index]``)."""
    return [any(start < seam < end for seam in seams) for start, end, _ in spans]


def utterance_texts(rows: list[list], spans: list[list]) -> list[str]:
    """Long-form words (``[text, start, end]``) given to the utterance spans by their midpoints
    (:func:`nemo_pc.parts.longform.assign_to_spans`): each span's words, joined with spaces."""
    from nemo_pc.parts.longform import TimedWord, assign_to_spans

    words = [TimedWord(text, start, end) for text, start, end in rows]
    assigned = assign_to_spans(words, [(start, end) for start, end, _ in spans])
    return [" ".join(word.text for word in got) for got in assigned]


def seam_agreement(figures: dict, spans: list[list], references: dict[int, dict[str, str]]) -> dict:
    """Per mode, word disagreement with per-utterance transcription for cut (``seam``) and whole utterances."""
    from nemo_pc.metrics.wer import ter_counts

    cut = cut_by_seams(spans, figures["seams"])
    table = {}
    for mode, rows in figures["words"].items():
        totals = {"seam": [0, 0, 0], "inside": [0, 0, 0]}  # errors, reference words, utterances
        for (_, _, index), got, is_cut in zip(spans, utterance_texts(rows, spans), cut, strict=True):
            counts = ter_counts(references[index][mode], got)
            bucket = totals["seam" if is_cut else "inside"]
            bucket[0] += counts["ter_E"]
            bucket[1] += counts["ter_N"]
            bucket[2] += 1
        table[mode] = {
            name: {"utterances": n, "words": words_n, "word_disagreement": errors / words_n if words_n else None}
            for name, (errors, words_n, n) in totals.items()
        }
    return table


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("NEMO_REDIRECT_LOGS_TO_STDERR", "1")  # stdout carries the report
    if args.child:
        child(*args.child, args)
        return 0
    from nemo_pc.parts.manifest import read_manifest

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    model_path = args.model or str(
        build_untrained(args.untrained, args.tokenizer, work / f"untrained_{args.untrained}.nemo")
    )
    entries = read_manifest(args.manifest)
    rows, timing, pieces = [], {}, False
    references: dict[int, dict[str, str]] = {}
    for minutes in [float(m) for m in args.minutes.split(",")]:
        recording = work / f"recording_{minutes:g}min.wav"
        spans = write_recording(entries, minutes * 60, args.pause, 16000, recording)
        command = [
            sys.executable,
            __file__,
            "--child",
            model_path,
            str(recording),
            "--manifest",
            args.manifest,
            "--chunk-seconds",
            str(args.chunk_seconds),
            "--context-seconds",
            str(args.context_seconds),
            "--max-piece-seconds",
            str(args.max_piece_seconds),
            "--threads",
            str(args.threads),
            "--model",
            model_path,
        ]
        env = {**os.environ, "NEMO_REDIRECT_LOGS_TO_STDERR": "1"}
        output = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
        figures = json.loads(output.strip().splitlines()[-1])
        needed = {index for _, _, index in spans} - set(references)
        references.update(per_utterance(model_path, entries, needed, args.threads, timing) if needed else {})
        pieces = figures.pop("pieces", False)
        row = {"minutes": minutes, **{k: v for k, v in figures.items() if k not in ("words", "seams")}}
        row["agreement"] = seam_agreement(figures, spans, references)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    report = {
        "model": args.model or f"untrained {args.untrained} (packaged default, backbone=fastconformer, seed 0)",
        "manifest": args.manifest,
        "pause_seconds": args.pause,
        "chunk_seconds": args.chunk_seconds,
        "context_seconds": args.context_seconds,
        **({"max_piece_seconds": args.max_piece_seconds} if pieces else {}),
        "threads": args.threads,
        "per_utterance": {**timing, "cpu_rtf": timing["cpu_seconds"] / timing["audio_seconds"]} if timing else None,
        "rows": rows,
    }
    if args.json:
        write_results(args.json, report)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
