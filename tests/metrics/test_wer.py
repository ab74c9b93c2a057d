import pytest

from nemo_pc.metrics import PCMetrics, ter_counts, text_variants, wer_counts


def _report(pairs, marks=".,?"):
    metrics = PCMetrics(marks)
    for ref, hyp in pairs:
        metrics.update(ref, hyp)
    return metrics.compute()["metrics"]


def test_paper_002_example_1_per_100_wer_pc_25():
    report = _report([("I was done .", "I was done")], marks=".,?!")
    assert report["per"] == pytest.approx(1.0)
    assert report["wer_pc"] == pytest.approx(0.25)
    assert report["wer"] == 0.0


def test_paper_002_example_2_per_50_wer_pc_20():
    report = _report([("Let’s eat , Bob !", "Let’s eat Bob !")], marks=".,?!")
    assert report["per"] == pytest.approx(0.5)
    assert report["wer_pc"] == pytest.approx(0.2)


def test_variants_separate_marks_and_fold_case():
    variants = text_variants("The cat sat, then left.")
    assert variants["p_c"] == ["The", "cat", "sat", ",", "then", "left", "."]
    assert variants["np_nc"] == ["the", "cat", "sat", "then", "left"]


def test_paper_000_metrics_by_hand():
    # Case errors on "The" and "left", a deleted comma, a period read as a question mark.
    counts = wer_counts("The cat sat, then left.", "the cat sat then Left?")
    assert counts == {
        "E_np_nc": 0,
        "N_np_nc": 5,
        "E_np_c": 2,
        "N_np_c": 5,
        "E_p_nc": 2,
        "N_p_nc": 7,
        "E_p_c": 4,
        "N_p_c": 7,
        "N_p": 2,
        "N_c": 1,
    }
    report = _report([("The cat sat, then left.", "the cat sat then Left?")])
    assert report["punc_er"] == pytest.approx(2 / 2)
    assert report["case_er"] == pytest.approx(2 / 1)  # a false capital counts against the one reference capital
    assert report["pc_wer"] == pytest.approx(4 / 7)
    assert report["wer_c"] == pytest.approx(2 / 5)
    assert report["wer"] == 0.0


def test_word_errors_do_not_count_as_punctuation_errors():
    report = _report([("Hello, world.", "Hello, word.")])
    assert report["wer"] == pytest.approx(0.5)
    assert report["punc_er"] == 0.0 and report["case_er"] == 0.0
    assert report["pc_wer"] == pytest.approx(1 / 4)


def test_corpus_rates_are_ratios_of_sums_not_means():
    report = _report([("a b c d", "a b c d"), ("e", "f")])
    assert report["wer"] == pytest.approx(1 / 5)


def test_ter_uses_raw_whitespace_tokens():
    assert ter_counts("The cat sat, then left.", "the cat sat then Left?") == {"ter_E": 3, "ter_N": 5}


def test_empty_hypothesis_deletes_everything_and_empty_reference_counts_insertions():
    report = _report([("Hello, world.", "")])
    assert report["wer"] == 1.0 and report["per"] == 1.0 and report["pc_wer"] == 1.0
    counts = wer_counts("", "oh no")
    assert counts["E_np_nc"] == 2 and counts["N_np_nc"] == 0
    assert _report([("", "oh no")])["wer"] == 2.0  # an empty denominator counts errors per one item


def test_no_marks_in_reference_gives_zero_punctuation_denominator_without_dividing():
    report = _report([("hello world", "hello world")])
    assert report["per"] == 0.0 and report["punc_er"] == 0.0
    report = _report([("hello world", "hello, world.")])
    assert report["per"] == 1.0  # two inserted marks, nothing else: PER = I / I
    assert report["punc_er"] == 2.0  # N_p = 0: two errors per one item
