"""A joint P&C model's normalized output from its normalized mode against its punctuated output normalized by the text
rules, side by side on the same utterances of a demo folder's prediction manifests.

A model with both modes writes ``pred_text_normalized`` with its normalized mode; a punctuated-only model (and the
decoder CTC head's ``ctc_inter``) gets it from ``pred_text`` by :func:`nemo_pc.parts.text.normalize` (case folded,
marks dropped). For each system and split this scores both as the demo's ``N-output WER`` does (``nemo-pc
evaluate`` on ``pred_text_normalized``), with the paired bootstrap and MAPSSWE p-values of their difference (rules
minus mode: below zero, the rules read better).

    .venv/bin/python benchmarks/quality_rules_normalized.py --demo-dir demo_out \\
        --systems rnnt_conditioned,rnnt_dual --splits test,real_test \\
        --json benchmarks/results/rules_normalized.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from suite import write_results

from nemo_pc.parts.manifest import ManifestError


def rules_manifest(source: Path, target: Path) -> int:
    """``source``'s lines with ``pred_text_normalized`` replaced by ``normalize(pred_text)``; returns the line count.

    Raises:
        ManifestError: a line that is not a JSON object with a ``pred_text`` string (file and line named).
    """
    from nemo_pc.parts.manifest import iter_manifest, require_text, write_manifest
    from nemo_pc.parts.text import normalize

    rows = []
    for number, row in iter_manifest(source):
        rows.append({**row, "pred_text_normalized": normalize(require_text(row, "pred_text", source, number))})
    write_manifest(target, rows)
    return len(rows)


def compare(predictions: Path, num_resamples: int, seed: int) -> dict:
    """The N-output WER of ``predictions`` from the mode and by the rules, their difference and its p-values."""
    from nemo_pc.metrics.evaluate import EvalConfig, evaluate

    with tempfile.TemporaryDirectory() as work:
        rules = Path(work) / predictions.name
        rules_manifest(predictions, rules)
        config = EvalConfig(pred_field="pred_text_normalized", progress=False)
        report = evaluate(rules, config, compare=predictions, num_resamples=num_resamples, seed=seed)
    row = report["compare"]["metrics"]["wer"]
    return {
        "utterances": report["num_utterances"],
        "mode": row["b"],
        "rules": row["a"],
        "delta": row["delta"],
        "ci95": row["ci95"],
        "p_bootstrap": row["p"],
        "p_mapsswe": row.get("p_mapsswe"),
    }


def render(rows: list[dict]) -> str:
    lines = [
        "| system | split | utterances | N-output WER, its mode | by the rules | rules - mode [95% CI] | p |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        low, high = row["ci95"] or (float("nan"), float("nan"))
        lines.append(
            f"| `{row['system']}` | {row['split']} | {row['utterances']} | {100 * row['mode']:.1f}% | "
            f"{100 * row['rules']:.1f}% | {100 * row['delta']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] | "
            f"{row['p_bootstrap']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from nemo_pc.pipelines.demo.layout import predictions_path, split_system

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", default="demo_out")
    parser.add_argument("--systems", default="rnnt_conditioned,rnnt_dual")
    parser.add_argument("--splits", default="test,real_test")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rows = []
    for system in filter(None, args.systems.split(",")):
        for split in filter(None, args.splits.split(",")):
            path = predictions_path(args.demo_dir, split_system(system, split))
            if not path.is_file():
                print(f"{path}: no such predictions (run examples/demo_pc.py first)", file=sys.stderr)
                return 2
            try:
                row = compare(path, args.resamples, args.seed)
            except ManifestError as error:
                print(error, file=sys.stderr)
                return 2
            rows.append({"system": system, "split": split, **row})
    print(render(rows))
    if args.json:
        write_results(args.json, {"demo_dir": str(args.demo_dir), "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
