import json
import tarfile

import pytest

from nemo_pc.data.datasets.formatter_datasets import PairDataset
from nemo_pc.data.tokenizers.rewriter import train_rewriter_tokenizer
from nemo_pc.formatter.labels import derive_labels, span_input
from nemo_pc.models.rewriter import SpanRewriterModel
from nemo_pc.parts.manifest import ManifestError
from nemo_pc.testing.text import WRITTEN_SPOKEN, tiny_rewriter_config, write_jsonl
from nemo_pc.testing.training import fit_steps


@pytest.fixture()
def pairs():
    out = []
    for written, spoken in WRITTEN_SPOKEN:
        item = derive_labels(written, spoken)
        out += [{"input": span_input(item.words, a, b, 2), "target": text} for a, b, text in item.spans]
    return out


def _model(tmp_path, pairs, **overrides):
    texts = [p["input"] for p in pairs] + [p["target"] for p in pairs]
    tokenizer = train_rewriter_tokenizer(texts, tmp_path / "tokenizer.json", vocab_size=300)
    manifest = write_jsonl(tmp_path / "rewriter.json", pairs)
    return SpanRewriterModel(tiny_rewriter_config(tokenizer, manifest, **overrides))


def test_overfitting_memorizes_spans_and_survives_nemo_round_trip(tmp_path, pairs):
    assert {p["target"] for p in pairs} >= {"15th, 2024", "$12.3 million", "iPhone", "McDonald's", "1-800-772-1213"}
    model = _model(tmp_path, pairs)
    inputs = [p["input"] for p in pairs]
    batch = next(iter(model._train_dl))
    loss_before = model(**batch).item()
    fit_steps(model, 200, gradient_clip_val=None)
    assert model(**batch).item() < 0.1 * loss_before
    assert model.rewrite(inputs, batch_size=3) == [p["target"] for p in pairs]
    scored = model.rewrite_scored(inputs, batch_size=3)
    assert [text for text, _ in scored] == [p["target"] for p in pairs]
    assert all(0.5 < confidence <= 1.0 for _, confidence in scored)  # memorized: every token likely
    path = tmp_path / "rewriter.nemo"
    model.save_to(str(path))
    with tarfile.open(path) as archive:
        assert any(name.endswith("tokenizer.json") for name in archive.getnames())
    assert SpanRewriterModel.restore_from(str(path), map_location="cpu").rewrite(inputs) == model.rewrite(inputs)


def test_untrained_model_decodes_any_input_within_the_length_limit(tmp_path, pairs):
    model = _model(tmp_path, pairs, max_target_length=8)
    outputs = model.rewrite(["", "ünïcödé 🙂 <span> x </span>", "a " * 500])
    assert len(outputs) == 3 and all(isinstance(o, str) for o in outputs)
    assert all(len(model.tokenizer(o)["input_ids"]) <= 8 + 2 for o in outputs)
    assert model.rewrite([]) == []
    scored = model.rewrite_scored(["a <span> b </span> c", "x <span> y z </span>"])
    assert all(0.0 <= confidence < 0.5 for _, confidence in scored)  # untrained: no token is likely


def test_pair_dataset_names_file_and_line(tmp_path):
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps({"input": "a", "target": "b"}) + "\n" + json.dumps({"input": "a"}) + "\n")
    with pytest.raises(ManifestError, match=r"pairs.json:2: missing field 'target'"):
        PairDataset(str(path))


def test_full_seq2seq_starts_from_the_span_rewriter_without_its_position_table(tmp_path, pairs):
    """examples/train_rewriter.py's recipe for the full seq2seq: NeMo's init_from_nemo_model with an exclude."""
    from omegaconf import OmegaConf

    span = _model(tmp_path, pairs)
    span.save_to(str(tmp_path / "span.nemo"))
    tokenizer = tmp_path / "tokenizer.json"
    full_cfg = tiny_rewriter_config(
        tokenizer, bart={**tiny_rewriter_config(tokenizer)["bart"], "max_position_embeddings": 256}
    )
    full = SpanRewriterModel(full_cfg)
    init = {"span": {"path": str(tmp_path / "span.nemo"), "exclude": ["embed_positions"]}}
    full.maybe_init_from_pretrained_checkpoint(OmegaConf.create({"init_from_nemo_model": init}))
    loaded, theirs = full.state_dict(), span.state_dict()
    for name, value in loaded.items():
        if "embed_positions" in name:
            assert value.shape[0] > theirs[name].shape[0]
        else:
            assert value.equal(theirs[name]), name
