from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "formatter"


def _compose(name, overrides):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        return compose(config_name=name, overrides=["data_dir=/data", *overrides])


@pytest.mark.parametrize(
    ("heads", "tasks", "name"),
    [
        ([], ["punct", "case", "itn"], "PCTagger"),
        (["heads=punct"], ["punct"], "PCTagger_punct"),
        (["heads=itn"], ["itn"], "PCTagger_itn"),
    ],
)
def test_tagger_variants_differ_only_in_heads(heads, tasks, name):
    cfg = _compose("tagger", heads)
    assert list(cfg.model.tasks) == tasks and cfg.name == name
    assert cfg.model.train_ds.manifest_filepath == "/data/train_tagger.json"
    assert cfg.model.encoder.pretrained == "minilm" and cfg.output_path == f"{name}.nemo"


def test_full_seq2seq_is_the_rewriter_on_whole_examples():
    span, full = _compose("rewriter", []), _compose("rewriter", ["task=full"])
    assert span.model.train_ds.manifest_filepath == "/data/train_rewriter.json"
    assert full.model.train_ds.manifest_filepath == "/data/train_seq2seq.json"
    assert full.model.max_source_length > span.model.max_source_length
    assert span.model.bart.d_model == full.model.bart.d_model and full.name == "FullSeq2Seq"
    assert span.model.tokenizer.tokenizer_file == "/data/rewriter_tokenizer.json"
