"""``model.pc.sample_modes``: an RNN-T trains on one mode per utterance and step, and still learns both modes."""

import lightning.pytorch as pl
import pytest
import torch
from omegaconf import OmegaConf

from nemo_pc.data.datasets.pc_dataset import pc_dataloader_from_config
from nemo_pc.models import EncDecRNNTPCBPEModel
from nemo_pc.models.rnnt_pc_parts import ModeRows, sample_one_mode
from nemo_pc.parts.text import normalize
from nemo_pc.testing.asr import UTTERANCES, audio_paths, tiny_model_config, train_tokenizer, write_pc_manifest
from nemo_pc.testing.training import LossRecorder, tiny_trainer

pytestmark = pytest.mark.usefixtures("one_thread")


def _rows() -> ModeRows:
    # three utterances, normalized rows first; utterance 1 has no P transcript
    return ModeRows(
        utt_index=torch.tensor([0, 1, 2, 0, 1, 2]),
        modes=torch.tensor([0, 0, 0, 1, 1, 1]),
        active=torch.tensor([True, True, True, True, False, True]),
        targets=torch.tensor([[1, 2, 0, 0], [3, 0, 0, 0], [4, 5, 0, 0], [1, 2, 9, 0], [0, 0, 0, 0], [4, 5, 9, 9]]),
        target_len=torch.tensor([2, 1, 2, 3, 0, 4]),
    )


def test_one_active_row_per_utterance_with_both_modes_drawn():
    rows, drawn = _rows(), {0: set(), 1: set(), 2: set()}
    torch.manual_seed(0)
    for _ in range(200):
        kept = sample_one_mode(rows)
        assert sorted(kept.utt_index.tolist()) == [0, 1, 2] and bool(kept.active.all())
        assert kept.targets.shape[1] == int(kept.target_len.max())  # padding cut to the longest kept row
        for utt, mode, tokens, length in zip(kept.utt_index, kept.modes, kept.targets, kept.target_len, strict=True):
            source = int(torch.nonzero((rows.utt_index == utt) & (rows.modes == mode)))
            assert tokens[:length].tolist() == rows.targets[source, :length].tolist()
            drawn[int(utt)].add(int(mode))
    assert drawn == {0: {0, 1}, 1: {0}, 2: {0, 1}}  # the utterance without a P transcript keeps its N row


def test_rows_without_an_active_mode_are_left_out():
    rows = _rows()
    single = ModeRows(rows.utt_index[3:], rows.modes[3:], rows.active[3:], rows.targets[3:], rows.target_len[3:])
    kept = sample_one_mode(single)
    assert kept.utt_index.tolist() == [0, 2] and kept.modes.tolist() == [1, 1]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rnnt_sample_modes")
    manifest = write_pc_manifest(folder)
    return {"manifest": manifest, "tokenizer": train_tokenizer(manifest, folder / "tokenizer")}


@pytest.mark.parametrize("decoders", ["dual", "conditioned"])
def test_a_model_trained_on_sampled_modes_memorizes_both(corpus, decoders):
    config = OmegaConf.create(
        tiny_model_config(corpus["tokenizer"], train_manifest=corpus["manifest"], decoders=decoders, lr=0.003)
    )
    config.loss.loss_name = "scan"
    config.pc.sample_modes = True
    pl.seed_everything(0)
    losses = LossRecorder()
    trainer = tiny_trainer(200, losses)
    model = EncDecRNNTPCBPEModel(cfg=config, trainer=trainer)
    batch = next(iter(pc_dataloader_from_config(config.train_ds, model.tokenizer)))
    model.train()
    _, _, rows = model.encode_rows(batch)
    assert rows.utt_index.shape[0] == batch.audio.shape[0]  # one row per utterance in training
    model.eval()
    _, _, rows = model.encode_rows(batch)
    assert rows.utt_index.shape[0] == 2 * batch.audio.shape[0]  # every mode in validation
    trainer.fit(model)
    model.eval()
    assert losses.values[-1] < 0.05 * losses.values[0]
    texts = [text for text, _ in UTTERANCES[:2]]
    audio = audio_paths(corpus["manifest"])[:2]
    for mode, expected in (("normalized", [normalize(text) for text in texts]), ("punctuated", texts)):
        hypotheses = model.transcribe(audio, mode=mode, verbose=False)
        assert [getattr(hyp, "text", hyp) for hyp in hypotheses] == expected, mode
