import math

import numpy as np
import pytest
from scipy.stats import norm

from nemo_pc.metrics import PCMetrics
from nemo_pc.metrics.significance import (
    bootstrap_interval,
    compare_systems,
    matched_pairs_test,
    paired_bootstrap,
    wer0_intersection,
)


def test_matched_pairs_by_hand():
    result = matched_pairs_test(np.array([1, 2, 3, 4]), np.zeros(4))
    z = 2.5 / math.sqrt((5 / 3) / 4)
    assert result["z"] == pytest.approx(z)
    assert result["p"] == pytest.approx(2 * norm.sf(z))


def test_matched_pairs_degenerate_cases():
    assert matched_pairs_test(np.array([1, 1]), np.array([1, 1]))["p"] == 1.0
    assert matched_pairs_test(np.array([2, 2]), np.array([1, 1]))["p"] == 0.0
    assert matched_pairs_test(np.array([]), np.array([]))["p"] == 1.0


def _systems(n=60, seed=0):
    rng = np.random.default_rng(seed)
    refs = [f"Item {k}, done." for k in range(n)]
    good, bad = PCMetrics(), PCMetrics()
    for k, ref in enumerate(refs):
        good.update(ref, ref if rng.random() > 0.1 else f"item {k} done", utt_id=str(k))
        bad.update(ref, f"item {k} done" if rng.random() > 0.2 else ref, utt_id=str(k))
    return good, bad


def test_clearly_different_systems_get_small_p_and_identical_ones_p_one():
    good, bad = _systems()
    result = compare_systems(good, bad, num_resamples=500, seed=1)
    assert result["per"]["p"] < 0.01 and result["wer_pc"]["p_mapsswe"] < 0.01
    assert "p_mapsswe" not in result["per"]  # PER's denominator counts insertions: only the bootstrap fits it
    assert result["per"]["delta"] < 0 and result["per"]["ci95"][1] < 0
    assert result["punct_micro_f1"]["delta"] > 0 and result["punct_micro_f1"]["p"] < 0.01
    assert "p_mapsswe" not in result["punct_micro_f1"]
    same = compare_systems(good, good, num_resamples=200)
    assert same["per"]["p"] == 1.0 and same["wer_pc"]["p_mapsswe"] == 1.0 and same["per"]["delta"] == 0.0


def test_bootstrap_is_deterministic_for_a_seed():
    good, bad = _systems()
    first = compare_systems(good, bad, num_resamples=200, seed=3)
    assert compare_systems(good, bad, num_resamples=200, seed=3) == first


def test_compare_requires_the_same_utterances():
    good, _ = _systems(n=5)
    other = PCMetrics()
    other.update("x", "x", utt_id="zzz")
    with pytest.raises(ValueError, match="same utterances"):
        compare_systems(good, other)


def test_one_system_s_interval_holds_its_value_repeats_for_a_seed_and_narrows_with_more_utterances():
    few, many = _systems(n=20)[1], _systems(n=400)[1]
    for system in (few, many):
        per = system.compute()["metrics"]["per"]
        low, high = bootstrap_interval(system, "per", num_resamples=300, seed=2)
        assert low <= per <= high and low < high
    assert bootstrap_interval(few, "per", 300, seed=2) == bootstrap_interval(few, "per", 300, seed=2)
    narrow, wide = bootstrap_interval(many, "per", 300), bootstrap_interval(few, "per", 300)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]
    exact = PCMetrics()
    exact.update("All right.", "All right.")
    assert bootstrap_interval(exact, "wer", 50) == [0.0, 0.0]
    assert bootstrap_interval(PCMetrics(), "wer") is None  # no utterance
    assert bootstrap_interval(exact, "punct[?]_f1", 50) is None  # undefined on every resample
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        bootstrap_interval(exact, "nope")


def test_a_subset_of_utterances_is_scored_apart():
    system, _ = _systems(n=10)
    chosen = system.select(["3", "1"])
    assert chosen.ids == ["3", "1"] and chosen.rows == [system.rows[3], system.rows[1]]
    assert chosen.compute()["num_utterances"] == 2 and system.compute()["num_utterances"] == 10
    with pytest.raises(KeyError):
        system.select(["nope"])


def test_bootstrap_rejects_mismatched_matrices():
    with pytest.raises(ValueError, match="shape"):
        paired_bootstrap(["a"], np.zeros((2, 1)), np.zeros((3, 1)), [])


def test_wer0_intersection_scores_both_systems_on_shared_exact_utterances():
    refs = ["One, two.", "Three four.", "Five, six?"]
    a, b = PCMetrics(), PCMetrics()
    for k, (hyp_a, hyp_b) in enumerate(
        [("One, two.", "won two"), ("three four.", "Three, four."), ("five sex", "Five six?")]
    ):
        a.update(refs[k], hyp_a, utt_id=str(k))
        b.update(refs[k], hyp_b, utt_id=str(k))
    result = wer0_intersection(a, b)
    assert (result["utterances"], result["of"]) == (1, 3)  # only "Three four." is exact for both
    assert result["a"]["wer0_cap_recall"] == 0.0 and result["b"]["wer0_cap_recall"] == 1.0
    assert result["a"]["wer0_punct_f1"] == 1.0 and result["b"]["wer0_punct_precision"] == 0.5
