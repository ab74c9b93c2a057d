import math

from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.metrics import PCMetrics, Totals, build_metrics, utterance_counts
from nemo_pc.metrics.accumulator import as_number
from nemo_pc.parts.text import normalize

WORDS = ["the", "The", "NASA", "iPhone", "McDonald's", "don't", "12.3", "2024", "Paris", "é", "ok"]
MARKS = [".", ",", "?", "!", ";", "...", '"']
prose = st.lists(st.sampled_from(WORDS + MARKS), max_size=20).map(" ".join)
texts = st.one_of(st.text(max_size=50), prose)
ERROR_RATES = [m.name for m in build_metrics() if not m.higher_is_better]
SCORES = [m.name for m in build_metrics() if m.higher_is_better]


@given(texts)
def test_identical_texts_have_no_errors(text):
    metrics = PCMetrics()
    metrics.update(text, text, spoken=normalize(text))
    report = metrics.compute()["metrics"]
    for name in ERROR_RATES:
        assert report[name] == 0.0, name
    for name in SCORES:
        assert report[name] in (None, 1.0), name


@given(texts, texts, st.one_of(st.none(), texts))
def test_rates_are_finite_and_non_negative(ref, hyp, spoken):
    metrics = PCMetrics()
    metrics.update(ref, hyp, spoken=spoken)
    report = metrics.compute()["metrics"]
    for name, value in report.items():
        if value is None:
            assert name in SCORES, name
            continue
        assert math.isfinite(value) and value >= 0.0, (name, value)
        if name in SCORES:
            assert value <= 1.0, (name, value)


@given(st.lists(st.tuples(texts, texts), min_size=1, max_size=6))
def test_dataset_totals_are_the_sum_over_utterances(pairs):
    metrics = PCMetrics()
    expected = Totals()
    for ref, hyp in pairs:
        for key, value in utterance_counts(ref, hyp).items():
            expected[key] += value
        metrics.update(ref, hyp)
    report = metrics.compute()
    assert report["counts"] == {k: v for k, v in sorted(expected.items())}
    for metric in metrics.metrics:
        assert report["metrics"][metric.name] == as_number(metric.value(expected)), metric.name
    keys, matrix = metrics.matrix()
    assert dict(zip(keys, matrix.sum(axis=0).tolist(), strict=True)) == report["counts"]
