"""Punctuated-only manifests: ``text_normalized`` derived from ``text`` by the text rules, cached by content, lines
without words counted, bad lines named; ``nemo-pc prepare-manifest`` writes the derived manifest ahead of time."""

import json

import pytest

from nemo_pc.cli import main
from nemo_pc.data import normalized_text
from nemo_pc.data.datasets.pc_dataset import pc_dataloader_from_config, read_pc_manifest
from nemo_pc.data.normalized_text import NO_WORD, cache_folder, derived_manifest, iter_pc_manifest, prepare_manifest
from nemo_pc.data.recipes.spoken import SpokenForm
from nemo_pc.parts.manifest import DropCounter, ManifestError, read_manifest, write_manifest
from nemo_pc.parts.text import normalize
from nemo_pc.testing.asr import PUNCTUATED_TEXTS, train_tokenizer, write_punctuated_manifest

TEXTS = list(PUNCTUATED_TEXTS)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMO_PC_CACHE", str(tmp_path / "cache"))
    return cache_folder()


@pytest.fixture
def manifest(tmp_path):
    return write_punctuated_manifest(tmp_path / "data", duration=0.5)


def test_the_derived_target_is_what_normalize_gives(manifest):
    entries = [entry for _, entry in iter_pc_manifest(manifest)]
    assert [entry["text_normalized"] for entry in entries] == [normalize(text) for text in TEXTS]
    assert [entry["text"] for entry in entries] == TEXTS
    items = read_pc_manifest(manifest)
    assert [item.text_normalized for item in items] == [normalize(text) for text in TEXTS]
    assert items[0].text == "Yes, go home." and all(item.p_available for item in items)


def test_digits_and_abbreviations_go_through_tn_first(manifest, monkeypatch):
    spoken = {"Dr. Lee paid $5.": "Doctor Lee paid five dollars."}
    monkeypatch.setattr(SpokenForm, "convert", lambda self, texts: [spoken.get(text, text) for text in texts])
    entries = read_manifest(manifest)
    entries[0]["text"] = "Dr. Lee paid $5."
    write_manifest(manifest, entries)
    first = next(iter_pc_manifest(manifest))[1]
    assert first["text_normalized"] == "doctor lee paid five dollars" and first["text"] == "Dr. Lee paid $5."


def test_the_cache_is_read_again_and_rebuilt_when_the_manifest_changes(manifest, cache, monkeypatch):
    list(iter_pc_manifest(manifest))
    assert len(list(cache.glob("*.json"))) == 1
    derive = normalized_text._derive
    calls = []
    monkeypatch.setattr(normalized_text, "_derive", lambda *args: calls.append(args) or derive(*args))
    list(iter_pc_manifest(manifest))
    assert calls == []  # same bytes, same rules: the cached texts
    entries = read_manifest(manifest)
    entries[1]["text"] = "Who was there?"
    write_manifest(manifest, entries)
    derived = [entry["text_normalized"] for _, entry in iter_pc_manifest(manifest)]
    assert len(calls) == 1 and derived[1] == "who was there"
    assert len(list(cache.glob("*.json"))) == 2
    monkeypatch.setattr(normalized_text, "DERIVATION_VERSION", normalized_text.DERIVATION_VERSION + 1)
    list(iter_pc_manifest(manifest))
    assert len(calls) == 2  # another rule version: derived again


def test_a_line_with_text_normalized_keeps_it_and_a_line_without_words_is_counted(manifest):
    entries = read_manifest(manifest)
    entries[0]["text_normalized"] = "kept as it is"
    entries[2]["text"] = " ?! "
    write_manifest(manifest, entries)
    drops = DropCounter()
    lines = dict(iter_pc_manifest(manifest, drops=drops))
    assert sorted(lines) == [1, 2, 4] and lines[1]["text_normalized"] == "kept as it is"
    assert drops.as_dict()["by_reason"] == {NO_WORD: 1} and drops.examples[NO_WORD] == f"{manifest}:3"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda entry: entry.pop("text"), ":2: missing field 'text'"),
        (lambda entry: entry.update(text=7), ":2: field 'text' must be a string"),
    ],
)
def test_a_bad_line_is_an_error_naming_the_file_and_line(manifest, change, message):
    entries = read_manifest(manifest)
    change(entries[1])
    write_manifest(manifest, entries)
    with pytest.raises(ManifestError, match=message) as err:
        read_pc_manifest(manifest)
    assert str(err.value).startswith(f"{manifest}:2:")


def test_prepare_manifest_writes_every_line_with_its_target_and_absolute_audio(manifest, tmp_path):
    report = prepare_manifest(manifest, tmp_path / "out" / "prepared.json", tn="none")
    written = read_manifest(report.path)
    assert report.lines == report.derived == len(TEXTS) and report.drops.total == 0
    assert [entry["text_normalized"] for entry in written] == [normalize(text) for text in TEXTS]
    assert all(entry["audio_filepath"] == str(manifest.parent / f"wav/utt{k}.wav") for k, entry in enumerate(written))
    assert derived_manifest(report.path) == report.path  # nothing left to derive: read as it is


def test_prepare_manifest_command_and_its_bad_input(manifest, tmp_path, capsys):
    out = tmp_path / "prepared.json"
    assert main(["prepare-manifest", str(manifest), str(out), "--no-progress"]) == 0
    assert capsys.readouterr().out.strip() == f"{out}: 4 lines, 4 with text_normalized derived from text"
    assert [entry["text_normalized"] for entry in read_manifest(out)] == [normalize(text) for text in TEXTS]
    bad = tmp_path / "bad.json"
    bad.write_text(manifest.read_text() + json.dumps({"audio_filepath": "a.wav", "duration": 1.0}) + "\n")
    assert main(["prepare-manifest", str(bad), str(tmp_path / "never.json"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"nemo-pc prepare-manifest: error: {bad}:5: missing field 'text' (fields: audio_filepath, duration)"
    ]
    assert not (tmp_path / "never.json").exists()
    bad.write_text(manifest.read_text() + "{not json\n")
    assert main(["prepare-manifest", str(bad), str(tmp_path / "never.json")]) == 2
    assert f"{bad}:5: bad JSON" in capsys.readouterr().err


def test_the_lhotse_loader_reads_a_punctuated_only_manifest(manifest, tmp_path):
    pytest.importorskip("lhotse")
    from nemo.collections.common.tokenizers import SentencePieceTokenizer

    folder = train_tokenizer(manifest, tmp_path / "tokenizer")
    tokenizer = SentencePieceTokenizer(str(folder / "tokenizer.model"))
    config = {"manifest_filepath": str(manifest), "use_lhotse": True, "batch_size": 4, "shuffle": False}
    batch = next(iter(pc_dataloader_from_config(config, tokenizer)))
    normalized = [tokenizer.ids_to_text(batch.tokens_n[row, : batch.tokens_n_len[row]].tolist()) for row in range(4)]
    assert sorted(normalized) == sorted(normalize(text) for text in TEXTS)
