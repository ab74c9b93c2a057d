"""Under-fitting or a voice gap? WER of one trained ASR model on training utterances against dev utterances.

Transcribes the same number of random utterances from two manifests of a demo folder with NeMo's ``transcribe``
(greedy, the model's default output) and scores each against ``text_normalized`` with jiwer. For the demo's base
encoder (normalized CTC) a low training WER with a high dev WER says the voices do not generalize; a high training
WER says the model has not fit its own data either. ``test_seen`` (training speakers reading chapters that no other
split reads) tells the two apart on new text: ``--splits train,test_seen,test``.

    .venv/bin/python benchmarks/quality_train_dev_gap.py --model demo_out/models/base.nemo --demo-dir demo_out
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from suite import pct, write_results


def sample_split(demo_dir: str | Path, split: str, utterances: int) -> list[dict]:
    """``utterances`` random rows (seed 0) of ``demo_dir/manifests/<split>.json``."""
    manifest = Path(demo_dir) / "manifests" / f"{split}.json"
    rows = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
    random.Random(0).shuffle(rows)
    return rows[:utterances]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a .nemo whose transcribe writes normalized text")
    parser.add_argument("--demo-dir", required=True)
    parser.add_argument(
        "--splits", default="train,dev", help="manifests/<split>.json to score, e.g. train,dev,test,test_seen"
    )
    parser.add_argument("--utterances", type=int, default=200, help="random utterances per split (seed 0)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    manifests = Path(args.demo_dir) / "manifests"
    missing = [split for split in args.splits.split(",") if not (manifests / f"{split}.json").is_file()]
    if missing:
        found = ", ".join(sorted(path.stem for path in manifests.glob("*.json"))) or "none"
        parser.error(f"no manifest for split(s) {', '.join(missing)} in {manifests} (found: {found})")

    import jiwer
    from nemo.collections.asr.models import ASRModel

    import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)

    model = ASRModel.restore_from(args.model, map_location="cpu")
    model.eval()
    result = {"model": args.model, "utterances": args.utterances, "wer": {}}
    for split in args.splits.split(","):
        rows = sample_split(args.demo_dir, split, args.utterances)
        hyps = model.transcribe([row["audio_filepath"] for row in rows], batch_size=16, verbose=False)
        hyps = hyps[0] if isinstance(hyps, tuple) else hyps
        texts = [getattr(hyp, "text", hyp) for hyp in hyps]
        result["wer"][split] = round(jiwer.wer([row["text_normalized"] for row in rows], texts), 4)
        print(f"{split}: WER {pct(result['wer'][split])} on {len(rows)} utterances", file=sys.stderr)
    if args.json:
        write_results(args.json, result)


if __name__ == "__main__":
    main()
