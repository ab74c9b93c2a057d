"""Whether an RNN-T's training steps cost more once it has validated: the demo's recipe, with and without validations.

The demo trains ``rnnt_conditioned`` with ``curve_points`` validations on ``dev_curve`` and ``real_dev``. This trains
the same recipe from the same start (the folder's ``rnnt_init``) for ``--steps`` steps twice, each in its own process
one after the other: validating every ``--val-every`` steps on the demo's validation sets, and with no validation set.
Each step is timed from Lightning's ``on_train_batch_start`` to ``on_train_batch_end`` (forward, backward, optimizer
step and the training WER of every tenth step; the data loading and the validations fall outside), and the mean of
each ``--window`` of steps is reported. The validations run in their own random streams (as in the demo), so both runs
train the same weights.

    .venv/bin/python benchmarks/speed_rnnt_after_validation.py --demo-dir demo_out --steps 400 --val-every 100 \\
        --json benchmarks/results/rnnt_after_validation.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from suite import row_from_child, weights_digest, write_results


def _run(demo_dir: str, steps: int, val_every: int, window: int, queue) -> None:
    import time

    import lightning.pytorch as pl

    from nemo_pc.pipelines import train
    from nemo_pc.pipelines.demo.config import DemoConfig
    from nemo_pc.pipelines.demo.pipeline import Demo

    demo = Demo(DemoConfig(out_dir=demo_dir), log=lambda _: None)
    overrides = demo.asr_overrides("rnnt_conditioned")
    if not val_every:
        overrides = [*overrides, "model.validation_ds.manifest_filepath=null"]
    durations: list[float] = []

    class Clock(pl.Callback):
        started = 0.0

        def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
            self.started = time.perf_counter()

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
            durations.append(time.perf_counter() - self.started)

    target = Path(demo_dir) / f".after_validation_{val_every}.nemo"
    stats = train.train_model(
        "rnnt",
        overrides,
        target,
        steps,
        seed=demo.cfg.seed,
        val_every=val_every or None,
        init_from=demo.rnnt_start(),
        callbacks=[Clock()],
        isolate_validation_rng=True,
    )
    digest = weights_digest(target)
    target.unlink(missing_ok=True)
    windows = [
        {"first_step": k, "last_step": k + len(part) - 1, "seconds_per_step": round(sum(part) / len(part), 4)}
        for k in range(0, len(durations), window)
        for part in [durations[k : k + window]]
    ]
    from nemo_pc.parts.provenance import malloc_library

    queue.put(
        {
            "val_every": val_every or None,
            "malloc": malloc_library(),
            "weights_sha256": digest,
            "validations": stats["validations"],
            "seconds": stats["seconds"],
            "validation_seconds": stats["validation_seconds"],
            "step_seconds": round(sum(durations), 1),
            "windows": windows,
        }
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", default="demo_out", help="a demo folder with its AED (or rnnt_init) trained")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--val-every", type=int, default=100)
    parser.add_argument("--window", type=int, default=50, help="steps per reported mean")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if min(args.steps, args.val_every, args.window) < 1:
        parser.error("--steps, --val-every and --window must be 1 or more")
    if not Path(args.demo_dir, "config.json").is_file():
        parser.error(f"{args.demo_dir}: not a demo folder (no config.json; run examples/demo_pc.py first)")
    rows = []
    for val_every in (args.val_every, 0):
        row = row_from_child(
            _run, (args.demo_dir, args.steps, val_every, args.window), f"the run with val_every={val_every}"
        )
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n| steps | s/step, validating every {args.val_every} | s/step, no validation |")
    print("|---|---:|---:|")
    for with_val, without in zip(rows[0]["windows"], rows[1]["windows"], strict=True):
        print(
            f"| {with_val['first_step']}-{with_val['last_step']} | {with_val['seconds_per_step']:.3f} | "
            f"{without['seconds_per_step']:.3f} |"
        )
    if args.json:
        write_results(args.json, {"steps": args.steps, "val_every": args.val_every, "rows": rows})


if __name__ == "__main__":
    main()
