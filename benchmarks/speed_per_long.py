"""Time and peak memory of PER (``nemo_pc.metrics.per_counts``) on one long utterance: 1k, 10k and 100k words.

NeMo's PER aligns with a full table in Python (quadratic); nemo_pc scores a long utterance in pieces cut at words
that a linear-memory alignment matches. ``--whole-sizes`` also times the whole-text alignment (one piece, as before
the pieces) side by side. Each run is a fresh process, so its peak resident memory is its own.

    .venv/bin/python benchmarks/speed_per_long.py --json benchmarks/results/per_long.json
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys

from suite import Stopwatch, write_results


def _texts(words: int, seed: int = 0) -> tuple[str, str]:
    rng = random.Random(seed)
    vocabulary = [f"w{k}" for k in range(2000)]
    ref = [rng.choice(vocabulary) + (rng.choice(",.?") if rng.random() < 0.15 else "") for _ in range(words)]
    hyp = [w if rng.random() > 0.1 else rng.choice(vocabulary) for w in ref]  # 10% word errors
    hyp = [w.rstrip(",.?") + (rng.choice(",.?") if rng.random() < 0.15 else "") for w in hyp]
    return " ".join(ref), " ".join(hyp)


def _one(words: int, whole: bool) -> dict:
    from nemo_pc.metrics import per_counts, punctuation

    if whole:
        punctuation.PER_CHUNK_WORDS = 10**9

    per_counts("a, b.", "a b.")  # NeMo's import, outside the timing
    ref, hyp = _texts(words)
    with Stopwatch() as watch:
        counts = per_counts(ref, hyp)
    seconds = watch.seconds
    marks = sum(v for k, v in counts.items() if k.endswith(("|Correct", "|Deletions", "|Substitutions")))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return {
        "words": words,
        "pieces": not whole,
        "seconds": round(seconds, 3),
        "peak_rss_mb": peak_mb,
        "reference_marks_scored": marks,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--whole-sizes", default="1000,2000", help="sizes also scored as one piece ('' for none)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--whole", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(_one(args.one, args.whole)))
        return
    rows = []
    runs = [(int(s), []) for s in args.sizes.split(",")]
    runs += [(int(s), ["--whole"]) for s in args.whole_sizes.split(",") if s]
    for size, flag in runs:
        command = [sys.executable, __file__, "--one", str(size), *flag]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    if args.json:
        write_results(args.json, {"rows": rows})


if __name__ == "__main__":
    main()
