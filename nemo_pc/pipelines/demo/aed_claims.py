"""papers/001's claims C8-C10 of the README's table, measured on the AEDs of a demo output folder: the AED
designs against the style prompt (C8), one multi-style AED against single-style ones (C9) and punctuated targets
on 5% against 50% of the utterances (C10)."""

from __future__ import annotations

from pathlib import Path

from nemo_pc.pipelines.demo.claim_rules import (
    compare_row,
    decide_rows,
    make_claim,
    measure_rows,
    missing_systems,
    not_worse,
    pn_claim,
    pn_rule,
    row_figures,
    significantly_lower,
)

AED_DESIGNS = {"style_layers": ("aed_style_layers", "aed_prompt"), "mixed_m2": ("aed_mixed_m2", "aed_prompt")}


def claim_aed_designs(demo_dir: str | Path, num_resamples: int = 1000) -> dict:
    """papers/001 Table 3: the AEDs with style-dependent layers (design A) and with M2 mixed-style output (design B)
    write readable text with a lower TER than the AED with a style prompt (design C).

    Both comparisons must hold, so the claim's p-value is the larger of the two. The M0 mixed-style AED's TER
    against M2's (paper: 18.9 against 18.5) is measured too, when ``aed_mixed`` was trained, and does not decide.
    """
    claim = make_claim(
        "C8",
        "001",
        "style-dependent layers (A) and mixed-style output M2 (B) write readable text with a lower TER than the "
        "style prompt (C) (001 Table 3, task A: m.L_E6 16.6, m.M2 18.5 against m.P 21.7)",
        "TER of `pred_text`: `aed_style_layers` < `aed_prompt` and `aed_mixed_m2` < `aed_prompt`, each bootstrap "
        "p < 0.05",
    )
    comparisons = {key: (a, b, "ter", "pred_text") for key, (a, b) in AED_DESIGNS.items()}
    rows = measure_rows(claim, demo_dir, comparisons, num_resamples)
    if rows is None:
        return claim
    decide_rows(claim, rows, max, significantly_lower)
    claim["note"] += _m0_note(claim, demo_dir, num_resamples)
    return claim


def _m0_note(claim: dict, demo_dir: str | Path, num_resamples: int) -> str:
    """C8's informative row: TER of the M0 mixed-style AED against M2's, in ``measured["mixed_m0_vs_m2"]``."""
    if missing_systems(demo_dir, ["aed_mixed"]):
        return ""
    row, problem = compare_row(demo_dir, ("aed_mixed", "aed_mixed_m2"), "ter", "pred_text", num_resamples)
    if row is not None:
        claim["measured"]["mixed_m0_vs_m2"] = row
    if problem:
        return f"; M0 against M2 (does not decide): {problem}"
    return f"; M0 against M2 (does not decide, paper 18.9 against 18.5): {row_figures(row)}"


def claim_multi_vs_single_style(demo_dir: str | Path, num_resamples: int = 1000) -> dict:
    """papers/001 Table 2 against Table 3: one multi-style AED (the prompt AED) is on par with single-style AEDs.

    Its punctuated output is compared with the punctuated-only AED on TER, its normalized output with the
    normalized-only AED on WER; each holds under C2's rule (:func:`~nemo_pc.pipelines.demo.claim_rules.not_worse`).
    The claim's p-value is the smaller of the two: the most significant difference.
    """
    claim = make_claim(
        "C9",
        "001",
        "one multi-style AED (prompt) is on par with single-style AEDs (001 Table 2 against Table 3)",
        "TER of `pred_text`: `aed_prompt` <= `aed_punctuated`, and WER of `pred_text_normalized`: `aed_prompt` <= "
        "`aed_normalized`; each may be higher with bootstrap p >= 0.05",
    )
    comparisons = {
        "punctuated": ("aed_prompt", "aed_punctuated", "ter", "pred_text"),
        "normalized": ("aed_prompt", "aed_normalized", "wer", "pred_text_normalized"),
    }
    rows = measure_rows(claim, demo_dir, comparisons, num_resamples)
    if rows is None:
        return claim
    return decide_rows(claim, rows, min, not_worse, named=True)


def claim_aed_less_punctuated(demo_dir: str | Path, num_resamples: int = 1000) -> dict:
    """papers/001 §3.3: the prompt AED transfers what its normalized targets teach to its punctuated output, so
    punctuated targets on 5% of the utterances are almost as good as on 50%; held to papers/000 Table III's bound
    with C3's rule (:func:`~nemo_pc.pipelines.demo.claim_rules.pn_claim`)."""
    claim = make_claim(
        "C10",
        "001",
        "the prompt AED transfers what the normalized targets teach: punctuated targets on 5% of the utterances "
        "are almost as good as on 50% (001 §3.3's transfer, with 000 Table III's bound)",
        pn_rule("aed_prompt_p05", "aed_prompt_p50"),
    )
    return pn_claim(claim, demo_dir, ("aed_prompt_p05", "aed_prompt_p50"), num_resamples)
