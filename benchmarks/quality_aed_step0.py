"""Step 0 of the AED: Whisper tiny.en's weights through NeMo, before any fine-tune, on real recordings.

Whisper was trained on input padded to 30 s; through NeMo the AED reads unpadded audio, and there the un-fine-tuned
decoder often writes the transcript again and again. This scores the zero-shot AED (both prompts start as Whisper's
``<|notimestamps|>``, so both modes write Whisper's text) under four settings side by side, and Whisper tiny.en
itself (faster-whisper, greedy with its temperature fallback, int8), on the clips of ``nemo-pc real-speech``:

* ``unpadded``: NeMo's decoding as it was (a hypothesis ends at encoder frames + 50 tokens);
* ``unpadded+limits``: the packaged ``decoding.limits`` (:mod:`nemo_pc.modules.aed_search`);
* ``padded``, ``padded+limits``: each clip zero-padded to 30 s, as Whisper was trained.

Normalized WER: each output put through the text rules against ``text_normalized`` (faster-whisper's written output
is put in spoken form first, as the demo's anchor row is). Seconds: wall-clock decoding of both modes, one clip at a
time, 2 threads.

    .venv/bin/python benchmarks/quality_aed_step0.py --manifest real_dev=runs/real_speech/real_dev.json \
        --json benchmarks/results/aed_step0.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from suite import write_results

SETTINGS = ("unpadded", "unpadded+limits", "padded", "padded+limits")
WINDOW = 480_000  # 30 s at 16 kHz


def zero_shot_aed():
    """The AED as ``make demo`` builds it before training (Whisper tiny.en's encoder and decoder), no CTC head."""
    from omegaconf import open_dict

    from nemo_pc.models import EncDecAEDPCModel
    from nemo_pc.pipelines.train import compose_config

    cfg = compose_config("aed", ["model.aux_ctc=null"])
    with open_dict(cfg):
        cfg.model.train_ds.manifest_filepath = None
        cfg.model.validation_ds.manifest_filepath = None
    return EncDecAEDPCModel(cfg=cfg.model).eval()


def decode_clips(model, rows: list[dict], setting: str) -> tuple[dict[int, list[str]], float]:
    """Both modes' text of every clip under one setting, and the decoding seconds."""
    from dataclasses import asdict

    import numpy as np
    import soundfile
    import torch
    from omegaconf import open_dict

    from nemo_pc.modules.aed_search import SearchLimits
    from nemo_pc.parts.modes import NORMALIZED_ID, PUNCTUATED_ID

    cfg = model.cfg.decoding.copy()
    with open_dict(cfg):  # the packaged limits, or none (set each time: the model keeps the last config)
        cfg.limits = asdict(SearchLimits()) if "limits" in setting else None
    model.change_decoding_strategy(cfg)
    texts = {NORMALIZED_ID: [], PUNCTUATED_ID: []}
    seconds = 0.0
    for row in rows:
        audio, _ = soundfile.read(row["audio_filepath"], dtype="float32")
        if setting.startswith("padded"):
            audio = np.pad(audio, (0, max(0, WINDOW - len(audio))))
        signal = torch.from_numpy(audio)[None]
        start = time.perf_counter()
        with torch.no_grad():
            features, length = model.preprocessor(input_signal=signal, length=torch.tensor([signal.shape[1]]))
            encoded, encoded_len = model.encoder(audio_signal=features, length=length)
            states, mask = model.cross_states(encoded, encoded_len)
            out = model.decode_modes(states, mask, [NORMALIZED_ID, PUNCTUATED_ID])
        seconds += time.perf_counter() - start
        for mode in texts:
            texts[mode].append(out[mode][0])
    return texts, seconds


def wer(hypotheses: list[str], rows: list[dict]) -> dict:
    from nemo_pc.metrics.mode_wer import text_errors
    from nemo_pc.parts.text import normalize

    errors, words = text_errors([normalize(h) for h in hypotheses], [normalize(r["text_normalized"]) for r in rows])
    return {"wer": round(errors / max(words, 1), 4), "errors": errors, "words": words}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--manifest", action="append", required=True, help="NAME=MANIFEST (repeatable)")
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated, from {SETTINGS}")
    parser.add_argument("--work", default=".bench/aed_step0", help="where the Whisper anchor writes")
    parser.add_argument("--json", default="benchmarks/results/aed_step0.json")
    args = parser.parse_args(argv)
    sets = dict(item.split("=", 1) for item in args.manifest)
    missing = [path for path in sets.values() if not Path(path).is_file()]
    if missing:
        parser.error(f"--manifest {missing[0]}: no such file")
    settings = args.settings.split(",")
    if set(settings) - set(SETTINGS):
        parser.error(f"--settings: unknown {sorted(set(settings) - set(SETTINGS))}")
    import torch

    from nemo_pc.parts.manifest import read_manifest
    from nemo_pc.parts.modes import NORMALIZED_ID, PUNCTUATED_ID
    from nemo_pc.pipelines.anchor import WHISPER_SYSTEM, transcribe_whisper

    torch.set_num_threads(2)
    model = zero_shot_aed()
    results = {"rows": []}
    for name, manifest in sets.items():
        rows = read_manifest(manifest)
        predictions = Path(args.work) / f"{name}_whisper.json"
        predictions.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        transcribe_whisper(manifest, predictions)
        whisper_seconds = time.perf_counter() - start
        written = [row["pred_text_normalized"] for row in read_manifest(predictions)]
        anchor = {"set": name, "system": WHISPER_SYSTEM, "normalized": wer(written, rows), "seconds": whisper_seconds}
        results["rows"].append(anchor)
        for setting in settings:
            texts, seconds = decode_clips(model, rows, setting)
            row = {
                "set": name,
                "system": f"aed zero-shot, {setting}",
                "normalized": wer(texts[NORMALIZED_ID], rows),
                "punctuated_output": wer(texts[PUNCTUATED_ID], rows),
                "seconds": round(seconds, 1),
                "ratio_to_whisper": round(
                    wer(texts[NORMALIZED_ID], rows)["wer"] / max(anchor["normalized"]["wer"], 1e-9), 3
                ),
                "examples": texts[NORMALIZED_ID][:5],
            }
            results["rows"].append(row)
            print(
                f"{name} {row['system']}: N-WER {100 * row['normalized']['wer']:.1f}% "
                f"(Whisper {100 * anchor['normalized']['wer']:.1f}%), {row['seconds']} s",
                file=sys.stderr,
            )
    write_results(args.json, results, [Path(__file__).name, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
