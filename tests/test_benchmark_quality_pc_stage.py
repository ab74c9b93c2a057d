"""benchmarks/quality_pc_stage.py: the variants that start from the fine-tuned AED's encoder, and the minutes they
count for it."""

import json

import pytest
from benchmark_loader import load_benchmark


def test_the_aed_variants_start_from_the_aed_and_its_minutes_count(tmp_path):
    bench = load_benchmark("quality_pc_stage")
    assert bench.VARIANTS["ctc_aed"]["start"] == "aed"
    assert bench.VARIANTS["ctc_aed_frozen"]["freeze_encoder"] == 0.5
    assert {bench.VARIANTS[name]["start"] for name in ("rnnt_cond_aed", "rnnt_dual_aed")} == {"ctc_aed"}
    model = tmp_path / "aed_prompt_finetuned.nemo"
    model.write_bytes(b"not read here")
    assert bench.aed_start(model) == (model, 0.0)  # no stats file: no minutes to count
    model.with_suffix(".json").write_text(json.dumps({"seconds": 600.0, "train_seconds": 630.0}))
    assert bench.aed_start(model) == (model, pytest.approx(10.5))
    model.with_suffix(".json").write_text(json.dumps({"seconds": 600.0}))
    assert bench.aed_start(model)[1] == pytest.approx(10.0)


def test_an_aed_variant_without_the_model_stops_with_its_flag(tmp_path):
    bench = load_benchmark("quality_pc_stage")
    for missing in (None, tmp_path / "absent.nemo"):
        with pytest.raises(SystemExit, match="--aed-model"):
            bench.aed_start(missing)
