"""Fitting a config's learning-rate schedule to a short run keeps its peak learning rate."""

import math

import pytest
from omegaconf import OmegaConf

from nemo_pc.pipelines.train import compose_config, fit_schedule


def _noam_peak(optim, d_model: int) -> float:
    warmup = optim.sched.warmup_steps
    return optim.lr / math.sqrt(d_model) * warmup**-0.5


def test_noam_warmup_shortened_keeps_the_peak_learning_rate():
    cfg = compose_config("ctc", ["model.tokenizer.dir=/tok", "model.train_ds.manifest_filepath=/t.json"])
    optim = cfg.model.optim
    d_model = cfg.model.encoder.d_model
    assert optim.sched.name == "NoamAnnealing" and optim.sched.warmup_steps > 200 // 4
    before = _noam_peak(optim, d_model)
    fit_schedule(optim, 200)
    assert optim.sched.warmup_steps == 20 and optim.sched.max_steps == 200
    assert _noam_peak(optim, d_model) == pytest.approx(before)


def test_other_schedules_keep_lr_and_long_runs_keep_their_warmup():
    optim = OmegaConf.create({"lr": 0.002, "sched": {"name": "CosineAnnealing", "warmup_steps": 500}})
    fit_schedule(optim, 300)
    assert optim.lr == 0.002 and optim.sched.warmup_steps == 30 and optim.sched.max_steps == 300
    optim = OmegaConf.create({"lr": 2.0, "sched": {"name": "NoamAnnealing", "warmup_steps": 1000}})
    fit_schedule(optim, 100_000)
    assert optim.lr == 2.0 and optim.sched.warmup_steps == 1000
    fit_schedule(OmegaConf.create({"lr": 1.0}), 10)  # no schedule: nothing to fit
