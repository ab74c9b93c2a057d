"""The weight of the AED decoder's own logits in a transducer head's joint, changed at decoding only.

A transducer head on the AED (``model.transducer``, docs/aed.md) adds ``lm_scale`` times the decoder's next-token
logits to its joint; it trains at 1.0. The AED writes the marks better than its heads (docs/pc_stage.md), so a larger
weight at decoding may bring the heads' marks nearer the AED's. For each weight of ``--scales`` the head's both outputs
of ``dev_curve`` (the demo's validation subset) are scored; the weight with the lowest dev WER-PC (words and marks
together; ties to the weight nearer 1) then decodes each of ``--final-splits`` beside the trained 1.0.

    .venv/bin/python benchmarks/quality_head_lm_scale.py --model demo_out/models/rnnt_conditioned.nemo \\
        --demo-dir demo_out --scales 0.5,1,1.5,2 --json benchmarks/results/head_lm_scale.json
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from quality_pc_stage import score, split_path
from suite import write_results

TUNE_METRIC = "wer_pc"


@contextlib.contextmanager
def lm_scale(model, scale: float):
    """The head's joint with ``lm_scale`` set to ``scale`` inside the block, its trained weight after."""
    joint = model.transducer_joint
    trained = joint.lm_scale
    joint.lm_scale = float(scale)
    try:
        yield model
    finally:
        joint.lm_scale = trained


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="a transducer head's .nemo (models/rnnt_*.nemo)")
    parser.add_argument("--demo-dir", type=Path, required=True, help="its demo folder (manifests/, real_speech/)")
    parser.add_argument("--scales", default="0.5,1,1.5,2", help="weights of the decoder's logits tried on dev")
    parser.add_argument("--final-splits", default="test,real_test", help="held-out splits decoded at 1 and the best")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--work", type=Path, default=None, help="prediction manifests (default DEMO/head_lm_scale)")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        args.scales = sorted({float(s) for s in args.scales.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--scales must be comma-separated numbers, got {args.scales!r}")
    if not args.scales or any(s < 0 for s in args.scales):
        parser.error("--scales must be one or more weights of 0 or more")
    args.manifests = {
        s.strip(): split_path(args.demo_dir, s.strip()) for s in args.final_splits.split(",") if s.strip()
    }
    if not args.model.is_file():
        parser.error(f"--model {args.model}: no such file")
    args.work = args.work or args.demo_dir / "head_lm_scale"
    args.dev = args.demo_dir / "manifests" / "dev_curve.json"
    missing = [str(path) for path in (args.dev, *args.manifests.values()) if not path.is_file()]
    if missing:
        parser.error(f"no such manifest: {', '.join(missing)} (the demo writes dev_curve before its first curve)")
    return args


def main(argv: list[str] | None = None) -> dict:
    from nemo_pc.pipelines.inference import load_asr_model

    args = parse_args(argv)
    dev, manifests = args.dev, args.manifests
    model = load_asr_model(args.model)
    if getattr(model, "transducer_joint", None) is None:
        print(f"error: {args.model}: not a transducer head on an AED (no transducer_joint)", file=sys.stderr)
        raise SystemExit(2)
    trained = model.transducer_joint.lm_scale
    dev_grid = {}
    for scale in args.scales:
        with lm_scale(model, scale):
            dev_grid[f"{scale:g}"] = score(model, dev, args.work / f"dev_scale{scale:g}.json", args.batch_size)
        print(f"dev, scale {scale:g}: {dev_grid[f'{scale:g}']}", file=sys.stderr, flush=True)
    best = min(args.scales, key=lambda s: (dev_grid[f"{s:g}"][TUNE_METRIC], abs(s - trained)))
    final = {}
    for scale in sorted({trained, best}):
        with lm_scale(model, scale):
            final[f"{scale:g}"] = {
                split: score(model, manifest, args.work / f"{split}_scale{scale:g}.json", args.batch_size)
                for split, manifest in manifests.items()
            }
    results = {
        "model": str(args.model),
        "trained_scale": trained,
        "tuned_on": f"dev_curve {TUNE_METRIC}",
        "dev_utterances": sum(1 for _ in dev.open("rb")),
        "dev_grid": dev_grid,
        "best_scale": best,
        "final": final,
    }
    write_results(args.json, results)
    print(f"report: {args.json}", file=sys.stderr)
    return results


if __name__ == "__main__":
    main()
