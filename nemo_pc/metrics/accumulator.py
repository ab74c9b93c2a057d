"""Per-utterance counts, the metric formulas over summed counts, and the dataset-level accumulator.

Every metric is a function of counts summed over utterances (errors, reference lengths, true positives, ...).
Keeping the counts per utterance makes three things easy: dataset totals are exactly the sum over utterances,
a corpus-level rate is never an average of per-utterance rates, and significance tests can resample utterances.

Zero denominators never divide: an error rate with an empty reference side counts errors per one item (0 when
there is no error), and a precision, recall or F1 with nothing to score is ``None`` (undefined).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nemo_pc.metrics.casing import case_f1_counts, cer_counts, mwer_counts
from nemo_pc.metrics.itn import iwer_counts
from nemo_pc.metrics.punctuation import (
    PER_OPERATIONS,
    mark_f1_counts,
    per_counts,
    segmentation_counts,
    wer0_counts,
)
from nemo_pc.metrics.wer import ter_counts, wer_counts
from nemo_pc.parts.text import CASE_CLASSES, DEFAULT_MARKS, SEGMENT_MARKS


class Totals(dict):
    """Summed counts; a key that never occurred reads as 0. Values may be numbers or numpy arrays."""

    def __missing__(self, key):
        return 0


def utterance_counts(
    ref: str,
    hyp: str,
    spoken: str | None = None,
    marks: str | Iterable[str] = DEFAULT_MARKS,
    segment_marks: str = SEGMENT_MARKS,
) -> dict[str, int]:
    """All counts of one reference / hypothesis pair.

    Args:
        ref: the written reference, punctuated and cased.
        hyp: the hypothesis.
        spoken: the spoken (normalized) form of the reference, for I-WER; ``None`` leaves I-WER out and counts
            the utterance in ``iwer_missing``.
        marks: the mark set.
        segment_marks: marks mapped to one segmentation mark for segmentation F1.
    """
    marks = "".join(dict.fromkeys(marks))
    counts = {"utts": 1}
    counts.update(wer_counts(ref, hyp, marks))
    counts.update(per_counts(ref, hyp, marks))
    counts.update(mark_f1_counts(ref, hyp, marks))
    counts.update(wer0_counts(ref, hyp, marks))
    counts.update(case_f1_counts(ref, hyp))
    counts.update(cer_counts(ref, hyp))
    counts.update(mwer_counts(ref, hyp))
    counts.update(ter_counts(ref, hyp))
    counts.update(segmentation_counts(ref, hyp, segment_marks))
    if spoken is None:
        counts["iwer_missing"] = 1
    else:
        counts.update(iwer_counts(ref, hyp, spoken))
    return counts


def _ratio(num, den):
    return num / np.maximum(den, 1)


def _defined(num, den):
    den = np.asarray(den, dtype=float)
    return np.where(den > 0, np.asarray(num, dtype=float) / np.maximum(den, 1), np.nan)


def precision_recall_f1(tp, fp, fn) -> tuple:
    """Precision, recall and F1 from counts; NaN where undefined (nothing predicted / nothing to find)."""
    return _defined(tp, tp + fp), _defined(tp, tp + fn), _defined(2 * tp, 2 * tp + fp + fn)


def per_errors(t: Mapping, marks: str):
    """PER numerator: deletions, insertions and substitutions of every mark."""
    return sum(t[f"per|{m}|{op}"] for m in marks for op in PER_OPERATIONS[1:])


def per_total(t: Mapping, marks: str):
    """PER denominator: every PER operation, correct ones included (papers/002 eq. 2)."""
    return sum(t[f"per|{m}|{op}"] for m in marks for op in PER_OPERATIONS)


@dataclass(frozen=True)
class Metric:
    """A corpus-level metric: ``value(totals)``; ``errors(counts)`` gives per-utterance error counts for the
    matched-pairs test when the metric is an error rate. ``support(totals)`` is what the value is computed over."""

    name: str
    value: Callable[[Mapping], object]
    support: Callable[[Mapping], object]
    higher_is_better: bool = False
    errors: Callable[[Mapping], object] | None = None
    source: str = ""


def _rate(name: str, err: Callable, den: Callable, source: str, matched_pairs: bool = True) -> Metric:
    """An error rate ``err / den``. ``matched_pairs=False`` for a rate whose denominator depends on the hypothesis
    (PER counts insertions in it): a test on raw error counts would test another quantity, so only the bootstrap,
    which recomputes the rate on each resample, gives its p-value."""
    errors = err if matched_pairs else None
    return Metric(name, lambda t: _ratio(err(t), den(t)), den, errors=errors, source=source)


def _f1_family(name: str, keys: Callable[[str], list[str]], source: str) -> list[Metric]:
    """Precision, recall and F1 over the counts ``keys(kind)`` summed, for kind in tp / fp / fn."""

    def get(t: Mapping, kind: str):
        return sum(t[key] for key in keys(kind))

    def support(t: Mapping):
        return get(t, "tp") + get(t, "fn")

    def parts(t: Mapping) -> tuple:
        return precision_recall_f1(get(t, "tp"), get(t, "fp"), get(t, "fn"))

    return [
        Metric(f"{name}_precision", lambda t: parts(t)[0], support, True, source=source),
        Metric(f"{name}_recall", lambda t: parts(t)[1], support, True, source=source),
        Metric(f"{name}_f1", lambda t: parts(t)[2], support, True, source=source),
    ]


def build_metrics(marks: str = DEFAULT_MARKS) -> list[Metric]:
    """Every metric of the five papers for a given mark set, in report order."""
    marks = "".join(dict.fromkeys(marks))
    metrics = [
        _rate("wer", lambda t: t["E_np_nc"], lambda t: t["N_np_nc"], "002 §6.2, 000 eq. 8"),
        _rate("wer_c", lambda t: t["E_np_c"], lambda t: t["N_np_c"], "002 §6.2"),
        _rate("wer_pc", lambda t: t["E_p_c"], lambda t: t["N_p_c"], "002 §6.2"),
        _rate("per", lambda t: per_errors(t, marks), lambda t: per_total(t, marks), "002 eq. 2", False),
        _rate("punc_er", lambda t: t["E_p_nc"] - t["E_np_nc"], lambda t: t["N_p"], "000 eq. 8"),
        _rate("case_er", lambda t: t["E_np_c"] - t["E_np_nc"], lambda t: t["N_c"], "000 eq. 8"),
        _rate("pc_wer", lambda t: t["E_p_c"], lambda t: t["N_p_c"], "000 eq. 8"),
        _rate("cer", lambda t: t["cer_E"], lambda t: t["cer_N"], "003 §5.1"),
        _rate("i_wer", lambda t: t["iwer_E"], lambda t: t["iwer_N"], "003 §5.1"),
        _rate("m_wer", lambda t: t["mwer_E"], lambda t: t["mwer_N"], "003 §5.1"),
        _rate("ter", lambda t: t["ter_E"], lambda t: t["ter_N"], "001 §3.1"),
    ]
    for m in marks:
        metrics.append(
            _rate(f"per[{m}]", lambda t, m=m: per_errors(t, m), lambda t, m=m: per_total(t, m), "002 T4", False)
        )
    metrics += _f1_family("punct_micro", lambda k: [f"f1|{m}|{k}" for m in marks], "004 §5.3")
    for m in marks:
        metrics += _f1_family(f"punct[{m}]", lambda k, m=m: [f"f1|{m}|{k}"], "004 §5.3")
    metrics.append(
        Metric(
            "punct_macro_f1",
            lambda t: _nanmean([_mark_f1(t, m) for m in marks]),
            lambda t: sum(t[f"f1|{m}|tp"] + t[f"f1|{m}|fn"] for m in marks),
            True,
            source="004 Table 2",
        )
    )
    metrics += _f1_family("seg", lambda k: [f"seg|{k}"], "001 §3.1")
    for c in CASE_CLASSES:
        metrics += _f1_family(f"case[{c.lower()}]", lambda k, c=c: [f"case|{c}|{k}"], "003 Table 5")
    metrics += _f1_family("wer0_cap", lambda k: [f"wer0|cap|{k}"], "002 Table 2")
    metrics += _f1_family("wer0_punct", lambda k: [f"wer0|{m}|{k}" for m in marks], "002 Table 2")
    return metrics


def _mark_f1(t: Mapping, mark: str):
    return precision_recall_f1(t[f"f1|{mark}|tp"], t[f"f1|{mark}|fp"], t[f"f1|{mark}|fn"])[2]


def _nanmean(values: list) -> object:
    stacked = np.stack([np.asarray(v, dtype=float) for v in values])
    with np.errstate(invalid="ignore"):
        count = np.sum(~np.isnan(stacked), axis=0)
        total = np.nansum(stacked, axis=0)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def as_number(value) -> float | None:
    """A metric value as a plain float, or ``None`` when it is undefined."""
    value = float(value)
    return None if np.isnan(value) else value


def per_breakdown(totals: Mapping, marks: str) -> dict[str, dict]:
    """The per-mark table of papers/002 Table 4: each operation's share of that mark's operations."""
    table = {}
    for m in marks:
        total = per_total(totals, m)
        row = {op.lower(): as_number(_defined(totals[f"per|{m}|{op}"], total)) for op in PER_OPERATIONS}
        row["substitutions_to"] = {o: as_number(_defined(totals[f"per|{m}|to|{o}"], total)) for o in marks if o != m}
        row["per"] = as_number(_defined(per_errors(totals, m), total))
        row["operations"] = int(total)
        row["reference_count"] = int(totals[f"f1|{m}|tp"] + totals[f"f1|{m}|fn"])
        table[m] = row
    return table


class PCMetrics:
    """Dataset-level accumulator of every P&C metric, in the update / compute / reset style of torchmetrics.

    Example:
        >>> metrics = PCMetrics(marks=".,?")
        >>> _ = metrics.update("I was done.", "I was done")
        >>> round(metrics.compute()["metrics"]["per"], 2)
        1.0
    """

    def __init__(self, marks: str | Iterable[str] = DEFAULT_MARKS, segment_marks: str = SEGMENT_MARKS) -> None:
        self.marks = "".join(dict.fromkeys(marks))
        self.segment_marks = segment_marks
        self.metrics = build_metrics(self.marks)
        self.rows: list[dict[str, int]] = []
        self.ids: list[str] = []

    def update(self, ref: str, hyp: str, spoken: str | None = None, utt_id: str | None = None) -> dict[str, int]:
        """Scores one utterance, keeps its counts and returns them."""
        counts = utterance_counts(ref, hyp, spoken, self.marks, self.segment_marks)
        self.rows.append(counts)
        self.ids.append(str(len(self.ids)) if utt_id is None else utt_id)
        return counts

    def reset(self) -> None:
        self.rows, self.ids = [], []

    def totals(self) -> Totals:
        """Counts summed over every utterance seen so far."""
        totals = Totals()
        for row in self.rows:
            for key, value in row.items():
                totals[key] += value
        return totals

    def matrix(self, keys: list[str] | None = None) -> tuple[list[str], np.ndarray]:
        """Per-utterance counts as an ``utterances x keys`` integer matrix."""
        if keys is None:
            keys = sorted({key for row in self.rows for key in row})
        data = np.array([[row.get(key, 0) for key in keys] for row in self.rows], dtype=np.int64)
        return keys, data.reshape(len(self.rows), len(keys))

    def select(self, ids: Sequence[str]) -> PCMetrics:
        """A new accumulator holding the utterances ``ids`` (keys of :attr:`ids`) in that order, e.g. a subset to
        score apart. Raises ``KeyError`` for an id it does not hold."""
        position = {key: index for index, key in enumerate(self.ids)}
        chosen = PCMetrics(self.marks, self.segment_marks)
        chosen.rows = [self.rows[position[key]] for key in ids]
        chosen.ids = list(ids)
        return chosen

    def compute(self) -> dict:
        """The report: every metric with its support, the PER table per mark and the summed counts."""
        totals = self.totals()
        return {
            "num_utterances": len(self.rows),
            "marks": self.marks,
            "metrics": {m.name: as_number(m.value(totals)) for m in self.metrics},
            "support": {m.name: int(m.support(totals)) for m in self.metrics},
            "per_mark": per_breakdown(totals, self.marks),
            "counts": {key: int(value) for key, value in sorted(totals.items())},
        }
