"""What one validation of a head on the AED costs with its validation sets in manifest order or in order of duration,
through NeMo's lhotse loader (the demo's) or the map-style one, and at which batch size.

The demo's heads on the AED (the transducer heads and the decoder CTC head) validate ``curve_points`` times while they
train, on the curves' ``dev`` subset and on ``real_dev`` (44 clips of 1 to 27 s): a batch is as long as its longest
clip, and the encoder and the greedy decoding run over the padding. The demo validates on copies of those sets sorted
by duration (``Demo.validation_copy``), which a loader reads in order. This runs a trained head's validation on the
demo folder's own validation sets each way, alternating over ``--rounds`` in one process after a warm-up (the same
machine state for each), and reports the seconds, the padded share of the audio and the WERs (padding may move a
greedy hypothesis, so the WERs are reported, not assumed equal).

    .venv/bin/python benchmarks/speed_head_validation.py --demo-dir demo_out --system rnnt_dual --rounds 3 \
        --json benchmarks/results/speed_head_validation_rnnt_dual.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from speed_rnnt_validation import checked_inputs, wer_metrics
from suite import num, write_results

from nemo_pc.pipelines.demo.config import HEAD_VALIDATION_BATCH_SIZE, DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo

BEFORE_BATCH_SIZE = 8  # the heads' validation batches before they read the sets in order of duration


def settings(batch_sizes: list[int]) -> dict[str, dict]:
    """Each way's ``sorted`` (the sets in order of duration or not) and keys of ``validation_ds`` over the model's
    own: the lhotse loader in manifest order in batches of 8 (the demo before), then in order of duration at each
    of ``batch_sizes``, and the map-style loader in manifest order and in batches of similar durations (its
    ``bucketing_window``, which sorts within windows in a fixed order when it does not shuffle)."""
    rows = {f"lhotse, manifest order, {BEFORE_BATCH_SIZE}": (False, {"use_lhotse": True, "batch_size": 8})}
    for size in batch_sizes:
        rows[f"lhotse, by duration, {size}"] = (True, {"use_lhotse": True, "batch_size": size})
    rows[f"map-style, manifest order, {BEFORE_BATCH_SIZE}"] = (
        False,
        {"use_lhotse": False, "bucketing_window": 0, "batch_size": BEFORE_BATCH_SIZE},
    )
    largest = max(batch_sizes)
    rows[f"map-style, bucketing_window, {largest}"] = (
        False,
        {"use_lhotse": False, "bucketing_window": DemoConfig.bucketing_window, "batch_size": largest},
    )
    return rows


def padded_share(manifests: list[Path], batch_size: int, window: int) -> float:
    """The padded share of the audio of ``manifests`` read in batches of ``batch_size`` in manifest order
    (``window`` 0) or sorted within windows of ``window`` batches."""
    from nemo_pc.data.datasets.pc_dataset import DurationBucketSampler, padding_share
    from nemo_pc.parts.manifest import read_manifest

    padded = real = 0.0
    for path in manifests:
        durations = [float(row["duration"]) for row in read_manifest(path)]
        if window:
            batches = list(DurationBucketSampler(durations, batch_size, window, shuffle=False))
        else:
            count = len(durations)
            batches = [list(range(k, min(k + batch_size, count))) for k in range(0, count, batch_size)]
        share = padding_share(durations, batches)
        real += sum(durations)
        padded += sum(durations) / (1 - share) if share < 1 else 0.0
    return round(1 - real / padded, 4) if padded else 0.0


def measure(
    model_path: Path, manifests: list[Path], by_duration: list[Path], rounds: int, batch_sizes: list[int]
) -> list[dict]:
    """Each way's validation seconds over ``rounds``, padded share and WERs: ``manifests`` as they are and
    ``by_duration``, the same sets in order of duration."""
    import lightning.pytorch as pl
    from omegaconf import open_dict

    from nemo_pc.pipelines.inference import load_asr_model

    model = load_asr_model(model_path)
    with open_dict(model.cfg):
        model.cfg.compute_eval_loss = False  # the demo's heads validate their WERs only
    trainer = pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, max_steps=1)
    loaders = settings(batch_sizes)

    def validate(name: str) -> tuple[float, dict]:
        in_order, keys = loaders[name]
        val_cfg = model.cfg.validation_ds.copy()
        with open_dict(val_cfg):
            val_cfg.manifest_filepath = [str(path) for path in (by_duration if in_order else manifests)]
            val_cfg.shuffle = False
            val_cfg.num_workers = 0
            val_cfg.update(keys)
        model.setup_multiple_validation_data(val_cfg)
        start = time.perf_counter()
        results = trainer.validate(model, verbose=False)
        return round(time.perf_counter() - start, 2), wer_metrics(results)

    warmup, _ = validate(next(iter(loaders)))  # the first validation of a process pays one-time costs
    print(f"warm-up: {warmup:.1f} s", file=sys.stderr)
    seconds = {name: [] for name in loaders}
    wers = {}
    for round_index in range(rounds):
        order = list(loaders) if round_index % 2 == 0 else list(reversed(loaders))
        for name in order:
            took, wers[name] = validate(name)
            seconds[name].append(took)
            print(f"round {round_index + 1}: {name} {took:.1f} s", file=sys.stderr)
    return [
        {
            "setting": name,
            "by_duration": loaders[name][0],
            "validation_ds": loaders[name][1],
            "seconds": seconds[name],
            "median_seconds": statistics.median(seconds[name]),
            "padded_share": padded_share(
                by_duration if loaders[name][0] else manifests,
                loaders[name][1]["batch_size"],
                int(loaders[name][1].get("bucketing_window") or 0),
            ),
            "wer": wers[name],
        }
        for name in loaders
    ]


def markdown(results: dict) -> str:
    lines = [
        f"`{results['system']}` validating on {', '.join(results['manifests'])}, {results['rounds']} rounds "
        "alternating after a warm-up:",
        "",
        "| loader, order, batch size | median seconds | each round | padded share | dev WER | dev N-WER "
        "| real_dev WER |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for row in results["rows"]:
        wer = row["wer"]
        cells = [wer.get(key) for key in ("val_wer", "val_wer_normalized", "real_dev_val_wer")]
        share = row["padded_share"]
        lines.append(
            f"| {row['setting']} | {num(row['median_seconds'], 1)} | {', '.join(num(s, 1) for s in row['seconds'])} "
            f"| {100 * share:.0f}% | "
            + " | ".join("" if cell is None else f"{100 * cell:.1f}%" for cell in cells)
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", type=Path, required=True)
    parser.add_argument("--system", default="rnnt_dual")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--batch-sizes",
        default=f"8,16,{HEAD_VALIDATION_BATCH_SIZE}",
        help="batch sizes of the lhotse loader over the sets in order of duration, comma-separated",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        batch_sizes = [int(part) for part in args.batch_sizes.split(",") if part.strip()]
    except ValueError:
        batch_sizes = []
    if not batch_sizes or min(batch_sizes) < 1:
        print(f"error: --batch-sizes must be positive integers, got {args.batch_sizes!r}", file=sys.stderr)
        sys.exit(2)
    model_path, manifests = checked_inputs(args.demo_dir, args.system, args.rounds)
    demo = Demo(DemoConfig(out_dir=str(args.demo_dir)), log=lambda _: None)
    by_duration = [demo.validation_copy(path) for path in manifests]  # what the demo's trainings validate on
    results = {
        "system": args.system,
        "manifests": [path.name for path in manifests],
        "rounds": args.rounds,
        "demo_config": {"bucketing_window": DemoConfig.bucketing_window},
        "rows": measure(model_path, manifests, by_duration, args.rounds, batch_sizes),
    }
    print(markdown(results))
    if args.json:
        write_results(args.json, results)


if __name__ == "__main__":
    main()
