"""A training step of the AED's transducer head (``model.transducer``) with the whole lattice and with the pruned
RNN-T loss (``transducer.prune``), or under other ``transducer`` settings (``--settings``: the copies' embeddings or
lower blocks frozen, or torch's AdamW implementation, ``adamw=foreach`` or ``adamw=fused``), side by side on the same
batches of a training manifest.

Each batch runs once per setting, in turn: the transducer's loss forward, its backward and an AdamW step (learning
rate 0, so the weights every setting sees stay the same; the moments still update, as in training), each timed. The
loss is reported as computed: with ``prune`` it adds ``simple_scale`` times the simple joint's loss. The frozen
encoder's states come from the model's cache, filled by a first pass over the batches that is not timed, as in the
demo's later epochs. Data loading and Lightning are not timed.

    .venv/bin/python benchmarks/speed_transducer_prune.py --model demo_out/models/rnnt_conditioned.nemo \\
        --manifest demo_out/manifests/train.json --prune 0,4,8 --batches 12 \\
        --json benchmarks/results/transducer_prune_speed.json
    .venv/bin/python benchmarks/speed_transducer_prune.py --model demo_out/models/rnnt_conditioned.nemo \\
        --manifest demo_out/manifests/train.json \\
        --settings "prune=0;freeze_embedding=true;freeze_embedding=true,frozen_layers=2" \\
        --json benchmarks/results/transducer_frozen_speed.json
    .venv/bin/python benchmarks/speed_transducer_prune.py --model demo_out/models/aed_prompt_finetuned.nemo \\
        --head conditioned --manifest demo_out/manifests/train.json --settings "adamw=foreach;adamw=fused" \\
        --json benchmarks/results/transducer_adamw_speed.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from suite import write_results

PARTS = ("forward", "backward", "optimizer")
# The one setting that is not a ``transducer`` key: the AdamW implementation of the step (``foreach`` unless given).
ADAMW_KEY, ADAMW_KINDS = "adamw", ("foreach", "fused")


def parse_settings(text: str) -> list[dict]:
    """``key=value[,key=value];...`` as one dict of ``transducer`` keys per setting (integers, floats, true/false),
    and ``adamw`` (one of :data:`ADAMW_KINDS`).

    Raises:
        ValueError: an empty setting, an item without ``=``, a key the transducer does not have, or another AdamW.
    """
    import yaml

    from nemo_pc.models.mixins.aed_transducer import DEFAULTS

    settings = []
    for part in text.split(";"):
        setting = {}
        for item in filter(None, part.split(",")):
            key, sep, value = item.partition("=")
            if key == ADAMW_KEY and sep:
                if value not in ADAMW_KINDS:
                    raise ValueError(f"{item!r}: {ADAMW_KEY} must be one of {ADAMW_KINDS}")
                setting[key] = value
                continue
            if not sep or key not in DEFAULTS:
                raise ValueError(f"{item!r}: expected KEY=VALUE with KEY among {sorted(DEFAULTS)}")
            setting[key] = yaml.safe_load(value)  # integers, floats, true/false as a Hydra override reads them
        if not setting:
            raise ValueError(f"an empty setting in {text!r}")
        settings.append(setting)
    return settings


def label(setting: dict) -> str:
    """A setting's row name: the prune value alone for ``--prune``, else its ``key=value`` items."""
    if set(setting) == {"prune"}:
        return str(setting["prune"])
    return ",".join(f"{key}={value}" for key, value in setting.items())


def apply(model, setting: dict, base: dict) -> None:
    """The model's ``transducer`` options as ``base`` updated by ``setting``, and its trainable weights as they say."""
    from omegaconf import open_dict

    with open_dict(model.cfg):
        for key, value in (base | setting).items():
            if key != ADAMW_KEY:
                model.cfg.transducer[key] = value
    model._freeze_all_but_transducer()


def add_head(model, kind: str) -> None:
    """A new transducer head of ``kind`` (the packaged ``transducer=<kind>`` group) on an AED without one, started
    from its decoder."""
    from omegaconf import open_dict

    from nemo_pc.parts.configs import compose_config

    head = compose_config("aed", [f"transducer={kind}"]).model.transducer
    with open_dict(model.cfg):
        model.cfg.transducer = head
    model.setup_transducer()


def timed_step(model, optimizer, batch, prune: int | None = None) -> tuple[dict[str, float], float]:
    """Seconds of the loss forward, its backward and the optimizer step on ``batch`` (with ``transducer.prune=prune``
    unless None), and the loss."""
    from omegaconf import open_dict

    if prune is not None:
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
    parser.add_argument(
        "--head",
        choices=("conditioned", "dual"),
        default=None,
        help="time a new head of this kind (configs/aed/transducer/), started from the AED's decoder, on an AED "
        "without one (e.g. the demo's models/aed_prompt_finetuned.nemo): its step costs what a trained head's does",
    )
    parser.add_argument("--manifest", required=True, help="the training manifest its batches come from")
    parser.add_argument("--prune", default="0,4,8", help="comma-separated settings; 0: the whole lattice")
    parser.add_argument(
        "--settings",
        default=None,
        help="';'-separated settings of comma-separated transducer KEY=VALUE items, instead of --prune (the first: "
        "the ratios' base; keys a setting leaves out keep the model's values), and adamw=foreach or adamw=fused "
        "(torch's AdamW of the step; foreach unless given)",
    )
    parser.add_argument("--batches", type=int, default=12, help="batches timed per setting")
    parser.add_argument("--batch-size", type=int, default=0, help="0: the model's own train_ds.batch_size")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    try:
        settings = [{"prune": int(value)} for value in args.prune.split(",")]
    except ValueError:
        parser.error(f"--prune: comma-separated integers, got {args.prune!r}")
    if args.settings is not None:
        try:
            settings = parse_settings(args.settings)
        except ValueError as err:
            parser.error(f"--settings: {err}")
    for path in (args.model, args.manifest):
        if not Path(path).is_file():
            parser.error(f"{path}: no such file")
    if args.batches < 1 or any(setting.get("prune", 0) < 0 for setting in settings):
        parser.error("--batches must be 1 or more and --prune settings 0 or more")

    from omegaconf import open_dict

    from nemo_pc.pipelines.inference import load_asr_model

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = load_asr_model(args.model)
    if args.head and getattr(model, "transducer_joint", None) is None:
        add_head(model, args.head)
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
    keys = {key for setting in settings for key in setting} - {ADAMW_KEY}
    base = {key: model.cfg.transducer.get(key) for key in keys}
    optimizers = []  # one per setting, over the weights it trains
    for setting in settings:
        apply(model, setting, base)
        trainable = [p for p in model.parameters() if p.requires_grad]
        kind = setting.get(ADAMW_KEY, "foreach")
        optimizers.append(torch.optim.AdamW(trainable, lr=0.0, weight_decay=0.01, **{kind: True}))
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
    for setting, optimizer in zip(settings, optimizers, strict=True):  # warm-up
        apply(model, setting, base)
        timed_step(model, optimizer, batches[0])
    labels = [label(setting) for setting in settings]
    sums = {name: dict.fromkeys((*PARTS, "loss"), 0.0) for name in labels}
    for index, batch in enumerate(batches[1:], 1):
        for setting, name, optimizer in zip(settings, labels, optimizers, strict=True):
            apply(model, setting, base)
            model._transducer_rng.manual_seed(index)  # every setting: the same modes and sampled tokens
            parts, loss = timed_step(model, optimizer, batch)
            for part, seconds in {**parts, "loss": loss}.items():
                sums[name][part] += seconds
        print(f"batch {index}/{len(batches) - 1}", file=sys.stderr)
    timed = len(batches) - 1
    seconds = {}
    for name, sums_of in sums.items():
        row = {part: round(sums_of[part] / timed, 4) for part in PARTS}
        row["step"] = round(sum(sums_of[part] for part in PARTS) / timed, 4)
        row["mean_loss"] = round(sums_of["loss"] / timed, 4)
        seconds[name] = row
    first = seconds[labels[0]]["step"]
    for name, optimizer in zip(labels, optimizers, strict=True):
        seconds[name]["ratio_to_first"] = round(seconds[name]["step"] / first, 3)
        seconds[name]["trainable_weights"] = sum(
            p.numel() for group in optimizer.param_groups for p in group["params"]
        )
    results = {
        "model": args.model,
        "settings": {
            "batch_size": cfg.batch_size,
            "threads": args.threads,
            "batches_timed": timed,
            "prune": [setting["prune"] for setting in settings if set(setting) == {"prune"}],
            "transducer": settings,
        },
        "seconds": seconds,
    }
    write_results(args.json, results, sys.argv if argv is None else ["speed_transducer_prune.py", *argv])
    print(seconds, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
