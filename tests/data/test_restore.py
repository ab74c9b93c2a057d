import random

import pytest

from nemo_pc.data.recipes.restore import BookIndex, restore_chapter
from nemo_pc.data.recipes.spoken import SpokenForm, book_words
from nemo_pc.parts.text import fold, recase
from nemo_pc.testing import PARAGRAPH

NONE = SpokenForm("none")


def _cuts(n_words: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    cuts, start = [], 0
    while start < n_words:
        end = min(n_words, start + rng.randint(3, 12))
        cuts.append((start, end))
        start = end
    return cuts


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_restores_every_cut_exactly(seed):
    book = book_words("A Tale\n\nOther words come first here.\n\n" + PARAGRAPH + "\n\nThe end.", NONE)
    chapter = book_words(PARAGRAPH, NONE)
    cuts = _cuts(len(chapter), seed)
    restored = restore_chapter(BookIndex(book), [chapter.keys[a:b] for a, b in cuts])
    assert [r.text for r in restored] == [chapter.text(a, b) for a, b in cuts]
    assert all(r.edits == 0 and r.consistent and not r.unicode_mismatch for r in restored)


def test_known_text_of_mid_sentence_cuts():
    book = book_words(PARAGRAPH, NONE)
    utterances = [
        "in the beginning the old house stood alone",
        "upon the hill and nobody in the village",
        "would go near it why should we asked",
        "the miller's wife the well known answer",
    ]
    restored = restore_chapter(BookIndex(book), [u.split() for u in utterances])
    assert [r.text for r in restored] == [
        "In the beginning the old house stood alone",
        "upon the hill, and nobody in the village",
        'would go near it. "Why should we?" asked',
        "the miller's wife; the well-known answer",
    ]


def test_reading_deviations_keep_book_marks_and_case():
    book = book_words(PARAGRAPH, NONE)
    skipped = "but julie was braver than rest she climbed the path at dawn".split()
    repeated = "opened the gate and walked into into the garden".split()
    substituted = "where roses grew wild among a stones was anyone living there".split()
    restored = restore_chapter(BookIndex(book), [skipped, repeated, substituted])
    assert [r.text for r in restored] == [
        "But Julie was braver than rest. She climbed the path at dawn,",
        "opened the gate, and walked into into the garden,",
        "where roses grew wild among a stones. Was anyone living there?",
    ]
    assert [r.edits for r in restored] == [1, 1, 1]


def test_repeated_sentence_start_copies_case_and_keeps_marks_on_second_copy():
    book = book_words("It rained. She climbed the path, and sang.", NONE)
    restored = restore_chapter(BookIndex(book), ["it rained she she climbed the path path and sang".split()])
    assert restored[0].text == "It rained. She She climbed the path path, and sang."


def test_accent_mismatch_is_flagged_not_misaligned():
    book = book_words("Then Kutúzov rode slowly along the front of the army, and the men cheered him.", NONE)
    restored = restore_chapter(BookIndex(book), ["then kutuzov rode slowly along the front".split()])
    assert restored[0].unicode_mismatch
    assert restored[0].text == "Then Kutúzov rode slowly along the front"
    assert fold("kutúzov") == "kutuzov" and fold("æther") == "aether"


def test_words_missing_from_the_book_are_not_found():
    book = book_words(PARAGRAPH, NONE)
    restored = restore_chapter(BookIndex(book), ["completely different words about engines and rockets".split()])
    assert restored[0].text is None


def test_recase_follows_the_book_word():
    assert recase("lord", "LORD") == "LORD"
    assert recase("paris", "Paris") == "Paris"
    assert recase("the", "a") == "the"
    assert recase("a", "I") == "A"
