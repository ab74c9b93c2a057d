import json
import zipfile

import pytest

from nemo_pc.data.recipes.books import (
    WIKI_MEMBER,
    CorpusError,
    find_book_file,
    parse_kjv,
    read_chapters_txt,
    wiki_books,
    write_book,
)
from nemo_pc.testing import make_book

KJV = """
Genesis 1

  1 In the beginning God created the heaven and the earth.
  2 And the earth was without form, and void.

Genesis 2

  1 Thus the heavens and the earth were finished.

Exodus 1

  1 Now these are the names.
"""


def test_parse_kjv_output():
    books = parse_kjv(KJV)
    assert [(b.book_id, b.title, len(b.chapters)) for b in books] == [(10001, "Genesis", 2), (10002, "Exodus", 1)]
    assert books[0].chapters[0].title == "Genesis 1"
    assert books[0].chapters[0].text.endswith("the earth. And the earth was without form, and void.")


def test_wiki_books_from_json_and_wheel(tmp_path):
    data = {
        "Apple": {"title": "Apple", "extract": "An apple is a fruit.", "topic": "Food"},
        "Rome": {"title": "Rome", "extract": "Rome was founded in 753 BC.", "topic": "History"},
    }
    source = tmp_path / "summaries.json"
    source.write_text(json.dumps(data))
    wheel = tmp_path / "pkg.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(WIKI_MEMBER, json.dumps(data))
    for books in (wiki_books(source), wiki_books(wheel)):
        assert [b.title for b in books] == ["Wikipedia: Food", "Wikipedia: History"]
        assert books[1].chapters[0].text == "Rome\n\nRome was founded in 753 BC."


def test_book_layouts(tmp_path):
    path = write_book(tmp_path, make_book(book_id=5))
    assert path == tmp_path / "utf-8" / "5" / "the_house_on_the_hill.txt.utf-8"
    assert find_book_file(tmp_path, 5) == path
    assert find_book_file(tmp_path, 6) is None
    (tmp_path / "ascii" / "6").mkdir(parents=True)
    (tmp_path / "ascii" / "6" / "6.txt").write_text("text")
    assert find_book_file(tmp_path, 6) == tmp_path / "ascii" / "6" / "6.txt"


def test_chapters_txt_errors(tmp_path):
    path = tmp_path / "CHAPTERS.TXT"
    path.write_text(";comment\n14 | 14 | 25.03 | train-clean-360 | 1 | 2006 | Chapter 1 | Title | with pipe\n")
    assert read_chapters_txt(path)[14].project_title == "Title | with pipe"
    path.write_text(";comment\n14 | x | 25.03 | train | 1 | 2006 | Chapter 1 | Title\n")
    with pytest.raises(CorpusError, match=r"CHAPTERS\.TXT:2: bad number"):
        read_chapters_txt(path)
