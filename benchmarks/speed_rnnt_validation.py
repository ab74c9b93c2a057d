"""What one validation of a demo RNN-T costs, and how much of it is the validation loss.

Every RNN-T of ``make demo`` validates ``curve_points`` times while it trains, on the ``dev`` subset of the learning
curves and on ``real_dev`` (clips of up to 27 s), in batches of ``RNNT_VALIDATION_BATCH_SIZE``; those validations
are 21-33% of its training minutes (``validation_seconds`` of ``models/<name>.json``). The report's curves read only
the WERs, while NeMo's RNN-T also computes the transducer loss of every validation batch (``compute_eval_loss``),
whose joint output is (batch x frames x tokens x vocabulary). This runs a trained RNN-T's validation on the demo's own
validation sets with and without that loss, alternating over ``--rounds`` in one process (the same machine state for
both), and checks that the WERs agree.

    .venv/bin/python benchmarks/speed_rnnt_validation.py --demo-dir demo_out --system rnnt_conditioned \
        --json benchmarks/results/speed_rnnt_validation.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from suite import num, write_results

from nemo_pc.pipelines.demo.config import RNNT_VALIDATION_BATCH_SIZE, DemoConfig
from nemo_pc.pipelines.demo.layout import REAL_DEV
from nemo_pc.pipelines.demo.pipeline import Demo

SETTINGS = {"with loss": True, "WER only": False}


def validation_sets(demo_dir: Path) -> list[Path]:
    """The demo folder's validation manifests of its ASR trainings: the curves' ``dev`` subset, then ``real_dev``
    when the folder has it."""
    demo = Demo(DemoConfig(out_dir=str(demo_dir)), log=lambda _: None)
    manifests = [demo.curve_dev()]
    real_dev = demo.manifest(REAL_DEV)
    if real_dev.is_file() and real_dev.stat().st_size:
        manifests.append(real_dev)
    return manifests


def checked_inputs(demo_dir: Path, system: str, rounds: int) -> tuple[Path, list[Path]]:
    """``models/<system>.nemo`` of ``demo_dir`` and its validation sets (:func:`validation_sets`); exits 2 with one
    line naming what is missing or wrong."""
    model_path = demo_dir / "models" / f"{system}.nemo"
    if not model_path.is_file():
        print(f"error: {model_path}: no such model", file=sys.stderr)
        sys.exit(2)
    if rounds < 1:
        print(f"error: --rounds must be 1 or more, got {rounds}", file=sys.stderr)
        sys.exit(2)
    manifests = validation_sets(demo_dir)
    if not manifests[0].is_file():
        print(f"error: {manifests[0]}: no such manifest (not a finished demo folder?)", file=sys.stderr)
        sys.exit(2)
    return model_path, manifests


def wer_metrics(results: list[dict]) -> dict[str, float]:
    """The WERs of ``trainer.validate``'s results, one dict per validation loader."""
    return {key: round(float(value), 6) for result in results for key, value in result.items() if "wer" in key}


def measure(model_path: Path, manifests: list[Path], rounds: int, precision: str, batch_size: int) -> dict:
    import lightning.pytorch as pl
    from omegaconf import open_dict

    from nemo_pc.pipelines.inference import load_asr_model

    model = load_asr_model(model_path)
    if not hasattr(model, "compute_eval_loss"):
        raise ValueError(f"{model_path}: not an RNN-T model (no compute_eval_loss)")
    val_cfg = model.cfg.validation_ds.copy()
    with open_dict(val_cfg):
        val_cfg.manifest_filepath = [str(path) for path in manifests]
        val_cfg.batch_size = batch_size
        val_cfg.shuffle = False
    model.setup_multiple_validation_data(val_cfg)
    trainer = pl.Trainer(
        accelerator="cpu", devices=1, logger=False, precision=precision, enable_progress_bar=False, max_steps=1
    )
    seconds = {name: [] for name in SETTINGS}
    wers, losses = {}, {}
    for round_index in range(rounds):
        order = list(SETTINGS) if round_index % 2 == 0 else list(reversed(SETTINGS))
        for name in order:
            model.compute_eval_loss = SETTINGS[name]
            start = time.perf_counter()
            results = trainer.validate(model, verbose=False)
            seconds[name].append(round(time.perf_counter() - start, 2))
            wers[name] = wer_metrics(results)
            losses[name] = any("loss" in key for result in results for key in result)
            print(f"round {round_index + 1}: {name} {seconds[name][-1]:.1f} s", file=sys.stderr)
    rows = [
        {
            "setting": name,
            "seconds": seconds[name],
            "median_seconds": statistics.median(seconds[name]),
            "logs_loss": losses[name],
            "wer": wers[name],
        }
        for name in SETTINGS
    ]
    full, wer_only = rows[0]["median_seconds"], rows[1]["median_seconds"]
    return {
        "rows": rows,
        "loss_share": round(1 - wer_only / full, 4) if full else None,
        "wers_agree": wers["with loss"] == wers["WER only"],
    }


def markdown(results: dict) -> str:
    lines = [
        f"`{results['system']}` validating on {', '.join(results['manifests'])} (batches of {results['batch_size']}, "
        f"{results['precision']}), {results['rounds']} rounds alternating:",
        "",
        "| setting | median seconds | each round | dev N-WER |",
        "|---|---:|---|---:|",
    ]
    for row in results["rows"]:
        wer = row["wer"].get("val_wer_normalized", row["wer"].get("val_wer"))
        lines.append(
            f"| {row['setting']} | {num(row['median_seconds'], 1)} | {', '.join(num(s, 1) for s in row['seconds'])} "
            f"| {'' if wer is None else f'{100 * wer:.1f}%'} |"
        )
    share = results["loss_share"]
    lines += ["", f"The loss is {100 * share:.0f}% of a validation; WERs agree: {results['wers_agree']}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", type=Path, required=True)
    parser.add_argument("--system", default="rnnt_conditioned")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=RNNT_VALIDATION_BATCH_SIZE)
    parser.add_argument("--precision", default=DemoConfig.precision)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    model_path, manifests = checked_inputs(args.demo_dir, args.system, args.rounds)
    results = {
        "system": args.system,
        "manifests": [path.name for path in manifests],
        "batch_size": args.batch_size,
        "precision": args.precision,
        "rounds": args.rounds,
        **measure(model_path, manifests, args.rounds, args.precision, args.batch_size),
    }
    print(markdown(results))
    if args.json:
        write_results(args.json, results)


if __name__ == "__main__":
    main()
