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
        {"correct": 0.5, "deletions": 0.0, "insertions": 0.0, "substitutions": 0.5,
         "substitutions_to": {",": 0.5, "?": 0.0}, "per": 0.5, "operations": 2, "reference_count": 2}
    )  # fmt: skip
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
