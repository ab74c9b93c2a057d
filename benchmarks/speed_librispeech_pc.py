"""LibriSpeech-PC restoration benchmark on a text-only synthetic corpus made from the KJV Bible.

Makes (or reuses) a corpus of at least ``--utterances`` utterances with 1% reading deviations and no audio, runs
the builder on one core, and compares every kept utterance with the punctuated text the corpus was made from.
Prints the figures and writes them as JSON.

    .venv/bin/python benchmarks/speed_librispeech_pc.py --work /tmp/bench_lspc --json bench_librispeech_pc.json
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from suite import Stopwatch, results_path, write_results

from nemo_pc.data.recipes.librispeech_pc import RestoreOptions, prepare_librispeech_pc
from nemo_pc.data.recipes.synth import SynthConfig, load_sources, synthesize_corpus
from nemo_pc.parts.manifest import read_manifest

GOALS = {"utterances_per_second_per_core": 2000, "retention_pct": 95.0, "exact_pct": 99.5}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default="/tmp/bench_librispeech_pc")
    parser.add_argument("--utterances", type=int, default=10000)
    parser.add_argument("--deviation-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=str(results_path(__file__)))
    args = parser.parse_args(argv)
    work = Path(args.work)
    hours = args.utterances * 17 / 2.6 / 3600 * 1.1
    config = SynthConfig(
        hours=hours, audio=False, tn="none", deviation_rate=args.deviation_rate, seed=args.seed, seen_test_share=0
    )
    synthesize_corpus(work / "corpus", load_sources(["kjv"]), config)
    reference = {line["utt_id"]: line for line in read_manifest(work / "corpus" / "SYNTH.jsonl")}
    shutil.rmtree(work / "out", ignore_errors=True)
    options, durations = RestoreOptions(tn="none"), work / "corpus" / "SYNTH.jsonl"
    with Stopwatch() as watch:
        paths = prepare_librispeech_pc(work / "corpus", None, work / "out", options=options, durations=durations)
    seconds = watch.seconds
    kept = [entry for path in paths.values() for entry in read_manifest(path)]
    exact = sum(entry["text"] == reference[entry["utt_id"]]["text"] for entry in kept)
    with_deviation = sum(bool(line["deviations"]) for line in reference.values())
    figures = {
        "utterances": len(reference),
        "utterances_with_deviations": with_deviation,
        "deviation_rate": args.deviation_rate,
        "seconds_one_core": round(seconds, 3),
        "utterances_per_second_per_core": round(len(reference) / seconds, 1),
        "retention_pct": round(100 * len(kept) / len(reference), 3),
        "exact_pct": round(100 * exact / len(kept), 3),
        "retention_table": json.loads((work / "out" / "retention.json").read_text()),
    }
    figures["goals_met"] = {name: figures[name] >= goal for name, goal in GOALS.items()}
    for name in ("utterances", "utterances_with_deviations", "seconds_one_core", *GOALS):
        print(f"{name:>32}: {figures[name]}" + (f"  (goal >= {GOALS[name]})" if name in GOALS else ""))
    write_results(args.json, figures)
    print(f"written {args.json}")


if __name__ == "__main__":
    main()
