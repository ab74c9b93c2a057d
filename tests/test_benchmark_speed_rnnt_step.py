"""benchmarks/speed_rnnt_step.py: the parts of a P&C RNN-T training step, timed on a tiny model's batches."""

import json

import pytest
import torch
from benchmark_loader import load_benchmark
from omegaconf import OmegaConf

from nemo_pc.models import EncDecRNNTPCBPEModel
from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rnnt_step")
    manifest = write_pc_manifest(folder)
    config = tiny_model_config(train_tokenizer(manifest, folder / "tok"), decoders="dual", train_manifest=manifest)
    torch.manual_seed(0)
    model = EncDecRNNTPCBPEModel(cfg=OmegaConf.create(config))
    model.save_to(str(folder / "dual.nemo"))
    return {"model": model, "manifest": manifest, "path": folder / "dual.nemo", "folder": folder}


def test_each_part_of_a_step_is_timed_and_every_mode_row_reaches_the_joint(tiny):
    bench = load_benchmark("speed_rnnt_step")
    model = tiny["model"].train()
    batch = next(iter(model._train_dl))
    frozen, shape = bench.step_parts(model, batch, train_encoder=False)
    trained, _ = bench.step_parts(model, batch, train_encoder=True)
    assert set(frozen) == set(trained) == set(bench.PARTS)
    assert all(seconds > 0 for seconds in [*frozen.values(), *trained.values()])
    assert shape[0] == 2 * batch.audio.shape[0]  # one joint row per mode of each utterance
    assert shape[3] == model.tokenizer.vocab_size + 1
    assert all(p.grad is None for p in model.parameters())  # nothing left behind for an optimizer


def test_the_command_writes_the_mean_seconds_and_shares(tiny):
    bench = load_benchmark("speed_rnnt_step")
    out = tiny["folder"] / "step.json"
    argv = ["--model", str(tiny["path"]), "--manifest", str(tiny["manifest"]), "--batches", "2", "--batch-size", "2"]
    assert bench.main([*argv, "--threads", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    for phase in ("frozen", "trained"):
        seconds = report["seconds"][phase]
        assert seconds["step"] == pytest.approx(sum(seconds[part] for part in bench.PARTS), abs=1e-3)
        assert sum(seconds["share"].values()) == pytest.approx(1.0, abs=0.01)
    assert report["joint_rows"] == 4 and report["provenance"]["command"].startswith("python")
    with pytest.raises(SystemExit):
        bench.main([*argv[:4], "--batches", "1", "--json", str(out)])
