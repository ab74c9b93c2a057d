"""benchmarks/quality_streaming.py end to end on a fake demo folder: a tiny untrained streaming model, two
lookaheads."""

import json

import torch
from benchmark_loader import load_benchmark

import nemo_pc  # noqa: F401  (registers the nemo_pc. config targets)


def test_streaming_benchmark_runs_end_to_end_on_a_fake_demo(tmp_path):
    from nemo_pc.models import EncDecRNNTPCBPEModel
    from nemo_pc.testing.asr import tiny_streaming_config, train_tokenizer, write_pc_manifest

    demo = tmp_path / "demo"
    manifest = write_pc_manifest(demo / "corpus", name="test.json", duration=2.0)
    (demo / "manifests").mkdir()
    manifest = manifest.rename(demo / "manifests" / "test.json")
    torch.manual_seed(0)
    model = EncDecRNNTPCBPEModel(cfg=tiny_streaming_config(train_tokenizer(manifest, tmp_path / "tok"), manifest))
    model.save_to(str(demo / "models" / "streaming.nemo"))
    out = tmp_path / "results" / "streaming.json"
    saved = str(demo / "models" / "streaming.nemo")
    args = [
        "--demo-dir",
        str(demo),
        "--model",
        saved,
        "--contexts",
        "70,1",
        "70,6",
        "--limit",
        "3",
        "--json",
        str(out),
        "--reference",
        saved,
        "--backends",
        "torch,onnx,torch_padded",
    ]
    load_benchmark("quality_streaming").main(args)
    report = json.loads(out.read_text())
    assert report["num_utterances"] == 3 and report["audio_seconds"] == 6.0
    assert [row["att_context_size"] for row in report["contexts"]] == [[70, 1], [70, 6]]
    # the reference is scored like the offline passes (here the same model, restored at its default [70, 13])
    reference = report["reference"]
    assert set(reference) == {"model", "wer_normalized", "per_punctuated", "wer_pc_punctuated", "rtf"}
    assert reference["rtf"] > 0 and 0 <= reference["wer_normalized"]
    for row, chunk_frames in zip(report["contexts"], (2, 7), strict=True):
        assert row["trained"] and row["chunk_ms"] == 80 * chunk_frames
        assert set(row["offline"]) == {"wer_normalized", "per_punctuated", "wer_pc_punctuated", "rtf"}
        torch_row, onnx_row, padded_row = row["torch"], row["onnx"], row["torch_padded"]
        assert torch_row["same_text_as_offline"] == {"normalized": 3, "punctuated": 3}  # exact for the torch step
        assert {k: torch_row[k] for k in ("wer_normalized", "per_punctuated")} == {
            k: row["offline"][k] for k in ("wer_normalized", "per_punctuated")
        }
        assert "skipped" not in onnx_row, onnx_row
        assert padded_row["chunks"] == onnx_row["chunks"]  # the same padded chunks as the exported step
        for backend in (torch_row, onnx_row, padded_row):
            assert backend["chunks"] >= 3 * (200 // (8 * chunk_frames))  # one timed step per chunk
            assert 0 < backend["step_ms_median"] <= backend["step_ms_p90"] and backend["rtf"] > 0


def test_a_context_that_is_not_two_numbers_is_a_usage_error(capsys):
    import pytest

    bench = load_benchmark("quality_streaming")
    for value in ("70,x", "70"):
        with pytest.raises(SystemExit) as stop:
            bench.parse_args(["--demo-dir", "demo", "--model", "m.nemo", "--contexts", value])
        assert stop.value.code == 2
        assert "--contexts: each one is left,right" in capsys.readouterr().err
