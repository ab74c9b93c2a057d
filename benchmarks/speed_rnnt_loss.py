"""RNN-T loss on CPU: nemo_pc's ``scan`` loss against NeMo's numba loss, side by side on the same joint output.

Times forward + backward (median of ``--repeats``, after one warm-up that also compiles numba) and checks that the
two losses agree. Prints the ratio and writes JSON.

    .venv/bin/python benchmarks/speed_rnnt_loss.py --batch 16 --frames 70 --labels 50 --vocab 257
"""

from __future__ import annotations

import argparse
import json

import torch
from suite import time_runs, write_results


def _time(loss_fn, logits: torch.Tensor, repeats: int) -> tuple[float, torch.Tensor]:
    """Median seconds of forward + backward over ``repeats`` runs after one warm-up, and the loss."""

    def run() -> torch.Tensor:
        value = loss_fn(logits)
        value.sum().backward()
        return value

    def clear() -> None:
        logits.grad = None

    timing, value = time_runs(run, repeats, warmup=1, before=clear)
    return timing.median, value.detach()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--frames", type=int, default=70)
    parser.add_argument("--labels", type=int, default=50)
    parser.add_argument("--vocab", type=int, default=257, help="including blank")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    from nemo.collections.asr.losses.rnnt import RNNTLoss

    from nemo_pc.losses import rnnt_loss_scan

    torch.manual_seed(0)
    shape = (args.batch, args.frames, args.labels + 1, args.vocab)
    logits = torch.randn(*shape, requires_grad=True)
    targets = torch.randint(0, args.vocab - 1, (args.batch, args.labels))
    frames = torch.full((args.batch,), args.frames)
    labels = torch.full((args.batch,), args.labels)
    blank = args.vocab - 1
    numba = RNNTLoss(num_classes=blank, reduction=None)
    scan_s, scan_value = _time(lambda x: rnnt_loss_scan(x, targets, frames, labels, blank), logits, args.repeats)
    numba_s, numba_value = _time(
        lambda x: numba(log_probs=x, targets=targets, input_lengths=frames, target_lengths=labels),
        logits,
        args.repeats,
    )
    result = {
        "shape": list(shape),
        "threads": torch.get_num_threads(),
        "scan_seconds": round(scan_s, 4),
        "numba_seconds": round(numba_s, 4),
        "numba_over_scan": round(numba_s / scan_s, 1),
        "max_abs_difference": float((scan_value - numba_value).abs().max()),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        write_results(args.json, result)


if __name__ == "__main__":
    main()
