"""benchmarks/quality_whisper_anchor.py on a fake demo folder, with the transcription replaced by a fixed answer."""

import json

from benchmark_loader import load_benchmark

import nemo_pc.pipelines.anchor as anchor_lib
from nemo_pc.parts.manifest import read_manifest, write_manifest
from nemo_pc.pipelines.inference import DecodeTiming
from nemo_pc.testing.asr import write_pc_manifest

VOICES = {"utt0": ("flite:slt", "7"), "utt1": ("flite:slt", "7"), "utt2": ("espeak-ng:en+m1", "8")}


def _fake_transcribe(manifest, target, threads=2, compute_type="int8", **_):
    rows = []
    for entry in read_manifest(manifest):
        # one of the two espeak-ng words is wrong, the flite utterances are right
        normalized = "who is where" if entry["utt_id"] == "utt2" else entry["text_normalized"]
        rows.append({**entry, "pred_text": entry["text"], "pred_text_normalized": normalized})
    write_manifest(target, rows)
    return DecodeTiming(anchor_lib.WHISPER_SYSTEM, len(rows), 6.0, 1.5, threads, 1, f"CTranslate2 {compute_type}")


def test_the_anchor_benchmark_scores_and_splits_by_engine_and_speaker(tmp_path, monkeypatch, capsys):
    demo = tmp_path / "demo"
    utterances = [("Yes, go home.", "book"), ("No. Stay, Anna.", "book"), ("Who is there?", "book")]
    manifest = write_pc_manifest(demo / "manifests", utterances, name="test.json", duration=2.0)
    rows = [{**entry, "speaker": VOICES[entry["utt_id"]][1]} for entry in read_manifest(manifest)]
    write_manifest(manifest, rows)
    synth = [{"utt_id": u, "voice": v, "speaker": s, "split": "test", "duration": 2.0} for u, (v, s) in VOICES.items()]
    write_manifest(demo / "corpus" / "SYNTH.jsonl", synth)
    monkeypatch.setattr(anchor_lib, "transcribe_whisper", _fake_transcribe)
    out = tmp_path / "results" / "whisper_anchor.json"
    load_benchmark("quality_whisper_anchor").main(["--manifest", str(manifest), "--threads", "3", "--json", str(out)])
    result = json.loads(out.read_text())
    assert result["timing"]["rtf"] == 0.25 and result["timing"]["threads"] == 3
    assert result["evaluation"]["num_utterances"] == 3
    assert result["normalized_output_wer"] == result["evaluation"]["normalized_output"]["wer"] == 1 / 9
    assert result["by_engine"] == {"espeak-ng": {"wer": 1 / 3, "words": 3}, "flite": {"wer": 0.0, "words": 6}}
    assert result["by_speaker"]["8"] == {"wer": 1 / 3, "words": 3, "voice": "espeak-ng:en+m1"}
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "| system | utterances | N-output WER | WER | WER-PC | PER | RTF | threads |"
    assert printed[2].startswith("| `whisper_tiny_en` | 3 | 11.1 | 0.0 |") and printed[2].endswith("| 0.250 | 3 |")
