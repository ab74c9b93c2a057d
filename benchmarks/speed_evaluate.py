"""How long `nemo-pc evaluate` takes on a 10,000-utterance prediction manifest, on one core.

Builds a deterministic manifest of LibriSpeech-like utterances (15-35 words, marks, capitals, numbers) whose
hypotheses carry word, case and punctuation errors, then times scoring it in this process (after NeMo's PER module
has been imported once, whose import time is reported separately). Writes a JSON summary.

    taskset -c 0 .venv/bin/python benchmarks/speed_evaluate.py --utterances 10000
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

from suite import Stopwatch, results_path, write_results

from nemo_pc.metrics.evaluate import EvalConfig, evaluate_manifest
from nemo_pc.parts.manifest import write_manifest

VOCAB = (
    "the of and to a in that he was it his you with as for had is her not but at on she be have by which him "
    "they this from all were my we one so said what when there would an their are no if more out who up been into "
    "time could them some man now very did like little than then your only upon over before well about way "
).split()
NAMES = ["Paris", "Thornton", "NASA", "McDonald's", "Bob", "London", "Mary", "iPhone"]
MARKS = [".", ",", "?", ","]


def _utterance(rng: random.Random) -> str:
    out, start = [], True
    for _ in range(rng.randint(15, 35)):
        word = rng.choice(NAMES) if rng.random() < 0.08 else rng.choice(VOCAB)
        word = word.capitalize() if start and word.islower() else word
        start = False
        if rng.random() < 0.12:
            mark = rng.choice(MARKS)
            word += mark
            start = mark in ".?"
        out.append(word)
    return " ".join(out) + "."


def _hypothesis(ref: str, rng: random.Random) -> str:
    words = []
    for word in ref.split():
        roll = rng.random()
        if roll < 0.03:
            continue
        if roll < 0.06:
            word = rng.choice(VOCAB)
        elif roll < 0.10:
            word = word.rstrip(".,?") if word[-1] in ".,?" else word + ","
        elif roll < 0.13:
            word = word.lower()
        words.append(word)
    return " ".join(words)


def build_manifest(path: Path, count: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    rows = []
    for k in range(count):
        ref = _utterance(rng)
        rows.append(
            {"utt_id": f"u{k}", "text": ref, "text_normalized": ref.lower(), "pred_text": _hypothesis(ref, rng)}
        )
    return write_manifest(path, rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utterances", type=int, default=10_000)
    parser.add_argument("--json", "--out", default=str(results_path(__file__)), help="the results JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        manifest = build_manifest(Path(tmp) / "predictions.json", args.utterances)
        with Stopwatch() as importing:
            import nemo.collections.common.metrics.punct_er  # noqa: F401  (timed separately)
        import_s = importing.seconds
        with Stopwatch() as scoring:
            result = evaluate_manifest(manifest, EvalConfig(progress=False))
            report = result.metrics.compute()
        wall, cpu = scoring.seconds, scoring.cpu_seconds
    summary = {
        "utterances": report["num_utterances"],
        "reference_words": report["counts"]["N_np_nc"],
        "scoring_wall_s": round(wall, 2),
        "scoring_cpu_s": round(cpu, 2),
        "utterances_per_s": round(report["num_utterances"] / wall, 1),
        "nemo_punct_er_import_s": round(import_s, 2),
        "wer": report["metrics"]["wer"],
        "per": report["metrics"]["per"],
    }
    print(json.dumps(summary, indent=2))
    write_results(args.json, summary)


if __name__ == "__main__":
    main()
