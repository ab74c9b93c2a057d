"""The README's claims table: each paper claim measured on a demo output folder, with its significance.

Every ASR claim compares two systems' prediction manifests (``D/predictions/<system>.json``) on the same test
utterances with :func:`nemo_pc.metrics.evaluate.evaluate` and its ``compare`` report: the paired bootstrap p-value
is the claim's ``p_value``; the MAPSSWE p-value (SCTK's matched-pairs test) is reported next to it for error
rates. A claim whose systems were not trained is reported as not measured (``reproduced: None``); a claim that
does not hold is reported with its numbers.

Each claim is a dict::

    {"id", "paper", "claim", "rule", "measured": {...}, "p_value", "p_mapsswe", "reproduced", "note"}

This module computes the claims and renders nothing: ``benchmarks/run_all.py`` stores them in its JSON and
``benchmarks/render_results.py`` (``claims`` blocks) draws the README's table from that JSON. Its inputs besides the
demo folder are plain dicts: the formatter section of ``run_all.py`` and the report of
``benchmarks/quality_lm_fusion.py``.

The comparison machinery and the rules the claims share lie in :mod:`nemo_pc.pipelines.demo.claim_rules`,
papers/001's AED claims (C8-C10) in :mod:`nemo_pc.pipelines.demo.aed_claims`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from nemo_pc.parts.manifest import ManifestError, iter_manifest, require_text
from nemo_pc.parts.modes import MODES
from nemo_pc.pipelines.demo.aed_claims import claim_aed_designs, claim_aed_less_punctuated, claim_multi_vs_single_style
from nemo_pc.pipelines.demo.claim_rules import (
    ALPHA,
    NOT_MEASURED,
    compare_metric,
    comparison_claim,
    make_claim,
    missing_systems,
    not_worse,
    pn_claim,
    pn_rule,
    significance_note,
    significantly_lower,
)
from nemo_pc.pipelines.demo.layout import model_path, predictions_path

PAPER_SPEEDUP = 30.7  # papers/003: full seq2seq time over the formatter's on long text
ONE_PASS_MIN_SHARE = 0.9  # share of utterances with both M2 styles non-empty
ONE_PASS_CLAIM = "a mixed-style (M2) CTC model yields both styles from one encoder pass"
ONE_PASS_RULE = f"encoder calls == batches and both styles non-empty on >= {ONE_PASS_MIN_SHARE:.0%} of the utterances"


FIT_FORMATTER_PER = 0.50
FIT_FORMATTER_IWER_RATIO = 0.5
"""A cascade baseline counts only with a fit formatter: PER at most this, and I-WER at most this times NeMo WFST
ITN's, on the formatter's test documents."""


CASCADE_FORMATTER = "formatter, default span ITN"
"""The formatter benchmark's row of the formatter as the demo's cascade runs it (the library's default span ITN);
``formatter`` is papers/003's pure neural path, which C5 is about."""


def formatter_fitness(section: Mapping | None) -> str | None:
    """Why the cascade's formatter is not a fit baseline (``None`` when it is fit), from the formatter benchmark
    section of ``benchmarks/run_all.py`` (``results``: :data:`CASCADE_FORMATTER`, or ``formatter`` in results
    written before it had that row, and ``NeMo WFST ITN``)."""
    results = (section or {}).get("results") or {}
    mine = results.get(CASCADE_FORMATTER) or results.get("formatter")
    if mine is None:
        return "no formatter benchmark says whether the cascade's formatter is fit"
    problems = []
    if mine["per"] > FIT_FORMATTER_PER:
        problems.append(f"formatter PER {100 * mine['per']:.1f}% > {100 * FIT_FORMATTER_PER:.0f}%")
    wfst = (results.get("NeMo WFST ITN") or {}).get("i_wer")
    if wfst is None:
        problems.append("no NeMo WFST ITN I-WER to compare the formatter's with")
    elif mine["i_wer"] > FIT_FORMATTER_IWER_RATIO * wfst:
        problems.append(
            f"formatter I-WER {100 * mine['i_wer']:.1f}% > {FIT_FORMATTER_IWER_RATIO} x WFST's {100 * wfst:.1f}%"
        )
    return "; ".join(problems) or None


def claim_e2e_vs_cascade(
    demo_dir: str | Path, num_resamples: int = 1000, formatter_section: Mapping | None = None
) -> dict:
    """papers/002, 004: an end-to-end punctuated model beats an ASR + text-formatter cascade on PER.

    The cascade is a fair baseline only when its formatter is fit (:func:`formatter_fitness`); otherwise the claim
    is measured but reads "not measurable".
    """
    claim = make_claim(
        "C1",
        "002, 004",
        "E2E punctuated ASR has a lower PER than the ASR + formatter cascade",
        "PER(`rnnt_conditioned`) < PER(`cascade`), bootstrap p < 0.05, with a fit formatter",
    )
    claim = comparison_claim(
        claim, demo_dir, ("rnnt_conditioned", "cascade"), "per", significantly_lower, num_resamples=num_resamples
    )
    unfit = formatter_fitness(formatter_section)
    if unfit and claim.get("reproduced") is not None:
        claim["reproduced"] = None
        claim["note"] = (
            f"not measurable: the cascade's baseline formatter is not fit ({unfit}); a formatter with PER <= "
            f"{100 * FIT_FORMATTER_PER:.0f}% and I-WER <= {FIT_FORMATTER_IWER_RATIO} x WFST's on the formatter "
            "benchmark's test documents would decide it"
        )
    return claim


def claim_joint_vs_punctuated(demo_dir: str | Path, num_resamples: int = 1000) -> dict:
    """papers/000: the joint model's normalized output is not worse than a punctuated-only model's (normalized)."""
    claim = make_claim(
        "C2",
        "000",
        "joint P&N training keeps the normalized WER of a punctuated-only model",
        "WER of `pred_text_normalized`: `rnnt_conditioned` <= `rnnt_punctuated`, or higher with bootstrap p >= 0.05",
    )

    return comparison_claim(
        claim,
        demo_dir,
        ("rnnt_conditioned", "rnnt_punctuated"),
        "wer",
        not_worse,
        pred_field="pred_text_normalized",
        num_resamples=num_resamples,
    )


def claim_pn_sweep(demo_dir: str | Path, num_resamples: int = 1000) -> dict:
    """papers/000 Table III: P labels on 5% of the data cost at most 2.5 points of PC-WER and of PER against 50%.

    The paper's 5% model gives up 2.14 points of PC-WER and 2.26 of PuncER. PC-WER alone cannot decide it here: a
    model that writes no marks at all loses few PC-WER points when both models misrecognize most words, so the PER
    increase is held to the same bound.
    """
    claim = make_claim(
        "C3",
        "000",
        "P labels on 5% of training utterances are almost as good as on 50% (P:N sweep)",
        pn_rule("rnnt_conditioned_p05", "rnnt_conditioned_p50"),
    )
    return pn_claim(claim, demo_dir, ("rnnt_conditioned_p05", "rnnt_conditioned_p50"), num_resamples)


def claim_intermediate_ctc(demo_dir: str | Path, num_resamples: int = 1000) -> dict:
    """papers/004: an intermediate normalized CTC lowers the WER of a punctuated CTC model."""
    claim = make_claim(
        "C4",
        "004",
        "an intermediate normalized CTC loss lowers the WER of punctuated CTC",
        "WER(`ctc_inter`) < WER(`ctc_punctuated`), bootstrap p < 0.05",
    )
    return comparison_claim(
        claim, demo_dir, ("ctc_inter", "ctc_punctuated"), "wer", significantly_lower, num_resamples=num_resamples
    )


LM_SYSTEM = "rnnt_conditioned"
LM_FALLBACK = "ctc_inter"
"""C7's system where ``rnnt_conditioned`` has no LM rows: a transducer head on the AED (the demo's default RNN-Ts)
writes Whisper's tokens, which the demo's n-gram LMs over the CTC and RNN-T pieces do not cover."""


def lm_claim_system(demo_dir: str | Path | None, lm_report: Mapping | None = None) -> str:
    """``rnnt_conditioned`` where the LM report or the demo folder has its LM rows, else ``ctc_inter`` where the
    folder has its LM rows, else ``rnnt_conditioned`` (C7 is then not measured)."""
    if LM_SYSTEM in ((lm_report or {}).get("systems") or {}):
        return LM_SYSTEM
    for system in (LM_SYSTEM, LM_FALLBACK):
        if demo_dir is not None and not missing_systems(demo_dir, [system, f"{system}_lm"]):
            return system
    return LM_SYSTEM


LM_NOT_MEASURED = (
    "not measured: run benchmarks/quality_lm_fusion.py --demo-dir D (its JSON is read by run_all --lm-fusion)"
)


def claim_lm_fusion(
    lm_report: Mapping | None,
    system: str = LM_SYSTEM,
    demo_dir: str | Path | None = None,
    num_resamples: int = 1000,
) -> dict:
    """papers/002 §5.3: shallow fusion with an n-gram LM over the punctuated tokens lowers WER-PC. Read from the
    report of ``benchmarks/quality_lm_fusion.py`` (the LM weight tuned on dev, then a paired test on the test
    split), or, without one, from the demo's own LM rows (``predictions/<system>_lm.json`` against
    ``predictions/<system>.json``, the weight tuned on dev by the demo, ``lm/<system>.json``)."""
    claim = make_claim(
        "C7",
        "002",
        "an n-gram LM over the punctuated, cased tokens lowers WER-PC",
        f"WER-PC(`{system}` + LM) < WER-PC(`{system}`), LM weight tuned on dev, bootstrap p < 0.05",
    )
    systems = (lm_report or {}).get("systems") or {}
    entry = systems.get(system)
    if entry is None:
        if demo_dir is not None and not missing_systems(demo_dir, [system, f"{system}_lm"]):
            return _lm_rows_claim(claim, demo_dir, system, num_resamples)
        claim["note"] = LM_NOT_MEASURED
        return claim
    paired = entry["test"]["paired"]["wer_pc"]
    claim["measured"] = {
        "systems": [f"{system} + LM", system],
        "metric": "wer_pc",
        "a": paired["a"],
        "b": paired["b"],
        "delta": paired["delta"],
        "ci95": paired.get("ci95"),
    }
    claim["p_value"], claim["p_mapsswe"] = paired["p"], paired.get("p_mapsswe")
    claim["reproduced"] = bool(paired["a"] < paired["b"] and paired["p"] < ALPHA)
    others = [
        f"{name}: {100 * row['delta']:+.2f} points (p={row['p']:.3f})"
        for name, row in ((n, e["test"]["paired"]["wer_pc"]) for n, e in systems.items())
        if name != system
    ]
    settings = (lm_report or {}).get("settings") or {}
    decoding = settings.get("strategy", "greedy") + (
        f" {settings['beam_size']}" if settings.get("strategy") == "beam" else ""
    )
    lm_text = (
        "the training transcripts"
        if not entry.get("lm_text") or entry["lm_text"].endswith("train.json")
        else entry["lm_text"]
    )
    claim["note"] = (
        f"{entry['test']['num_utterances']} test utterances, {decoding} decoding, an order-{entry['lm']['order']} LM "
        f"over {lm_text}, LM weight {entry['best_alpha']} (dev)"
        + significance_note(paired["p"])
        + (f"; also {', '.join(others)}" if others else "")
    )
    return claim


FIT_SEQ2SEQ_CER = 0.10
"""The full seq2seq baseline of C5a/C5b counts only when it keeps the words: a formatter changes marks, case and
number forms, so its CER against the written reference stays small (the span formatter's is about 1%). Above this
the baseline rewrites the text, its PER and its time say nothing about the approach, and both claims read "not
measurable"."""


def formatter_claims(section: Mapping | None) -> list[dict]:
    """papers/003 claims from the formatter benchmark section of ``benchmarks/run_all.py``.

    Args:
        section: ``{"results": {system: {"per", "i_wer", "time_long_s", ...}}, "compare": {system: {metric:
            compare row}}}`` with systems ``formatter``, ``full seq2seq`` and ``NeMo WFST ITN``; ``compare`` holds
            the formatter (a) against each baseline (b). None or a section without results: not measured.
    """
    speed = make_claim(
        "C5a",
        "003",
        f"the span formatter is faster than a full seq2seq formatter on long text (paper: {PAPER_SPEEDUP}x)",
        "time(`full seq2seq`) / time(formatter) on a long text > 1",
    )
    per = make_claim(
        "C5b",
        "003",
        "the span formatter punctuates at least as well as a full seq2seq formatter",
        "PER(formatter) <= PER(`full seq2seq`) on the test documents",
    )
    iwer = make_claim(
        "C5c",
        "003",
        "the formatter's ITN beats NeMo's WFST ITN",
        "I-WER(formatter) < I-WER(`NeMo WFST ITN`) on the test documents, bootstrap p < 0.05",
    )
    results = (section or {}).get("results") or {}
    compare = (section or {}).get("compare") or {}
    if "formatter" not in results:
        note = (section or {}).get("not_measured") or "no formatter benchmark"
        for claim in (speed, per, iwer):
            claim["note"] = f"not measured: {note}"
        return [speed, per, iwer]
    mine = results["formatter"]
    documents = section.get("documents")
    for claim, other, metric in ((per, "full seq2seq", "per"), (iwer, "NeMo WFST ITN", "i_wer")):
        if other not in results:
            claim["note"] = f"not measured: no {other} in the formatter benchmark"
            continue
        row = (compare.get(other) or {}).get(metric) or {}
        claim["measured"] = {
            "metric": metric,
            "systems": ["formatter", other],
            "a": mine[metric],
            "b": results[other][metric],
            "delta": mine[metric] - results[other][metric],
            "ci95": row.get("ci95"),
            "documents": documents,
        }
        claim["p_value"] = row.get("p")
        claim["p_mapsswe"] = row.get("p_mapsswe")
        if metric == "per":
            better = mine[metric] <= results[other][metric]
        else:  # "beats": lower and significantly so
            p_value = claim["p_value"]
            better = mine[metric] < results[other][metric] and p_value is not None and p_value < ALPHA
        claim["reproduced"] = bool(better)
        claim["note"] = f"{documents} test documents of the formatter data" + significance_note(claim["p_value"])
    if "full seq2seq" in results:
        ratio = results["full seq2seq"]["time_long_s"] / mine["time_long_s"]
        speed["measured"] = {
            "formatter_long_s": mine["time_long_s"],
            "seq2seq_long_s": results["full seq2seq"]["time_long_s"],
            "ratio": ratio,
            "paper_ratio": PAPER_SPEEDUP,
            "long_words": section.get("long_words"),
        }
        speed["reproduced"] = ratio > 1.0
        speed["note"] = f"one timed run per system; {ratio:.1f}x measured vs {PAPER_SPEEDUP}x in the paper"
    else:
        speed["note"] = "not measured: no full seq2seq model (D/models/seq2seq.nemo)"
    seq2seq_cer = (results.get("full seq2seq") or {}).get("cer")
    if seq2seq_cer is not None and seq2seq_cer > FIT_SEQ2SEQ_CER:
        for claim in (speed, per):
            if claim["reproduced"] is not None:
                claim["reproduced"] = None
                claim["note"] = (
                    f"not measurable: the full seq2seq baseline is not fit (CER {100 * seq2seq_cer:.1f}% > "
                    f"{100 * FIT_SEQ2SEQ_CER:.0f}%: it rewrites the words); " + claim["note"]
                )
    return [speed, per, iwer]


def _test_audio(demo_dir: str | Path, limit: int | None = None) -> list[str]:
    manifest = Path(demo_dir) / "predictions" / "ctc_m2.json"
    audio = [require_text(entry, "audio_filepath", manifest, line) for line, entry in iter_manifest(manifest)]
    return audio[:limit] if limit else audio


def count_encoder_passes(model, audio: Sequence[str], batch_size: int = 16) -> dict:
    """Runs ``model.transcribe(audio, mode="both")`` and counts the calls of ``model.encoder``.

    Returns:
        ``{"encoder_calls", "batches", "utterances", "both_nonempty", "normalized_nonempty",
        "punctuated_nonempty"}`` (the last three count utterances).
    """
    calls = []
    handle = model.encoder.register_forward_hook(lambda *_: calls.append(1))
    try:
        outputs = model.transcribe(list(audio), batch_size=batch_size, mode="both", verbose=False)
    finally:
        handle.remove()
    texts = {style: [getattr(h, "text", h) for h in outputs[style]] for style in MODES}
    for style, values in texts.items():
        if len(values) != len(audio):
            raise RuntimeError(f"transcribe returned {len(values)} {style} outputs for {len(audio)} files")
    nonempty = {style: [bool(t.strip()) for t in values] for style, values in texts.items()}
    return {
        "encoder_calls": len(calls),
        "batches": math.ceil(len(audio) / batch_size),
        "utterances": len(audio),
        "both_nonempty": sum(a and b for a, b in zip(nonempty["normalized"], nonempty["punctuated"], strict=True)),
        "normalized_nonempty": sum(nonempty["normalized"]),
        "punctuated_nonempty": sum(nonempty["punctuated"]),
    }


def _load_model(path: Path):
    from nemo_pc.pipelines.inference import load_asr_model

    return load_asr_model(path)


def claim_one_pass_styles(
    demo_dir: str | Path,
    batch_size: int = 16,
    max_utterances: int | None = None,
    loader: Callable[[Path], object] | None = None,
) -> dict:
    """papers/001: an M2 mixed-style CTC model gives both styles from one encoder pass.

    Restores ``D/models/ctc_m2.nemo`` (with ``loader``, default NeMo's ``restore_from`` on CPU), transcribes the
    test audio with ``mode="both"`` while counting encoder calls, and reads the WER of its normalized output and the
    PER of its punctuated output from ``D/predictions/ctc_m2.json``.
    """
    from nemo_pc.metrics.evaluate import EvalConfig, evaluate

    claim = make_claim("C6", "001", ONE_PASS_CLAIM, ONE_PASS_RULE)
    path, predictions = model_path(demo_dir, "ctc_m2"), predictions_path(demo_dir, "ctc_m2")
    missing = [str(p.relative_to(demo_dir)) for p in (path, predictions) if not p.is_file()]
    if missing:
        claim["note"] = f"{NOT_MEASURED} (missing {', '.join(missing)})"
        return claim
    try:
        normalized = evaluate(predictions, EvalConfig(pred_field="pred_text_normalized", progress=False))
        punctuated = evaluate(predictions, EvalConfig(progress=False))
    except ManifestError as err:
        claim["note"] = f"not measured: {err}"
        return claim
    model = (loader or _load_model)(path)
    counts = count_encoder_passes(model, _test_audio(demo_dir, max_utterances), batch_size)
    claim["measured"] = {
        **counts,
        "batch_size": batch_size,
        "wer_normalized": normalized["metrics"]["wer"],
        "per_punctuated": punctuated["metrics"]["per"],
        "prediction_utterances": normalized["num_utterances"],
    }
    share = counts["both_nonempty"] / max(counts["utterances"], 1)
    claim["reproduced"] = counts["encoder_calls"] == counts["batches"] and share >= ONE_PASS_MIN_SHARE
    claim["note"] = (
        f"{counts['encoder_calls']} encoder calls for {counts['batches']} batches; both styles non-empty on "
        f"{counts['both_nonempty']}/{counts['utterances']} utterances"
    )
    return claim


def _lm_rows_claim(claim: dict, demo_dir: str | Path, system: str, num_resamples: int) -> dict:
    """C7 from the demo's LM rows: WER-PC of ``<system>_lm`` against ``<system>`` on the same test utterances."""
    import json

    row = compare_metric(demo_dir, f"{system}_lm", system, "wer_pc", num_resamples=num_resamples)
    claim["measured"] = {
        "systems": [f"{system} + LM", system],
        **{k: row[k] for k in ("metric", "a", "b", "delta", "ci95")},
    }
    claim["p_value"], claim["p_mapsswe"] = row["p_bootstrap"], row["p_mapsswe"]
    claim["reproduced"] = bool(row["a"] < row["b"] and row["p_bootstrap"] < ALPHA)
    summary_path = Path(demo_dir) / "lm" / f"{system}.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    weight = (summary.get("modes") or {}).get("punctuated", {}).get("alpha", "?")
    claim["note"] = (
        f"{row['utterances']} test utterances, beam {summary.get('beam_size', '?')} decoding, the demo's LM over the "
        f"source texts without the documents dev, test and test_seen read, LM weight {weight} (dev)"
        + significance_note(row["p_bootstrap"])
    )
    return claim


def compute_claims(
    demo_dir: str | Path,
    formatter_section: Mapping | None = None,
    measure_one_pass: bool = True,
    num_resamples: int = 1000,
    batch_size: int = 16,
    lm_report: Mapping | None = None,
) -> list[dict]:
    """Every claim of the README's table, in order (C1-C4 from predictions, C5 from the formatter section, C6, C7
    from ``benchmarks/quality_lm_fusion.py``'s report, and C8-C10 from the AEDs' predictions)."""
    claims = [
        claim_e2e_vs_cascade(demo_dir, num_resamples, formatter_section),
        claim_joint_vs_punctuated(demo_dir, num_resamples),
        claim_pn_sweep(demo_dir, num_resamples),
        claim_intermediate_ctc(demo_dir, num_resamples),
        *formatter_claims(formatter_section),
    ]
    try:
        if not measure_one_pass:
            raise RuntimeError("skipped")
        claims.append(claim_one_pass_styles(demo_dir, batch_size=batch_size))
    except (OSError, RuntimeError, ValueError) as err:
        claim = make_claim("C6", "001", ONE_PASS_CLAIM, ONE_PASS_RULE)
        claim["note"] = f"not measured: {err}"
        claims.append(claim)
    system = lm_claim_system(demo_dir, lm_report)
    claims.append(claim_lm_fusion(lm_report, system=system, demo_dir=demo_dir, num_resamples=num_resamples))
    claims.append(claim_aed_designs(demo_dir, num_resamples))
    claims.append(claim_multi_vs_single_style(demo_dir, num_resamples))
    claims.append(claim_aed_less_punctuated(demo_dir, num_resamples))
    return claims
