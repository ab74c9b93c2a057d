"""The conditioned P&C RNN-T (or, with ``--system aed_prompt``, the attention encoder-decoder from Whisper tiny.en) at
GPU scale on one CUDA machine: corpus, training, scoring, one JSON.

Three phases, each in its own invocation if need be; each skips what an earlier run in ``--work`` finished:

    corpus    a KJV-read synthetic corpus of ``--hours`` (planned) with every core, LibriSpeech-PC manifests, the
              cased BPE tokenizer, and a dev subset for the learning curve
    train     a short probe run measures the seconds per step (and falls back to nemo_pc's scan loss if NeMo's
              CUDA loss fails there), then the FastConformer RNN-T (8x, bf16, batches of ``--batch-duration``
              seconds) trains for the steps that fill ``--train-minutes``
    evaluate  both outputs of the held-out test voices, scored; writes gpu_recipe.json and gpu_recipe_curve.png
              to ``--out`` (default ``$OUT`` when set, else the work folder)

    python benchmarks/run_gpu_recipe.py corpus train evaluate --work gpu_out
    scripts/gpu_recipe.sh run            # the same, after installing what .gpu_carry/ holds (docs/gpu.md)

The toy settings of ``tests/test_benchmark_gpu_recipe.py`` run every phase on CPU in seconds.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import time
from datetime import timedelta
from pathlib import Path

from suite import Stopwatch, write_results

from nemo_pc.pipelines.demo.report import plot_curves

PHASES = ("corpus", "train", "evaluate")
SYSTEMS = {"rnnt_conditioned": "rnnt", "aed_prompt": "aed"}  # --system: its model family


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phases", nargs="*", default=list(PHASES), help=f"some of {', '.join(PHASES)} (all)")
    parser.add_argument(
        "--system",
        default="rnnt_conditioned",
        choices=list(SYSTEMS),
        help="the conditioned RNN-T on a FastConformer, or the attention encoder-decoder from "
        "Whisper tiny.en's encoder and decoder (docs/aed.md)",
    )
    parser.add_argument("--work", default="gpu_out", help="corpus, models and predictions; a rerun resumes here")
    parser.add_argument("--out", default=os.environ.get("OUT"), help="where the JSON and PNG go ($OUT, else --work)")
    parser.add_argument("--hours", type=float, default=30.0, help="planned audio (about 80%% of it is synthesized)")
    parser.add_argument("--kjv-text", default=None, help="`bible -l0` output (.gz too), when `bible` is missing")
    parser.add_argument("--num-jobs", type=int, default=os.cpu_count() or 1, help="synthesis and loader processes")
    parser.add_argument("--vocab-size", type=int, default=256)
    parser.add_argument("--layers", type=int, default=17)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--batch-duration", type=float, default=600.0, help="seconds of audio per batch")
    parser.add_argument("--train-minutes", type=float, default=6.5, help="wall clock of the training run")
    parser.add_argument("--probe-steps", type=int, default=40, help="steps of the run that times a step")
    parser.add_argument("--curve-points", type=int, default=8, help="dev validations during training")
    parser.add_argument("--dev-utterances", type=int, default=400, help="dev utterances of each validation")
    parser.add_argument("--loss", default="auto", help="RNN-T loss: auto (NeMo's numba on GPU), scan, ...")
    parser.add_argument("--precision", default="bf16-mixed")
    parser.add_argument("--batch-size", type=int, default=64, help="utterances per batch when transcribing")
    parser.add_argument("--override", action="append", default=[], help="one more Hydra override (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    return parser


def _log(message: str) -> None:
    print(f"[gpu_recipe] {message}", file=sys.stderr, flush=True)


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def _write_json(path: Path, payload: dict) -> None:
    from nemo_pc.parts.manifest import write_text_atomic

    write_text_atomic(path, json.dumps(payload, indent=2) + "\n")


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


# corpus


def corpus(args: argparse.Namespace, work: Path) -> None:
    from nemo_pc.data.recipes.books import kjv_books, parse_kjv
    from nemo_pc.data.recipes.librispeech_pc import RestoreOptions, prepare_librispeech_pc
    from nemo_pc.data.recipes.synth import SynthConfig, synthesize_corpus
    from nemo_pc.data.tokenizers.pc_tokenizer import build_tokenizer, tokenizer_dir_name
    from nemo_pc.parts.manifest import iter_manifest, write_manifest

    manifests = work / "manifests"
    if not (manifests / "test.json").is_file():
        if args.kjv_text:
            opener = gzip.open if args.kjv_text.endswith(".gz") else open
            with opener(args.kjv_text, "rt", encoding="utf-8") as handle:
                books = parse_kjv(handle.read())
        else:
            books = kjv_books()
        # KJV text has no digits or abbreviations: no NeMo TN (no pynini to carry, no grammars to compile)
        config = SynthConfig(hours=args.hours, seed=args.seed, max_words=30, tn="none", minutes_per_speaker=1.0)
        synthesize_corpus(work / "corpus", books, config, num_jobs=args.num_jobs)
        restore = RestoreOptions(tn="none")
        prepare_librispeech_pc(work / "corpus", None, manifests, num_jobs=args.num_jobs, options=restore)
    if not (work / "tokenizers" / tokenizer_dir_name(args.vocab_size) / "tokenizer.model").is_file():
        build_tokenizer([manifests / "train.json"], work / "tokenizers", vocab_size=args.vocab_size)
    dev = [entry for _, entry in iter_manifest(manifests / "dev.json")]
    every = max(1, len(dev) // max(1, args.dev_utterances))
    write_manifest(manifests / "dev_curve.json", dev[::every][: args.dev_utterances])  # spread over dev's voices


def split_hours(manifests: Path) -> dict[str, dict]:
    from nemo_pc.parts.manifest import iter_manifest

    splits = {}
    for name in ("train", "dev", "test", "test_seen", "dev_curve"):  # the folder holds restoration reports too
        if (manifests / f"{name}.json").is_file():
            durations = [float(entry["duration"]) for _, entry in iter_manifest(manifests / f"{name}.json")]
            splits[name] = {"utterances": len(durations), "hours": round(sum(durations) / 3600, 3)}
    return splits


# train


def _data_overrides(args: argparse.Namespace, work: Path, steps: int) -> list[str]:
    """Batches by duration from NeMo's lhotse loader (duration buckets), the dev subset for the curve."""
    workers = min(12, max(0, args.num_jobs - 2))
    return [
        f"model.train_ds.manifest_filepath={work / 'manifests' / 'train.json'}",
        "model.train_ds.use_lhotse=true",
        "model.train_ds.batch_size=1024",  # a cap only: batch_duration sets the size
        f"+model.train_ds.batch_duration={args.batch_duration}",
        "+model.train_ds.use_bucketing=true",
        "+model.train_ds.num_buckets=20",
        f"+model.train_ds.seed={args.seed}",
        f"++model.train_ds.shard_seed={args.seed}",
        f"model.train_ds.num_workers={workers}",
        f"++model.train_ds.persistent_workers={str(workers > 0).lower()}",
        f"model.validation_ds.manifest_filepath={work / 'manifests' / 'dev_curve.json'}",
        f"model.validation_ds.batch_size={args.batch_size}",
        f"model.validation_ds.num_workers={workers}",
        f"trainer.precision={args.precision}",
        f"trainer.limit_train_batches={steps}",  # a lhotse loader has no length
        "trainer.use_distributed_sampler=false",
    ]


def overrides(args: argparse.Namespace, work: Path, steps: int, loss: str) -> list[str]:
    """The Hydra overrides of ``--system``: the conditioned RNN-T on a FastConformer encoder (8x depthwise-striding
    subsampling), or the AED from Whisper tiny.en (the tokenizer is its CTC head's vocabulary)."""
    from nemo_pc.data.tokenizers.pc_tokenizer import tokenizer_dir_name

    tokenizer = work / "tokenizers" / tokenizer_dir_name(args.vocab_size)
    if SYSTEMS[args.system] == "aed":
        return [
            "variant=prompt",
            f"model.aux_ctc.tokenizer.dir={tokenizer}",
            *_data_overrides(args, work, steps),
            *args.override,
        ]
    d = args.d_model
    return [
        "variant=conditioned",
        f"model.tokenizer.dir={tokenizer}",
        f"model.encoder.n_layers={args.layers}",
        f"model.encoder.d_model={d}",
        f"model.encoder.n_heads={args.heads}",
        f"model.encoder.subsampling_conv_channels={d}",
        "model.encoder.subsampling_factor=8",
        "model.encoder.conv_kernel_size=9",
        f"model.model_defaults.pred_hidden={d}",
        f"model.model_defaults.joint_hidden={d}",
        f"model.loss.loss_name={loss}",
        *_data_overrides(args, work, steps),
        # NeMo's CUDA-graph greedy decoder (training WER, validation) failed to capture its stream on an H200
        # (cudaErrorStreamCaptureUnsupported, docs/gpu.md): the plain batched loop decodes instead
        "++model.decoding.greedy.use_cuda_graph_decoder=false",
        *args.override,
    ]


def _meter():
    """A Lightning callback that records when each training step ends, the seconds of audio in each training batch,
    and how long each validation takes."""
    import lightning.pytorch as pl

    class StepMeter(pl.Callback):
        def __init__(self) -> None:
            self.ends: list[float] = []
            self.audio: list[float] = []
            self.validations: list[float] = []
            self.steps = 0

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            self.ends.append(time.perf_counter())
            self.audio.append(float(batch[1].sum()) / float(pl_module.cfg.get("sample_rate", 16000)))  # audio_len
            self.steps = int(trainer.global_step)

        def on_validation_start(self, trainer, pl_module) -> None:
            self._start = time.perf_counter()

        def on_validation_end(self, trainer, pl_module) -> None:
            self.validations.append(time.perf_counter() - self._start)

        def step_seconds(self) -> float:
            """Mean seconds per step after the first third (CUDA and JIT warm-up left out)."""
            gaps = [b - a for a, b in zip(self.ends, self.ends[1:], strict=False)][len(self.ends) // 3 :]
            return sum(gaps) / len(gaps) if gaps else float("nan")

        def audio_seconds_per_second(self) -> float:
            """Seconds of training audio per wall-clock second over the same steps as :meth:`step_seconds`."""
            audio = self.audio[1:][len(self.ends) // 3 :]
            return sum(audio) / len(audio) / self.step_seconds() if audio else float("nan")

    return StepMeter()


def probe(args: argparse.Namespace, work: Path) -> dict:
    """Seconds per step and per validation of a ``--probe-steps`` run, and the loss that ran."""
    from nemo_pc.pipelines.train import train_model

    found = _read_json(work / "probe.json")
    if found:
        return found
    family = SYSTEMS[args.system]
    losses = [args.loss, "scan"] if args.loss == "auto" and family == "rnnt" else [args.loss]
    failures = {}
    for loss in losses:
        meter = _meter()
        try:
            train_model(
                family,
                overrides(args, work, args.probe_steps, loss),
                work / "probe" / "probe.nemo",
                args.probe_steps,
                seed=args.seed,
                callbacks=[meter],
            )
        except Exception as err:  # noqa: BLE001 -- NeMo's CUDA loss may not compile on this machine: try the next
            if loss == losses[-1]:
                raise
            failures[loss] = f"{type(err).__name__}: {err}"[:500]
            _log(f"probe with loss {loss} failed ({failures[loss]}); trying {losses[-1]}")
            continue
        result = {
            "loss": loss,
            "failed_losses": failures,
            "steps": args.probe_steps,
            "step_seconds": round(meter.step_seconds(), 4),
            "audio_seconds_per_second": round(meter.audio_seconds_per_second(), 1),
            "validation_seconds": round(max(meter.validations, default=0.0), 2),
        }
        shutil.rmtree(work / "probe", ignore_errors=True)
        _write_json(work / "probe.json", result)
        return result
    raise AssertionError("unreachable")


def train(args: argparse.Namespace, work: Path) -> None:
    target = work / "models" / f"{args.system}.nemo"
    if target.is_file():
        return
    from lightning.pytorch.callbacks import Timer

    from nemo_pc.losses.mode_weighted import resolve_loss_name
    from nemo_pc.pipelines.train import train_model

    timing = probe(args, work)
    budget = 60.0 * args.train_minutes
    seconds_for_steps = budget - args.curve_points * timing["validation_seconds"]
    steps = max(args.probe_steps, int(seconds_for_steps / timing["step_seconds"]))
    _log(f"training {steps} steps: {timing['step_seconds']} s a step, {budget:.0f} s planned")
    meter = _meter()
    # the planned steps end the run (the schedule is fitted to them); the timer stops an underestimate
    timer = Timer(duration=timedelta(seconds=budget + 30.0), interval="step")
    stats = train_model(
        SYSTEMS[args.system],
        overrides(args, work, steps, timing["loss"]),
        target,
        steps,
        seed=args.seed,
        log_dir=work / "logs",
        val_every=max(1, steps // max(1, args.curve_points)),
        callbacks=[meter, timer],
    )
    # the loss that ran: "auto" is nemo_pc's scan loss on CPU and NeMo's numba loss ("default") on a GPU
    loss = resolve_loss_name(timing["loss"]) if SYSTEMS[args.system] == "rnnt" else "cross-entropy + 0.2 CTC"
    stats.update(
        planned_steps=steps,
        steps=meter.steps,
        step_seconds=round(meter.step_seconds(), 4),
        loss=loss,
        audio_seconds_per_second=round(meter.audio_seconds_per_second(), 1),
        device=_device(),
    )
    _write_json(target.with_suffix(".json"), stats)


# evaluate


def evaluate(args: argparse.Namespace, work: Path) -> dict:
    """Both outputs of the held-out test voices (``predictions/``) and their reports (``eval/``)."""
    from nemo_pc.metrics.evaluate import EvalConfig
    from nemo_pc.metrics.evaluate import evaluate as score
    from nemo_pc.metrics.report import write_json
    from nemo_pc.parts.manifest import iter_manifest, write_manifest

    predictions = work / "predictions" / f"{args.system}.json"
    if not predictions.is_file():
        from nemo_pc.pipelines.inference import load_asr_model, transcribe_both

        model = load_asr_model(work / "models" / f"{args.system}.nemo").to(_device())
        outputs = transcribe_both(model, work / "manifests" / "test.json", batch_size=args.batch_size)
        rows = [
            {**entry, "pred_text": outputs["punctuated"][k], "pred_text_normalized": outputs["normalized"][k]}
            for k, (_, entry) in enumerate(iter_manifest(work / "manifests" / "test.json"))
        ]
        write_manifest(predictions, rows)
    reports = {}
    for output, field in (("punctuated_output", "pred_text"), ("normalized_output", "pred_text_normalized")):
        path = work / "eval" / f"{args.system}_{output}.json"
        if not path.is_file():
            write_json(score(predictions, EvalConfig(pred_field=field, progress=False)), path)
        reports[output] = _read_json(path)
    return reports


def summary(args: argparse.Namespace, work: Path, reports: dict, seconds: dict) -> dict:
    """The one JSON of a run: data, model, training, seconds per phase and the test scores of both outputs."""
    stats = _read_json(work / "models" / f"{args.system}.json")
    keys = ("wer", "wer_c", "wer_pc", "pc_wer", "per", "cer", "punct_macro_f1")
    scores = {
        output: {k: report["metrics"][k] for k in keys if k in report["metrics"]} for output, report in reports.items()
    }
    if SYSTEMS[args.system] == "aed":
        shape = {"encoder": "Whisper tiny.en (pretrained)", "decoder": "Whisper tiny.en (pretrained)"}
    else:
        shape = {"layers": args.layers, "d_model": args.d_model, "heads": args.heads, "subsampling": 8}
    model = {
        "system": args.system,
        **shape,
        "vocab_size": args.vocab_size,
        "parameters": stats.get("parameters"),
        "loss": stats.get("loss"),
        "precision": args.precision,
    }
    return {
        "device": stats.get("device"),
        "splits": split_hours(work / "manifests"),
        "model": model,
        "training": {
            k: stats.get(k) for k in ("steps", "planned_steps", "seconds", "step_seconds", "audio_seconds_per_second")
        }
        | {"batch_duration": args.batch_duration, "probe": _read_json(work / "probe.json")},
        "dev_curve": stats.get("curve", []),
        "seconds": seconds,
        "test": {**scores, "utterances": reports["punctuated_output"].get("num_utterances")},
    }


def main(argv: list[str] | None = None) -> Path:
    parser = build_parser()
    args = parser.parse_args(argv)
    unknown = [phase for phase in args.phases if phase not in PHASES]
    if unknown:
        parser.error(f"unknown phase(s) {unknown}; choose from {', '.join(PHASES)}")
    work = Path(args.work).resolve()
    out = Path(args.out).resolve() if args.out else work
    work.mkdir(parents=True, exist_ok=True)
    seconds = _read_json(work / "seconds.json")
    for phase in PHASES:
        if phase not in args.phases:
            continue
        _log(phase)
        with Stopwatch() as watch:
            result = {"corpus": corpus, "train": train, "evaluate": evaluate}[phase](args, work)
        seconds[phase] = round(seconds.get(phase, 0.0) + watch.seconds, 1)
        _write_json(work / "seconds.json", seconds)
    if "evaluate" not in args.phases:
        return work
    out.mkdir(parents=True, exist_ok=True)
    curve = plot_curves(work)
    if curve is not None:
        shutil.copyfile(curve, out / "gpu_recipe_curve.png")
    target = out / "gpu_recipe.json"
    write_results(target, summary(args, work, result, seconds))
    _log(f"wrote {target}")
    return target


if __name__ == "__main__":
    main()
