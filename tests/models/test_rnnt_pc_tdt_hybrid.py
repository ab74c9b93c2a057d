"""The TDT (``loss=tdt``) and hybrid RNNT-CTC (``aux_ctc=normalized``) variants of the packaged RNN-T config: each
composes, trains on a memorized batch, transcribes both modes and round-trips through ``.nemo``."""

import math

import lightning.pytorch as pl
import pytest
import torch

from nemo_pc.models import EncDecRNNTPCBPEModel
from nemo_pc.testing.asr import TINY_ENCODER_OVERRIDES, audio_paths, train_tokenizer, write_pc_manifest
from nemo_pc.testing.training import LossRecorder, tiny_trainer

VARIANTS = {
    "tdt_conditioned": ["loss=tdt", "variant=conditioned"],
    "tdt_dual": ["loss=tdt", "variant=dual"],
    "hybrid_conditioned": ["aux_ctc=normalized", "variant=conditioned"],
    "hybrid_tdt_dual": ["aux_ctc=normalized", "loss=tdt", "variant=dual"],
}
STEPS = 120

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tdt_hybrid")
    manifest = write_pc_manifest(folder)
    return {"folder": folder, "manifest": manifest, "tokenizer": train_tokenizer(manifest, folder / "tokenizer")}


def _config(corpus, variant):
    from nemo_pc.pipelines.train import compose_config

    overrides = [
        *VARIANTS[variant],
        *TINY_ENCODER_OVERRIDES,
        "model.model_defaults.pred_hidden=32",
        "model.model_defaults.joint_hidden=32",
        f"model.tokenizer.dir={corpus['tokenizer']}",
        f"model.train_ds.manifest_filepath={corpus['manifest']}",
        "model.validation_ds.manifest_filepath=null",
        "model.train_ds.num_workers=0",
        "model.train_ds.batch_size=4",
        "model.spec_augment=null",
        "~model.optim.sched",
        "model.optim.lr=0.005",
        "model.log_prediction=false",
        "model.decoder.prednet.dropout=0.0" if "conditioned" in variant else "model.decoder.head.prednet.dropout=0.0",
    ]
    return compose_config("rnnt", overrides).model


_TRAINED = {}


@pytest.fixture(scope="module")
def trained(corpus):
    def get(variant):
        if variant not in _TRAINED:
            pl.seed_everything(0)
            losses = LossRecorder()
            trainer = tiny_trainer(STEPS, losses)
            model = EncDecRNNTPCBPEModel(cfg=_config(corpus, variant), trainer=trainer)
            trainer.fit(model)
            _TRAINED[variant] = (model.eval(), losses.values, trainer)
        return _TRAINED[variant]

    return get


def _audio(corpus):
    return audio_paths(corpus["manifest"])


def _texts(hyps):
    return [hyp.text if hasattr(hyp, "text") else hyp for hyp in hyps]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_variant_trains_and_transcribes_both_modes_and_round_trips(trained, corpus, variant, tmp_path):
    from nemo.collections.asr.models import ASRModel

    model, losses, trainer = trained(variant)
    tdt = "loss=tdt" in VARIANTS[variant]
    assert model.loss_name == ("tdt_scan" if tdt else "scan")
    assert (model.joint.num_extra_outputs == 5) == tdt and (model.ctc_decoder is not None) == ("hybrid" in variant)
    assert all(math.isfinite(loss) for loss in losses) and losses[-1] < 0.3 * losses[0]
    if "hybrid" in variant:
        assert math.isfinite(float(trainer.callback_metrics["train_ctc_loss"]))
    both = model.transcribe(_audio(corpus), mode="both", verbose=False, batch_size=4)
    assert _texts(both["normalized"]) != _texts(both["punctuated"])
    assert any(any(ch.isupper() or ch in ".,?" for ch in text) for text in _texts(both["punctuated"]))
    path = tmp_path / f"{variant}.nemo"
    model.save_to(str(path))
    restored = ASRModel.restore_from(str(path), map_location="cpu").eval()
    again = restored.transcribe(_audio(corpus), mode="both", verbose=False, batch_size=4)
    assert {mode: _texts(texts) for mode, texts in again.items()} == {m: _texts(t) for m, t in both.items()}


def test_the_hybrid_ctc_head_learns_the_normalized_mode(trained, corpus):
    model, _, _ = trained("hybrid_conditioned")
    signal, lengths = _signal(corpus)
    with torch.no_grad():
        encoded, encoded_len = model.forward(input_signal=signal, input_signal_length=lengths)
    ctc = _texts(model.ctc_transcripts(encoded, encoded_len))
    rnnt = _texts(model.transcribe(_audio(corpus), mode="normalized", verbose=False, batch_size=4))
    assert ctc and all(not any(ch.isupper() or ch in ".,?" for ch in text) for text in ctc)
    assert sum(a == b for a, b in zip(ctc, rnnt, strict=True)) >= 1


def _signal(corpus):
    import soundfile

    waves = [torch.tensor(soundfile.read(path, dtype="float32")[0]) for path in _audio(corpus)]
    lengths = torch.tensor([len(wave) for wave in waves])
    return torch.nn.utils.rnn.pad_sequence(waves, batch_first=True), lengths
