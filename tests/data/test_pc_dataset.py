"""The P&C ASR dataset: both token sequences, the P-available mask, pc_fraction, and clear errors on bad input."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.data.manifest import ManifestError
from nemo_pc.data.pc_dataset import (
    PCAudioTextDataset,
    keeps_p_label,
    mode_id,
    pc_dataloader_from_config,
    read_pc_manifest,
)
from nemo_pc.testing.asr import UTTERANCES, train_tokenizer, write_pc_manifest


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pc_dataset")
    manifest = write_pc_manifest(folder, duration=0.5)
    return folder, manifest, train_tokenizer(manifest, folder / "tokenizer")


@pytest.fixture(scope="module")
def tokenizer(corpus):
    from nemo.collections.common.tokenizers import SentencePieceTokenizer

    return SentencePieceTokenizer(str(corpus[2] / "tokenizer.model"))


def _rewrite(manifest, tmp_path, change, line=2):
    entries = [json.loads(text) for text in manifest.read_text().splitlines()]
    change(entries[line - 1])
    path = tmp_path / "changed.json"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    return path


def test_batches_hold_both_token_sequences_and_the_p_mask(corpus, tokenizer):
    _, manifest, _ = corpus
    batch = next(iter(pc_dataloader_from_config({"manifest_filepath": str(manifest), "batch_size": 4}, tokenizer)))
    assert batch.audio.shape == (4, 8000) and batch.audio_len.tolist() == [8000] * 4
    assert batch.p_mask.tolist() == [True, True, True, False]
    first_p = batch.tokens_p[0, : batch.tokens_p_len[0]].tolist()
    first_n = batch.tokens_n[0, : batch.tokens_n_len[0]].tolist()
    assert tokenizer.ids_to_text(first_p) == UTTERANCES[0][0] and tokenizer.ids_to_text(first_n) == "yes go home"
    last_p = batch.tokens_p[3, : batch.tokens_p_len[3]].tolist()
    assert tokenizer.ids_to_text(last_p) == "the dog ran"


def test_pc_fraction_keeps_a_fixed_share(corpus):
    _, manifest, _ = corpus
    assert [item.p_available for item in read_pc_manifest(manifest, pc_fraction=0.0)] == [False] * 4
    keys = [f"utt{k}" for k in range(2000)]
    share = sum(keeps_p_label(key, 0.2, seed=3) for key in keys) / len(keys)
    assert 0.17 < share < 0.23
    assert [keeps_p_label(key, 0.2, seed=3) for key in keys] == [keeps_p_label(key, 0.2, seed=3) for key in keys]


@given(st.text(min_size=1, max_size=20), st.floats(0, 1), st.floats(0, 1))
def test_a_larger_pc_fraction_never_drops_a_kept_label(key, low, high):
    low, high = sorted((low, high))
    assert not keeps_p_label(key, low) or keeps_p_label(key, high)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda entry: entry.pop("text_normalized"), "missing field 'text_normalized'"),
        (lambda entry: entry.update(text_normalized=" ?! "), "empty transcript"),
        (lambda entry: entry.update(audio_filepath="/nonexistent/a.wav"), "audio file not found"),
        (lambda entry: entry.update(pc_source="guess"), "pc_source must be one of"),
        (lambda entry: entry.update(duration="long"), "'duration' must be a positive number"),
    ],
)
def test_bad_lines_name_the_file_and_line(corpus, tmp_path, change, message):
    path = _rewrite(corpus[1], tmp_path, change)
    with pytest.raises(ManifestError, match=message) as err:
        read_pc_manifest(path)
    assert str(err.value).startswith(f"{path}:2:")


def test_corrupt_audio_names_the_file_and_line(corpus, tokenizer, tmp_path):
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF not really a wav file")
    path = _rewrite(corpus[1], tmp_path, lambda entry: entry.update(audio_filepath=str(broken)), line=3)
    dataset = PCAudioTextDataset(path, tokenizer)
    with pytest.raises(ManifestError, match="cannot read audio") as err:
        dataset[2]
    assert f"{path}:3:" in str(err.value)


def test_duration_filter_counts_what_it_drops(corpus, tokenizer, tmp_path):
    path = _rewrite(corpus[1], tmp_path, lambda entry: entry.update(duration=30.0))
    dataset = PCAudioTextDataset(path, tokenizer, max_duration=20.0)
    assert len(dataset) == 3
    assert dataset.drops.as_dict()["by_reason"] == {"duration outside [min_duration, max_duration]": 1}
    with pytest.raises(ValueError, match="no utterance left"):
        PCAudioTextDataset(corpus[1], tokenizer, min_duration=0.6)


@pytest.mark.parametrize(("value", "expected"), [("normalized", 0), ("P", 1), (" Punctuated ", 1), (0, 0), (1, 1)])
def test_mode_names_and_ids(value, expected):
    assert mode_id(value) == expected


@pytest.mark.parametrize("value", ["loud", 2, -1, True, None])
def test_unknown_modes_name_the_argument(value):
    with pytest.raises(ValueError, match="style must be one of"):
        mode_id(value, "style")
