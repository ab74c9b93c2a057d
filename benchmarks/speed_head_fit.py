"""Where a head's training minutes go in the demo's own fit: each Lightning step of a head on the AED cut into its
parts, timed inside the training run itself (not on batches replayed outside it, as ``speed_transducer_prune.py``
does).

The demo's recipe for ``--system`` (a transducer head, ``rnnt_conditioned`` or ``rnnt_dual``, or the decoder CTC head
``ctc_inter``) trains on the folder's train split from its AED for ``--steps`` steps, with no validation set, once per
variant (``--variants``), each in its own process one after the other. A Lightning callback cuts every step into:

- ``loader``: from the end of the previous step to the start of this one (the data loader's wait and Lightning's
  work between steps; the first step's is left out);
- ``encoder``: the frozen encoder's forward over the batch's utterances not yet in the states cache (inside the
  forward);
- ``training_wer``: the greedy decoding of the training WER, every ``log_every_n_steps`` (inside the forward);
- ``forward``: the rest of the step up to its loss (the head's forward and loss, zeroing the gradients);
- ``backward``: the loss's backward;
- ``optimizer``: from the end of the backward to the end of the step (gradient clipping, AdamW, the schedule, logging).

The parts of every step are summed per window of ``--window`` steps, and ``fit_seconds`` (Lightning's whole fit) is
reported beside their sum. ``--variants`` picks from :data:`VARIANTS` (Hydra overrides on the demo's recipe).

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 .venv/bin/python benchmarks/speed_head_fit.py \\
        --demo-dir demo_out --system rnnt_conditioned --steps 200 --variants default \\
        --json benchmarks/results/head_fit_parts.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from suite import row_from_child, write_results

PARTS = ("loader", "encoder", "training_wer", "forward", "backward", "optimizer")
SYSTEMS = ("rnnt_conditioned", "rnnt_dual", "ctc_inter")
VARIANTS = {
    "default": [],
    # the audio read in the training process (no loader worker beside the two threads)
    "workers0": ["model.train_ds.num_workers=0", "model.validation_ds.num_workers=0"],
    # the map-style loader's batches of similar durations (sorted within windows of 20 batches), in place of NeMo's
    # lhotse loader's random ones: less padding in the joint's frames x labels lattice
    "bucketed": ["model.train_ds.use_lhotse=false", "+model.train_ds.bucketing_window=20"],
    "bucketed_workers0": [
        "model.train_ds.use_lhotse=false",
        "+model.train_ds.bucketing_window=20",
        "model.train_ds.num_workers=0",
        "model.validation_ds.num_workers=0",
    ],
    # no states cache: every step encodes its batch, as the first epoch does ({head}: the system's head key)
    "no_cache": ["model.{head}.cache_states_gb=0"],
}


def variant_overrides(variant: str, system: str) -> list[str]:
    """The Hydra overrides of ``variant`` for ``system``'s head (``transducer`` or ``decoder_ctc``)."""
    head = "decoder_ctc" if system == "ctc_inter" else "transducer"
    return [item.format(head=head) for item in VARIANTS[variant]]


class PartMeter:
    """The parts of each training step (module docstring), as ``steps``: one dict of seconds per step.

    ``callback()`` is the Lightning callback; it wraps the model's frozen-encoder call and training WER when the fit
    starts (on the instance, so the class is untouched). Its clock is ``time.perf_counter``."""

    def __init__(self, clock=time.perf_counter) -> None:
        self.clock = clock
        self.steps: list[dict[str, float]] = []
        self._inner = {"encoder": 0.0, "training_wer": 0.0}
        self._marks: dict[str, float] = {}
        self._last_end: float | None = None

    def wrap(self, module) -> None:
        """Times every call of ``module._encode_for_transducer`` and ``module.training_batch_wer``."""
        for part, name in (("encoder", "_encode_for_transducer"), ("training_wer", "training_batch_wer")):
            method = getattr(module, name)

            def timed(*args, _method=method, _part=part, **kwargs):
                start = self.clock()
                try:
                    return _method(*args, **kwargs)
                finally:
                    self._inner[_part] += self.clock() - start

            setattr(module, name, timed)

    def mark(self, event: str) -> None:
        """One event of a step: ``start``, ``before_backward``, ``after_backward`` or ``end`` (which closes it)."""
        now = self.clock()
        if event == "start":
            self._marks = {"start": now}
            self._inner = {"encoder": 0.0, "training_wer": 0.0}
            return
        self._marks[event] = now
        if event != "end":
            return
        marks = self._marks
        backward_start = marks.get("before_backward", now)
        backward_end = marks.get("after_backward", backward_start)
        step = {
            "loader": marks["start"] - self._last_end if self._last_end is not None else None,
            "encoder": self._inner["encoder"],
            "training_wer": self._inner["training_wer"],
            "forward": backward_start - marks["start"] - self._inner["encoder"] - self._inner["training_wer"],
            "backward": backward_end - backward_start,
            "optimizer": now - backward_end,
        }
        self.steps.append(step)
        self._last_end = now

    def callback(self):
        import lightning.pytorch as pl

        meter = self

        class Meter(pl.Callback):
            def on_fit_start(self, trainer, pl_module) -> None:
                meter.wrap(pl_module)

            def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
                meter.mark("start")

            def on_before_backward(self, trainer, pl_module, loss) -> None:
                meter.mark("before_backward")

            def on_after_backward(self, trainer, pl_module) -> None:
                meter.mark("after_backward")

            def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
                meter.mark("end")

        return Meter()


def summarize(steps: list[dict[str, float | None]], window: int) -> dict:
    """Mean seconds of each part per step over every window of ``window`` steps and over all steps (a step's
    ``loader`` of None, the first one's, is left out of that part's mean), and each window's step (the parts' sum)."""

    def means(part_steps):
        row = {}
        for part in PARTS:
            values = [step[part] for step in part_steps if step[part] is not None]
            row[part] = round(sum(values) / len(values), 4) if values else None
        row["step"] = round(sum(value for value in row.values() if value is not None), 4)
        return row

    windows = [
        {"first_step": start, "last_step": start + len(part) - 1, **means(part)}
        for start in range(0, len(steps), window)
        for part in [steps[start : start + window]]
    ]
    return {"all": means(steps), "windows": windows}


def _run(demo_dir: str, system: str, steps: int, variant: str, window: int, queue) -> None:
    from nemo_pc.parts.provenance import malloc_library
    from nemo_pc.pipelines import train
    from nemo_pc.pipelines.demo.config import DemoConfig
    from nemo_pc.pipelines.demo.pipeline import Demo

    demo = Demo(DemoConfig(out_dir=demo_dir), log=lambda _: None)
    overrides = [*demo.asr_overrides(system), "model.validation_ds.manifest_filepath=null"]
    overrides += variant_overrides(variant, system)
    meter = PartMeter()
    target = Path(demo_dir) / f".head_fit_{system}_{variant}.nemo"
    try:
        stats = train.train_model(
            demo.training_family(system), overrides, target, steps, seed=demo.cfg.seed, callbacks=[meter.callback()]
        )
    finally:
        target.unlink(missing_ok=True)
    summary = summarize(meter.steps, window)
    queue.put(
        {
            "variant": variant,
            "overrides": variant_overrides(variant, system),
            "malloc": malloc_library(),
            "fit_seconds": stats["seconds"],
            "parts_seconds": round(sum(v for step in meter.steps for v in step.values() if v is not None), 1),
            **summary,
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", default="demo_out", help="a demo folder whose AED is trained")
    parser.add_argument("--system", default="rnnt_conditioned", choices=SYSTEMS)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--window", type=int, default=50, help="steps per reported mean")
    parser.add_argument("--variants", default="default", help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    variants = [name for name in args.variants.split(",") if name]
    unknown = [name for name in variants if name not in VARIANTS]
    if unknown or not variants:
        parser.error(f"--variants: unknown {unknown or 'none given'}; known: {', '.join(VARIANTS)}")
    if min(args.steps, args.window) < 1:
        parser.error("--steps and --window must be 1 or more")
    config = Path(args.demo_dir, "config.json")
    if not config.is_file():
        print(f"{config}: not a demo folder (run examples/demo_pc.py first)", file=sys.stderr)
        return 2
    rows = []
    for variant in variants:
        row = row_from_child(_run, (args.demo_dir, args.system, args.steps, variant, args.window), variant)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print(render(rows))
    if args.json:
        write_results(args.json, {"system": args.system, "steps": args.steps, "window": args.window, "rows": rows})
    return 0


def render(rows: list[dict]) -> str:
    """A table of each variant's mean seconds per step by part, over all steps."""
    lines = [
        "| variant | " + " | ".join(PARTS) + " | step | fit s/step |",
        "|---|" + "---:|" * (len(PARTS) + 2),
    ]
    for row in rows:
        steps = sum(w["last_step"] - w["first_step"] + 1 for w in row["windows"])
        cells = ["-" if row["all"][part] is None else f"{row['all'][part]:.3f}" for part in PARTS]
        fit = row["fit_seconds"] / max(steps, 1)
        lines.append(f"| `{row['variant']}` | " + " | ".join(cells) + f" | {row['all']['step']:.3f} | {fit:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
