"""LM text from source books: held-out utterances never reach it, and whatever is left out is counted."""

import json

from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.cli import main
from nemo_pc.data.recipes.lm_text import HeldOut, split_sentences, write_lm_text

BOOK = """The first sentence is here. And the LORD spake unto Moses, saying, Speak unto the children of Israel!

Is this a question? It has 3 numbers in 1990 too.

A short one."""


def write_inputs(tmp_path, held_out):
    book = tmp_path / "book.txt"
    book.write_text(BOOK, encoding="utf-8")
    manifest = tmp_path / "test.json"
    manifest.write_text("".join(json.dumps({"text": t, "text_normalized": t.lower()}) + "\n" for t in held_out))
    return book, manifest


def test_split_sentences_after_end_marks():
    assert split_sentences("One two.  Three?\nFour! five") == ["One two.", "Three?", "Four!", "five"]
    assert split_sentences("   ") == []


def test_held_out_windows_and_short_utterances():
    held = HeldOut(["speak unto the children of israel and say", "a short one"], window=6)
    assert held.overlaps("Then he said, Speak unto the children of Israel, and go.")  # 6 shared words
    assert not held.overlaps("Speak unto the children of Judah.")  # 4 shared words
    assert held.overlaps("It was a short one.")  # the whole of an utterance shorter than the window
    assert not held.overlaps("A short story.")


@given(st.lists(st.sampled_from("a b c d e f g".split()), min_size=1, max_size=20), st.integers(1, 8))
def test_every_held_out_utterance_overlaps_itself_and_any_sentence_around_it(words, window):
    utterance = " ".join(words)
    held = HeldOut([utterance], window=window)
    assert held.overlaps(utterance)
    assert held.overlaps(f"x y {utterance} z.")


def test_write_lm_text_leaves_out_held_out_sentences_and_counts_them(tmp_path):
    book, manifest = write_inputs(tmp_path, ["speak unto the children of israel", "a short one"])
    out = tmp_path / "lm" / "text.json"
    report = write_lm_text([f"text:{book}"], out, [manifest], window=6, progress=False)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    texts = [row["text"] for row in rows]
    assert "It has 3 numbers in 1990 too." in texts and "Is this a question?" in texts
    assert not any("Israel" in t or "short one" in t for t in texts)
    assert report.sentences == len(rows) and report.dropped.total == 2
    assert report.words == sum(len(row["text_normalized"].split()) for row in rows)
    assert rows[0]["text_normalized"] == "the first sentence is here"


def test_lm_text_command_and_its_bad_input(tmp_path, capsys):
    book, manifest = write_inputs(tmp_path, ["speak unto the children of israel"])
    out = tmp_path / "text.json"
    argv = ["lm-text", str(out), "--source", f"text:{book}", "--exclude", str(manifest), "--no-progress"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(out) and "left out 1 (1 shares 6 words" in captured.err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"text": "no normalized field"}) + "\n")
    assert main(["lm-text", str(tmp_path / "x.json"), "--source", f"text:{book}", "--exclude", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.json:1: missing field 'text_normalized'" in err[0], err
    assert not (tmp_path / "x.json").exists()
    assert main(["lm-text", str(tmp_path / "x.json"), "--source", "nosuch"]) == 2
    assert "unknown text source 'nosuch'" in capsys.readouterr().err
