"""P&C batches through NeMo's lhotse loader: the same batches as the map-style loader from a manifest, its shar
export and its NeMo tarred copy; bad cuts name themselves; NeMo's duration bucketing."""

import json

import pytest
import torch

from nemo_pc.data.datasets.pc_dataset import pc_dataloader_from_config
from nemo_pc.data.recipes.shar import export_shar
from nemo_pc.parts.manifest import ManifestError, write_manifest
from nemo_pc.parts.text import normalize
from nemo_pc.testing.asr import (
    UTTERANCES,
    tone_audio,
    train_tokenizer,
    write_nemo_tarred,
    write_pc_manifest,
    write_wav,
)

pytest.importorskip("lhotse")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pc_lhotse")
    manifest = write_pc_manifest(folder, duration=0.5)
    tar, tarred_manifest = write_nemo_tarred(manifest, folder / "tarred")
    return {
        "folder": folder,
        "manifest": manifest,
        "shar": folder / "shar",
        "tar": tar,
        "tarred_manifest": tarred_manifest,
        "tokenizer": train_tokenizer(manifest, folder / "tokenizer"),
    }


@pytest.fixture(scope="module")
def tokenizer(corpus):
    from nemo.collections.common.tokenizers import SentencePieceTokenizer

    return SentencePieceTokenizer(str(corpus["tokenizer"] / "tokenizer.model"))


def _sources(corpus) -> dict[str, dict]:
    export_shar(corpus["manifest"], corpus["shar"], shard_size=10)
    return {
        "manifest": {"manifest_filepath": str(corpus["manifest"])},
        "shar": {"shar_path": str(corpus["shar"])},
        "tarred": {"manifest_filepath": str(corpus["tarred_manifest"]), "tarred_audio_filepaths": str(corpus["tar"])},
    }


# pc_fraction 0.5 with pc_seed 4 keeps the P labels of utt0 and utt1 (utt3 has none): the mask is not all-true
TARGETS = {"batch_size": 4, "shuffle": False, "pc_fraction": 0.5, "pc_seed": 4, "marks": ".,?"}


@pytest.mark.parametrize("source", ["manifest", "shar", "tarred"])
@pytest.mark.parametrize("mixed_format", [None, "m2"])
def test_lhotse_batch_equals_the_map_style_batch(corpus, tokenizer, source, mixed_format):
    expected = next(
        iter(
            pc_dataloader_from_config(
                {**TARGETS, "manifest_filepath": str(corpus["manifest"])}, tokenizer, mixed_format
            )
        )
    )
    assert expected.p_mask.tolist() == [True, True, False, False]
    config = {**TARGETS, **_sources(corpus)[source], "use_lhotse": True, "force_finite": True}
    batch = next(iter(pc_dataloader_from_config(config, tokenizer, mixed_format)))
    for name, value in expected._asdict().items():
        if name == "utt_ids":  # where each row comes from: manifest path:line there, the cut id here
            assert list(value) == [f"{corpus['manifest']}:{line}" for line in range(1, 5)]
            assert len(getattr(batch, name)) == 4 and all(getattr(batch, name))
            continue
        assert torch.equal(getattr(batch, name), value), name


def _bad_manifest(corpus, tmp_path, change) -> str:
    entries = [json.loads(line) for line in corpus["manifest"].read_text().splitlines()]
    change(entries[1])
    return str(write_manifest(tmp_path / "bad.json", entries))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda entry: entry.update(pc_source="guess"), "pc_source must be one of"),
        (lambda entry: entry.update(text_normalized="?!"), "empty transcript"),
    ],
)
def test_a_bad_cut_is_an_error_naming_the_cut(corpus, tokenizer, tmp_path, change, message):
    config = {"manifest_filepath": _bad_manifest(corpus, tmp_path, change), "batch_size": 4, "use_lhotse": True}
    with pytest.raises(ManifestError, match=message) as err:
        next(iter(pc_dataloader_from_config(config, tokenizer)))
    assert "cut utt1" in str(err.value)


def test_unreadable_audio_is_an_error_naming_the_cut(corpus, tokenizer, tmp_path):
    import shutil

    from lhotse import CutSet, Recording

    from nemo_pc.data.datasets.pc_lhotse import LhotsePCDataset

    entries = [json.loads(line) for line in corpus["manifest"].read_text().splitlines()][:2]
    cuts = []
    for entry in entries:
        copy = tmp_path / f"{entry['utt_id']}.wav"
        shutil.copy(entry["audio_filepath"], copy)
        cut = Recording.from_file(copy, recording_id=entry["utt_id"]).to_cut()
        cut.custom = {key: entry[key] for key in ("text_normalized", "utt_id")}
        cuts.append(cut)
    (tmp_path / f"{entries[1]['utt_id']}.wav").unlink()  # gone after its header was read
    with pytest.raises(ManifestError, match="cannot read audio") as err:
        LhotsePCDataset(tokenizer)[CutSet.from_cuts(cuts)]
    assert f"cut {entries[1]['utt_id']}" in str(err.value)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("bucketing_window", 20, "'bucketing_window' is a key of the map-style loader"),
        ("augmentor", {"speed": {"prob": 0.5}}, "'augmentor' is a key of the map-style loader"),
        ("concatenate_samples", True, "concatenate_samples is not supported"),
    ],
)
def test_keys_that_would_half_apply_are_refused_with_lhotse(corpus, tokenizer, key, value, message):
    config = {"manifest_filepath": str(corpus["manifest"]), "batch_size": 4, "use_lhotse": True, key: value}
    with pytest.raises(ValueError, match=message):
        pc_dataloader_from_config(config, tokenizer)


def test_lhotse_data_without_use_lhotse_is_refused(corpus, tokenizer):
    config = {"manifest_filepath": str(corpus["manifest"]), "shar_path": str(corpus["shar"]), "batch_size": 4}
    with pytest.raises(ValueError, match="shar_path needs use_lhotse: true"):
        pc_dataloader_from_config(config, tokenizer)


def test_a_shuffled_manifest_under_ddp_needs_a_shared_shard_seed(corpus, tokenizer):
    """With ``trng`` each rank would shuffle alike only by chance: the ranks' shares would overlap."""
    config = {"manifest_filepath": str(corpus["manifest"]), "batch_size": 1, "use_lhotse": True, "shuffle": True}
    with pytest.raises(ValueError, match="set an integer shard_seed"):
        pc_dataloader_from_config(config, tokenizer, global_rank=1, world_size=2)
    shares = []
    for rank in range(2):
        loader = pc_dataloader_from_config({**config, "shard_seed": 5}, tokenizer, global_rank=rank, world_size=2)
        shares.append([tuple(batch.tokens_n[0].tolist()) for batch in loader])
    assert len(shares[0]) == len(shares[1]) == 2 and not set(shares[0]) & set(shares[1])
    # one process, shar (every rank reads all of it) and an unshuffled manifest are not refused
    assert len(list(pc_dataloader_from_config(config, tokenizer))) == 4
    export_shar(corpus["manifest"], corpus["shar"], shard_size=10)
    shar = {**config, "manifest_filepath": None, "shar_path": str(corpus["shar"]), "force_finite": True}
    assert len(list(pc_dataloader_from_config(shar, tokenizer, global_rank=1, world_size=2))) == 4
    unshuffled = pc_dataloader_from_config({**config, "shuffle": False}, tokenizer, global_rank=1, world_size=2)
    assert len(list(unshuffled)) == 2


def test_nemo_duration_bucketing_gives_batches_of_one_bucket_within_the_batch_duration(tmp_path, tokenizer):
    durations = [0.3, 1.2, 0.4, 1.1, 0.35, 1.3, 0.45, 1.0]
    entries = []
    for index, duration in enumerate(durations):
        text, source = UTTERANCES[index % len(UTTERANCES)]
        wav = write_wav(tmp_path / f"b{index}.wav", tone_audio(index, duration))
        entries.append(
            {
                "audio_filepath": str(wav),
                "duration": duration,
                "text": text,
                "text_normalized": normalize(text),
                "pc_source": source,
                "utt_id": f"b{index}",
            }
        )
    manifest = write_manifest(tmp_path / "durations.json", entries)
    config = {
        "manifest_filepath": str(manifest),
        "use_lhotse": True,
        "use_bucketing": True,
        "num_buckets": 2,
        "bucket_duration_bins": [0.8],
        "batch_duration": 2.5,
        "shuffle": True,
        "seed": 0,
        "shard_seed": 0,
        "concurrent_bucketing": False,
    }
    batches = list(pc_dataloader_from_config(config, tokenizer))
    seconds = [(batch.audio_len.float() / 16000).tolist() for batch in batches]
    assert sorted(round(s, 2) for batch in seconds for s in batch) == sorted(durations)
    assert all(sum(batch) <= 2.5 + 1e-6 for batch in seconds)
    assert all(max(batch) < 0.8 or min(batch) >= 0.8 for batch in seconds), seconds
    assert all(batch.tokens_n_len.min() > 0 and batch.tokens_p_len.min() > 0 for batch in batches)


def test_the_speed_benchmark_runs_every_variant_on_a_tiny_corpus(corpus, tmp_path):
    from benchmark_loader import load_benchmark

    bench = load_benchmark("speed_lhotse")
    out = tmp_path / "speed.json"
    bench.main(
        [
            "--manifest",
            str(corpus["manifest"]),
            "--tokenizer-dir",
            str(corpus["tokenizer"]),
            "--shar",
            str(tmp_path / "shar"),
            "--batch-size",
            "2",
            "--num-buckets",
            "2",
            "--max-batches",
            "3",
            "--warmup",
            "0",
            "--json",
            str(out),
        ]
    )
    rows = json.loads(out.read_text())["variants"]
    assert sorted(rows) == ["lhotse", "lhotse_bucketed", "map_bucketed", "shar", "shar_bucketed"]
    assert all(row["batches"] >= 1 and 0.0 <= row["padding_share"] < 1.0 for row in rows.values()), rows
