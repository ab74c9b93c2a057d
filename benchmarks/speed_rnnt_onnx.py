"""Real-time factors of the conditioned and 2-Decoder RNN-T with ONNX Runtime on CPU, side by side in one run.

Both models have the same encoder; both are trained for ``--steps`` on the same tiny tone corpus (so that greedy
decoding emits real transcripts, not random-length noise), exported, and timed on the same audio. A single output
of the 2-Decoder model is timed with an export of that mode's head only (``punctuated_all_heads`` also times the
export that runs both heads). Goals (paper 000 Table I reports 0.44 vs 0.59):
    * punctuated-output RTF of the conditioned model <= 0.75 x the 2-Decoder model's;
    * both outputs <= 1.3 x one output.

python benchmarks/speed_rnnt_onnx.py --json benchmarks/results/rtf_rnnt_pc.json
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch
from suite import results_path, time_runs, write_results


def _train(variant: str, folder: Path, manifest: Path, tokenizer: Path, args) -> object:
    import lightning.pytorch as pl
    from omegaconf import OmegaConf

    from nemo_pc.models import EncDecRNNTPCBPEModel
    from nemo_pc.testing.asr import tiny_model_config
    from nemo_pc.testing.training import tiny_trainer

    config = OmegaConf.create(
        tiny_model_config(tokenizer, decoders=variant, train_manifest=manifest, hidden=args.hidden, lr=0.003)
    )
    config.loss.loss_name = "scan"
    pl.seed_everything(0)
    trainer = tiny_trainer(args.steps)
    model = EncDecRNNTPCBPEModel(cfg=config, trainer=trainer)
    if args.steps:
        trainer.fit(model)
    return model.eval()


def _time(run, repeats: int) -> float:
    """The fastest of ``repeats`` runs (no warm-up run)."""
    return time_runs(run, repeats, warmup=0)[0].best


def measure(runner, features: list[tuple[np.ndarray, np.ndarray]], repeats: int, single=None) -> dict[str, float]:
    """Seconds to transcribe every utterance (batch 1, as in streaming-style use) per output kind.

    ``single`` maps a mode to a runner exported with only that mode's head (the 2-Decoder model's single-output
    deployment); without it, single outputs use ``runner``.
    """

    def one(mode: int, on=None):
        on = on or runner
        return lambda: [on.transcribe_features(f, n, [mode]) for f, n in features]

    timings = {
        "normalized": _time(one(0, (single or {}).get(0)), repeats),
        "punctuated": _time(one(1, (single or {}).get(1)), repeats),
        "both": _time(lambda: [runner.transcribe_all(f, n) for f, n in features], repeats),
    }
    if single:
        timings["punctuated_all_heads"] = _time(one(1), repeats)
    return timings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=150, help="training steps per model (0: untrained)")
    parser.add_argument("--hidden", type=int, default=64, help="encoder, predictor and joint width")
    parser.add_argument("--utterances", type=int, default=8, help="copies of the 4 tone utterances timed")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs; the fastest counts")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime and torch threads")
    parser.add_argument("--json", type=Path, default=results_path(__file__))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from nemo_pc.data.datasets.pc_dataset import pc_dataloader_from_config
    from nemo_pc.pipelines.onnx_rnnt import OnnxRNNTPCRunner, export_for_onnxruntime
    from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest

    results: dict = {"settings": vars(args) | {"json": str(args.json)}, "rtf": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        manifest = write_pc_manifest(folder)
        tokenizer = train_tokenizer(manifest, folder / "tokenizer")
        for variant in ("conditioned", "dual"):
            model = _train(variant, folder, manifest, tokenizer, args)
            runner = OnnxRNNTPCRunner(export_for_onnxruntime(model, folder / variant), threads=args.threads)
            loader = pc_dataloader_from_config({"manifest_filepath": str(manifest), "batch_size": 1}, model.tokenizer)
            features, seconds = [], 0.0
            for batch in list(loader) * (args.utterances // 4 or 1):
                with torch.no_grad():
                    feats, lengths = model.preprocessor(input_signal=batch.audio, length=batch.audio_len)
                features.append((feats.numpy(), lengths.numpy()))
                seconds += float(batch.audio_len.sum()) / model.preprocessor._sample_rate
            single = None
            if variant == "dual":
                single = {
                    mode: OnnxRNNTPCRunner(
                        export_for_onnxruntime(model, folder / f"{variant}_mode{mode}", modes=[mode]),
                        threads=args.threads,
                    )
                    for mode in (0, 1)
                }
            timings = measure(runner, features, args.repeats, single)
            results["rtf"][variant] = {kind: value / seconds for kind, value in timings.items()}
            results["rtf"][variant]["parameters"] = sum(p.numel() for p in model.parameters())
            results["audio_seconds"] = seconds
    rtf = results["rtf"]
    results["ratios"] = {
        "conditioned_punctuated_over_dual_punctuated": rtf["conditioned"]["punctuated"] / rtf["dual"]["punctuated"],
        "conditioned_punctuated_over_dual_all_heads": rtf["conditioned"]["punctuated"]
        / rtf["dual"]["punctuated_all_heads"],
        "conditioned_punctuated_over_dual_both": rtf["conditioned"]["punctuated"] / rtf["dual"]["both"],
        "conditioned_both_over_punctuated": rtf["conditioned"]["both"] / rtf["conditioned"]["punctuated"],
        "dual_both_over_punctuated": rtf["dual"]["both"] / rtf["dual"]["punctuated"],
    }
    results["goals"] = {
        "conditioned_punctuated_at_most_0.75x_dual": results["ratios"]["conditioned_punctuated_over_dual_punctuated"]
        <= 0.75,
        "both_at_most_1.3x_one": max(
            results["ratios"]["conditioned_both_over_punctuated"], results["ratios"]["dual_both_over_punctuated"]
        )
        <= 1.3,
    }
    for variant, values in rtf.items():
        print(f"{variant:12s} " + "  ".join(f"{kind} {value:.4f}" for kind, value in values.items()))
    for name, value in results["ratios"].items():
        print(f"{name}: {value:.3f}")
    for name, met in results["goals"].items():
        print(f"goal {name}: {'met' if met else 'NOT met'}")
    write_results(args.json, results)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
