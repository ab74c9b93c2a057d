"""A demo system's encoder between the encoder it started from and its fine-tune: PER, punctuation F1 and N-WER of
each weight on dev, the real recordings and the held-out splits.

The demo's CTC and RNN-T systems start from the fine-tuned AED's encoder (``ctc_inter``) or from ``ctc_inter``'s
(the RNN-Ts); their training on synthetic voices moves it, and real speech suffers (``docs/pc_stage.md``). Here the
encoder moves back along the line to its start (:func:`nemo_pc.pipelines.interpolate.interpolate_at` with
``modules=["encoder"]``), the heads stay as trained, and no step is trained: the weight costs no training minute.
The weight is chosen on the ``--choose-on`` splits (lowest mean N-WER; ties: the higher weight), never on the
``--splits`` it reports.

    .venv/bin/python benchmarks/quality_encoder_interpolation.py --demo-dir demo_out --system ctc_inter \
        --weights 0,0.25,0.5,0.75,1 --work .bench/interp_ctc_inter \
        --json benchmarks/results/encoder_interpolation_ctc_inter.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from quality_pc_stage import dev_subset, score, split_manifest
from suite import write_results


def system_start(demo_dir: Path, system: str) -> Path:
    """The ``.nemo`` whose encoder started ``system``: its stats file's ``init_from``, in the demo's models folder."""
    stats = demo_dir / "models" / f"{system}.json"
    if not stats.is_file():
        raise SystemExit(f"{stats}: no stats file; is {system} trained in {demo_dir}?")
    name = json.loads(stats.read_text()).get("init_from")
    if not name:
        raise SystemExit(f"{stats}: {system} started from no other model's encoder (init_from is empty); pass --start")
    return demo_dir / "models" / name


def choose(rows: list[dict], splits: list[str]) -> float:
    """The weight of the lowest mean N-WER over ``splits`` (ties: the higher weight)."""
    means = {row["weight"]: sum(row["scores"][s]["wer_normalized"] for s in splits) / len(splits) for row in rows}
    return min(means, key=lambda weight: (means[weight], -weight))


def sweep(
    model: Path, start: Path, demo_dir: Path, work: Path, weights: list[float], splits: list[str], stride: int
) -> list[dict]:
    """Each weight's model, saved in ``work`` (kept: a rerun scores it again without interpolating), scored on every
    split."""
    from nemo_pc.pipelines.interpolate import interpolate_at

    work.mkdir(parents=True, exist_ok=True)
    manifests = {
        split: dev_subset(demo_dir, work, stride) if split == "dev" else split_manifest(demo_dir, split)
        for split in splits
    }
    rows = []
    for weight in weights:
        target = work / f"w{weight:.2f}.nemo"
        if not target.is_file():
            interpolate_at(model, target, weight, modules=["encoder"], start=start)
        scores = {}
        for split, manifest in manifests.items():
            began = time.perf_counter()
            scores[split] = score(target, manifest, work / f"w{weight:.2f}_{split}.json")
            print(
                f"weight {weight:.2f} {split}: N-WER {100 * scores[split]['wer_normalized']:.1f}% "
                f"PER {100 * scores[split]['per']:.1f}% F1 {100 * scores[split]['punct_micro_f1']:.1f}% "
                f"({time.perf_counter() - began:.0f} s)",
                file=sys.stderr,
            )
        rows.append({"weight": weight, "scores": scores})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", type=Path, required=True)
    parser.add_argument("--system", required=True, help="a trained CTC or RNN-T system of the demo folder")
    parser.add_argument("--model", type=Path, default=None, help="the fine-tuned model (default: models/SYSTEM.nemo)")
    parser.add_argument("--start", type=Path, default=None, help="the .nemo it started from (default: its init_from)")
    parser.add_argument("--weights", default="0,0.25,0.5,0.75,1", help="weights of the fine-tuned encoder")
    parser.add_argument("--choose-on", default="dev,real_dev", help="splits the weight is chosen on")
    parser.add_argument("--splits", default="test,real_test", help="held-out splits reported at every weight")
    parser.add_argument("--dev-stride", type=int, default=4, help="every N-th line of dev")
    parser.add_argument("--work", type=Path, default=Path(".bench/encoder_interpolation"))
    parser.add_argument("--json", default="benchmarks/results/encoder_interpolation.json")
    args = parser.parse_args(argv)
    from nemo_pc.pipelines.interpolate import parse_weights

    try:
        weights = list(parse_weights(args.weights))
    except ValueError as err:
        parser.error(f"--weights: {err}")
    choose_on = [s for s in args.choose_on.split(",") if s]
    held_out = [s for s in args.splits.split(",") if s]
    if not choose_on or set(choose_on) & set(held_out):
        parser.error("--choose-on needs one split or more, none of them in --splits")
    model = args.model or args.demo_dir / "models" / f"{args.system}.nemo"
    start = args.start or system_start(args.demo_dir, args.system)
    for path in (model, start):
        if not path.is_file():
            parser.error(f"{path}: no such file")
    rows = sweep(model, start, args.demo_dir, args.work, weights, [*choose_on, *held_out], args.dev_stride)
    report = {
        "demo_dir": str(args.demo_dir),
        "system": args.system,
        "model": str(model),
        "start": str(start),
        "choose_on": choose_on,
        "splits": held_out,
        "dev_stride": args.dev_stride,
        "chosen": choose(rows, choose_on),
        "rows": rows,
    }
    write_results(args.json, report, [Path(__file__).name, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
