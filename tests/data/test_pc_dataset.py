"""The P&C ASR dataset: both token sequences, the P-available mask, pc_fraction, and clear errors on bad input."""

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.data.datasets.pc_batch import keeps_p_label
from nemo_pc.data.datasets.pc_dataset import PCAudioTextDataset, pc_dataloader_from_config, read_pc_manifest
from nemo_pc.parts.manifest import ManifestError
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


KEPT = """
import json
from nemo_pc.data.datasets.pc_batch import keeps_p_label
print(json.dumps([keeps_p_label(f"utt{k}", 0.2, seed=3) for k in range(500)]))
"""


def test_pc_fraction_keeps_the_same_utterances_in_every_process_and_others_under_another_seed():
    """The kept share is a function of the utterance key and the seed only: two interpreters with different hash
    seeds (as two training runs, or two data-loader workers, have) keep the same utterances as this one."""
    here = [keeps_p_label(f"utt{k}", 0.2, seed=3) for k in range(500)]
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", KEPT], env=env, capture_output=True, text=True, check=True)
        assert json.loads(done.stdout) == here
    assert here != [keeps_p_label(f"utt{k}", 0.2, seed=4) for k in range(500)]


@given(st.text(min_size=1, max_size=20), st.floats(0, 1), st.floats(0, 1))
def test_a_larger_pc_fraction_never_drops_a_kept_label(key, low, high):
    low, high = sorted((low, high))
    assert not keeps_p_label(key, low) or keeps_p_label(key, high)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda entry: [entry.pop("text_normalized"), entry.pop("text")], "missing field 'text'"),
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


@given(
    durations=st.lists(st.floats(0.5, 20.0), min_size=1, max_size=200),
    batch_size=st.integers(1, 9),
    window=st.integers(1, 6),
    epoch=st.integers(0, 3),
)
def test_bucketed_batches_cover_every_utterance_once_per_epoch(durations, batch_size, window, epoch):
    from nemo_pc.data.datasets.pc_dataset import DurationBucketSampler

    sampler = DurationBucketSampler(durations, batch_size, window, seed=1)
    sampler.set_epoch(epoch)
    batches = list(sampler)
    assert sorted(i for batch in batches for i in batch) == list(range(len(durations)))
    assert all(1 <= len(batch) <= batch_size for batch in batches)
    assert len(batches) == len(sampler)


def test_bucketing_cuts_padding_and_still_shuffles():
    import random

    from nemo_pc.data.datasets.pc_dataset import DurationBucketSampler, padding_share

    rng = random.Random(0)
    durations = [rng.uniform(1.0, 8.0) for _ in range(400)]
    sampler = DurationBucketSampler(durations, 8, 20, seed=0)
    first, second = list(sampler), list(sampler)  # two epochs
    random_batches = [list(range(k, min(k + 8, 400))) for k in range(0, 400, 8)]
    assert padding_share(durations, first) < 0.5 * padding_share(durations, random_batches)
    assert first != second


@given(
    durations=st.lists(st.floats(0.5, 20.0), min_size=1, max_size=200),
    batch_size=st.integers(1, 9),
    window=st.integers(1, 6),
)
def test_unshuffled_bucketed_batches_are_sorted_windows_in_a_fixed_order(durations, batch_size, window):
    from nemo_pc.data.datasets.pc_dataset import DurationBucketSampler

    sampler = DurationBucketSampler(durations, batch_size, window, seed=1, shuffle=False)
    first, second = list(sampler), list(sampler)  # two epochs
    assert first == second
    flat = [i for batch in first for i in batch]
    assert sorted(flat) == list(range(len(durations)))
    span = batch_size * window
    for start in range(0, len(flat), span):
        chunk = flat[start : start + span]
        assert sorted(chunk) == list(range(start, start + len(chunk)))  # each window holds its manifest lines
        assert [durations[i] for i in chunk] == sorted(durations[i] for i in chunk)


def test_dataloader_with_bucketing_window_batches_similar_durations(corpus, tokenizer):
    _, manifest, _ = corpus
    config = {"manifest_filepath": str(manifest), "batch_size": 2, "shuffle": True, "bucketing_window": 4}
    loader = pc_dataloader_from_config(config, tokenizer)
    batches = list(loader)
    assert sum(len(batch.audio_len) for batch in batches) == len(loader.dataset)


def test_validation_loader_with_bucketing_window_reads_sorted_batches(corpus, tokenizer, tmp_path):
    _, manifest, _ = corpus
    entries = [json.loads(text) for text in manifest.read_text().splitlines()]
    for index, entry in enumerate(entries):  # the lines read less of their 0.5 s of audio, the first ones the most
        entry["duration"] = round(0.5 - 0.05 * (index % 8), 2)
    path = tmp_path / "varied.json"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    config = {"manifest_filepath": str(path), "batch_size": 2, "shuffle": False, "bucketing_window": 64}
    loader = pc_dataloader_from_config(config, tokenizer)
    lengths = [int(length) for batch in loader for length in batch.audio_len]
    assert len(lengths) == len(entries) and len(set(lengths)) > 1
    assert lengths == sorted(lengths)  # one window holds the whole manifest: every utterance in duration order
    assert [int(length) for batch in loader for length in batch.audio_len] == lengths  # the same order again
    plain = pc_dataloader_from_config({**config, "bucketing_window": 0}, tokenizer)
    assert [int(length) for batch in plain for length in batch.audio_len] != lengths  # manifest order otherwise


def test_nemo_augmentor_speed_perturbation_changes_the_audio_length(corpus, tokenizer):
    _, manifest, _ = corpus
    plain = pc_dataloader_from_config({"manifest_filepath": str(manifest), "batch_size": 1}, tokenizer)
    augmentor = {
        "speed": {
            "prob": 1.0,
            "sr": 16000,
            "resample_type": "scipy",
            "min_speed_rate": 0.8,
            "max_speed_rate": 0.85,
            "num_rates": -1,
        }
    }
    faster = pc_dataloader_from_config(
        {"manifest_filepath": str(manifest), "batch_size": 1, "augmentor": augmentor}, tokenizer
    )
    a, b = next(iter(plain)), next(iter(faster))
    assert abs(int(b.audio_len[0]) - int(a.audio_len[0])) > 0.1 * int(a.audio_len[0])  # a rate of 0.8-0.85
    assert b.tokens_n.tolist() == a.tokens_n.tolist()


def test_a_segment_reads_only_its_duration(corpus, tokenizer, tmp_path):
    _, manifest, _ = corpus
    entries = [json.loads(text) for text in manifest.read_text().splitlines()]
    segment = dict(entries[0], offset=0.1, duration=0.2)
    path = tmp_path / "segment.json"
    path.write_text(json.dumps(segment) + "\n")
    dataset = PCAudioTextDataset(str(path), tokenizer)
    audio = dataset[0][0]
    assert abs(len(audio) - 0.2 * 16000) <= 2


@pytest.mark.parametrize(
    ("workers", "persistent", "window"), [(1, True, 0), (1, True, 2), (0, True, 0), (1, False, 0)]
)
def test_loader_workers_persist_across_epochs_when_asked(corpus, tokenizer, workers, persistent, window):
    _, manifest, _ = corpus
    config = {
        "manifest_filepath": str(manifest),
        "batch_size": 2,
        "shuffle": True,
        "num_workers": workers,
        "persistent_workers": persistent,
        "bucketing_window": window,
    }
    loader = pc_dataloader_from_config(config, tokenizer)
    assert loader.persistent_workers is (persistent and workers > 0)
    assert loader.num_workers == workers
    first, second = list(loader), list(loader)  # two epochs
    assert len(first) == len(second) > 0


def test_the_configured_mark_set_shapes_the_p_text(tmp_path, tokenizer):
    manifest = write_pc_manifest(tmp_path, [("Stop! Go; now: here?", "book")], duration=0.2)
    assert [item.text for item in read_pc_manifest(manifest)] == ["Stop. Go. now, here?"]
    assert [item.text for item in read_pc_manifest(manifest, marks=".,?!;:")] == ["Stop! Go; now: here?"]
    assert [item.text for item in read_pc_manifest(manifest, marks="?!")] == ["Stop! Go now here?"]
    with pytest.raises(ValueError, match="data config: marks: 'x' in '.x' is a letter or digit"):
        pc_dataloader_from_config({"manifest_filepath": str(manifest), "batch_size": 1, "marks": ".x"}, tokenizer)
