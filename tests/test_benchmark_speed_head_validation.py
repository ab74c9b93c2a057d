"""benchmarks/speed_head_validation.py: a tiny model validates each way with the same WERs, the padded shares follow
the order of the sets, and bad arguments exit 2 with one line."""

import json

import lightning.pytorch as pl
import pytest
from benchmark_loader import load_benchmark
from omegaconf import OmegaConf

from nemo_pc.models import EncDecRNNTPCBPEModel
from nemo_pc.parts.manifest import read_manifest, write_manifest
from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest
from nemo_pc.testing.training import tiny_trainer

pytestmark = pytest.mark.usefixtures("one_thread")


def test_every_way_reads_the_same_wers_and_sorted_sets_pad_less(tmp_path):
    bench = load_benchmark("speed_head_validation")
    manifest = write_pc_manifest(tmp_path)
    tokenizer = train_tokenizer(manifest, tmp_path / "tokenizer")
    config = tiny_model_config(tokenizer, train_manifest=manifest, validation_manifest=manifest)
    pl.seed_everything(0)
    trainer = tiny_trainer(10)
    model = EncDecRNNTPCBPEModel(cfg=OmegaConf.create(config), trainer=trainer)
    trainer.fit(model)
    path = tmp_path / "rnnt_dual.nemo"
    model.save_to(str(path))
    rows = read_manifest(manifest)
    for index, row in enumerate(rows):  # the lines read less of their audio, alternately
        row["duration"] = 1.0 if index % 2 else 0.4
    varied = write_manifest(tmp_path / "dev" / "dev_curve.json", rows)
    ordered = write_manifest(tmp_path / "sorted" / "dev_curve.json", sorted(rows, key=lambda row: row["duration"]))

    result = bench.measure(path, [varied], [ordered], rounds=1, batch_sizes=[2])
    names = [row["setting"] for row in result]
    assert names == list(bench.settings([2])) and len(names) == 4
    assert all(row["wer"] == result[0]["wer"] and "val_wer" in row["wer"] for row in result)
    shares = {row["setting"]: row["padded_share"] for row in result}
    assert shares["lhotse, by duration, 2"] == 0.0 < shares["lhotse, manifest order, 8"]
    assert shares["map-style, bucketing_window, 2"] == 0.0 < shares["map-style, manifest order, 8"]
    text = bench.markdown({"system": "rnnt_dual", "manifests": ["dev_curve.json"], "rounds": 1, "rows": result})
    assert text.count("\n| ") == 5 and "| lhotse, by duration, 2 |" in text
    json.dumps(result)  # what --json writes


def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys):
    bench = load_benchmark("speed_head_validation")
    with pytest.raises(SystemExit) as stop:
        bench.main(["--demo-dir", str(tmp_path), "--batch-sizes", "8,x"])
    assert stop.value.code == 2 and "--batch-sizes must be positive integers, got '8,x'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        bench.main(["--demo-dir", str(tmp_path), "--system", "rnnt_dual"])
    assert stop.value.code == 2 and "rnnt_dual.nemo: no such model" in capsys.readouterr().err
