"""benchmarks/data_more_hours.py: a larger corpus's training lines are kept only when they share no held-out voice,
chapter or text with the demo folder, and no longer than its training utterances; each drop is counted by reason."""

import json
import math

from benchmark_loader import load_benchmark
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_pc.data.recipes.books import ChapterInfo, write_chapters_txt


def _folder(root, rows, chapters):
    """A demo-layout folder: ``rows`` are (split, utt_id, voice, chapter, text, duration); ``chapters`` id -> title."""
    (root / "corpus").mkdir(parents=True)
    (root / "manifests").mkdir()
    with open(root / "corpus" / "SYNTH.jsonl", "w") as synth:
        for split, utt, voice, chapter, _text, _duration in rows:
            synth.write(json.dumps({"utt_id": utt, "split": split, "voice": voice, "chapter": str(chapter)}) + "\n")
    infos = [ChapterInfo(cid, 1, 1.0, "x", 1, 1, title, "Book") for cid, title in chapters.items()]
    write_chapters_txt(root / "corpus" / "CHAPTERS.TXT", infos)
    for split in {row[0] for row in rows}:
        with open(root / "manifests" / f"{split}.json", "w") as manifest:
            for s, utt, _voice, chapter, text, duration in rows:
                if s == split:
                    row = {"utt_id": utt, "chapter": str(chapter), "text_normalized": text, "duration": duration}
                    manifest.write(json.dumps(row) + "\n")


def test_lines_touching_the_held_out_sets_are_dropped_and_counted(tmp_path):
    bench = load_benchmark("data_more_hours")
    demo, more = tmp_path / "demo", tmp_path / "more"
    _folder(
        demo,
        [
            ("train", "a", "espeak-ng:en+m1", 1, "in the beginning god created", 5.0),
            ("test_seen", "b", "espeak-ng:en+m1", 2, "a seen voice reads another chapter here", 3.0),
            ("test", "c", "flite:slt", 3, "the held out voice reads these six words aloud", 3.0),
        ],
        {1: "Genesis 1", 2: "Exodus 2", 3: "Ruth 3"},
    )
    (demo / "real_speech").mkdir()
    (demo / "real_speech" / "real_test.json").write_text(
        json.dumps({"text_normalized": "a real recording says exactly these words", "duration": 2.0}) + "\n"
    )
    _folder(
        more,
        [
            ("train", "k1", "espeak-ng:en+m1", 11, "a training voice on a new chapter", 4.0),
            ("train", "d1", "flite:slt", 12, "the test voice on a new chapter", 4.0),
            ("train", "d2", "espeak-ng:en+m1", 13, "a new line of the test chapter", 4.0),
            ("train", "d3", "espeak-ng:en+m1", 14, "then a real recording says exactly these words too", 4.0),
            ("train", "d4", "espeak-ng:en+m1", 15, "far too long a reading", 9.0),
            ("train", "k2", "espeak-ng:en+m1", 16, "a line of the seen test chapter is not held out by voice", 4.0),
        ],
        {11: "Genesis 9", 12: "Genesis 10", 13: "Ruth 3", 14: "Genesis 11", 15: "Genesis 12", 16: "Genesis 13"},
    )
    drops = bench.DropCounter()
    kept = bench.select(demo, more, drops)
    assert [row["utt_id"] for row in kept] == ["k1", "k2"]
    assert drops.counts == {
        "voice of a held-out split": 1,
        "chapter of a held-out split": 1,
        "shares 6 words with a held-out utterance": 1,
        "longer than the training split's longest utterance (5.0 s)": 1,
    }


def test_a_folder_that_is_not_a_demo_folder_is_named_with_exit_code_2(tmp_path, capsys):
    bench = load_benchmark("data_more_hours")
    code = bench.main([str(tmp_path), str(tmp_path / "out"), "--hours", "1", "--json", str(tmp_path / "r.json")])
    assert code == 2
    assert "not a demo folder" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


@settings(max_examples=50, deadline=None)
@given(n=st.integers(0, 400), share=st.floats(min_value=0.01, max_value=1.0))
def test_a_share_keeps_that_share_of_the_lines_in_order(n, share):
    bench = load_benchmark("data_more_hours")
    kept = bench.spread(list(range(n)), share)
    assert kept == sorted(set(kept))
    assert len(kept) == math.floor(n * share)
    if share == 1.0:
        assert kept == list(range(n))


def test_a_bad_held_out_manifest_line_is_named_with_exit_code_2(tmp_path, capsys):
    bench = load_benchmark("data_more_hours")
    demo = tmp_path / "demo"
    _folder(demo, [("train", "a", "espeak-ng:en+m1", 1, "in the beginning", 2.0)], {1: "Genesis 1"})
    (demo / "config.json").write_text("{}")
    (demo / "manifests" / "test.json").write_text('{"utt_id": "t", "text_normalized": "no chapter"}\n')
    code = bench.main([str(demo), str(tmp_path / "out"), "--hours", "1", "--json", str(tmp_path / "r.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert "test.json" in err and "chapter" in err
    assert not (tmp_path / "r.json").exists()
