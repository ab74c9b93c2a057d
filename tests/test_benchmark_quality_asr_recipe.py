"""benchmarks/quality_asr_recipe.py --hours: a larger corpus may train only on what the demo's dev and test do not
read."""

from pathlib import Path

import pytest
from benchmark_loader import load_benchmark

from nemo_pc.data.recipes.books import ChapterInfo, write_chapters_txt
from nemo_pc.parts.manifest import ManifestError, write_manifest


def fake_corpus(root: Path, readers: list[tuple[int, str, str, int, str]]) -> Path:
    """``readers``: (reader id, subset, voice, book id, chapter title), one chapter each."""
    root.mkdir(parents=True)
    chapters = [
        ChapterInfo(1000 + i, reader, 0.5, subset, book, book, title, "Book")
        for i, (reader, subset, _, book, title) in enumerate(readers)
    ]
    write_chapters_txt(root / "CHAPTERS.TXT", chapters)
    lines = [
        {"utt_id": f"{reader}-{1000 + i}-0000", "split": subset, "speaker": str(reader), "voice": voice}
        for i, (reader, subset, voice, _, _) in enumerate(readers)
    ]
    write_manifest(root / "SYNTH.jsonl", lines)
    return root


def test_shared_with_held_out_names_voices_and_chapters_of_dev_and_test_read_in_train(tmp_path):
    recipe = load_benchmark("quality_asr_recipe")
    demo = fake_corpus(
        tmp_path / "demo",
        [
            (100, "dev", "flite:rms", 7, "Chapter 2"),
            (101, "test", "espeak-ng:en-us+m1", 8, "Psalms 1"),
            (102, "train", "flite:slt", 7, "Chapter 1"),
            (105, "test_seen", "flite:slt", 8, "Chapter 3"),
        ],
    )
    # test_seen reads with a training voice (flite:slt, trained on by clean too): not a held-out voice
    clean = fake_corpus(
        tmp_path / "clean",
        [
            (100, "dev", "flite:rms", 7, "Chapter 2"),
            (103, "train", "flite:slt", 7, "Chapter 1"),
            (104, "train", "flite:kal16", 9, "Chapter 2"),
        ],
    )
    assert recipe.shared_with_held_out(demo, clean) == []  # same title in another book is another chapter
    leaky = fake_corpus(
        tmp_path / "leaky",
        [(103, "train", "espeak-ng:en-us+m1", 9, "Chapter 5"), (104, "train", "flite:slt", 7, "Chapter 2")],
    )
    assert recipe.shared_with_held_out(demo, leaky) == ["espeak-ng:en-us+m1", "7 Chapter 2"]


def test_collect_tabulates_a_finished_variant(tmp_path, capsys):
    import argparse
    import json

    recipe = load_benchmark("quality_asr_recipe")
    folder = tmp_path / "vocab128_speed"
    folder.mkdir()
    curve = [{"step": 8, "dev_wer": 0.5, "dev_loss": 9.0}]
    row = {"variant": "vocab128_speed", "steps": 8, "seconds": 3.0, "curve": curve, "dev_wer": 0.5}
    (folder / "row.json").write_text(json.dumps(row) + "\n")
    collected = recipe.collect(folder, "vocab128_speed")
    assert collected == {"round": None, **row}
    out = tmp_path / "rows.json"
    recipe._report([collected], argparse.Namespace(json=str(out), demo_dir="demo_out", steps=8, jobs=1))
    assert "| vocab128_speed | None | 3 | 8: 50.0 | 50.0 |" in capsys.readouterr().out
    assert json.loads(out.read_text())["rows"] == [collected]


def test_a_synth_line_without_its_split_is_named(tmp_path):
    recipe = load_benchmark("quality_asr_recipe")
    demo = fake_corpus(tmp_path / "demo", [(100, "dev", "flite:rms", 7, "Chapter 2")])
    other = fake_corpus(tmp_path / "other", [(101, "train", "flite:slt", 7, "Chapter 1")])
    (other / "SYNTH.jsonl").write_text('{"utt_id": "x", "voice": "flite:slt"}\n')
    with pytest.raises(ManifestError, match="SYNTH.jsonl:1: missing field .split."):
        recipe.shared_with_held_out(demo, other)
