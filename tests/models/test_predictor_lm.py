"""Text-only pretraining of the RNN-T predictor (nemo_pc.models.predictor_lm): every predictor kind learns the
text's next pieces, nothing else in the model moves, and bad text files get errors that name the line."""

import json

import pytest
import torch
from omegaconf import OmegaConf

from nemo_pc.models import EncDecRNNTPCBPEModel
from nemo_pc.models.predictor_lm import read_lm_text
from nemo_pc.parts.manifest import ManifestError
from nemo_pc.testing.asr import tiny_model_config, train_tokenizer, write_pc_manifest

pytestmark = pytest.mark.usefixtures("one_thread")

LINES = [
    {"text": "Yes, go home.", "text_normalized": "yes go home"},
    {"text": "Who is there?", "text_normalized": "who is there"},
    {"text": "No. Stay, Anna.", "text_normalized": "no stay anna"},
]
VARIANTS = {
    "conditioned": {"decoders": "conditioned"},
    "dual": {"decoders": "dual"},
    "single_punctuated": {"decoders": "single", "target": "punctuated"},
    "conditioned_stateless": {"decoders": "conditioned", "predictor": "stateless"},
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("predictor_lm")
    manifest = write_pc_manifest(folder)
    text = folder / "lm.json"
    text.write_text("".join(json.dumps(line) + "\n" for line in LINES), encoding="utf-8")
    return {"folder": folder, "text": text, "tokenizer": train_tokenizer(manifest, folder / "tokenizer")}


def _model(corpus, variant: str) -> EncDecRNNTPCBPEModel:
    torch.manual_seed(0)
    return EncDecRNNTPCBPEModel(cfg=OmegaConf.create(tiny_model_config(corpus["tokenizer"], **VARIANTS[variant])))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_predictor_learns_the_text_and_nothing_else_moves(corpus, variant):
    model = _model(corpus, variant).eval()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    record = model.pretrain_predictor_lm({"text": str(corpus["text"]), "steps": 120, "batch_size": 3, "lr": 0.01})
    assert record["lines"] == 3 and record["dropped"] == {}
    assert record["last_loss"] < 0.3 * record["first_loss"], record["loss"]
    moved = {name for name, p in model.named_parameters() if not torch.equal(p, before[name])}
    assert moved and all(name.startswith("decoder.") for name in moved), sorted(moved)
    assert not model.training and not model.decoder.training  # the model's eval state is kept


def test_no_text_or_no_steps_is_no_pretraining(corpus):
    model = _model(corpus, "conditioned")
    assert model.pretrain_predictor_lm() is None  # the packaged config: text null
    assert model.cfg.predictor_lm.steps == 0
    assert model.pretrain_predictor_lm({"text": str(corpus["text"]), "steps": 0}) is None
    with pytest.raises(ValueError, match="unknown key"):
        model.pretrain_predictor_lm({"text": str(corpus["text"]), "steps": 1, "epochs": 2})


def test_text_file_errors_name_the_line_and_empty_lines_are_counted(corpus, tmp_path):
    model = _model(corpus, "conditioned")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(LINES[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ManifestError, match=r"bad\.json:2: not a JSON line"):
        read_lm_text(bad, model.tokenizer, ".,?")
    bad.write_text(json.dumps({"text": "Hello."}) + "\n", encoding="utf-8")
    with pytest.raises(ManifestError, match=r"bad\.json:1: .*text_normalized"):
        read_lm_text(bad, model.tokenizer, ".,?")
    with pytest.raises(FileNotFoundError, match="predictor_lm.text"):
        read_lm_text(tmp_path / "missing.json", model.tokenizer, ".,?")
    mixed = tmp_path / "mixed.json"
    mixed.write_text("".join(json.dumps(x) + "\n" for x in [*LINES, {"text": "!", "text_normalized": "!"}]))
    tokens, counts = read_lm_text(mixed, model.tokenizer, ".,?", max_tokens=2)
    assert counts == {"lines": 4, "dropped": {"empty text": 1}}
    assert len(tokens[0]) == len(tokens[1]) == 3 and max(len(ids) for ids in tokens[1]) <= 2
    assert tokens[1][0] != tokens[0][0]  # the punctuated pieces are those of the cased, marked text
    assert read_lm_text(mixed, model.tokenizer, ".,?", max_lines=2)[1]["lines"] == 2


def test_train_model_runs_the_text_steps_first_and_records_them(corpus, tmp_path):
    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.asr import tiny_recipe_overrides

    manifest = write_pc_manifest(tmp_path)
    base = tiny_recipe_overrides("rnnt", manifest, corpus["tokenizer"])
    text = [f"model.predictor_lm.text={corpus['text']}", "model.predictor_lm.steps=30", "model.predictor_lm.lr=0.01"]
    plain = train_model("rnnt", base, tmp_path / "plain.nemo", 2, seed=0)
    taught = train_model("rnnt", [*base, *text], tmp_path / "taught.nemo", 2, seed=0)
    assert "predictor_lm" not in plain
    record = taught["predictor_lm"]
    assert record["steps"] == 30 and record["lines"] == 3 and record["last_loss"] < record["first_loss"]
    assert taught["seconds"] >= record["seconds"]  # the text steps count in the training's seconds
    restored = EncDecRNNTPCBPEModel.restore_from(str(tmp_path / "taught.nemo"), map_location="cpu")
    assert restored.cfg.predictor_lm.steps == 30  # the recipe travels with the model
