"""NeMo's fine-tuning path on adapted models: ``change_vocabulary`` keeps the P&C model (rows, loss, decodings), and
the calls of NeMo's ``examples/asr/speech_to_text_finetune.py`` fine-tune a nemo_pc ``.nemo``, with and without a new
tokenizer, keeping both modes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from omegaconf import OmegaConf

from nemo_pc.parts.manifest import read_manifest, write_manifest
from nemo_pc.parts.text import normalize
from nemo_pc.testing import asr

pytestmark = pytest.mark.usefixtures("one_thread")

STOCK_STEPS = 150
FINETUNE_STEPS = 40
# both fine-tunes in one interpreter take about 2 minutes on one idle core; the bound leaves room for a busy machine
FINETUNE_TIMEOUT_S = 1500

# The calls of speech_to_text_finetune.py's main() (get_base_model, check_vocabulary -> update_tokenizer,
# setup_dataloaders, setup_optimization, spec_augment, fit) on its config keys; the script imports no nemo_pc module
# (the installed startup hook lets NeMo restore nemo_pc targets).
FINETUNE = """
import sys
import lightning.pytorch as pl
import torch
from omegaconf import OmegaConf
from nemo.collections.asr.models import ASRModel
from nemo.utils import model_utils
from nemo.utils.exp_manager import exp_manager

torch.set_num_threads(1)  # a tiny model: intra-op threads only contend with the rest of a busy machine
for config_path, out_path in zip(sys.argv[1::2], sys.argv[2::2]):
    cfg = OmegaConf.load(config_path)
    trainer = pl.Trainer(**cfg.trainer)
    exp_manager(trainer, cfg.get("exp_manager", None))
    asr_model = ASRModel.restore_from(restore_path=cfg.init_from_nemo_model)
    asr_model.set_trainer(trainer)
    if cfg.model.tokenizer.update_tokenizer:
        vocab_size = asr_model.tokenizer.vocab_size
        decoder = asr_model.decoder.state_dict()
        joint_state = asr_model.joint.state_dict() if hasattr(asr_model, "joint") else None
        asr_model.change_vocabulary(new_tokenizer_dir=cfg.model.tokenizer.dir,
                                    new_tokenizer_type=cfg.model.tokenizer.type)
        if asr_model.tokenizer.vocab_size == vocab_size:
            asr_model.decoder.load_state_dict(decoder)
            if joint_state is not None:
                asr_model.joint.load_state_dict(joint_state)
    cfg = model_utils.convert_model_config_to_dict_config(cfg)
    asr_model.setup_training_data(cfg.model.train_ds)
    asr_model.setup_multiple_validation_data(cfg.model.validation_ds)
    asr_model.setup_optimization(cfg.model.optim)
    if hasattr(cfg.model, "spec_augment") and cfg.model.spec_augment is not None:
        asr_model.spec_augment = ASRModel.from_config_dict(cfg.model.spec_augment)
    trainer.fit(asr_model)
    asr_model.save_to(out_path)
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from nemo_pc.testing.stock import train_stock_tokenizer

    folder = tmp_path_factory.mktemp("finetune")
    manifest = asr.write_pc_manifest(folder / "data")
    normalized = write_manifest(
        folder / "normalized.json", [{**entry, "text": entry["text_normalized"]} for entry in read_manifest(manifest)]
    )
    texts = [normalize(text) for text, _ in asr.UTTERANCES]
    return {
        "folder": folder,
        "manifest": manifest,
        "normalized_manifest": normalized,
        "audio": [entry["audio_filepath"] for entry in read_manifest(manifest)],
        "stock_tokenizer": train_stock_tokenizer(texts, folder / "stock"),
        "pc_tokenizer": asr.train_tokenizer(manifest, folder / "pc", vocab_size=48),
    }


@pytest.fixture(scope="module")
def stock(corpus):
    """A tiny stock RNN-T that has memorized the normalized transcripts, saved as .nemo."""
    import lightning.pytorch as pl

    from nemo_pc.testing.stock import train_stock_model

    pl.seed_everything(0)
    model = train_stock_model("rnnt", corpus["stock_tokenizer"], corpus["normalized_manifest"], STOCK_STEPS)
    path = corpus["folder"] / "stock.nemo"
    model.save_to(str(path))
    return model, path


def _texts(hyps):
    return [hyp if isinstance(hyp, str) else hyp.text for hyp in hyps]


def _wer(hypotheses, corpus):
    from nemo.collections.asr.metrics.wer import word_error_rate

    references = [normalize(text) for text, _ in asr.UTTERANCES]
    return word_error_rate(list(hypotheses), references)


def _finetune_config(corpus, nemo_path, exp_dir, new_tokenizer=None) -> dict:
    data = {
        "manifest_filepath": str(corpus["manifest"]),
        "sample_rate": asr.SAMPLE_RATE,
        "batch_size": 4,
        "num_workers": 0,
        "pin_memory": False,
    }
    return {
        "name": "finetune",
        "init_from_nemo_model": str(nemo_path),
        "model": {
            "sample_rate": asr.SAMPLE_RATE,
            "train_ds": {
                **data,
                "shuffle": True,
                "max_duration": 20,
                "min_duration": 0.1,
                "is_tarred": False,
                "tarred_audio_filepaths": None,
                "shuffle_n": 2048,
                "bucketing_strategy": "fully_randomized",
                "bucketing_batch_size": None,
            },
            "validation_ds": {**data, "shuffle": False, "use_start_end_token": False},
            "test_ds": {**data, "manifest_filepath": None, "shuffle": False},
            "char_labels": {"update_labels": False, "labels": None},
            "tokenizer": {
                "update_tokenizer": new_tokenizer is not None,
                "dir": str(new_tokenizer) if new_tokenizer else None,
                "type": "bpe",
            },
            "spec_augment": None,
            "optim": {"name": "adamw", "lr": 0.003, "betas": [0.9, 0.98], "weight_decay": 0.0},
        },
        "trainer": {
            "devices": 1,
            "accelerator": "cpu",
            "max_steps": FINETUNE_STEPS,
            "max_epochs": -1,
            "limit_val_batches": 0,  # the script sets the validation data up; running it checks nothing here
            "gradient_clip_val": 1.0,
            "log_every_n_steps": 10,
            "enable_progress_bar": False,
            "num_sanity_val_steps": 0,
            "enable_checkpointing": False,
            "logger": False,
        },
        "exp_manager": {
            "exp_dir": str(exp_dir),
            "name": "finetune",
            "create_tensorboard_logger": False,
            "create_checkpoint_callback": False,
        },
    }


def test_change_vocabulary_carries_rows_and_keeps_the_pc_model(stock, corpus, tmp_path):
    from nemo_pc.losses import ModeWeightedRNNTLoss
    from nemo_pc.models.adapt import adapt_model
    from nemo_pc.models.vocabulary import pieces

    model = adapt_model(stock[0], tmp_path / "work", "dual")
    old_pieces, old_embed = pieces(model.tokenizer), model.decoder.head(1).prediction["embed"].weight.detach().clone()
    old_out = model.joint.head(1).joint_net[-1].weight.detach().clone()
    model.change_vocabulary(str(corpus["pc_tokenizer"]), "bpe")
    new_pieces = pieces(model.tokenizer)
    assert new_pieces != old_pieces and isinstance(model.loss, ModeWeightedRNNTLoss)
    assert set(model.decodings) == {0, 1} and model.wer.__class__.__name__ == "MultiModeWER"
    shared = [piece for piece in new_pieces if piece in old_pieces]
    assert shared
    for piece in shared:
        new, old = new_pieces.index(piece), old_pieces.index(piece)
        for mode in (0, 1):
            assert torch.equal(model.decoder.head(mode).prediction["embed"].weight[new], old_embed[old])
            assert torch.equal(model.joint.head(mode).joint_net[-1].weight[new], old_out[old])
    blank = len(new_pieces)
    assert torch.equal(model.joint.head(1).joint_net[-1].weight[blank], old_out[len(old_pieces)])
    both = model.transcribe(corpus["audio"], mode="both", verbose=False, batch_size=4)
    assert len(both["normalized"]) == len(both["punctuated"]) == len(corpus["audio"])


def test_ctc_change_vocabulary_carries_every_head(corpus, tmp_path):
    from nemo_pc.models.adapt import adapt_model
    from nemo_pc.models.vocabulary import pieces
    from nemo_pc.testing.stock import stock_model

    torch.manual_seed(0)
    model = adapt_model(stock_model("ctc", corpus["stock_tokenizer"]), tmp_path / "work", "dual")
    old_pieces = pieces(model.tokenizer)
    old = {
        name: getattr(model, name).decoder_layers[0].weight.detach().clone()
        for name in ("decoder", "normalized_decoder")
    }
    model.change_vocabulary(str(corpus["pc_tokenizer"]), "bpe")
    new_pieces = pieces(model.tokenizer)
    piece = next(piece for piece in new_pieces if piece in old_pieces)
    for name, weight in old.items():
        assert getattr(model, name).num_classes_with_blank == len(new_pieces) + 1
        assert torch.equal(
            getattr(model, name).decoder_layers[0].weight[new_pieces.index(piece)], weight[old_pieces.index(piece)]
        )
    assert [loss.blank for loss in model.ctc_losses.values()] == [len(new_pieces)] * len(tuple(model.heads))
    both = model.transcribe(corpus["audio"], mode="both", verbose=False, batch_size=4)
    assert len(both["punctuated"]) == len(corpus["audio"])


def test_nemo_finetune_script_calls_fine_tune_an_adapted_model(stock, corpus, tmp_path):
    """With the adapted tokenizer and with a new one (``model.tokenizer.update_tokenizer``): both modes remain, the
    punctuated mode moves and the normalized mode's WER on the tiny set stays within 1 point of the stock model's."""
    from nemo.collections.asr.models import ASRModel

    from nemo_pc.cli import main

    stock_model, stock_path = stock
    stock_texts = _texts(stock_model.transcribe(corpus["audio"], verbose=False, batch_size=4))
    adapted = tmp_path / "adapted.nemo"
    assert main(["adapt", str(stock_path), str(adapted), "--decoders", "dual"]) == 0
    arguments = []
    for name, tokenizer in (("same", None), ("new", corpus["pc_tokenizer"])):
        config = tmp_path / f"{name}.yaml"
        OmegaConf.save(OmegaConf.create(_finetune_config(corpus, adapted, tmp_path / "exp", tokenizer)), config)
        arguments += [str(config), str(tmp_path / f"{name}.nemo")]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", FINETUNE, *arguments],
        capture_output=True,
        text=True,
        timeout=FINETUNE_TIMEOUT_S,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("same", "new"):
        model = ASRModel.restore_from(str(tmp_path / f"{name}.nemo"), map_location="cpu").eval()
        assert type(model).__name__ == "EncDecRNNTPCBPEModel" and type(model.decoder).__name__ == "DualRNNTDecoder"
        assert (model.tokenizer.vocab_size == 48) == (name == "new")
        both = model.transcribe(corpus["audio"], mode="both", verbose=False, batch_size=4)
        normalized, punctuated = _texts(both["normalized"]), _texts(both["punctuated"])
        assert _wer(normalized, corpus) <= _wer(stock_texts, corpus) + 0.01, name
        assert punctuated != stock_texts and any(text != normalize(text) for text in punctuated), name
