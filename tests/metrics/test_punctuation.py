import pytest

from nemo_pc.metrics import PCMetrics, mark_f1_counts, per_counts, segmentation_counts, wer0_counts


def test_per_breakdown_by_hand():
    counts = per_counts("The cat sat, then left.", "the cat sat then Left?")
    assert counts["per|.|Substitutions"] == 1 and counts["per|.|to|?"] == 1
    assert counts["per|,|Deletions"] == 1
    assert counts["per|?|Insertions"] == 0  # the '?' is a substitution of '.', not an insertion
    assert sum(v for k, v in counts.items() if k.endswith("Correct")) == 0


def test_per_table_rates_follow_paper_002_table_4_layout():
    metrics = PCMetrics()
    metrics.update("One. Two. Three, four?", "One. Two, Three, four.")
    table = metrics.compute()["per_mark"]
    assert table["."] == (
        {
            "correct": 0.5,
            "deletions": 0.0,
            "insertions": 0.0,
            "substitutions": 0.5,
            "substitutions_to": {",": 0.5, "?": 0.0},
            "per": 0.5,
            "operations": 2,
            "reference_count": 2,
        }
    )
    assert table["?"]["substitutions_to"]["."] == 1.0 and table["?"]["per"] == 1.0
    assert table[","]["correct"] == 1.0


def test_per_is_not_fooled_by_decimal_points_or_apostrophes():
    counts = per_counts("It's 12.3 metres, isn't it?", "It's 12.3 metres isn't it?")
    assert counts["per|.|Insertions"] == 0 and counts["per|.|Deletions"] == 0
    assert counts["per|,|Deletions"] == 1 and counts["per|?|Correct"] == 1


def test_mark_f1_after_alignment_handles_recognition_errors():
    # "sat" is misrecognized, "then" is deleted; marks are still compared on aligned words.
    counts = mark_f1_counts("The cat sat, then left.", "the cat sit, left?")
    assert counts["f1|,|tp"] == 1
    assert counts["f1|.|fn"] == 1 and counts["f1|?|fp"] == 1
    metrics = PCMetrics()
    metrics.update("The cat sat, then left.", "the cat sit, left?")
    report = metrics.compute()["metrics"]
    assert report["punct[,]_f1"] == 1.0 and report["punct[.]_recall"] == 0.0
    assert report["punct[?]_precision"] == 0.0 and report["punct[?]_recall"] is None
    assert report["punct_micro_f1"] == pytest.approx(2 * 1 / (2 * 1 + 1 + 1))
    assert report["punct_macro_f1"] == pytest.approx((1.0 + 0.0 + 0.0) / 3)


def test_inserted_and_deleted_words_carry_their_marks():
    counts = mark_f1_counts("Yes.", "Well, yes.")
    assert counts["f1|.|tp"] == 1 and counts["f1|,|fp"] == 1
    counts = mark_f1_counts("Well, yes.", "yes.")
    assert counts["f1|,|fn"] == 1 and counts["f1|.|tp"] == 1


def test_segmentation_maps_sentence_ends_to_one_mark():
    counts = segmentation_counts("Stop! Go; now? Yes.", "Stop. Go, now! Yes")
    assert counts == {"seg|tp": 2, "seg|fp": 0, "seg|fn": 2}


def test_wer0_subset_only_keeps_exactly_recognized_utterances():
    counts = wer0_counts("NASA said, Hello.", "Nasa said hello.")
    assert counts["wer0|utts"] == 1
    assert (counts["wer0|cap|tp"], counts["wer0|cap|fn"], counts["wer0|cap|fp"]) == (1, 4, 0)
    assert counts["wer0|,|fn"] == 1 and counts["wer0|.|tp"] == 1
    assert wer0_counts("Hello, world.", "Hello, word.")["wer0|utts"] == 0
    assert wer0_counts("Hello, world.", "Hello, word.")["wer0|,|tp"] == 0


def _marked_text(rng, words: int, marks: str = ",.?") -> str:
    vocabulary = [f"w{k}" for k in range(40)]
    return " ".join(rng.choice(vocabulary) + (rng.choice(marks) if rng.random() < 0.2 else "") for _ in range(words))


def _per_totals(counts: dict, marks: str = ",.?") -> dict:
    return {
        m: {op: counts[f"per|{m}|{op}"] for op in ("Correct", "Deletions", "Insertions", "Substitutions")}
        for m in marks
    }


@pytest.mark.parametrize("seed", range(5))
def test_long_utterances_are_scored_in_pieces_that_keep_every_mark(seed, monkeypatch):
    import random

    from nemo_pc.metrics import punctuation

    rng = random.Random(seed)
    ref = _marked_text(rng, 150)
    # the same words with marks moved, dropped and changed: the alignment of words is the identity
    hyp = " ".join(w.rstrip(",.?") + (rng.choice(",.?") if rng.random() < 0.2 else "") for w in ref.split())
    monkeypatch.setattr(punctuation, "PER_CHUNK_WORDS", 10**9)  # one piece: NeMo's alignment of the whole text
    whole = per_counts(ref, hyp, ",.?")
    monkeypatch.setattr(punctuation, "PER_CHUNK_WORDS", 16)
    pieces = per_counts(ref, hyp, ",.?")
    assert pieces == whole
    # recognition errors as well: every reference mark is still counted once as correct, deleted or substituted
    noisy = " ".join(w for w in hyp.split() if rng.random() > 0.1) + " " + _marked_text(rng, 20)
    totals = _per_totals(per_counts(ref, noisy, ",.?"))
    for mark, ops in totals.items():
        assert ops["Correct"] + ops["Deletions"] + ops["Substitutions"] == ref.count(mark)
        assert ops["Correct"] + ops["Insertions"] + sum(
            per_counts(ref, noisy, ",.?")[f"per|{other}|to|{mark}"] for other in ",.?" if other != mark
        ) == noisy.count(mark)


def test_pieces_stay_bounded_when_nothing_matches():
    from nemo_pc.metrics.punctuation import per_chunks

    ref = [f"a{k}" for k in range(1000)]
    hyp = [f"b{k}" for k in range(1000)]
    pieces = list(per_chunks(ref, hyp, set(",."), size=10))
    assert max(len(r) for r, _ in pieces) <= 40 and max(len(h) for _, h in pieces) <= 40
    assert [t for r, _ in pieces for t in r] == ref and [t for _, h in pieces for t in h] == hyp
