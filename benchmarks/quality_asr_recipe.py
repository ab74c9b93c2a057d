"""Accuracy of the demo's shared base encoder (normalized CTC) under recipe variants, side by side in one run.

Each variant trains the base encoder of ``examples/demo_pc.py`` on the corpus of an existing demo folder for
``--steps`` optimizer steps (the schedule fitted to that length) and records its dev WER curve (dev: voices no
training utterance uses). ``--jobs 2`` trains two variants at a time, one thread each, so that every variant of a
round sees the same machine load.

    .venv/bin/python benchmarks/quality_asr_recipe.py --demo-dir demo_out --steps 1000 --jobs 2 \
        --json benchmarks/results/asr_recipe.json

Variants (name: changes to the demo's base encoder):
    baseline   the demo's base before this benchmark: cased BPE 256, lr 2e-3 (cosine), batch 8, no SpecAugment,
               encoder dropout 0.1 (every variant but the ``nodrop`` ones puts the dropout back)
    lr5e-3     peak learning rate 5e-3
    vocab128   BPE vocabulary 128 (fewer, more frequent tokens)
    vocab512   BPE vocabulary 512
    specaug    SpecAugment (2 frequency masks of up to 15 bins, 2 time masks of up to 5% of the frames)
    batch16    batches of 16 (half the steps per epoch, twice the audio per step)
    vocab128_nodrop  BPE 128 and no dropout in the encoder (tried as the demo's base: worse at 3,000 steps)
    vocab128_lr3e-3  BPE 128 and peak learning rate 3e-3
    vocab128_lr1e-3  BPE 128 and peak learning rate 1e-3
    vocab128_speed   BPE 128 and NeMo's speed perturbation (rates 0.9-1.1 on 80% of the utterances)
    b16, b16_lr3e-3  the demo's base (vocab128_speed) with batches of 16, peak lr 2e-3 or 3e-3
    whisper*   Whisper tiny.en's pretrained encoder (backbone=whisper_tiny) with vocab128_speed's data: peak lr 5e-4
               (``whisper``), 1e-4, 2e-3; 3e-4 on the encoder and 2e-3 on the head (``whisper_groups``); 40 ms frames
               (``whisper_stack2``); the front end and 2 of 4 blocks frozen (``whisper_frozen2``) or all of them
               (``whisper_frozen``); random weights (``whisper_random``)

``--hours H`` trains on more audio: the train split of an H-hour corpus of the same seed (built once under the work
folder), while dev and the scored splits stay the demo folder's. The same seed holds out the same voices and
chapters, and the run stops if the larger corpus's train split reads any voice or chapter of the demo's dev or test:

    .venv/bin/python benchmarks/quality_asr_recipe.py --demo-dir demo_out --hours 6 --variants vocab128_speed \
        --steps 3000 --jobs 1 --json benchmarks/results/asr_hours6.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from suite import variant_rounds, write_results

from nemo_pc.parts.manifest import write_text_atomic
from nemo_pc.pipelines.demo.config import DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo

DROPOUT = ["model.encoder.dropout=0.1", "model.encoder.dropout_pre_encoder=0.1", "model.encoder.dropout_att=0.1"]
VARIANTS = {
    "baseline": {},
    "lr5e-3": {"overrides": ["model.optim.lr=0.005"]},
    "vocab128": {"vocab_size": 128},
    "vocab512": {"vocab_size": 512},
    "specaug": {
        "overrides": [
            "model.spec_augment={_target_:nemo.collections.asr.modules.SpectrogramAugmentation,"
            "freq_masks:2,freq_width:15,time_masks:2,time_width:0.05}"
        ]
    },
    "batch16": {"base_batch_size": 16},
    "vocab128_nodrop": {
        "vocab_size": 128,
        "overrides": [
            "model.encoder.dropout=0.0",
            "model.encoder.dropout_pre_encoder=0.0",
            "model.encoder.dropout_att=0.0",
        ],
    },
    "vocab128_lr3e-3": {"vocab_size": 128, "overrides": ["model.optim.lr=0.003"]},
    "vocab128_lr1e-3": {"vocab_size": 128, "overrides": ["model.optim.lr=0.001"]},
    "vocab128_speed": {"vocab_size": 128, "base_speed_perturb": 0.8},
    # the demo's base (BPE 128, speed perturbation) with batches of 16: run it with half the --steps of the batch-8
    # rows for the same audio; lr 2e-3 as the demo, or 3e-3 (larger batches often take a larger step)
    "b16": {"vocab_size": 128, "base_speed_perturb": 0.8, "base_batch_size": 16},
    "b16_lr3e-3": {
        "vocab_size": 128,
        "base_speed_perturb": 0.8,
        "base_batch_size": 16,
        "overrides": ["model.optim.lr=0.003"],
    },
}
# The pretrained backbone (configs/*/backbone/whisper_tiny.yaml: Whisper tiny.en's encoder, 4 x 384, 20 ms frames)
# under the demo base's data recipe (BPE 128, speed perturbation), with a CTC head on top.
WHISPER = {"vocab_size": 128, "base_speed_perturb": 0.8, "backbone": "whisper_tiny"}
VARIANTS.update(
    {
        "whisper": {**WHISPER, "overrides": ["model.optim.lr=0.0005"]},
        "whisper_lr1e-4": {**WHISPER, "overrides": ["model.optim.lr=0.0001"]},
        "whisper_lr2e-3": {**WHISPER, "overrides": ["model.optim.lr=0.002"]},
        # layer-wise rates: the new head at 2e-3, the pretrained encoder at 3e-4 (NeMo's optim_param_groups)
        "whisper_groups": {
            **WHISPER,
            "overrides": ["model.optim.lr=0.002", "+model.optim_param_groups.encoder.lr=0.0003"],
        },
        "whisper_stack2": {**WHISPER, "overrides": ["model.optim.lr=0.0005", "model.encoder.stack=2"]},
        "whisper_frozen2": {**WHISPER, "overrides": ["model.optim.lr=0.0005", "model.encoder.frozen_layers=2"]},
        "whisper_frozen": {**WHISPER, "overrides": ["model.optim.lr=0.002", "model.encoder.frozen_layers=-1"]},
        # the same architecture from random weights: what the pretrained weights themselves buy
        "whisper_random": {**WHISPER, "overrides": ["model.optim.lr=0.002", "model.encoder.pretrained=null"]},
    }
)


def _held_out(corpus: Path, splits: tuple[str, ...]) -> tuple[set[str], set[tuple[int, str]]]:
    """Voices (``engine:voice``, from ``SYNTH.jsonl``) and chapters (book id, title, from ``CHAPTERS.TXT``) that the
    named splits of a synthetic corpus read."""
    from nemo_pc.data.recipes.books import read_chapters_txt
    from nemo_pc.parts.manifest import iter_manifest, require_text

    synth = corpus / "SYNTH.jsonl"
    voices = {
        require_text(entry, "voice", synth, line)
        for line, entry in iter_manifest(synth)
        if require_text(entry, "split", synth, line) in splits
    }
    chapters = read_chapters_txt(corpus / "CHAPTERS.TXT").values()
    return voices, {(info.book_id, info.chapter_title) for info in chapters if info.subset in splits}


def shared_with_held_out(corpus: Path, other: Path) -> list[str]:
    """Voices and chapters that ``other``'s train split reads and ``corpus``'s dev or test split reads too."""
    voices, chapters = _held_out(corpus, ("dev", "test"))
    train_voices, train_chapters = _held_out(other, ("train",))
    return sorted(voices & train_voices) + [f"{book} {title}" for book, title in sorted(chapters & train_chapters)]


def larger_corpus(demo_dir: Path, work: Path, hours: float, jobs: int) -> Path:
    """A demo-like folder whose train split comes from an ``hours`` corpus and whose dev/test are ``demo_dir``'s."""
    source = work / f"corpus_{hours:g}h"
    config = json.loads((demo_dir / "config.json").read_text())
    # only its train split is used: no test_seen (a share changes no other split of the same seed)
    larger = DemoConfig(out_dir=str(source), hours=hours, seed=config["seed"], num_jobs=jobs, seen_test_share=0)
    Demo(larger, log=_stderr).corpus()
    shared = shared_with_held_out(demo_dir / "corpus", source / "corpus")
    if shared:
        raise SystemExit(f"{source}: its train split reads what {demo_dir}'s dev/test read: {shared[:5]}")
    mixed = work / f"data_{hours:g}h" / "manifests"
    mixed.mkdir(parents=True, exist_ok=True)
    for split, origin in (("train", source), ("dev", demo_dir), ("test", demo_dir)):
        link = mixed / f"{split}.json"
        link.unlink(missing_ok=True)  # a link left by another demo folder's run
        link.symlink_to((origin / "manifests" / f"{split}.json").resolve())
    return mixed.parent


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def run_one(variant: str, demo_dir: Path, work: Path, steps: int, jobs: int) -> dict:
    """Trains one variant in this process; returns its row."""
    spec = VARIANTS[variant]
    folder = work / variant
    folder.mkdir(parents=True, exist_ok=True)
    manifests = folder / "manifests"
    if not manifests.exists():
        manifests.symlink_to((demo_dir / "manifests").resolve())
    config = DemoConfig(
        out_dir=str(folder),
        base_steps=steps,
        vocab_size=spec.get("vocab_size", 256),
        base_batch_size=spec.get("base_batch_size", 8),
        base_speed_perturb=spec.get("base_speed_perturb", 0.0),
        num_jobs=jobs,
        curve_points=4,
        backbone=spec.get("backbone", "fastconformer"),
        extra={"base": [*([] if "nodrop" in variant or "backbone" in spec else DROPOUT), *spec.get("overrides", [])]},
    )
    demo = Demo(config, log=lambda message: print(message, file=sys.stderr))
    demo.tokenizers()
    demo.train_base()  # kept when the variant's folder has its model already
    stats = json.loads(demo.model_path("base").with_suffix(".json").read_text())
    return {
        "variant": variant,
        "steps": steps,
        "seconds": stats["seconds"],
        "curve": [{"step": p["step"], "dev_wer": p["val_wer"], "dev_loss": p["val_loss"]} for p in stats["curve"]],
        "dev_wer": stats["curve"][-1]["val_wer"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", default="demo_out", help="a demo output with manifests/ (its corpus)")
    parser.add_argument("--work-dir", default=None, help="where the variants train (default: DEMO_DIR/.recipe)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2, help="variants trained at once (one thread each)")
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--collect",
        action="store_true",
        help="train nothing: tabulate the variants found in the work folder, unfinished ones from their logs",
    )
    parser.add_argument("--hours", type=float, default=None, help="train on the train split of an H-hour corpus")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    demo_dir = Path(args.demo_dir)
    work = Path(args.work_dir) if args.work_dir else demo_dir / ".recipe"
    if args.one:
        row = run_one(args.one, demo_dir, work, args.steps, 1 if args.jobs > 1 else 2)
        write_text_atomic(work / args.one / "row.json", json.dumps(row) + "\n")
        return
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {unknown}; choose from {sorted(VARIANTS)}")
    if args.steps < 4 or args.jobs < 1:
        parser.error("--steps must be 4 or more and --jobs 1 or more")
    if not (demo_dir / "manifests" / "train.json").is_file():
        parser.error(f"{demo_dir}: no manifests/train.json (run examples/demo_pc.py first)")
    if args.hours is not None:
        if args.hours <= 0 or not (demo_dir / "config.json").is_file():
            parser.error(f"--hours must be positive, and {demo_dir} a demo folder with config.json and corpus/")
        work = work / f"hours{args.hours:g}"  # its own variant folders, apart from those of the demo's corpus
        from nemo_pc.parts.manifest import ManifestError

        try:
            demo_dir = larger_corpus(demo_dir, work, args.hours, 2)
        except (ManifestError, OSError) as err:  # a corpus file missing or bad: named with its line
            parser.error(f"--hours: {err}")
    if args.collect:
        rows = [row for row in (collect(work / v, v) for v in variants) if row is not None]
        _report(rows, args)
        return
    threads = 1 if args.jobs > 1 else os.cpu_count() or 1
    arguments = ["--demo-dir", str(demo_dir), "--work-dir", str(work), "--steps", str(args.steps)]
    rows = []
    for round_, row in variant_rounds(
        __file__, variants, work, [*arguments, "--jobs", str(args.jobs)], args.jobs, threads
    ):
        row["round"] = round_
        rows.append(row)
        print(json.dumps(row), flush=True)
    _report(rows, args)


def collect(folder: Path, variant: str) -> dict | None:
    """The row of a variant trained earlier; a run that was stopped is read from its TensorBoard log."""
    row_file = folder / "row.json"
    if row_file.is_file():  # written before the round is known
        return {"round": None, **json.loads(row_file.read_text())}
    stats_file = folder / "models" / "base.json"
    if stats_file.is_file():
        stats = json.loads(stats_file.read_text())
        curve = [{"step": p["step"], "dev_wer": p["val_wer"], "dev_loss": p["val_loss"]} for p in stats["curve"]]
        return {
            "variant": variant,
            "steps": stats["steps"],
            "seconds": stats["seconds"],
            "curve": curve,
            "dev_wer": curve[-1]["dev_wer"],
            "round": None,
        }
    logs = sorted(folder.glob("logs/base/*/events.out.tfevents.*"))
    if not logs:
        return None
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(logs[-1]))
    events.Reload()
    if "val_wer" not in events.Tags()["scalars"]:
        return None
    losses = {e.step: e.value for e in events.Scalars("val_loss")}
    curve = [
        {"step": e.step + 1, "dev_wer": round(e.value, 5), "dev_loss": round(losses.get(e.step, float("nan")), 5)}
        for e in events.Scalars("val_wer")
    ]
    last = events.Scalars("train_loss")[-1].step + 1
    return {
        "variant": variant,
        "steps": None,
        "stopped_at_step": last,
        "seconds": None,
        "curve": curve,
        "dev_wer": None,
        "round": None,
    }


def recipe_table(rows: list[dict]) -> list[str]:
    """The variants as markdown rows: seconds, the dev WER curve and the last dev WER (or where a run stopped)."""
    lines = ["| variant | round | seconds | dev WER curve (step: %) | dev WER |", "|---|---:|---:|---|---:|"]
    for row in rows:
        curve = ", ".join(f"{p['step']}: {100 * p['dev_wer']:.1f}" for p in row["curve"])
        final = f"{100 * row['dev_wer']:.1f}" if row["dev_wer"] is not None else f"stopped at {row['stopped_at_step']}"
        seconds = f"{row['seconds']:.0f}" if row["seconds"] is not None else "-"
        lines.append(f"| {row['variant']} | {row['round']} | {seconds} | {curve} | {final} |")
    return lines


def _report(rows: list[dict], args: argparse.Namespace) -> None:
    print("\n" + "\n".join(recipe_table(rows)))
    if args.json:
        payload = {"demo_dir": str(args.demo_dir), "steps": args.steps, "jobs": args.jobs, "rows": rows}
        write_results(args.json, payload)


if __name__ == "__main__":
    main()
