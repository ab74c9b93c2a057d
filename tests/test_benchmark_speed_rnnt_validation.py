"""benchmarks/speed_rnnt_validation.py: a tiny RNN-T's validation with and without its loss gives the same WERs, only
the first logs a loss, and a folder without the model exits 2."""

import json

import lightning.pytorch as pl
import pytest
from benchmark_loader import load_benchmark
from omegaconf import OmegaConf

from nemo_pc.models import EncDecRNNTPCBPEModel
from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest
from nemo_pc.testing.training import tiny_trainer

pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_loss_is_left_out_and_the_wers_stay(tmp_path):
    bench = load_benchmark("speed_rnnt_validation")
    manifest = write_pc_manifest(tmp_path)
    tokenizer = train_tokenizer(manifest, tmp_path / "tokenizer")
    config = tiny_model_config(tokenizer, train_manifest=manifest, validation_manifest=manifest)
    pl.seed_everything(0)
    trainer = tiny_trainer(20)
    model = EncDecRNNTPCBPEModel(cfg=OmegaConf.create(config), trainer=trainer)
    trainer.fit(model)
    path = tmp_path / "rnnt_conditioned.nemo"
    model.save_to(str(path))

    result = bench.measure(path, [manifest, manifest], rounds=2, precision="32", batch_size=2)
    with_loss, wer_only = result["rows"]
    assert [with_loss["setting"], wer_only["setting"]] == ["with loss", "WER only"]
    assert with_loss["logs_loss"] and not wer_only["logs_loss"]
    assert result["wers_agree"] and with_loss["wer"] == wer_only["wer"]
    assert "val_wer" in with_loss["wer"] and len(with_loss["seconds"]) == 2
    assert result["loss_share"] < 1
    text = bench.markdown({"system": "rnnt_conditioned", "manifests": ["dev.json"], "batch_size": 2,
                           "precision": "32", "rounds": 2, **result})  # fmt: skip
    assert "| with loss |" in text and "WERs agree: True" in text


def test_a_folder_without_the_model_exits_2(tmp_path, capsys):
    bench = load_benchmark("speed_rnnt_validation")
    with pytest.raises(SystemExit) as stop:
        bench.main(["--demo-dir", str(tmp_path), "--system", "rnnt_dual"])
    assert stop.value.code == 2
    assert "rnnt_dual.nemo: no such model" in capsys.readouterr().err
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "rnnt_dual.nemo").write_bytes(b"not read: the folder has no dev manifest")
    with pytest.raises(SystemExit) as stop:
        bench.main(["--demo-dir", str(tmp_path), "--system", "rnnt_dual"])
    assert stop.value.code == 2
    assert "dev.json: no such manifest" in capsys.readouterr().err


def test_the_rendered_block_names_the_sets_and_the_loss_share(tmp_path):
    render = load_benchmark("render_results")
    rows = [
        {"setting": "with loss", "seconds": [13.0, 13.6], "median_seconds": 13.3, "logs_loss": True,
         "wer": {"val_wer_normalized": 0.4217}},
        {"setting": "WER only", "seconds": [10.2, 10.4], "median_seconds": 10.3, "logs_loss": False,
         "wer": {"val_wer_normalized": 0.4217}},
    ]  # fmt: skip
    source = tmp_path / "v.json"
    source.write_text(
        json.dumps({"system": "rnnt_conditioned", "manifests": ["dev_curve.json", "real_dev.json"], "batch_size": 4,
                    "precision": "bf16-mixed", "rounds": 2, "rows": rows, "loss_share": 0.2256, "wers_agree": True})
    )  # fmt: skip
    text = render.render_rnnt_validation(source)
    assert text.startswith("`rnnt_conditioned` validating on dev_curve.json, real_dev.json (batches of 4")
    assert "| with loss | 13.3 | 13.0, 13.6 | 42.2% |" in text
    assert "The loss is 23% of a validation; WERs agree: True." in text
