"""The AED's decoder as a CTC head, trained as a NeMo model: ``decoder_ctc=conditioned`` on a demo's AED.

``benchmarks/quality_cached_heads.py --head decoder`` measured the head on cached encoder outputs; this trains the
same head as the model users train it, through the AED recipe (:func:`nemo_pc.pipelines.train.train_model`, NeMo's
``init_from_nemo_model`` of the demo's fine-tuned AED, lhotse batches of ``--batch-size``, the frozen encoder's states
cached in memory), saves the ``.nemo``, and transcribes the demo's ``test`` and ``real_test`` with NeMo's
``transcribe()`` in both modes. Scores as ``quality_cached_heads.py``'s (N-WER, PER, punctuation F1 on ``test``;
N-WER and its bootstrap interval on ``real_test``); minutes of training and of transcription apart.

    .venv/bin/python benchmarks/quality_decoder_ctc.py --model demo_out/models/aed_prompt_finetuned.nemo \\
        --demo-dir demo_out --steps 1000 --json benchmarks/results/decoder_ctc_model.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from quality_cached_heads import score_split, training_rows
from suite import write_results

from nemo_pc.parts.manifest import write_manifest


def recipe_overrides(aed, demo: Path, train: Path, batch_size: int, stack: int, workers: int) -> list[str]:
    """The AED recipe's overrides of a ``decoder_ctc`` head on ``aed`` (a restored AED): its tokenizer folder, the
    training manifest, no validation set (the script scores at the end)."""
    from nemo_pc.pipelines.demo.config import AED_OVERRIDES

    return [
        "variant=prompt",
        *AED_OVERRIDES,
        "decoder_ctc=conditioned",
        f"model.decoder_ctc.stack={stack}",
        f"model.aux_ctc.tokenizer.dir={aed.cfg.aux_ctc.tokenizer.dir}",
        f"model.train_ds.manifest_filepath={train}",
        "model.validation_ds.manifest_filepath=null",
        f"model.train_ds.batch_size={batch_size}",
        f"model.train_ds.max_duration={float(aed.cfg.train_ds.get('max_duration') or 30.0)}",
        f"model.train_ds.num_workers={workers}",
        "trainer.precision=32",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the demo's fine-tuned AED (models/aed_prompt_finetuned.nemo)")
    parser.add_argument("--demo-dir", required=True, help="its demo folder (manifests, real_speech)")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--stack", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--extra-train", action="append", default=[], metavar="MANIFEST[:REPEAT]", help="more training lines"
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        help="a Hydra override of the AED recipe (e.g. model.decoder_ctc.cache_states_gb=6); repeatable",
    )
    parser.add_argument("--output", default=None, help="where the trained .nemo goes (default: a temporary folder)")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)

    import torch

    from nemo_pc.models import EncDecAEDPCModel
    from nemo_pc.pipelines.train import train_model

    demo, work = Path(args.demo_dir), tempfile.TemporaryDirectory()
    rows = training_rows(demo, args.extra_train)
    train = write_manifest(Path(work.name) / "train.json", rows["train"])
    aed = EncDecAEDPCModel.restore_from(args.model, map_location="cpu")
    overrides = [
        *recipe_overrides(aed, demo, train, args.batch_size, args.stack, args.workers),
        f"+init_from_nemo_model={args.model}",
        *args.override,
    ]
    del aed
    output = Path(args.output or Path(work.name) / "decoder_ctc.nemo")
    start = time.perf_counter()
    train_model("aed", overrides, output, args.steps)
    train_minutes = (time.perf_counter() - start) / 60
    model = EncDecAEDPCModel.restore_from(str(output), map_location="cpu").eval()
    torch.manual_seed(0)
    scores, transcribe_minutes = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for split in ("test", "real_test"):
            paths = [row["audio_filepath"] for row in rows[split]]
            start = time.perf_counter()
            out = model.transcribe(paths, batch_size=16, mode="both", verbose=False)
            transcribe_minutes[split] = round((time.perf_counter() - start) / 60, 2)
            scores[split] = score_split(split, rows[split], out["punctuated"], out["normalized"], Path(tmp))
    head = [p for name, p in model.named_parameters() if name.startswith("decoder_ctc_")]
    results = {
        "settings": vars(args)
        | {
            "overrides": overrides,
            "trainable_parameters": sum(p.numel() for p in head if p.requires_grad),
            "pieces": int(model.decoder_ctc_head.kept().sum()),
        },
        "utterances": {split: len(split_rows) for split, split_rows in rows.items()},
        "train_minutes": round(train_minutes, 2),
        "transcribe_minutes": transcribe_minutes,
        "scores": scores,
    }
    write_results(args.json, results, sys.argv if argv is None else ["quality_decoder_ctc.py", *argv])
    print(json.dumps(scores), file=sys.stderr)
    work.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
