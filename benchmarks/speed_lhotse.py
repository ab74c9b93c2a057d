"""Data-loading speed of the P&C training batches: the map-style loader against NeMo's lhotse loader.

Iterates ``--max-batches`` training batches of a demo's training manifest (no model, no training step) with each
loader and reports batches per second, audio seconds per second and the padding share of the batches (padded audio
over all audio). The first ``--warmup`` batches of each loader are not timed. Each variant runs in its own forked
process, which is killed once it has reported: lhotse's concurrent bucketing fills its buckets from a thread that
lasts as long as the data, and shar data repeats without end. Variants:

    map_bucketed      the map-style loader, ``bucketing_window=20`` (the demo's setting)
    lhotse            NeMo's lhotse loader over the same manifest, ``batch_size`` utterances, no bucketing
    lhotse_bucketed   NeMo's lhotse loader with duration buckets (``use_bucketing``, ``num_buckets``) and
                      ``batch_duration`` = ``batch_size`` x the mean utterance duration (the same audio per batch)

With ``--shar DIR`` the two lhotse variants also run from a shar export of the manifest (written there with
``nemo-pc export-shar`` when the folder does not exist yet).

    .venv/bin/python benchmarks/speed_lhotse.py --demo-dir demo_out --max-batches 200 \
        --json benchmarks/results/lhotse_speed.json
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from pathlib import Path
from queue import Empty

from suite import Stopwatch, write_results


def variants(manifest: Path, batch_size: int, mean_duration: float, buckets: int, shar: Path | None) -> dict:
    """The data config of every variant, by name."""
    common = {"batch_size": batch_size, "shuffle": True, "sample_rate": 16000, "num_workers": 0}
    bucketed = {"use_bucketing": True, "num_buckets": buckets, "batch_duration": batch_size * mean_duration}
    lhotse = {**common, "use_lhotse": True, "seed": 0, "shard_seed": 0}
    configs = {
        "map_bucketed": {**common, "manifest_filepath": str(manifest), "bucketing_window": 20},
        "lhotse": {**lhotse, "manifest_filepath": str(manifest)},
        "lhotse_bucketed": {**lhotse, **bucketed, "manifest_filepath": str(manifest)},
    }
    if shar is not None:
        configs["shar"] = {**lhotse, "shar_path": str(shar)}
        configs["shar_bucketed"] = {**lhotse, **bucketed, "shar_path": str(shar)}
    return configs


def measure(loader, max_batches: int, warmup: int, sample_rate: int = 16000) -> dict:
    """Times ``max_batches`` batches after ``warmup`` ones timed apart (fewer where the loader ends first): the
    first batches of a lhotse loader wait for its shuffle buffer or buckets to fill."""
    with Stopwatch() as warming:
        batches = iter(loader)
        for _ in range(warmup):
            next(batches, None)
    warmup_seconds = warming.seconds
    count, audio, padded = 0, 0.0, 0.0
    with Stopwatch() as watch:
        for batch in batches:
            lengths = batch.audio_len.double() / sample_rate
            audio += float(lengths.sum())
            padded += float(lengths.max()) * len(lengths)
            count += 1
            if count == max_batches:
                break
    seconds = watch.seconds
    return {
        "warmup_seconds": round(warmup_seconds, 3),
        "batches": count,
        "seconds": round(seconds, 3),
        "batches_per_s": round(count / seconds, 2) if seconds else None,
        "audio_s_per_s": round(audio / seconds, 1) if seconds else None,
        "padding_share": round(1.0 - audio / padded, 4) if padded else None,
    }


def _measure_in_child(config: dict, tokenizer, max_batches: int, warmup: int, queue) -> None:
    from nemo_pc.data.datasets.pc_dataset import pc_dataloader_from_config

    try:
        queue.put(measure(pc_dataloader_from_config(config, tokenizer), max_batches, warmup))
    except Exception as err:  # noqa: BLE001 - reported to the parent, which raises it
        queue.put({"error": f"{type(err).__name__}: {err}"})


def run_variant(name: str, config: dict, tokenizer, max_batches: int, warmup: int) -> dict:
    """:func:`measure` of one variant's loader in a forked process, killed once it has reported."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=_measure_in_child, args=(config, tokenizer, max_batches, warmup, queue))
    process.start()
    try:
        while True:
            try:
                result = queue.get(timeout=1.0)
                break
            except Empty:
                if not process.is_alive():
                    raise RuntimeError(f"{name}: ended without a result (exit code {process.exitcode})") from None
    finally:
        process.kill()
        process.join()
    if "error" in result:
        raise RuntimeError(f"{name}: {result['error']}")
    return result


def _tokenizer(demo_dir: Path, tokenizer_dir: str | None):
    from nemo.collections.common.tokenizers import SentencePieceTokenizer

    folder = Path(tokenizer_dir) if tokenizer_dir else next(iter(sorted((demo_dir / "tokenizers").glob("*/"))), None)
    if folder is None or not (folder / "tokenizer.model").is_file():
        raise SystemExit(f"no tokenizer.model under {tokenizer_dir or demo_dir / 'tokenizers'}")
    return SentencePieceTokenizer(str(folder / "tokenizer.model"))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", default="demo_out", help="a demo folder (manifests/, tokenizers/)")
    parser.add_argument("--manifest", default=None, help="default: DEMO_DIR/manifests/train.json")
    parser.add_argument("--tokenizer-dir", default=None, help="default: the first folder under DEMO_DIR/tokenizers")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--num-buckets", type=int, default=10)
    parser.add_argument("--max-batches", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--shar", default=None, help="also time the lhotse variants from this shar folder")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)

    from nemo_pc.data.recipes.shar import export_shar
    from nemo_pc.parts.manifest import read_manifest

    demo_dir = Path(args.demo_dir)
    manifest = Path(args.manifest) if args.manifest else demo_dir / "manifests" / "train.json"
    durations = [float(entry["duration"]) for entry in read_manifest(manifest)]
    shar = Path(args.shar) if args.shar else None
    if shar is not None:
        export_shar(manifest, shar)
    tokenizer = _tokenizer(demo_dir, args.tokenizer_dir)
    configs = variants(manifest, args.batch_size, sum(durations) / len(durations), args.num_buckets, shar)
    results = {
        "manifest": str(manifest),
        "utterances": len(durations),
        "batch_size": args.batch_size,
        "max_batches": args.max_batches,
        "warmup": args.warmup,
        "variants": {},
    }
    for name, config in configs.items():
        results["variants"][name] = {
            **run_variant(name, config, tokenizer, args.max_batches, args.warmup),
            "config": config,
        }
        row = results["variants"][name]
        print(
            f"{name:16s} {row['batches']:5d} batches  {row['batches_per_s']} batches/s  "
            f"{row['audio_s_per_s']} audio s/s  padding {row['padding_share']}",
            file=sys.stderr,
        )
    if args.json:
        write_results(args.json, results)
    return results


if __name__ == "__main__":
    main()
