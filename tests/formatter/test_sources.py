import json

import pytest

from nemo_pc.formatter.sources import (
    document_split,
    fortune_documents,
    load_documents,
    number_documents,
    synthetic_documents,
    text_documents,
    wiki_documents,
)


def test_document_split_is_stable_and_roughly_proportional():
    splits = [document_split(f"doc:{k}", dev=0.1, test=0.2) for k in range(2000)]
    assert splits == [document_split(f"doc:{k}", dev=0.1, test=0.2) for k in range(2000)]
    assert 0.15 < splits.count("test") / 2000 < 0.25 and 0.06 < splits.count("dev") / 2000 < 0.14


def test_fortunes_are_one_document_each(tmp_path):
    (tmp_path / "jokes").write_text("First fortune,\nover two lines.\n%\nSecond one.\n%\n")
    (tmp_path / "jokes.dat").write_bytes(b"\0\1")
    docs = fortune_documents(tmp_path)
    assert [d.text for d in docs] == ["First fortune, over two lines.", "Second one."]
    assert docs[0].doc_id == "fortunes:jokes:0" and docs[0].source == "fortunes"
    with pytest.raises(FileNotFoundError, match="fortunes"):
        fortune_documents(tmp_path / "missing")


def test_wiki_articles_are_documents(tmp_path):
    path = tmp_path / "summaries_en-us.json"
    path.write_text(json.dumps({"B": {"extract": "Bee  text."}, "A": {"extract": "Ant text."}, "C": {"extract": ""}}))
    assert [(d.doc_id, d.text) for d in wiki_documents(path)] == [("wiki:A", "Ant text."), ("wiki:B", "Bee text.")]


def test_synthetic_documents_carry_their_spoken_forms_and_caps_apply(tmp_path):
    docs = synthetic_documents(10, seed=1, per_document=4)
    assert [len(d.pairs) for d in docs] == [4, 4, 2]
    capped = load_documents(["synthetic"], tmp_path, max_documents=2, synthetic=40)
    assert len(capped) == 2
    with pytest.raises(ValueError, match="unknown text source"):
        load_documents(["web"], tmp_path)


def test_number_documents_are_written_text_for_tn(tmp_path):
    docs = number_documents(10, seed=1, per_document=4)
    assert [d.text.count(".") >= 4 for d in docs[:2]] == [True, True] and len(docs) == 3
    assert all(not d.pairs and d.source == "numbers" and any(ch.isdigit() for ch in d.text) for d in docs)
    loaded = load_documents(["numbers"], tmp_path, numbers=10, seed=1)
    assert [d.doc_id for d in loaded] == [d.doc_id for d in docs]


def test_own_text_files_are_documents_of_consecutive_paragraphs(tmp_path):
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("One two three.\n\nFour five six.\n\n\nSeven eight nine ten.\n", encoding="utf-8")
    second.write_text("A short note,\nwrapped over lines.\n", encoding="utf-8")
    docs = text_documents([first, second], document_words=6)
    assert [(doc.doc_id, doc.source) for doc in docs] == [
        (f"text:{first}:1", "text"), (f"text:{first}:2", "text"), (f"text:{second}:1", "text"),
    ]  # fmt: skip
    assert docs[0].text == "One two three.\n\nFour five six." and docs[2].text == "A short note, wrapped over lines."
    assert load_documents([], tmp_path, text_files=[second]) == docs[2:]
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\u00e9".encode("latin-1"))
    for paths, message in (([latin1], "latin1.txt: not UTF-8"), ([first, first], "first.txt: text file given twice")):
        with pytest.raises(ValueError, match=message):
            text_documents(paths)
