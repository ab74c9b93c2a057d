"""The machinery every claim of :mod:`nemo_pc.pipelines.demo.claims` uses: the claim dict, the paired comparison
of two systems' prediction manifests on one metric, the rules that decide a claim from such rows, and the notes
that say why a claim was not measured or how significant it is."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from nemo_pc.parts.manifest import ManifestError, iter_manifest, require_text
from nemo_pc.pipelines.demo.layout import predictions_path

NOT_MEASURED = "not measured: run examples/demo_pc.py --claims"
ALPHA = 0.05
PN_MAX_INCREASE = 0.025  # papers/000 Table III: PC-WER and PuncER of P:N 5% at most 2.5 points above P:N 50%
MAX_CONSTANT_SHARE = 0.5  # a system with one output for more utterances than this can't support or refute a claim


def make_claim(cid: str, paper: str, claim: str, rule: str) -> dict:
    """A new claim dict, not measured yet (``reproduced: None``, note :data:`NOT_MEASURED`)."""
    return {
        "id": cid,
        "paper": paper,
        "claim": claim,
        "rule": rule,
        "measured": {},
        "p_value": None,
        "p_mapsswe": None,
        "reproduced": None,
        "note": NOT_MEASURED,
    }


def missing_systems(demo_dir: str | Path, systems: Sequence[str]) -> list[str]:
    """The systems of ``systems`` without a prediction manifest in the demo folder."""
    return [name for name in systems if not predictions_path(demo_dir, name).is_file()]


def compare_metric(
    demo_dir: str | Path,
    system_a: str,
    system_b: str,
    metric: str,
    pred_field: str = "pred_text",
    num_resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """One metric of two systems' prediction manifests on the same utterances, with both p-values.

    Returns:
        ``{"metric", "pred_field", "systems": [a, b], "a", "b", "delta", "ci95", "p_bootstrap", "p_mapsswe",
        "utterances"}``; ``delta`` is ``a - b``.

    Raises:
        ManifestError: a bad prediction line (file and line named).
        ValueError: the two manifests do not hold the same utterances.
    """
    from nemo_pc.metrics.evaluate import EvalConfig, evaluate

    config = EvalConfig(pred_field=pred_field, progress=False)
    report = evaluate(
        predictions_path(demo_dir, system_a),
        config,
        compare=predictions_path(demo_dir, system_b),
        num_resamples=num_resamples,
        seed=seed,
    )
    row = report["compare"]["metrics"][metric]
    return {
        "metric": metric,
        "pred_field": pred_field,
        "systems": [system_a, system_b],
        "a": row["a"],
        "b": row["b"],
        "delta": row["delta"],
        "ci95": row["ci95"],
        "p_bootstrap": row["p"],
        "p_mapsswe": row.get("p_mapsswe"),
        "utterances": report["num_utterances"],
    }


def empty_share(path: str | Path, pred_field: str = "pred_text") -> float:
    """The share of utterances of a prediction manifest whose ``pred_field`` is empty (0 for an empty manifest)."""
    texts = [require_text(entry, pred_field, path, line) for line, entry in iter_manifest(path)]
    return sum(not text.strip() for text in texts) / len(texts) if texts else 0.0


def constant_share(path: str | Path, pred_field: str = "pred_text") -> float:
    """The share of utterances that get the manifest's most frequent output (e.g. empty, or always "the"): a
    briefly trained model first emits one output for every input."""
    from collections import Counter

    texts = [" ".join(require_text(entry, pred_field, path, line).split()) for line, entry in iter_manifest(path)]
    return Counter(texts).most_common(1)[0][1] / len(texts) if len(texts) > 1 else 0.0


def significantly_lower(row: Mapping) -> bool:
    """The rule of C1, C4 and C8: ``a`` is lower than ``b`` with bootstrap p < :data:`ALPHA`."""
    return row["a"] < row["b"] and row["p_bootstrap"] is not None and row["p_bootstrap"] < ALPHA


def not_worse(row: Mapping) -> bool:
    """C2's rule: ``a`` is at most ``b``, or higher without significance (bootstrap p >= 0.05)."""
    return row["a"] <= row["b"] or row["p_bootstrap"] is None or row["p_bootstrap"] >= ALPHA


def _missing_note(missing: Sequence[str]) -> str:
    """The note of a claim whose systems ``missing`` have no predictions."""
    return f"{NOT_MEASURED} (no predictions for {', '.join(missing)})"


def compare_row(
    demo_dir: str | Path, systems: tuple[str, str], metric: str, pred_field: str, num_resamples: int
) -> tuple[dict | None, str | None]:
    """One :func:`compare_metric` row with each system's :func:`constant_share`, and why it cannot decide a claim.

    Returns:
        ``(row, problem)``: ``row`` is None when a manifest is bad or the utterances differ; ``problem`` is None
        when the row can decide a claim, else the claim's note (a degenerate system keeps its row).
    """
    try:
        constant = {name: constant_share(predictions_path(demo_dir, name), pred_field) for name in systems}
        row = compare_metric(demo_dir, *systems, metric, pred_field=pred_field, num_resamples=num_resamples)
    except (ManifestError, ValueError) as err:
        return None, f"not measured: {err}"
    row["constant_share"] = constant
    degenerate = [name for name, share in constant.items() if share > MAX_CONSTANT_SHARE]
    if not degenerate:
        return row, None
    shares = ", ".join(f"`{name}` {100 * constant[name]:.0f}%" for name in degenerate)
    return row, (
        f"not measurable: one output (e.g. empty) for more than {MAX_CONSTANT_SHARE:.0%} of the test utterances "
        f"({shares}); the models are too briefly trained (more steps: examples/demo_pc.py --full)"
    )


def comparison_claim(
    claim: dict,
    demo_dir: str | Path,
    systems: tuple[str, str],
    metric: str,
    decide: Callable[[Mapping], bool],
    pred_field: str = "pred_text",
    num_resamples: int = 1000,
) -> dict:
    """Decides ``claim`` by one comparison of two systems (:func:`compare_row`) with the rule ``decide``.

    Fills the claim's ``measured``, p-values, verdict and note; a missing system, a bad manifest or a degenerate
    system leave it unmeasured, with its note saying why.
    """
    missing = missing_systems(demo_dir, systems)
    if missing:
        claim["note"] = _missing_note(missing)
        return claim
    row, problem = compare_row(demo_dir, systems, metric, pred_field, num_resamples)
    if row is not None:
        claim["measured"] = row
    if problem:
        claim["note"] = problem
        return claim
    claim["p_value"] = row["p_bootstrap"]
    claim["p_mapsswe"] = row["p_mapsswe"]
    claim["reproduced"] = bool(decide(row))
    claim["note"] = f"{row['utterances']} test utterances" + significance_note(row["p_bootstrap"])
    return claim


Comparison = tuple[str, str, str, str]
"""One comparison of a claim with several: system a, system b, metric, prediction field."""


def measure_rows(
    claim: dict, demo_dir: str | Path, comparisons: Mapping[str, Comparison], num_resamples: int
) -> dict | None:
    """The rows of several comparisons, put in ``claim["measured"]`` under the keys of ``comparisons``.

    Returns None, with the claim's note saying why, when the rows cannot decide the claim: a system without
    predictions (all of them named), a bad manifest, or a degenerate system (:func:`compare_row`).
    """
    systems = list(dict.fromkeys(name for a, b, _, _ in comparisons.values() for name in (a, b)))
    missing = missing_systems(demo_dir, systems)
    if missing:
        claim["note"] = _missing_note(missing)
        return None
    for key, (a, b, metric, pred_field) in comparisons.items():
        row, problem = compare_row(demo_dir, (a, b), metric, pred_field, num_resamples)
        if row is not None:
            claim["measured"][key] = row
        if problem:
            claim["note"] = problem
            return None
    return claim["measured"]


def row_figures(row: Mapping) -> str:
    """A compare row in words: both figures, the systems and the bootstrap p."""
    p_value = row["p_bootstrap"]
    test = "no significance test" if p_value is None else f"bootstrap p={p_value:.3f}"
    a, b = row["systems"]
    return (
        f"{row['metric'].upper().replace('_', '-')} {100 * row['a']:.1f}% (`{a}`) against {100 * row['b']:.1f}% "
        f"(`{b}`), {test}"
    )


def set_p_values(claim: dict, row: Mapping) -> None:
    """Sets the claim's ``p_value`` and ``p_mapsswe`` from a compare row."""
    claim["p_value"], claim["p_mapsswe"] = row["p_bootstrap"], row["p_mapsswe"]


def decide_rows(
    claim: dict,
    rows: Mapping[str, Mapping],
    pick: Callable,
    holds: Callable[[Mapping], bool],
    named: bool = False,
) -> dict:
    """A claim of several compare rows, decided: its p-values from the row ``pick`` (``max`` or ``min``) chooses by
    bootstrap p (a row without a test counts as p = 2: ``max`` picks it, ``min`` only when no row has a test),
    reproduced when every row ``holds``, and the note: the deciding row's utterances and each row's figures (after
    its key with ``named``)."""
    deciding = pick(rows.values(), key=lambda row: 2.0 if row["p_bootstrap"] is None else row["p_bootstrap"])
    set_p_values(claim, deciding)
    claim["reproduced"] = all(holds(row) for row in rows.values())
    claim["note"] = f"{deciding['utterances']} test utterances; " + "; ".join(
        (f"{key}: " if named else "") + row_figures(row) for key, row in rows.items()
    )
    return claim


def pn_rule(p05: str, p50: str) -> str:
    """The rule text of a P:N sweep claim (:func:`pn_claim`) on the 5% and the 50% system."""
    return f"PC-WER and PER of `{p05}` each <= 2.5 points above `{p50}`'s (p tests the PC-WER delta = 0)"


def pn_claim(claim: dict, demo_dir: str | Path, systems: tuple[str, str], num_resamples: int) -> dict:
    """The P:N sweep rule of C3 on two systems (5% first, 50% second): PC-WER and PER each at most
    :data:`PN_MAX_INCREASE` above the 50% system's."""
    claim = comparison_claim(
        claim,
        demo_dir,
        systems,
        "pc_wer",
        lambda row: row["delta"] <= PN_MAX_INCREASE + 1e-12,
        num_resamples=num_resamples,
    )
    if claim["reproduced"] is None:
        return claim
    per = compare_metric(demo_dir, *systems, "per", num_resamples=num_resamples)
    claim["measured"]["per"] = {key: per[key] for key in ("a", "b", "delta", "ci95", "p_bootstrap")}
    claim["note"] += (
        f"; PER {100 * per['a']:.1f}% against {100 * per['b']:.1f}% ({100 * per['delta']:+.1f} points, bootstrap "
        f"p={per['p_bootstrap']:.3f})"
    )
    if per["delta"] > PN_MAX_INCREASE + 1e-12:
        claim["reproduced"] = False
    return claim


def significance_note(p_value: float | None) -> str:
    """The end of a claim's note: whether its bootstrap p-value is significant at :data:`ALPHA`."""
    if p_value is None:
        return "; no significance test"
    return (
        "; significant at 0.05"
        if p_value < ALPHA
        else f"; the difference is not significant at 0.05 (p={p_value:.3f})"
    )
