"""CPU training speed of the demo's models: steps/s and audio-seconds/s, variants side by side in one run.

Each variant trains the demo's shared base encoder (normalized CTC) or the conditioned RNN-T on a demo corpus for
``--steps`` optimizer steps (the first ``--warmup`` are not timed) and reports steps per second, audio seconds per
second, the padding share of its batches and the mean train loss of its timed steps (the same seed and data order
for every variant except where the variant changes the order). Every variant runs in its own process, one after
the other, so that each sees the same idle machine.

    .venv/bin/python benchmarks/speed_train.py --demo-dir demo_out --json benchmarks/results/train_speed.json

Variants (name: Hydra overrides on top of the demo's model):
    fp32          the demo's setting before this benchmark (float32, random batches)
    bf16          Lightning ``trainer.precision=bf16-mixed`` (CPU autocast to bfloat16)
    bucketed      ``model.train_ds.bucketing_window=20``: batches of similar durations
    bucketed_bf16 both
    threads1      ``torch.set_num_threads(1)`` (and one loader worker on the other core)
    workers0      the audio is read in the training process (no loader worker)
    bucketed_bf16_nospeed   the demo's settings without the speed perturbation of the base's audio
    bucketed_bf16_threads1  the demo's settings with one intra-op thread (the loader worker has the other core)
    bucketed_bf16_workers0  the demo's settings with no loader worker (both cores for the model)
    bucketed_bf16_batch16, bucketed_bf16_batch32  the demo's settings with batches of 16 or 32
    bucketed_bf16_20ms      the RNN-T on the pretrained encoder's 20 ms frames with dropout in its joint, as the
                            demo trained it before ``rnnt_stack`` (``--models rnnt_conditioned``)
    bucketed_bf16_40ms_dropout  40 ms frames with the joint's dropout
    bucketed_bf16_one_mode  the RNN-T's loss on one mode per utterance and step (``model.pc.sample_modes``): half
                            the joint's rows (``--models rnnt_conditioned``)

The last column compares each variant with ``fp32``, or with the first variant run when ``fp32`` is not among them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from suite import Stopwatch, pct, row_from_child, write_results

from nemo_pc.pipelines.demo.config import DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo

VARIANTS = {
    "fp32": [],
    "bf16": ["trainer.precision=bf16-mixed"],
    "bucketed": ["model.train_ds.bucketing_window=20"],
    "bucketed_bf16": ["model.train_ds.bucketing_window=20", "trainer.precision=bf16-mixed"],
    "threads1": [],
    "workers0": ["model.train_ds.num_workers=0"],
    # the demo's base reads speed-perturbed audio (NeMo's augmentor): what the resampling costs a step
    "bucketed_bf16_nospeed": [
        "model.train_ds.bucketing_window=20",
        "trainer.precision=bf16-mixed",
        "model.train_ds.augmentor=null",
    ],
    # larger batches: fewer, larger matrix products per audio second
    # the demo's settings with one intra-op thread, the data loader's worker on the other core
    "bucketed_bf16_threads1": ["model.train_ds.bucketing_window=20", "trainer.precision=bf16-mixed"],
    # no loader worker: data loading and speed perturbation in the training process, both cores for the model
    "bucketed_bf16_workers0": [
        "model.train_ds.bucketing_window=20",
        "trainer.precision=bf16-mixed",
        "model.train_ds.num_workers=0",
    ],
    "bucketed_bf16_batch16": [
        "model.train_ds.bucketing_window=20",
        "trainer.precision=bf16-mixed",
        "model.train_ds.batch_size=16",
    ],
    "bucketed_bf16_batch32": [
        "model.train_ds.bucketing_window=20",
        "trainer.precision=bf16-mixed",
        "model.train_ds.batch_size=32",
    ],
    # the RNN-T's joint on the pretrained encoder's 20 ms frames with the joint's dropout (the demo's recipe before
    # 40 ms frames), and 40 ms frames with the dropout; ``bucketed_bf16`` is the demo's recipe (40 ms, no dropout)
    "bucketed_bf16_20ms": [
        "model.train_ds.bucketing_window=20",
        "trainer.precision=bf16-mixed",
        "model.encoder.stack=1",
        "model.encoder.stack_init=random",
        "model.joint.jointnet.dropout=0.1",
    ],
    "bucketed_bf16_40ms_dropout": [
        "model.train_ds.bucketing_window=20",
        "trainer.precision=bf16-mixed",
        "model.joint.jointnet.dropout=0.1",
    ],
    "bucketed_bf16_one_mode": [
        "model.train_ds.bucketing_window=20",
        "trainer.precision=bf16-mixed",
        "model.pc.sample_modes=true",
    ],
}


def _run(model: str, variant: str, demo_dir: str, steps: int, warmup: int, queue) -> None:
    import lightning.pytorch as pl
    import torch

    from nemo_pc.pipelines import train

    if variant.endswith("threads1"):
        torch.set_num_threads(1)
    # the baseline: float32, random batches; each variant adds its overrides
    demo = Demo(DemoConfig(out_dir=demo_dir, precision="32", bucketing_window=0), log=lambda _: None)
    if model == "base":
        family, overrides = "ctc", demo.asr_overrides("base")
    else:
        family, overrides = "rnnt", demo.asr_overrides("rnnt_conditioned")
        overrides = [o for o in overrides if not o.startswith("model.freeze_updates")]
    overrides = [*overrides, "model.validation_ds.manifest_filepath=null", *VARIANTS[variant]]
    record = {"audio": 0.0, "padded": 0.0, "losses": [], "watch": None}

    class Meter(pl.Callback):
        def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
            if trainer.global_step == warmup:
                record["watch"] = Stopwatch().start()
            if trainer.global_step >= warmup:
                lengths = batch.audio_len.float() / 16000
                record["audio"] += float(lengths.sum())
                record["padded"] += float(lengths.max()) * len(lengths)

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
            if trainer.global_step > warmup:
                loss = outputs["loss"] if isinstance(outputs, dict) else outputs
                record["losses"].append(float(loss))

    target = Path(demo_dir) / f".speed_{model}_{variant}.nemo"
    stats = train.train_model(family, overrides, target, steps + warmup, callbacks=[Meter()])
    Path(demo_dir, f".speed_{model}_{variant}.nemo").unlink(missing_ok=True)
    seconds = record["watch"].seconds
    queue.put(
        {
            "model": model,
            "variant": variant,
            "steps": steps,
            "seconds": round(seconds, 2),
            "steps_per_s": round(steps / seconds, 4),
            "audio_s_per_s": round(record["audio"] / seconds, 2),
            "padding_share": round(1 - record["audio"] / record["padded"], 4),
            "mean_loss": round(sum(record["losses"]) / len(record["losses"]), 3),
            "parameters": stats["parameters"],
        }
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", default="demo_out", help="a demo output with corpus, manifests, tokenizers")
    parser.add_argument("--models", default="base,rnnt_conditioned")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--steps", type=int, default=40, help="timed steps per variant")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    unknown = [v for v in args.variants.split(",") if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {unknown}; choose from {sorted(VARIANTS)}")
    if not Path(args.demo_dir, "manifests", "train.json").is_file():
        parser.error(f"{args.demo_dir}: no manifests/train.json (run examples/demo_pc.py first)")
    rows = []
    for model in args.models.split(","):
        for variant in args.variants.split(","):
            row = row_from_child(
                _run, (model, variant, args.demo_dir, args.steps, args.warmup), f"variant {variant} of {model}"
            )
            rows.append(row)
            print(json.dumps(row), flush=True)
    first = "fp32" if "fp32" in args.variants.split(",") else args.variants.split(",")[0]
    print(f"\n| model | variant | steps/s | audio s/s | padding | mean loss | vs {first} |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        same = [r for r in rows if r["model"] == row["model"]]
        base = next((r for r in same if r["variant"] == "fp32"), same[0])
        ratio = row["steps_per_s"] / base["steps_per_s"]
        print(
            f"| {row['model']} | {row['variant']} | {row['steps_per_s']:.3f} | {row['audio_s_per_s']:.1f} | "
            f"{pct(row['padding_share'])} | {row['mean_loss']:.2f} | {ratio:.2f}x |"
        )
    if args.json:
        write_results(args.json, {"steps": args.steps, "warmup": args.warmup, "rows": rows})


if __name__ == "__main__":
    main()
