"""A training step of the AED's transducer head (``model.transducer``) with the whole lattice and with the pruned
RNN-T loss (``transducer.prune``), side by side on the same batches of a training manifest.

Each batch runs once per setting, in turn: the transducer's loss forward, its backward and an AdamW step (learning
rate 0, so the weights every setting sees stay the same; the moments still update, as in training), each timed. The
loss is reported as computed: with ``prune`` it adds ``simple_scale`` times the simple joint's loss. The frozen
encoder's states come from the model's cache, filled by a first pass over the batches that is not timed, as in the
demo's later epochs. Data loading and Lightning are not timed.

    .venv/bin/python benchmarks/speed_transducer_prune.py --model demo_out/models/rnnt_conditioned.nemo \\
        --manifest demo_out/manifests/train.json --prune 0,4,8 --batches 12 \\
        --json benchmarks/results/transducer_prune_speed.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from suite import write_results

PARTS = ("forward", "backward", "optimizer")


def timed_step(model, optimizer, batch, prune: int) -> tuple[dict[str, float], float]:
    """Seconds of the loss forward, its backward and the optimizer step on ``batch`` with
    ``transducer.prune=prune``, and the loss."""
    from omegaconf import open_dict

    with open_dict(model.cfg):
        model.cfg.transducer.prune = prune
    clock = time.perf_counter
    start = clock()
    loss, _, _ = model.transducer_batch_loss(batch)
    forward_at = clock()
    loss.backward()
    backward_at = clock()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    parts = {"forward": forward_at - start, "backward": backward_at - forward_at, "optimizer": clock() - backward_at}
    return parts, float(loss.detach())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="an AED .nemo with a transducer head (the demo's RNN-Ts)")
    parser.add_argument("--manifest", required=True, help="the training manifest its batches come from")
    parser.add_argument("--prune", default="0,4,8", help="comma-separated settings; 0: the whole lattice")
    parser.add_argument("--batches", type=int, default=12, help="batches timed per setting")
    parser.add_argument("--batch-size", type=int, default=0, help="0: the model's own train_ds.batch_size")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    try:
        settings = [int(value) for value in args.prune.split(",")]
    except ValueError:
        parser.error(f"--prune: comma-separated integers, got {args.prune!r}")
    for path in (args.model, args.manifest):
        if not Path(path).is_file():
            parser.error(f"{path}: no such file")
    if args.batches < 1 or any(value < 0 for value in settings):
        parser.error("--batches must be 1 or more and --prune settings 0 or more")

    from omegaconf import open_dict

    from nemo_pc.pipelines.inference import load_asr_model

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = load_asr_model(args.model)
    if getattr(model, "transducer_joint", None) is None:
        raise SystemExit(f"error: {args.model}: not an AED with a transducer head (model.transducer)")
    cfg = model.cfg.train_ds.copy()
    with open_dict(cfg):
        cfg.manifest_filepath, cfg.num_workers = args.manifest, 0
        cfg.batch_size = args.batch_size or cfg.batch_size
        cfg.pop("augmentor", None)
        cfg.pop("speed_perturb", None)
    model.setup_training_data(cfg)
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=0.0, weight_decay=0.01, foreach=True)
    batches = []
    for batch in model._train_dl:
        batches.append(batch)
        with torch.no_grad():
            model.transducer_states(batch)  # fills the encoder-state cache: not timed
        if len(batches) == args.batches + 1:
            break
    if len(batches) < 2:
        raise SystemExit(
            f"error: {args.manifest}: {len(batches)} batch(es); the timing needs a warm-up batch and one more"
        )
    timed_step(model, optimizer, batches[0], settings[0])  # warm-up
    sums = {value: dict.fromkeys((*PARTS, "loss"), 0.0) for value in settings}
    for index, batch in enumerate(batches[1:], 1):
        for value in settings:
            parts, loss = timed_step(model, optimizer, batch, value)
            for part, seconds in {**parts, "loss": loss}.items():
                sums[value][part] += seconds
        print(f"batch {index}/{len(batches) - 1}", file=sys.stderr)
    timed = len(batches) - 1
    seconds = {}
    for value, sums_of in sums.items():
        row = {part: round(sums_of[part] / timed, 4) for part in PARTS}
        row["step"] = round(sum(sums_of[part] for part in PARTS) / timed, 4)
        row["mean_loss"] = round(sums_of["loss"] / timed, 4)
        seconds[str(value)] = row
    base = seconds[str(settings[0])]["step"]
    for value in settings:
        seconds[str(value)]["ratio_to_first"] = round(seconds[str(value)]["step"] / base, 3)
    results = {
        "model": args.model,
        "settings": {"batch_size": cfg.batch_size, "threads": args.threads, "batches_timed": timed, "prune": settings},
        "seconds": seconds,
    }
    write_results(args.json, results, sys.argv if argv is None else ["speed_transducer_prune.py", *argv])
    print(seconds, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
