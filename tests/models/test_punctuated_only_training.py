"""Both P&C ASR families train from a manifest with only ``audio_filepath``, ``duration`` and punctuated ``text``
(what NeMo's P&C models train on): the tokenizer and the datasets derive ``text_normalized`` by the text rules."""

import math

import pytest
from omegaconf import OmegaConf

from nemo_pc.parts.manifest import read_manifest
from nemo_pc.parts.text import normalize
from nemo_pc.testing import asr, ctc
from nemo_pc.testing.training import LossRecorder, tiny_trainer

pytestmark = pytest.mark.usefixtures("one_thread")

STEPS = 2


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("punctuated_only")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NEMO_PC_CACHE", str(folder / "cache"))
        manifest = asr.write_punctuated_manifest(folder / "data")
        assert all(set(entry) == {"audio_filepath", "duration", "text"} for entry in read_manifest(manifest))
        yield manifest, asr.train_tokenizer(manifest, folder / "tokenizer")


def _model(family: str, tokenizer, manifest, trainer):
    if family == "rnnt":
        from nemo_pc.models import EncDecRNNTPCBPEModel

        config = asr.tiny_model_config(tokenizer, decoders="conditioned", train_manifest=manifest, batch_size=2)
        return EncDecRNNTPCBPEModel(cfg=OmegaConf.create(config), trainer=trainer)
    from nemo_pc.models.ctc_pc import EncDecCTCPCBPEModel

    config = ctc.tiny_config(tokenizer, manifest, pc={"ctc_weight": 0.5, "inter": {"weight": 0.5}})
    return EncDecCTCPCBPEModel(OmegaConf.create(config), trainer=trainer)


@pytest.mark.parametrize("family", ["rnnt", "ctc"])
def test_a_punctuated_only_manifest_trains_both_families(data, family):
    manifest, tokenizer = data
    losses = LossRecorder()
    trainer = tiny_trainer(STEPS, losses)
    model = _model(family, tokenizer, manifest, trainer)
    items = model._train_dl.dataset.items
    assert [item.text_normalized for item in items] == [normalize(text) for text in asr.PUNCTUATED_TEXTS]
    assert [item.text for item in items] == list(asr.PUNCTUATED_TEXTS)
    trainer.fit(model)
    assert len(losses.values) == STEPS and all(math.isfinite(loss) for loss in losses.values)
