"""Real recorded English read speech, offline: does a fine-tune on synthetic voices keep what Whisper knew?

The ``pocketsphinx`` sdist on PyPI ships five LibriVox clips (Sense and Sensibility, 16 kHz, 3-8 s) with lower-case
reference transcripts (``test/data/librivox/*.wav`` and ``*.txt``). This scores the normalized output of each given
nemo_pc model on them (``mode="normalized"``) and of Whisper tiny.en zero-shot (faster-whisper, greedy; its written
output in spoken form, normalized), with one WER over the five clips and each clip's hypothesis.

    pip download --no-deps --no-binary :all: pocketsphinx==5.1.1 -d ~/.cache/nemo_pc/real_speech
    .venv/bin/python benchmarks/quality_real_speech.py --sdist ~/.cache/nemo_pc/real_speech/pocketsphinx-5.1.1.tar.gz \
        --model demo_out/models/aed_prompt.nemo --model demo_out/models/rnnt_conditioned.nemo \
        --json benchmarks/results/real_speech.json
"""

from __future__ import annotations

import argparse
import sys
import tarfile
from pathlib import Path

from suite import write_results

CLIPS = "test/data/librivox/"


def extract_clips(sdist: str | Path, folder: str | Path) -> list[dict]:
    """The LibriVox clips of a pocketsphinx sdist, extracted to ``folder``: manifest rows (``audio_filepath``,
    ``duration``, ``text``, ``text_normalized``), in file order.

    Raises:
        ValueError: the archive holds no clip with its transcript.
    """
    import soundfile

    folder = Path(folder)
    rows = []
    with tarfile.open(sdist) as archive:
        members = {Path(m.name).name: m for m in archive.getmembers() if CLIPS in m.name and m.isfile()}
        for name in sorted(n for n in members if n.endswith(".wav")):
            text_name = name[: -len(".wav")] + ".txt"
            if text_name not in members:
                continue
            wav = folder / name
            wav.parent.mkdir(parents=True, exist_ok=True)
            wav.write_bytes(archive.extractfile(members[name]).read())
            text = " ".join(archive.extractfile(members[text_name]).read().decode("utf-8").split())
            rows.append(
                {
                    "audio_filepath": str(wav),
                    "duration": soundfile.info(str(wav)).duration,
                    "text": text,
                    "text_normalized": text,
                }
            )
    if not rows:
        raise ValueError(f"{sdist}: no {CLIPS}*.wav with a .txt transcript (not a pocketsphinx sdist?)")
    return rows


def score(name: str, references: list[str], hypotheses: list[str]) -> dict:
    from nemo_pc.metrics.mode_wer import text_errors
    from nemo_pc.parts.text import normalize

    hypotheses = [normalize(text) for text in hypotheses]
    errors, words = text_errors(hypotheses, [normalize(text) for text in references])
    return {
        "system": name,
        "wer": round(errors / max(words, 1), 4),
        "errors": errors,
        "words": words,
        "hypotheses": hypotheses,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sdist", required=True, help="pocketsphinx-*.tar.gz (pip download, see above)")
    parser.add_argument("--model", action="append", default=[], help="a nemo_pc .nemo (repeatable)")
    parser.add_argument("--work", default=".bench/real_speech", help="where the clips are extracted")
    parser.add_argument("--no-anchor", action="store_true", help="leave out Whisper tiny.en")
    parser.add_argument("--json", default="benchmarks/results/real_speech.json")
    args = parser.parse_args(argv)
    if not Path(args.sdist).is_file():
        parser.error(f"--sdist {args.sdist}: no such file")
    missing = [model for model in args.model if not Path(model).is_file()]
    if missing:
        parser.error(f"--model {missing[0]}: no such file")
    try:
        rows = extract_clips(args.sdist, args.work)
    except (ValueError, tarfile.TarError) as err:
        parser.error(str(err))
    references = [row["text_normalized"] for row in rows]
    results = {
        "clips": [
            {"audio": Path(row["audio_filepath"]).name, "seconds": round(row["duration"], 2), "reference": row["text"]}
            for row in rows
        ],
        "systems": [],
    }
    from nemo_pc.pipelines.inference import load_asr_model

    for path in args.model:
        model = load_asr_model(path)
        hyps = model.transcribe(
            [row["audio_filepath"] for row in rows], batch_size=1, mode="normalized", verbose=False
        )
        results["systems"].append(score(Path(path).stem, references, [getattr(h, "text", h) for h in hyps]))
    if not args.no_anchor:
        from nemo_pc.parts.manifest import read_manifest, write_manifest
        from nemo_pc.pipelines.anchor import WHISPER_SYSTEM, transcribe_whisper

        manifest = write_manifest(Path(args.work) / "clips.json", rows)
        predictions = Path(args.work) / "whisper_predictions.json"
        transcribe_whisper(manifest, predictions)
        written = [row["pred_text_normalized"] for row in read_manifest(predictions)]
        results["systems"].append(score(WHISPER_SYSTEM, references, written))
    write_results(args.json, results, [Path(__file__).name, *(sys.argv[1:] if argv is None else argv)])
    for system in results["systems"]:
        print(
            f"{system['system']:<22} WER {100 * system['wer']:.1f}% ({system['errors']}/{system['words']})",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
