"""Where a P&C RNN-T training step's time goes on CPU: the encoder, the predictor and joint, the loss and their
backward, on the same batches of a training manifest, with the encoder frozen (the first half of the demo's RNN-T
fine-tune) and trained (the second half).

Each batch runs twice, side by side: the encoder frozen (forward only) and trained (forward and backward). The
predictor and joint forward, the loss forward and the backward of the joint and loss are timed apart on the same
pass; every mode row of an utterance counts (a batch of 8 gives the joint 16 rows: one per mode). bf16 autocast as the
demo's ``trainer.precision=bf16-mixed``; the optimizer step, data loading and Lightning are not timed. The first
batch is a warm-up.

    .venv/bin/python benchmarks/speed_rnnt_step.py --model demo_out/models/rnnt_dual.nemo \\
        --manifest demo_out/manifests/train.json --batches 21 --json benchmarks/results/rnnt_step.json
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from suite import write_results

PARTS = ("encoder", "predictor_joint", "loss", "joint_loss_backward")


def step_parts(model, batch, train_encoder: bool) -> tuple[dict[str, float], tuple[int, ...]]:
    """Seconds of each part of one training step on ``batch`` and the joint's output shape ``(R, T, U + 1, V + 1)``;
    ``encoder`` is its forward, and with ``train_encoder`` its backward too."""
    for parameter in model.encoder.parameters():
        parameter.requires_grad_(train_encoder)
    from nemo_pc.pipelines.train import cpu_bf16_lstm_works

    clock = time.perf_counter
    # float32 where this CPU's oneDNN has no bf16 LSTM (as the demo's training then runs)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cpu_bf16_lstm_works()):
        start = clock()
        encoded, encoded_len, rows = model.encode_rows(batch)
        encoded_at = clock()
        joint_in = encoded.detach().requires_grad_(True) if train_encoder else encoded
        scores = model.joint_scores(joint_in, rows)
        joint_at = clock()
        loss, _ = model.loss(
            log_probs=scores,
            targets=rows.targets,
            input_lengths=encoded_len,
            target_lengths=rows.target_len,
            modes=rows.modes,
            active=rows.active,
        )
        loss_at = clock()
    loss.backward()
    backward_at = clock()
    encoder = encoded_at - start
    if train_encoder:
        encoded.backward(joint_in.grad)
        encoder += clock() - backward_at
    model.zero_grad(set_to_none=True)
    parts = {
        "encoder": encoder,
        "predictor_joint": joint_at - encoded_at,
        "loss": loss_at - joint_at,
        "joint_loss_backward": backward_at - loss_at,
    }
    return parts, tuple(scores.shape)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a P&C RNN-T .nemo (e.g. the demo's rnnt_dual.nemo)")
    parser.add_argument("--manifest", required=True, help="the training manifest its batches come from")
    parser.add_argument("--batches", type=int, default=21, help="batches timed, the first a warm-up")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    if args.batches < 2:
        parser.error("--batches must be 2 or more (the first is a warm-up)")

    from omegaconf import open_dict

    from nemo_pc.pipelines.inference import load_asr_model

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = load_asr_model(args.model)
    if not hasattr(model, "joint_scores"):
        raise SystemExit(f"error: {args.model}: not a P&C RNN-T model")
    cfg = model.cfg.train_ds.copy()
    with open_dict(cfg):
        cfg.manifest_filepath, cfg.batch_size, cfg.num_workers = args.manifest, args.batch_size, 0
        cfg.pop("augmentor", None)
    model.setup_training_data(cfg)
    model.train()
    batches = iter(model._train_dl)
    sums = {phase: dict.fromkeys(PARTS, 0.0) for phase in ("frozen", "trained")}
    rows, frames, labels = [], [], []
    for index in range(args.batches):
        batch = next(batches)
        for phase in sums:
            parts, shape = step_parts(model, batch, train_encoder=phase == "trained")
            if index:  # the first batch warms up
                for part, seconds in parts.items():
                    sums[phase][part] += seconds
        if index:
            rows.append(shape[0])
            frames.append(shape[1])
            labels.append(shape[2] - 1)
        print(f"batch {index + 1}/{args.batches}: joint {shape}", file=sys.stderr)
    timed = args.batches - 1
    mean = {phase: {part: round(s / timed, 4) for part, s in parts.items()} for phase, parts in sums.items()}
    for phase in mean:
        mean[phase]["step"] = round(sum(mean[phase].values()), 4)
        mean[phase]["share"] = {part: round(mean[phase][part] / mean[phase]["step"], 3) for part in PARTS}
    results = {
        "model": args.model,
        "settings": {"batch_size": args.batch_size, "threads": args.threads, "batches_timed": timed},
        "joint_rows": sum(rows) / timed,
        "mean_frames": round(sum(frames) / timed, 1),
        "mean_labels": round(sum(labels) / timed, 1),
        "seconds": mean,
    }
    write_results(args.json, results, sys.argv if argv is None else ["speed_rnnt_step.py", *argv])
    print(mean, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
