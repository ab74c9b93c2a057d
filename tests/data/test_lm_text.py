"""LM text from source books: the documents held-out utterances read never reach it, nor any sentence that overlaps
one of those utterances, and whatever is left out is counted."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.cli import main
from nemo_pc.data.recipes.books import CorpusError
from nemo_pc.data.recipes.lm_text import IN_DOCUMENT, HeldOut, split_sentences, write_lm_text
from nemo_pc.parts.manifest import ManifestError, read_manifest
from nemo_pc.testing.corpus import write_readings, write_text_sources

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
    assert captured.out.strip() == str(out) and "1 sentences left out (1 shares 6 words" in captured.err
    assert "no --corpus; only sentences that overlap" in captured.err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"text": "no normalized field"}) + "\n")
    assert main(["lm-text", str(tmp_path / "x.json"), "--source", f"text:{book}", "--exclude", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.json:1: missing field 'text_normalized'" in err[0], err
    assert not (tmp_path / "x.json").exists()
    assert main(["lm-text", str(tmp_path / "x.json"), "--source", "nosuch"]) == 2
    assert "unknown text source 'nosuch'" in capsys.readouterr().err


DOCUMENTS = {
    "psalm": "The first song is sung at dawn. The second song answers it from the hills. The third song ends the day.",
    "river": "A river runs past the mill. There the second song answers it from the water. The river is cold.",
    "stone": "Stones lie still in the field. Nobody moves them.",
    "cloud": "Clouds drift over the hills. Rain follows them.",
}
"""Four one-chapter documents; ``river`` shares 6 words with the second sentence of ``psalm``."""


def write_corpus(tmp_path, readings):
    sources = write_text_sources(tmp_path / "sources", DOCUMENTS)
    manifests = write_readings(tmp_path / "corpus", tmp_path / "manifests", readings)
    return sources, manifests


def test_a_document_a_held_out_utterance_reads_is_left_out_whole_and_counted(tmp_path):
    sources, manifests = write_corpus(tmp_path, {"test": [("psalm", "The second song answers it from the hills.")]})
    out = tmp_path / "lm" / "text.json"
    report = write_lm_text(sources, out, [manifests["test"]], progress=False, corpus=tmp_path / "corpus")
    texts = [row["text"] for row in read_manifest(out)]
    assert texts == [
        "A river runs past the mill.",
        "The river is cold.",
        "Stones lie still in the field.",
        "Nobody moves them.",
        "Clouds drift over the hills.",
        "Rain follows them.",
    ]
    overlap = "shares 6 words with a held-out utterance"
    assert report.dropped.counts == {IN_DOCUMENT: 3, overlap: 1} and report.dropped.total == 3 + 1
    assert report.dropped.examples[IN_DOCUMENT] == "psalm, Chapter 1, paragraph 1"
    assert report.documents_left_out == ["psalm, Chapter 1"] and report.documents_not_in_sources == []
    assert report.sentences == len(texts) == 6
    summary = report.as_dict()
    titles = {"left_out_titles": ["psalm, Chapter 1"], "not_in_sources_titles": []}
    assert summary["held_out_documents"] == {"left_out": 1, "not_in_sources": 0, **titles}
    assert summary["dropped"]["by_reason"] == {IN_DOCUMENT: 3, overlap: 1}


def test_every_excluded_split_leaves_out_its_documents_and_documents_no_source_holds_are_named(tmp_path):
    test_seen = [("cloud", "Rain follows them."), ("cloud", "Clouds drift over the hills."), ("atlas", "Maps.")]
    readings = {"dev": [("stone", "Nobody moves them.")], "test_seen": test_seen}
    sources, manifests = write_corpus(tmp_path, readings)
    out = tmp_path / "text.json"
    report = write_lm_text(sources, out, manifests.values(), progress=False, corpus=tmp_path / "corpus")
    assert report.documents_left_out == ["stone, Chapter 1", "cloud, Chapter 1"]
    assert report.documents_not_in_sources == ["atlas, Chapter 1"]
    assert report.dropped.counts[IN_DOCUMENT] == 4 and report.sentences == 6
    kept = {row["text"] for row in read_manifest(out)}
    assert not kept & {"Stones lie still in the field.", "Nobody moves them.", "Clouds drift over the hills."}


def test_without_a_corpus_only_overlapping_sentences_are_left_out(tmp_path):
    sources, manifests = write_corpus(tmp_path, {"test": [("psalm", "The second song answers it from the hills.")]})
    report = write_lm_text(sources, tmp_path / "text.json", [manifests["test"]], progress=False)
    assert report.dropped.counts == {"shares 6 words with a held-out utterance": 2} and report.sentences == 8
    assert report.as_dict()["held_out_documents"]["left_out"] == 0


def test_a_bad_chapters_file_or_chapter_id_names_the_file_and_line(tmp_path):
    readings = {"test": [("psalm", "The first song is sung at dawn.")]}
    sources, manifests = write_corpus(tmp_path, readings)
    out = tmp_path / "text.json"
    with pytest.raises(FileNotFoundError, match="nowhere/CHAPTERS.TXT: no such file"):
        write_lm_text(sources, out, [manifests["test"]], progress=False, corpus=tmp_path / "nowhere")
    chapters_txt = tmp_path / "corpus" / "CHAPTERS.TXT"
    with chapters_txt.open("a") as handle:
        handle.write("10001 | 100 | x | test | 1 | 1 | Chapter 1 | psalm\n")
    with pytest.raises(CorpusError, match=r"CHAPTERS.TXT:5: bad number"):
        write_lm_text(sources, out, [manifests["test"]], progress=False, corpus=tmp_path / "corpus")
    write_corpus(tmp_path, readings)
    for line, message in (
        ({"chapter": "10007"}, "chapter 10007 is not listed in"),
        ({"chapter": "ten"}, "field 'chapter' must be a chapter id, got 'ten'"),
        ({}, "missing field 'chapter'"),
    ):
        manifests["test"].write_text(json.dumps({"text": "x", "text_normalized": "x", **line}) + "\n")
        with pytest.raises(ManifestError, match=f"test.json:1: {message}"):
            write_lm_text(sources, out, [manifests["test"]], progress=False, corpus=tmp_path / "corpus")
    assert not out.exists()


def test_lm_text_command_with_a_corpus(tmp_path, capsys):
    sources, manifests = write_corpus(tmp_path, {"test": [("psalm", "The second song answers it from the hills.")]})
    out = tmp_path / "text.json"
    argv = [
        "lm-text",
        str(out),
        "--exclude",
        str(manifests["test"]),
        "--corpus",
        str(tmp_path / "corpus"),
        "--no-progress",
        *(f"--source={spec}" for spec in sources),
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "6 sentences, " in err
    assert "1 held-out documents left out whole, 4 sentences left out (3 in a document" in err
