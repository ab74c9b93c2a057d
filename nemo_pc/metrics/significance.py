"""Paired significance tests between two systems scored on the same utterances, and one system's bootstrap interval.

* :func:`paired_bootstrap` resamples utterances with replacement (the same resample for both systems), recomputes
  any corpus-level metric from the resampled counts, and tests "no difference" with the shifted bootstrap
  distribution of the difference. It applies to every metric, F1 included.
* :func:`matched_pairs_test` is the matched-pairs sentence-segment word error test (MAPSSWE) of NIST SCTK, which
  papers/000 uses, with each utterance taken as one segment: a two-sided z-test on the per-utterance difference
  of error counts. It applies to error-count metrics (WER family, PER, PuncER, CaseER, ...).
* :func:`bootstrap_interval` resamples one system's utterances the same way and gives the 95% percentile interval
  of any metric: how far a figure on a small test set can be trusted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from nemo_pc.metrics.accumulator import Metric, PCMetrics, Totals, as_number


def _columns(keys: Sequence[str], matrix: np.ndarray) -> Totals:
    return Totals({key: matrix[..., k] for k, key in enumerate(keys)})


def matched_pairs_test(errors_a: np.ndarray, errors_b: np.ndarray) -> dict[str, float]:
    """MAPSSWE with utterances as segments: z of the mean per-utterance error difference, two-sided p.

    Returns ``{"z": ..., "p": ...}``; with no variance in the differences, ``p`` is 1 when they are all zero and
    0 otherwise.
    """
    diff = np.asarray(errors_a, dtype=float) - np.asarray(errors_b, dtype=float)
    n = diff.size
    if n == 0:
        return {"z": 0.0, "p": 1.0}
    mean = float(diff.mean())
    var = float(diff.var(ddof=1)) if n > 1 else 0.0
    if var == 0.0:
        return {"z": 0.0 if mean == 0 else math.copysign(math.inf, mean), "p": 1.0 if mean == 0 else 0.0}
    z = mean / math.sqrt(var / n)
    return {"z": z, "p": math.erfc(abs(z) / math.sqrt(2.0))}


def bootstrap_weights(num_items: int, num_resamples: int, seed: int = 0, chunk: int = 250):
    """Yields ``(chunk, num_items)`` matrices: how many times each item is drawn in each resample."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < num_resamples:
        size = min(chunk, num_resamples - done)
        yield rng.multinomial(num_items, np.full(num_items, 1.0 / num_items), size=size)
        done += size


def paired_bootstrap(
    keys: Sequence[str],
    counts_a: np.ndarray,
    counts_b: np.ndarray,
    metrics: Sequence[Metric],
    num_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, dict]:
    """Paired bootstrap for several metrics at once.

    Args:
        keys: the count names of the matrix columns.
        counts_a: ``utterances x keys`` counts of system A.
        counts_b: the same for system B, rows in the same utterance order.
        metrics: metrics to test.
        num_resamples: bootstrap resamples.
        seed: random seed; the same seed gives the same p-values.

    Returns:
        Per metric: ``delta`` (A - B on the full set), ``ci95`` of the delta and the two-sided ``p``.
    """
    if counts_a.shape != counts_b.shape:
        raise ValueError(f"count matrices differ in shape: {counts_a.shape} vs {counts_b.shape}")
    n = counts_a.shape[0]
    observed = {
        m.name: float(m.value(_columns(keys, counts_a.sum(0)))) - float(m.value(_columns(keys, counts_b.sum(0))))
        for m in metrics
    }
    deltas: dict[str, list[np.ndarray]] = {m.name: [] for m in metrics}
    if n > 0:
        for weights in bootstrap_weights(n, num_resamples, seed):
            for m in metrics:
                delta = _resampled(m, keys, weights, counts_a) - _resampled(m, keys, weights, counts_b)
                deltas[m.name].append(delta)
    result = {}
    for m in metrics:
        delta = observed[m.name]
        samples = _defined_samples(deltas[m.name])
        if math.isnan(delta) or samples.size == 0:
            result[m.name] = {"delta": as_number(delta), "ci95": None, "p": None}
            continue
        extreme = int(np.sum(np.abs(samples - delta) >= abs(delta) - 1e-12))
        result[m.name] = {"delta": delta, "ci95": _percentile_95(samples), "p": (extreme + 1) / (samples.size + 1)}
    return result


def bootstrap_interval(system: PCMetrics, name: str, num_resamples: int = 1000, seed: int = 0) -> list[float] | None:
    """The percentile bootstrap 95% interval of one metric of one system: its utterances resampled with replacement
    (:func:`bootstrap_weights`), the metric recomputed from each resample's summed counts, as :func:`paired_bootstrap`
    does for a difference. For a small test set, where one corpus-level figure says little on its own.

    Args:
        system: the scored utterances.
        name: the metric's name in ``system.metrics`` (e.g. ``wer``).
        num_resamples: bootstrap resamples.
        seed: random seed; the same seed gives the same interval.

    Returns:
        ``[low, high]``, or ``None`` when the metric is undefined on every resample (or there is no utterance).

    Raises:
        ValueError: no metric of that name.
    """
    metric = next((m for m in system.metrics if m.name == name), None)
    if metric is None:
        raise ValueError(f"unknown metric {name!r}")
    keys, counts = system.matrix()
    values = [
        _resampled(metric, keys, weights, counts)
        for weights in (bootstrap_weights(counts.shape[0], num_resamples, seed) if counts.shape[0] else ())
    ]
    samples = _defined_samples(values)
    return _percentile_95(samples) if samples.size else None


def _resampled(metric: Metric, keys: Sequence[str], weights: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The metric on each resample of a chunk (``weights``: draws per utterance, one row per resample)."""
    value = np.asarray(metric.value(_columns(keys, weights @ counts)), float)
    return np.broadcast_to(value, (weights.shape[0],))


def _defined_samples(chunks: Sequence[np.ndarray]) -> np.ndarray:
    samples = np.concatenate(chunks) if chunks else np.array([])
    return samples[~np.isnan(samples)]


def _percentile_95(samples: np.ndarray) -> list[float]:
    return [float(np.percentile(samples, 2.5)), float(np.percentile(samples, 97.5))]


def compare_systems(
    system_a: PCMetrics, system_b: PCMetrics, num_resamples: int = 1000, seed: int = 0
) -> dict[str, dict]:
    """Every metric of two systems on the same utterances, with bootstrap and (for error rates) MAPSSWE p-values.

    Raises:
        ValueError: the two systems were not scored on the same utterances in the same order.
    """
    if system_a.ids != system_b.ids:
        raise ValueError("the two systems must be scored on the same utterances, in the same order")
    if system_a.marks != system_b.marks:
        raise ValueError(f"mark sets differ: {system_a.marks!r} vs {system_b.marks!r}")
    keys = sorted({key for row in system_a.rows + system_b.rows for key in row})
    _, counts_a = system_a.matrix(keys)
    _, counts_b = system_b.matrix(keys)
    report_a, report_b = system_a.compute()["metrics"], system_b.compute()["metrics"]
    boot = paired_bootstrap(keys, counts_a, counts_b, system_a.metrics, num_resamples, seed)
    result = {}
    for m in system_a.metrics:
        row = {"a": report_a[m.name], "b": report_b[m.name], **boot[m.name], "higher_is_better": m.higher_is_better}
        if m.errors is not None:
            n = counts_a.shape[0]
            errors_a = np.broadcast_to(np.asarray(m.errors(_columns(keys, counts_a)), float), (n,))
            errors_b = np.broadcast_to(np.asarray(m.errors(_columns(keys, counts_b)), float), (n,))
            row["p_mapsswe"] = matched_pairs_test(errors_a, errors_b)["p"]
        result[m.name] = row
    return result


def wer0_intersection(system_a: PCMetrics, system_b: PCMetrics) -> dict:
    """Capital-letter and punctuation P/R/F1 of both systems on the utterances that both recognized with WER = 0.

    papers/002 §6.1 argues that only this intersection gives a fair F1 comparison; its size is reported too.
    """
    both = [
        k
        for k, (a, b) in enumerate(zip(system_a.rows, system_b.rows, strict=True))
        if a["wer0|utts"] and b["wer0|utts"]
    ]
    names = [m.name for m in system_a.metrics if m.name.startswith("wer0_")]
    result: dict = {"utterances": len(both), "of": len(system_a.rows)}
    for label, system in (("a", system_a), ("b", system_b)):
        totals = Totals()
        for k in both:
            for key, value in system.rows[k].items():
                totals[key] += value
        result[label] = {m.name: as_number(m.value(totals)) for m in system.metrics if m.name in names}
    return result
