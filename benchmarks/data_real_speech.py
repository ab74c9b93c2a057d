"""The real recorded dev and test sets of ``nemo-pc real-speech``: the summary its recipe wrote (clips and minutes per
split, source and speaker; what was left out, by reason; each source's licence), kept as a results file for
docs/real_speech.md. Nothing is built here: the numbers are those of ``OUTPUT_DIR/summary.json``.

    .venv/bin/nemo-pc real-speech /work/runs/real_speech --sdist-dir /work/cache/sd
    .venv/bin/python benchmarks/data_real_speech.py /work/runs/real_speech \
        --json benchmarks/results/real_speech_sets.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from suite import write_results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output_dir", help="the output folder of nemo-pc real-speech")
    parser.add_argument("--json", default="benchmarks/results/real_speech_sets.json")
    args = parser.parse_args(argv)
    summary_path = Path(args.output_dir) / "summary.json"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        parser.error(f"{summary_path}: not the summary of nemo-pc real-speech ({err})")
    if not isinstance(summary, dict) or not {"splits", "sources", "dropped"} <= set(summary):
        parser.error(f"{summary_path}: not the summary of nemo-pc real-speech (no splits, sources, dropped)")
    results = {"summary_file": str(summary_path), **summary}
    write_results(args.json, results, [Path(__file__).name, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
