"""Both P&C model families train from NeMo's lhotse loader (shar and NeMo tarred audio, ``use_lhotse: true``) on
P&C batches, and ``transcribe`` still reads audio through NeMo's own loader."""

import math

import lhotse  # noqa: F401  (NeMo ASR requires it: a missing one fails)
import lightning.pytorch as pl
import pytest
from omegaconf import OmegaConf

from nemo_pc.data.datasets.pc_batch import PCBatch
from nemo_pc.data.recipes.shar import export_shar
from nemo_pc.parts.manifest import read_manifest
from nemo_pc.testing import asr, ctc
from nemo_pc.testing.training import tiny_trainer

STEPS = 4


@pytest.fixture(scope="module")
def sources(tiny_script_data, tmp_path_factory):
    manifest, _ = tiny_script_data
    folder = tmp_path_factory.mktemp("lhotse_sources")
    export_shar(manifest, folder / "shar")
    tar, tarred_manifest = asr.write_nemo_tarred(manifest, folder / "tarred")
    return {
        "shar": {"shar_path": str(folder / "shar")},
        "tarred": {"manifest_filepath": str(tarred_manifest), "tarred_audio_filepaths": str(tar)},
    }


def _model(family: str, tokenizer, train_ds: dict, trainer):
    if family == "rnnt":
        from nemo_pc.models import EncDecRNNTPCBPEModel

        config = OmegaConf.create(asr.tiny_model_config(tokenizer, decoders="conditioned", batch_size=2))
        config.train_ds = train_ds
        return EncDecRNNTPCBPEModel(cfg=config, trainer=trainer)
    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel

    config = ctc.tiny_config(tokenizer, pc={"ctc_weight": 0.5, "inter": {"weight": 0.5}})
    config["train_ds"] = train_ds
    return EncDecCTCPCBPEModel(OmegaConf.create(config), trainer=trainer)


class _Batches(pl.Callback):
    def __init__(self):
        self.losses, self.batches = [], []

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.losses.append(float(outputs["loss"]))
        self.batches.append(batch)


@pytest.mark.parametrize("source", ["shar", "tarred"])
@pytest.mark.parametrize("family", ["rnnt", "ctc"])
def test_training_steps_from_lhotse_data_carry_both_targets(tiny_script_data, sources, family, source):
    manifest, tokenizer = tiny_script_data
    pl.seed_everything(0)
    seen = _Batches()
    # a lhotse loader has no length: max_steps, an int limit_train_batches and no distributed sampler
    trainer = tiny_trainer(
        STEPS, seen, gradient_clip_val=None, limit_train_batches=STEPS, use_distributed_sampler=False
    )
    train_ds = {
        "use_lhotse": True,
        **sources[source],
        "batch_size": 2,
        "shuffle": True,
        "sample_rate": 16000,
        "seed": 0,
        "shard_seed": 0,
        "num_workers": 0,
        "pc_fraction": 1.0,
        "marks": ".,?",
    }
    model = _model(family, tokenizer, train_ds, trainer)
    trainer.fit(model)
    assert len(seen.losses) == STEPS and all(math.isfinite(loss) for loss in seen.losses)
    for batch in seen.batches:
        assert isinstance(batch, PCBatch) and batch.audio.shape[0] == 2
        assert batch.tokens_n_len.min() > 0 and batch.tokens_p_len.min() > 0
    # utt3 has no P transcript (pc_source none): the mask follows it wherever it lands
    has_p = {entry["text_normalized"]: entry["pc_source"] != "none" for entry in read_manifest(manifest)}
    for batch in seen.batches:
        for row in range(2):
            text = model.tokenizer.ids_to_text(batch.tokens_n[row, : batch.tokens_n_len[row]].tolist())
            assert bool(batch.p_mask[row]) == has_p[text]
    audio = [entry["audio_filepath"] for entry in read_manifest(manifest)]
    assert len(model.transcribe(audio, verbose=False)) == len(audio)  # NeMo's audio loader, not the P&C one


@pytest.mark.parametrize("family", ["rnnt", "ctc"])
def test_validation_from_shar_reads_every_utterance_once(tiny_script_data, sources, family):
    manifest, tokenizer = tiny_script_data
    trainer = pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False)
    lhotse_ds = {"use_lhotse": True, **sources["shar"], "batch_size": 3, "sample_rate": 16000, "marks": ".,?"}
    model = _model(family, tokenizer, dict(lhotse_ds, shuffle=True), trainer)
    model.setup_validation_data(OmegaConf.create(lhotse_ds))
    rows = sum(batch.audio.shape[0] for batch in model._validation_dl)  # ends: shar data is read once (force_finite)
    assert rows == len(read_manifest(manifest))
    metrics = trainer.validate(model, verbose=False)[0]
    assert math.isfinite(metrics["val_wer"])
