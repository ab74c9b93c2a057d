"""Trains one model of a recipe from its packaged Hydra config (``nemo_pc/configs``) and saves it as a ``.nemo``.

The demo recipe (:mod:`nemo_pc.pipelines.demo`) calls these instead of the example scripts so that one process can
train several models in a row; the configs, and therefore the models, are the same as the scripts'.
"""

from __future__ import annotations

import copy
import functools
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from omegaconf import open_dict

from nemo_pc.parts.configs import RECIPES, compose_config
from nemo_pc.parts.manifest import save_model_atomic

MODEL_CLASSES = {
    "rnnt": "nemo_pc.models.rnnt_pc.EncDecRNNTPCBPEModel",
    "ctc": "nemo_pc.models.ctc_pc.EncDecCTCPCBPEModel",
    "aed": "nemo_pc.models.aed_pc.EncDecAEDPCModel",
    "tagger": "nemo_pc.models.tagger.PCTaggerModel",
    "rewriter": "nemo_pc.models.rewriter.SpanRewriterModel",
}
# family: (config folder, config name, model class path)
FAMILIES = {family: (*RECIPES[family], path) for family, path in MODEL_CLASSES.items()}


def _model_class(family: str):
    module, _, name = FAMILIES[family][2].rpartition(".")
    import importlib

    return getattr(importlib.import_module(module), name)


def fit_schedule(optim, max_steps: int) -> None:
    """Fits an optimizer config's schedule to a run of ``max_steps`` (in place).

    The schedule ends at ``max_steps``; a warmup longer than a quarter of the run becomes a tenth of it. Noam's
    schedule peaks at ``lr / sqrt(d_model * warmup_steps)``, so there ``lr`` is scaled by
    ``sqrt(new_warmup / old_warmup)`` to keep the peak learning rate of the config; the other schedules peak at
    ``lr`` itself.
    """
    if not optim or "sched" not in optim:
        return
    with open_dict(optim):
        optim.sched.max_steps = max_steps
        warmup = optim.sched.get("warmup_steps")
        if warmup is None or warmup <= max_steps // 4:
            return
        shorter = max(1, max_steps // 10)
        optim.sched.warmup_steps = shorter
        if str(optim.sched.get("name", "")).lower() == "noamannealing":
            optim.lr = float(optim.lr) * (shorter / warmup) ** 0.5


def curve_point(metrics: Mapping[str, object], first_prefix: str | None = None) -> dict[str, float]:
    """The validation metrics of one point of a learning curve, rounded: every ``val_*`` metric and every
    ``<set>_val_*`` metric of a further validation set.

    With several validation sets NeMo's ``ModelPT`` logs the first one's metrics twice, as ``val_*`` and with that
    set's prefix (``dev_val_wer``), and the others' with their prefix only (``real_dev_val_wer``; the prefix is the
    manifest's stem). The copies under ``first_prefix`` are left out, so ``val_*`` is always the first set's.
    """
    point = {}
    for key, value in metrics.items():
        plain = key.startswith("val_")
        copy = first_prefix is not None and key.startswith(first_prefix) and key[len(first_prefix) :] in metrics
        if plain or ("_val_" in key and not copy):
            point[key] = round(float(value), 5)
    return dict(sorted(point.items(), key=lambda item: (not item[0].startswith("val_"), item[0])))


def _first_validation_prefix(trainer, pl_module) -> str | None:
    """The prefix NeMo gives the first validation set's metrics when there are several sets, else ``None``."""
    loaders = trainer.val_dataloaders
    if not isinstance(loaders, (list, tuple)) or len(loaders) < 2:
        return None
    if not hasattr(pl_module, "get_validation_dataloader_prefix"):
        return None
    return pl_module.get_validation_dataloader_prefix(getattr(pl_module, "_val_dl_idx", 0))


def _curve_callback(curve: list[dict], clock: dict | None = None):
    """A Lightning callback that appends ``{"step", **curve_point(...)}`` to ``curve`` after each validation, and adds
    each validation's wall-clock seconds and count to ``clock`` (``{"seconds", "validations"}``)."""
    import lightning.pytorch as pl

    clock = {"seconds": 0.0, "validations": 0} if clock is None else clock

    class ValidationCurve(pl.Callback):
        def on_validation_start(self, trainer, pl_module) -> None:
            self.started = time.perf_counter()

        def on_validation_end(self, trainer, pl_module) -> None:
            if trainer.sanity_checking:
                return
            clock["seconds"] += time.perf_counter() - getattr(self, "started", time.perf_counter())
            clock["validations"] += 1
            metrics = curve_point(trainer.callback_metrics, _first_validation_prefix(trainer, pl_module))
            if metrics:
                curve.append({"step": int(trainer.global_step), **metrics})

    return ValidationCurve()


def _validation_rng_guard():
    """A Lightning callback that keeps the validations out of the training's random streams: torch's, numpy's and
    Python's RNG states are saved after every training batch and put back when a validation ends. Without it a
    validation's loaders draw from those streams, and the training sampler's shuffle after it changes, so the number
    of validations changes the trained weights (``tests/pipelines/test_train_curves.py``). With it, ``val_every``
    changes the curve's points and the minutes, not the model."""
    import random

    import lightning.pytorch as pl
    import numpy as np
    import torch

    class ValidationRngGuard(pl.Callback):
        states = None

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            self.states = (torch.get_rng_state(), np.random.get_state(), random.getstate())

        def on_validation_end(self, trainer, pl_module) -> None:
            if self.states is not None and not trainer.sanity_checking:
                torch_state, numpy_state, python_state = self.states
                torch.set_rng_state(torch_state)
                np.random.set_state(numpy_state)
                random.setstate(python_state)

    return ValidationRngGuard()


def _ema_callback(cfg):
    """NeMo's EMA callback when the config asks for one (``exp_manager.ema.enable``, as NeMo's exp_manager reads it),
    else ``None``."""
    ema = (cfg.get("exp_manager") or {}).get("ema") or {}
    if not ema.get("enable", False):
        return None
    from nemo.collections.common.callbacks.ema import EMA

    return EMA(
        decay=float(ema.get("decay", 0.999)),
        validate_original_weights=bool(ema.get("validate_original_weights", False)),
        every_n_steps=int(ema.get("every_n_steps", 1)),
        cpu_offload=bool(ema.get("cpu_offload", False)),
    )


def _not_averaged(model, cfg) -> dict:
    """The modules whose trained weights are saved instead of their EMA average: an AED's CTC heads when
    ``model.aux_ctc.averaged`` is false (they start from random weights, and over a short fine-tune their average would
    keep part of that start, where the encoder's keeps part of Whisper's)."""
    aux = cfg.model.get("aux_ctc") or {}
    if aux.get("averaged", True):
        return {}
    names = ("ctc_decoder", "ctc_inter_decoder")
    return {name: getattr(model, name) for name in names if getattr(model, name, None) is not None}


INIT_KEYS = ("init_from_nemo_model", "init_from_pretrained_model", "init_from_ptl_ckpt")


@functools.cache
def cpu_bf16_lstm_works() -> bool:
    """Whether an LSTM runs under CPU bfloat16 autocast here: oneDNN has no such primitive on CPUs without AVX-512
    (it raises), so a bf16-mixed recipe with an LSTM predictor trains in float32 there. True with a GPU."""
    import torch

    if torch.cuda.is_available():
        return True
    lstm = torch.nn.LSTM(4, 4, batch_first=True)
    try:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            lstm(torch.zeros(1, 2, 4))
    except RuntimeError:
        return False
    return True


def train_model(
    family: str,
    overrides: Sequence[str],
    output: str | Path,
    max_steps: int,
    seed: int = 0,
    log_dir: str | Path | None = None,
    val_every: int | None = None,
    init_from: str | Path | None = None,
    callbacks: Sequence = (),
    isolate_validation_rng: bool = False,
) -> dict:
    """Trains a model for ``max_steps`` optimizer steps on CPU and saves it to ``output`` (written atomically).

    Args:
        family: ``rnnt``, ``ctc``, ``aed``, ``tagger`` or ``rewriter``.
        overrides: Hydra overrides of that family's config (variant group, data paths, sizes).
        output: the ``.nemo`` path.
        max_steps: optimizer steps.
        seed: the seed of weights and data order.
        log_dir: where TensorBoard logs go (none when ``None``).
        val_every: validate every this many steps (default: once, at the end).
        init_from: a ``.nemo`` whose encoder weights start the model (NeMo's ``init_from_nemo_model`` with
            ``include: [encoder.]``); the encoder config must match. ``None`` starts from random weights.
        callbacks: more Lightning callbacks (e.g. a meter of a benchmark). ``exp_manager.ema.enable`` in the config
            adds NeMo's EMA callback, and the averaged weights are saved.
        isolate_validation_rng: keep the validations out of the training's random streams
            (:func:`_validation_rng_guard`), so that ``val_every`` does not change the trained weights. Off by
            default: the demo's recorded runs trained without it, and it changes every model that validates.

    Returns:
        ``{"seconds": ..., "validation_seconds": ..., "validations": ..., "steps": ..., "parameters": ..., "curve":
        [{"step": ..., "val_wer": ...}, ...]}`` for the recipe's report: ``seconds`` of ``fit``, of which
        ``validation_seconds`` went to its ``validations`` (the learning curve's price); ``curve`` holds the
        validation metrics after each validation (the learning curve, :func:`curve_point`). With a list of
        validation manifests (``model.validation_ds.manifest_filepath=[dev.json, real_dev.json]``) ``val_*`` is the
        first one's and ``<stem>_val_*`` each other's (``real_dev_val_wer``).
    """
    import lightning.pytorch as pl
    from lightning.pytorch.loggers import TensorBoardLogger

    cfg = compose_config(family, overrides)
    pl.seed_everything(seed, workers=True)
    has_validation = bool(cfg.model.get("validation_ds", {}).get("manifest_filepath")) or family in (
        "tagger",
        "rewriter",
    )
    curve: list[dict] = []
    clock = {"seconds": 0.0, "validations": 0}
    ema = _ema_callback(cfg)
    trainer_cfg = dict(cfg.trainer)
    if str(trainer_cfg.get("precision", "")).startswith("bf16") and not cpu_bf16_lstm_works():
        print(
            f"{Path(output).name}: this CPU's oneDNN has no bfloat16 LSTM (no AVX-512): training in float32",
            file=sys.stderr,
        )
        trainer_cfg["precision"] = "32"
    trainer_cfg.update(
        max_steps=max_steps,
        max_epochs=-1,
        accelerator="auto",
        devices=1,
        strategy="auto",
        logger=TensorBoardLogger(str(log_dir), name=Path(output).stem) if log_dir else False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
        val_check_interval=min(val_every or max_steps, max_steps) if has_validation else None,
        check_val_every_n_epoch=None,
        limit_val_batches=1.0 if has_validation else 0,
        callbacks=[
            _curve_callback(curve, clock),
            *([_validation_rng_guard()] if isolate_validation_rng and has_validation else []),
            *([ema] if ema else []),
            *callbacks,
        ],
    )
    trainer = pl.Trainer(**trainer_cfg)
    fit_schedule(cfg.model.get("optim"), max_steps)
    model = _model_class(family)(cfg=cfg.model, trainer=trainer)
    if init_from is not None:
        if not Path(init_from).is_file():
            raise FileNotFoundError(f"init_from: no such .nemo file: {init_from}")
        with open_dict(cfg):
            cfg.init_from_nemo_model = {"encoder": {"path": str(init_from), "include": ["encoder."]}}
    if any(
        cfg.get(key) for key in (*INIT_KEYS, "init_token_rows")
    ):  # NeMo's keys, e.g. +init_from_nemo_model.span.path=X.nemo
        model.maybe_init_from_pretrained_checkpoint(cfg)
    start = time.perf_counter()
    predictor_lm = model.pretrain_predictor_lm() if family == "rnnt" else None
    trainer.fit(model)
    seconds = time.perf_counter() - start
    if ema is not None and ema._ema_initialized(trainer):
        trained = {name: copy.deepcopy(module.state_dict()) for name, module in _not_averaged(model, cfg).items()}
        ema.swap_model_weights(trainer)  # the averaged weights are the model that is saved
        for name, state in trained.items():  # but for the heads that start from random weights (aux_ctc.averaged)
            getattr(model, name).load_state_dict(state)
    save_model_atomic(model, output)
    parameters = sum(p.numel() for p in model.parameters())
    return {
        "seconds": round(seconds, 1),
        "validation_seconds": round(clock["seconds"], 3),  # a tiny model validates in milliseconds
        "validations": clock["validations"],
        "steps": max_steps,
        "parameters": parameters,
        "curve": curve,
        **({"predictor_lm": predictor_lm} if predictor_lm else {}),
    }
