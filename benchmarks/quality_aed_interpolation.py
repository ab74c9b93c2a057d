"""The AED between its zero-shot start and its fine-tune: each weight on each dev set, the weight chosen on the dev
sets together, and the chosen model saved (``nemo-pc interpolate``, :mod:`nemo_pc.pipelines.interpolate`).

    .venv/bin/python benchmarks/quality_aed_interpolation.py --model demo_out/models/aed_prompt.nemo \
        --dev dev=demo_out/manifests/dev.json --dev real_dev=demo_out/real_speech/real_dev.json \
        --max-utterances 120 --output .bench/aed_interpolated.nemo --json benchmarks/results/aed_interpolation.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from suite import write_results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="the fine-tuned AED (.nemo)")
    parser.add_argument("--dev", action="append", required=True, help="NAME=MANIFEST (repeatable)")
    parser.add_argument("--weights", default="0,0.25,0.5,0.75,1")
    parser.add_argument("--max-utterances", type=int, default=None)
    parser.add_argument("--modules", default=None, help="comma-separated modules that move (default: all)")
    parser.add_argument("--output", default=".bench/aed_interpolated.nemo", help="the chosen model")
    parser.add_argument("--json", default="benchmarks/results/aed_interpolation.json")
    args = parser.parse_args(argv)
    dev = dict(item.split("=", 1) for item in args.dev)
    missing = [path for path in [args.model, *dev.values()] if not Path(path).is_file()]
    if missing:
        parser.error(f"{missing[0]}: no such file")
    from nemo_pc.pipelines.interpolate import sweep_interpolation

    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    report = sweep_interpolation(
        args.model,
        dev,
        output,
        weights=tuple(float(w) for w in args.weights.split(",")),
        max_utterances=args.max_utterances,
        results=output.with_suffix(".sweep.json"),
        modules=args.modules.split(",") if args.modules else None,
    )
    write_results(args.json, report, [Path(__file__).name, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
