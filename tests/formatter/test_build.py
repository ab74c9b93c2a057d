import json
from pathlib import Path

import pytest

from nemo_pc.formatter.build import FormatterDataConfig, build_formatter_data, join_labeled
from nemo_pc.formatter.labels import derive_labels
from nemo_pc.formatter.sources import Document, synthetic_documents
from nemo_pc.parts.manifest import read_manifest
from nemo_pc.testing.text import WRITTEN_SPOKEN


def _documents():
    docs = [
        Document(f"book:{k}", "book", "The old house stood alone. Was anyone there? Nobody answered, so she left.")
        for k in range(30)
    ]
    docs.append(Document("book:noisy", "book", "I SAID NO. Ok! (an aside) fine then, you know what I mean."))
    return docs + synthetic_documents(40, seed=2)


def test_build_writes_every_split_and_kind_and_is_idempotent(tmp_path):
    config = FormatterDataConfig(sources=(), tn="none", dev=0.2, test=0.2, example_words=12, tokenizer_vocab=300)
    paths = build_formatter_data(tmp_path / "data", config, cache_dir=tmp_path / "cache", documents=_documents())
    summary = json.loads(paths["summary"].read_text())
    assert all(summary["counts"][f"{split}_tagger"] > 0 for split in ("train", "dev", "test"))
    assert summary["drops"]["by_reason"]["mostly upper case"] == 1
    tagger = read_manifest(paths["train_tagger"])
    assert all(len(e["words"]) == len(e["punct"]) == len(e["case"]) == len(e["itn"]) for e in tagger)
    docs = {e["doc_id"]: e for split in ("train", "dev", "test") for e in read_manifest(paths[f"{split}_documents"])}
    assert docs["book:noisy"]["written"] == "OK. Fine then, you know what I mean."
    assert docs["book:3"]["written"] == "The old house stood alone. Was anyone there? Nobody answered, so she left."
    rewriter = read_manifest(paths["train_rewriter"])
    assert rewriter and all("<span>" in e["input"] for e in rewriter)
    assert paths["tokenizer"].is_file()
    before = paths["summary"].stat().st_mtime_ns
    assert build_formatter_data(tmp_path / "data", config, cache_dir=tmp_path / "cache", documents=[]) == paths
    assert paths["summary"].stat().st_mtime_ns == before


def test_join_labeled_shifts_spans():
    a, b = (derive_labels(w, s) for w, s in WRITTEN_SPOKEN[:2])
    joined = join_labeled([a, b])
    assert joined.reference() == f"{WRITTEN_SPOKEN[0][0]} {WRITTEN_SPOKEN[1][0]}"


def test_formatter_data_command_builds_synthetic_data(tmp_path, capsys):
    from nemo_pc.cli import main

    out = tmp_path / "data"
    args = [
        "formatter-data",
        str(out),
        "--sources",
        "synthetic",
        "--synthetic",
        "60",
        "--tn",
        "none",
        "--tokenizer-vocab",
        "300",
        "--dev",
        "0.2",
        "--test",
        "0.2",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    assert main(args) == 0
    counts = json.loads(capsys.readouterr().out)["counts"]
    assert counts["train_rewriter"] > 0 and counts["train_tagger"] > 0
    pairs = read_manifest(out / "train_rewriter.json")
    assert all(e["input"].count("<span>") == 1 and e["target"] for e in pairs)
    assert (out / "rewriter_tokenizer.json").is_file()


@pytest.mark.parametrize(("field", "value"), [("numbers", -1), ("synthetic", -5), ("max_documents", 0)])
def test_config_refuses_negative_counts_by_name(field, value):
    with pytest.raises(ValueError, match=f"FormatterDataConfig.{field} must be"):
        FormatterDataConfig(**{field: value})


@pytest.mark.parametrize(
    "changes",
    [
        {"dev": 1.5},
        {"test": float("nan")},
        {"dev": 0.6, "test": 0.6},
        {"example_words": 0},
        {"context_words": -1},
        {"tokenizer_vocab": 0},
        {"max_gap": -1},
    ],
)
def test_bad_config_is_refused_before_any_work(changes):
    field = next(iter(changes))
    with pytest.raises(ValueError, match=f"FormatterDataConfig.{field}"):
        FormatterDataConfig(**changes)


def test_formatter_data_command_reads_own_text_files(tmp_path, capsys):
    from nemo_pc.cli import main

    story = "The old house stood alone. Was anyone there? Nobody answered, so she left the town."
    files = []
    for name, count in (("stories.txt", 70), ("letters.txt", 40)):  # about 1,200 and 700 words
        files.append(tmp_path / name)
        files[-1].write_text("\n\n".join(f"{story} Day {k} passed." for k in range(count)) + "\n", encoding="utf-8")
    out = tmp_path / "data"
    args = [
        "formatter-data",
        str(out),
        "--sources",
        "",
        "--text-file",
        str(files[0]),
        "--text-file",
        str(files[1]),
        "--tn",
        "none",
        "--tokenizer-vocab",
        "300",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["train_tagger"] > 0
    docs = [e for split in ("train", "dev", "test") for e in read_manifest(out / f"{split}_documents.json")]
    assert {e["doc_id"].rsplit(":", 1)[0] for e in docs} == {f"text:{path}" for path in files}
    assert all(e["source"] == "text" and e["written"].startswith("The old house stood alone.") for e in docs)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["documents"] == len(docs) and set(summary["text_files"]) == set(map(str, files))
    files[1].write_text(f"{story}\n", encoding="utf-8")  # an edited file is read again
    assert main(args) == 0
    assert json.loads((out / "summary.json").read_text())["documents"] < summary["documents"]


def test_paragraph_documents_end_sentences_at_blank_lines_and_count_parser_drops():
    from nemo_pc.formatter.build import document_sentences
    from nemo_pc.parts.manifest import DropCounter

    text = "6.2. Installing Packages\n\nHello\n\nAPT is a vast project. It installs packages.\n\n$ apt-get install x"
    drops = DropCounter()
    doc = Document("handbook:apt", "handbook", text, paragraphs=True, dropped=(("html code block", "$ apt update"),))
    assert document_sentences(doc, drops) == ["APT is a vast project.", "It installs packages."]
    reasons = {"html code block": 1, "no letters": 1, "too short": 2, "no final mark": 1}
    assert drops.as_dict()["by_reason"] == reasons
    assert drops.examples["html code block"] == "handbook:apt: $ apt update"
    # without paragraph ends, the heading and the turn would run into the first sentence
    glued = document_sentences(Document("book:apt", "book", text), DropCounter())
    assert glued[0] == "Installing Packages Hello APT is a vast project."


def test_formatter_data_command_names_a_missing_package(tmp_path, monkeypatch, capsys):
    from nemo_pc.cli import main
    from nemo_pc.formatter import sources

    monkeypatch.setattr(sources, "HANDBOOK_DIR", tmp_path / "missing")
    args = [
        "formatter-data",
        str(tmp_path / "data"),
        "--sources",
        "kjv,handbook",
        "--tn",
        "none",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    monkeypatch.setattr(sources, "kjv_documents", lambda: [])
    assert main(args) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("nemo-pc formatter-data: error: ") and "apt-get install debian-handbook" in error


def test_documents_an_evaluation_manifest_reads_are_left_out_of_every_split(tmp_path):
    read = "The ark rested upon the mountains of Ararat in the seventh month, on the seventeenth day."
    docs = [*_documents(), Document("book:read", "book", f"And the waters returned. {read} Then it was dry.")]
    manifest = tmp_path / "test.json"
    manifest.write_text(
        json.dumps({"audio_filepath": "a.wav", "duration": 2.0, "text": "Upon the mountains of Ararat in"}) + "\n"
    )
    config = FormatterDataConfig(
        sources=(), tn="none", dev=0.2, test=0.2, example_words=12, tokenizer_vocab=300, exclude_manifests=(manifest,)
    )
    paths = build_formatter_data(tmp_path / "data", config, cache_dir=tmp_path / "cache", documents=docs)
    kept = {e["doc_id"] for split in ("train", "dev", "test") for e in read_manifest(paths[f"{split}_documents"])}
    assert "book:read" not in kept and "book:3" in kept
    assert not any(e["doc_id"] == "book:read" for e in read_manifest(paths["train_tagger"]))
    summary = json.loads(paths["summary"].read_text())
    assert summary["drops"]["by_reason"]["document read by an evaluation manifest"] == 1
    assert summary["config"]["exclude_manifests"] == [str(manifest)]
    manifest.write_text(
        json.dumps({"audio_filepath": "a.wav", "duration": 2.0, "text": "nothing in any book here"}) + "\n"
    )
    rebuilt = build_formatter_data(tmp_path / "data", config, cache_dir=tmp_path / "cache", documents=docs)
    kept = {e["doc_id"] for split in ("train", "dev", "test") for e in read_manifest(rebuilt[f"{split}_documents"])}
    assert "book:read" in kept  # an edited manifest is read again


def test_formatter_data_command_names_a_missing_exclude_manifest(tmp_path, capsys):
    from nemo_pc.cli import main

    missing = tmp_path / "no_test.json"
    args = ["formatter-data", str(tmp_path / "data"), "--sources", "synthetic", "--synthetic", "20", "--tn", "none"]
    assert main([*args, "--exclude", str(missing), "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err.strip()
    assert str(missing) in err and len(err.splitlines()) == 1


def test_formatter_data_command_adds_fragments_of_a_manifests_lengths(tmp_path, capsys):
    from nemo_pc.cli import main

    story = "The old house stood alone. Was anyone there? Nobody answered, so she left the town."
    text = tmp_path / "stories.txt"
    text.write_text("\n\n".join(f"{story} Day {k} passed." for k in range(60)) + "\n", encoding="utf-8")
    dev = tmp_path / "dev.json"
    lines = [{"audio_filepath": f"{k}.wav", "duration": 1.0, "text": "one two three"} for k in range(4)]
    dev.write_text("".join(json.dumps(line) + "\n" for line in lines))
    common = ["--sources", "", "--text-file", str(text), "--tn", "none", "--tokenizer-vocab", "300"]
    common += ["--cache-dir", str(tmp_path / "cache")]
    assert main(["formatter-data", str(tmp_path / "plain"), *common]) == 0
    asr = ["--asr-like", "1.0", "--fragments-from", str(dev)]
    assert main(["formatter-data", str(tmp_path / "asr"), *common, *asr]) == 0
    clean = read_manifest(tmp_path / "plain" / "train_tagger.json")
    noisy = read_manifest(tmp_path / "asr" / "train_tagger.json")
    added = [row for row in noisy if row not in clean]
    lengths = [len(row["words"]) for row in added]  # the manifest's lengths (a document's last one shorter)
    assert max(lengths) == 3 and lengths.count(3) > len(lengths) / 2
    config = json.loads((tmp_path / "asr" / "summary.json").read_text())["config"]
    assert config["asr_like"] == 1.0 and json.loads(Path(config["asr_confusions"]).read_text())["substitution"] == 0
    capsys.readouterr()
    assert main(["formatter-data", str(tmp_path / "no"), *common, "--asr-like", "0.5"]) == 2
    assert "--fragments-from" in capsys.readouterr().err
    dev.write_text('{"audio_filepath": "a.wav", "duration": 1.0}\n')
    assert main(["formatter-data", str(tmp_path / "bad"), *common, *asr]) == 2
    err = capsys.readouterr().err.strip()
    assert str(dev) in err and "text" in err and len(err.splitlines()) == 1


def test_the_default_build_reads_every_source():
    from nemo_pc.formatter.sources import EXTRA_SOURCES, SOURCES

    assert FormatterDataConfig().sources == SOURCES and set(EXTRA_SOURCES) < set(SOURCES)
