import json
import tarfile

import pytest
import torch

from nemo_pc.data.datasets.formatter_datasets import TaggerDataset
from nemo_pc.formatter.labels import derive_labels
from nemo_pc.models.tagger import PCTaggerModel
from nemo_pc.parts.manifest import ManifestError
from nemo_pc.testing.text import WRITTEN_SPOKEN, tiny_tagger_config, write_jsonl, write_wordpiece_vocab
from nemo_pc.testing.training import fit_steps


@pytest.fixture()
def data(tmp_path):
    labeled = [derive_labels(w, s) for w, s in WRITTEN_SPOKEN]
    vocab = write_wordpiece_vocab(tmp_path / "vocab.txt", [s for _, s in WRITTEN_SPOKEN])
    manifest = write_jsonl(tmp_path / "tagger.json", [item.to_dict() for item in labeled])
    return labeled, vocab, manifest


def _agree(model, labeled, tasks=("punct", "case", "itn")):
    predicted = model.tag([item.words for item in labeled])
    return all(p[t] == getattr(item, t) for p, item in zip(predicted, labeled, strict=True) for t in tasks)


def test_overfitting_learns_all_three_label_sequences_and_survives_nemo_round_trip(data, tmp_path):
    labeled, vocab, manifest = data
    model = PCTaggerModel(tiny_tagger_config(vocab, manifest))
    assert not _agree(model, labeled)
    batch = next(iter(model._train_dl))
    loss_before = model._losses(batch)[0].item()
    fit_steps(model, 150, gradient_clip_val=None)
    assert model._losses(batch)[0].item() < 0.2 * loss_before
    assert _agree(model, labeled)
    path = tmp_path / "tagger.nemo"
    model.save_to(str(path))
    with tarfile.open(path) as archive:
        assert any(name.endswith("vocab.txt") for name in archive.getnames())
    restored = PCTaggerModel.restore_from(str(path), map_location="cpu")
    assert restored.tag([item.words for item in labeled]) == model.tag([item.words for item in labeled])


def test_loss_is_the_weighted_sum_of_the_head_losses(data):
    _, vocab, manifest = data
    model = PCTaggerModel(tiny_tagger_config(vocab, manifest, loss_weights={"punct": 0.5, "case": 0.3, "itn": 0.2}))
    batch = next(iter(model._train_dl))
    total, losses = model._losses(batch)
    expected = 0.5 * losses["punct"] + 0.3 * losses["case"] + 0.2 * losses["itn"]
    assert torch.isclose(total, expected)
    assert batch["punct_labels"].ne(-100).sum() == sum(len(item.words) for item in data[0][: len(batch["input_ids"])])


def test_single_task_model_has_one_head_and_default_labels_for_the_others(data):
    labeled, vocab, manifest = data
    model = PCTaggerModel(tiny_tagger_config(vocab, manifest, tasks=["case"]))
    assert list(model.heads) == ["case"]
    batch = next(iter(model._train_dl))
    total, losses = model._losses(batch)
    assert set(batch) == {"input_ids", "attention_mask", "case_labels"} and list(losses) == ["case"]
    predicted = model.tag([labeled[0].words])[0]
    assert set(predicted["punct"]) == {"O"} and set(predicted["itn"]) == {"O"}


def test_tag_handles_empty_and_overlong_sequences(data):
    _, vocab, _ = data
    model = PCTaggerModel(tiny_tagger_config(vocab, max_length=16))
    out = model.tag([[], ["hello"] * 40, ["ünïcödé", "🙂"]])
    assert out[0] == {"punct": [], "case": [], "itn": []}
    assert len(out[1]["punct"]) == 40 and out[1]["punct"][20:] == ["O"] * 20
    assert len(out[2]["case"]) == 2


def test_bad_label_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.json"
    good = derive_labels(*WRITTEN_SPOKEN[0]).to_dict()
    bad = dict(good, case=good["case"][:-1])
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ManifestError, match=r"bad.json:2: field 'case'"):
        TaggerDataset(str(path))


def test_long_examples_are_cut_into_windows(tmp_path):
    item = derive_labels(" ".join(["Word."] * 10), " ".join(["word"] * 10)).to_dict()
    dataset = TaggerDataset(str(write_jsonl(tmp_path / "t.json", [item])), max_words=4)
    assert [len(e["words"]) for e in dataset] == [4, 4, 2] and dataset[2]["punct"] == ["PERIOD", "PERIOD"]


def test_offline_minilm_encoder_loads_saves_and_restores(tmp_path):
    model = PCTaggerModel({"encoder": {"pretrained": "minilm", "num_layers": 2}, "tokenizer": {}, "max_length": 32})
    assert model.encoder.config.hidden_size == 384 and len(model.encoder.encoder.layer) == 2
    assert model.cfg.encoder.config.num_hidden_layers == 2
    words = "the ceo of nasa spoke on monday".split()
    before = model.tag([words])
    path = tmp_path / "minilm_tagger.nemo"
    model.save_to(str(path))
    with tarfile.open(path) as archive:
        names = archive.getnames()
    assert any(n.endswith("vocab.txt") for n in names)
    restored = PCTaggerModel.restore_from(str(path), map_location="cpu")
    assert restored.tag([words]) == before and restored.cfg.encoder.config.hidden_size == 384
