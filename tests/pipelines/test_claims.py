"""Claims of the README table on hand-made demo folders: verdicts, p-values, rendering, README block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from benchmark_loader import load_benchmark

from nemo_pc.parts.manifest import write_manifest
from nemo_pc.pipelines.demo import aed_claims as A
from nemo_pc.pipelines.demo import claim_rules as R
from nemo_pc.pipelines.demo import claims as C

RESAMPLES = 200
SENTENCES = [
    "Then he said, come here.",
    "Is it twelve o'clock?",
    "They went home, and the day ended.",
    "Where are you going, my friend?",
    "Let us eat, Bob.",
    "And the Lord spake unto Moses, saying.",
]


def reference(k: int) -> dict:
    text = SENTENCES[k % len(SENTENCES)]
    normalized = " ".join("".join(ch for ch in word if ch.isalnum() or ch == "'") for word in text.lower().split())
    return {
        "utt_id": f"u{k:03d}",
        "audio_filepath": f"/audio/u{k:03d}.wav",
        "duration": 2.0,
        "text": text,
        "text_normalized": normalized,
    }


def no_marks(text: str) -> str:
    return "".join(ch for ch in text if ch not in ".,?")


def drop_word(text: str) -> str:
    return " ".join(text.split()[1:])


def write_system(demo: Path, name: str, written=lambda t: t, normalized=lambda t: t, n: int = 30) -> Path:
    rows = []
    for k in range(n):
        row = reference(k)
        row["pred_text"] = written(row["text"])
        row["pred_text_normalized"] = normalized(row["text_normalized"])
        rows.append(row)
    return write_manifest(demo / "predictions" / f"{name}.json", rows)


def check_p(claim: dict) -> None:
    assert claim["p_value"] is not None and 0.0 <= claim["p_value"] <= 1.0
    if claim["p_mapsswe"] is not None:
        assert 0.0 <= claim["p_mapsswe"] <= 1.0


def test_e2e_vs_cascade_reproduced_and_not(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    write_system(good, "rnnt_conditioned")
    write_system(good, "cascade", written=no_marks)
    write_system(bad, "rnnt_conditioned", written=no_marks)
    write_system(bad, "cascade")
    fit = formatter_section(formatter_iwer=0.1)
    claim = C.claim_e2e_vs_cascade(good, RESAMPLES, fit)
    assert claim["reproduced"] is True
    assert claim["measured"]["a"] == 0.0 and claim["measured"]["b"] == 1.0
    assert claim["measured"]["utterances"] == 30
    check_p(claim)
    assert claim["p_value"] < 0.05 and claim["p_mapsswe"] is None  # a PER claim: bootstrap only
    claim = C.claim_e2e_vs_cascade(bad, RESAMPLES, fit)
    assert claim["reproduced"] is False
    check_p(claim)


@pytest.mark.parametrize(
    "section, reason",
    [
        (None, "no formatter benchmark"),
        (
            {"results": {"formatter": {"per": 0.98, "i_wer": 0.01}, "NeMo WFST ITN": {"i_wer": 0.19}}},
            "PER 98.0% > 50%",
        ),
        ({"results": {"formatter": {"per": 0.4, "i_wer": 0.12}, "NeMo WFST ITN": {"i_wer": 0.19}}}, "I-WER 12.0% >"),
        (  # the row of the formatter the cascade runs (default span ITN) decides, not the pure neural one
            {
                "results": {
                    "formatter": {"per": 0.4, "i_wer": 0.01},
                    C.CASCADE_FORMATTER: {"per": 0.6, "i_wer": 0.01},
                    "NeMo WFST ITN": {"i_wer": 0.19},
                }
            },
            "PER 60.0% > 50%",
        ),
    ],
)
def test_a_cascade_with_an_unfit_formatter_makes_c1_not_measurable(tmp_path, section, reason):
    write_system(tmp_path, "rnnt_conditioned")
    write_system(tmp_path, "cascade", written=no_marks)
    claim = C.claim_e2e_vs_cascade(tmp_path, RESAMPLES, section)
    assert claim["reproduced"] is None and claim["measured"]["a"] == 0.0
    assert (
        claim["note"].startswith("not measurable: the cascade's baseline formatter is not fit")
        and reason in claim["note"]
        and claim["note"].endswith(
            "PER <= 50% and I-WER <= 0.5 x WFST's on the formatter benchmark's test documents would decide it"
        )
    )


def test_joint_vs_punctuated_uses_normalized_output(tmp_path):
    # the written outputs differ a lot, the normalized outputs are equal: WER is compared on the latter
    write_system(tmp_path, "rnnt_conditioned", written=drop_word)
    write_system(tmp_path, "rnnt_punctuated")
    claim = C.claim_joint_vs_punctuated(tmp_path, RESAMPLES)
    assert claim["measured"]["pred_field"] == "pred_text_normalized"
    assert claim["measured"]["a"] == claim["measured"]["b"] == 0.0
    assert claim["reproduced"] is True
    check_p(claim)
    write_system(tmp_path, "rnnt_conditioned", normalized=drop_word)
    claim = C.claim_joint_vs_punctuated(tmp_path, RESAMPLES)
    assert claim["measured"]["a"] > claim["measured"]["b"]
    assert claim["p_value"] < 0.05 and claim["reproduced"] is False


def test_pn_sweep_threshold(tmp_path):
    write_system(tmp_path, "rnnt_conditioned_p05", written=no_marks)
    write_system(tmp_path, "rnnt_conditioned_p50")
    claim = C.claim_pn_sweep(tmp_path, RESAMPLES)
    assert claim["measured"]["metric"] == "pc_wer"
    assert claim["measured"]["delta"] > R.PN_MAX_INCREASE
    assert claim["reproduced"] is False
    check_p(claim)
    write_system(tmp_path, "rnnt_conditioned_p05")
    claim = C.claim_pn_sweep(tmp_path, RESAMPLES)
    assert claim["measured"]["delta"] == 0.0 and claim["reproduced"] is True
    assert claim["measured"]["per"]["delta"] == 0.0


def test_pn_sweep_needs_the_5_percent_model_to_punctuate(tmp_path):
    # the 50% model writes the marks of one utterance in 12, the 5% model none: within 2.5 PC-WER points, but not
    # within 2.5 PER points
    count = iter(range(1000))
    write_system(tmp_path, "rnnt_conditioned_p05", written=no_marks, n=60)
    write_system(tmp_path, "rnnt_conditioned_p50", written=lambda t: t if next(count) % 12 == 0 else no_marks(t), n=60)
    claim = C.claim_pn_sweep(tmp_path, RESAMPLES)
    assert claim["measured"]["delta"] <= R.PN_MAX_INCREASE
    assert claim["measured"]["per"]["a"] == 1.0 and claim["measured"]["per"]["delta"] > R.PN_MAX_INCREASE
    assert claim["reproduced"] is False and "PER 100.0%" in claim["note"]


def write_aed_designs(demo: Path, style_layers=no_marks, mixed_m2=no_marks, prompt=no_marks, mixed=None) -> None:
    write_system(demo, "aed_style_layers", written=style_layers)
    write_system(demo, "aed_mixed_m2", written=mixed_m2)
    write_system(demo, "aed_prompt", written=prompt)
    if mixed is not None:
        write_system(demo, "aed_mixed", written=mixed)


def test_aed_designs_need_both_a_and_m2_below_the_prompt(tmp_path):
    write_aed_designs(tmp_path, style_layers=lambda t: t, mixed_m2=lambda t: t, mixed=drop_word)
    claim = A.claim_aed_designs(tmp_path, RESAMPLES)
    assert claim["id"] == "C8" and claim["paper"] == "001" and "Table 3" in claim["claim"]
    measured = claim["measured"]
    assert set(measured) == {"style_layers", "mixed_m2", "mixed_m0_vs_m2"}
    assert measured["style_layers"]["systems"] == ["aed_style_layers", "aed_prompt"]
    assert measured["mixed_m2"]["metric"] == "ter" and measured["mixed_m2"]["a"] == 0.0
    assert measured["mixed_m0_vs_m2"]["a"] > measured["mixed_m0_vs_m2"]["b"] == 0.0  # informative only
    assert claim["reproduced"] is True and claim["p_value"] < 0.05
    assert claim["p_value"] == max(row["p_bootstrap"] for row in (measured["style_layers"], measured["mixed_m2"]))
    assert "TER 0.0% (`aed_style_layers`) against" in claim["note"] and "M0 against M2" in claim["note"]
    check_p(claim)
    # the renderer draws a claim of several rows, one per comparison
    described = render_results().describe_measured(claim)
    assert described.count("TER ") == 3 and "(aed_mixed_m2)" in described and "(aed_mixed)" in described
    line = next(row for row in render_results().claims_markdown([claim]).splitlines() if row.startswith("| C8"))
    assert line.endswith("| yes |")


def test_aed_designs_not_reproduced_when_m2_is_not_lower(tmp_path):
    write_aed_designs(tmp_path, style_layers=lambda t: t)  # M2 ties with the prompt
    claim = A.claim_aed_designs(tmp_path, RESAMPLES)
    assert claim["measured"]["mixed_m2"]["delta"] == 0.0 and "mixed_m0_vs_m2" not in claim["measured"]
    assert claim["reproduced"] is False
    check_p(claim)


def test_aed_designs_not_measured_names_the_missing_systems(tmp_path):
    write_system(tmp_path, "aed_prompt")
    claim = A.claim_aed_designs(tmp_path, RESAMPLES)
    assert claim["reproduced"] is None and claim["p_value"] is None and claim["measured"] == {}
    assert claim["note"] == f"{R.NOT_MEASURED} (no predictions for aed_style_layers, aed_mixed_m2)"
    assert render_results().describe_measured(claim) == "-"


def test_aed_designs_degenerate_system_is_not_measurable(tmp_path):
    write_aed_designs(tmp_path, style_layers=lambda t: "", mixed_m2=lambda t: t)
    claim = A.claim_aed_designs(tmp_path, RESAMPLES)
    assert claim["reproduced"] is None and claim["note"].startswith("not measurable")
    assert claim["measured"]["style_layers"]["constant_share"]["aed_style_layers"] == 1.0


def test_multi_vs_single_style_aed(tmp_path):
    write_system(tmp_path, "aed_prompt", written=drop_word)
    write_system(tmp_path, "aed_punctuated", written=drop_word)
    write_system(tmp_path, "aed_normalized", normalized=drop_word)  # the prompt AED is better: still on par
    claim = A.claim_multi_vs_single_style(tmp_path, RESAMPLES)
    assert claim["id"] == "C9" and "Table 2" in claim["claim"]
    punctuated, normalized = claim["measured"]["punctuated"], claim["measured"]["normalized"]
    assert punctuated["metric"] == "ter" and punctuated["pred_field"] == "pred_text"
    assert normalized["metric"] == "wer" and normalized["pred_field"] == "pred_text_normalized"
    assert normalized["a"] == 0.0 < normalized["b"]
    assert claim["reproduced"] is True and claim["p_value"] == normalized["p_bootstrap"]
    assert "punctuated: TER" in claim["note"] and "normalized: WER 0.0% (`aed_prompt`)" in claim["note"]
    check_p(claim)
    write_system(tmp_path, "aed_normalized")  # now significantly worse on the normalized output
    write_system(tmp_path, "aed_prompt", written=drop_word, normalized=drop_word)
    claim = A.claim_multi_vs_single_style(tmp_path, RESAMPLES)
    assert claim["measured"]["punctuated"]["delta"] == 0.0 and claim["p_value"] < 0.05
    assert claim["reproduced"] is False
    missing = A.claim_multi_vs_single_style(tmp_path / "none", RESAMPLES)
    assert missing["reproduced"] is None and "aed_prompt, aed_punctuated, aed_normalized" in missing["note"]


def test_aed_less_punctuated_follows_the_pn_sweep_rule(tmp_path):
    write_system(tmp_path, "aed_prompt_p05")
    write_system(tmp_path, "aed_prompt_p50")
    claim = A.claim_aed_less_punctuated(tmp_path, RESAMPLES)
    assert claim["id"] == "C10" and claim["paper"] == "001" and "§3.3" in claim["claim"]
    assert claim["rule"] == C.claim_pn_sweep(tmp_path)["rule"].replace("rnnt_conditioned", "aed_prompt")
    assert claim["measured"]["metric"] == "pc_wer" and claim["measured"]["per"]["delta"] == 0.0
    assert claim["reproduced"] is True
    check_p(claim)
    write_system(tmp_path, "aed_prompt_p05", written=no_marks)
    claim = A.claim_aed_less_punctuated(tmp_path, RESAMPLES)
    assert claim["measured"]["delta"] > R.PN_MAX_INCREASE and claim["reproduced"] is False
    missing = A.claim_aed_less_punctuated(tmp_path / "none", RESAMPLES)
    assert missing["reproduced"] is None and "aed_prompt_p05, aed_prompt_p50" in missing["note"]


def test_intermediate_ctc(tmp_path):
    write_system(tmp_path, "ctc_inter")
    write_system(tmp_path, "ctc_punctuated", written=drop_word)
    claim = C.claim_intermediate_ctc(tmp_path, RESAMPLES)
    assert claim["reproduced"] is True and claim["measured"]["metric"] == "wer"
    check_p(claim)


def test_missing_predictions_are_not_measured(tmp_path):
    write_system(tmp_path, "rnnt_conditioned")
    funcs = (
        C.claim_e2e_vs_cascade,
        C.claim_joint_vs_punctuated,
        C.claim_pn_sweep,
        C.claim_intermediate_ctc,
        A.claim_aed_designs,
        A.claim_multi_vs_single_style,
        A.claim_aed_less_punctuated,
    )
    for func in funcs:
        claim = func(tmp_path, RESAMPLES)
        assert claim["reproduced"] is None and claim["p_value"] is None
        assert claim["note"].startswith(R.NOT_MEASURED)
    claim = C.claim_one_pass_styles(tmp_path)
    assert claim["reproduced"] is None and "models/ctc_m2.nemo" in claim["note"]


def test_mismatched_utterances_are_reported(tmp_path):
    write_system(tmp_path, "ctc_inter")
    write_system(tmp_path, "ctc_punctuated", n=20)
    claim = C.claim_intermediate_ctc(tmp_path, RESAMPLES)
    assert claim["reproduced"] is None
    assert claim["note"].startswith("not measured:") and "does not hold the same utterances" in claim["note"]


def formatter_section(
    seq2seq_per=0.4, formatter_iwer=0.2, wfst_iwer=0.3, seq2seq_long=30.0, iwer_p=0.2, seq2seq_cer=0.01
):
    def row(per, iwer, long, cer=0.01):
        return {"per": per, "cer": cer, "m_wer": 0.5, "i_wer": iwer, "time_short_s": 0.1, "time_long_s": long}

    return {
        "documents": 60,
        "long_words": 5000,
        "results": {
            "formatter": row(0.3, formatter_iwer, 2.0),
            "full seq2seq": row(seq2seq_per, 0.9, seq2seq_long, seq2seq_cer),
            "NeMo WFST ITN": row(0.99, wfst_iwer, 4.0),
        },
        "compare": {
            "full seq2seq": {"per": {"p": 0.01, "p_mapsswe": 0.02, "ci95": [-0.2, -0.05]}},
            "NeMo WFST ITN": {"i_wer": {"p": iwer_p, "p_mapsswe": 0.3, "ci95": [-0.2, 0.05]}},
        },
    }


def test_formatter_claims():
    speed, per, iwer = C.formatter_claims(formatter_section())
    assert [c["id"] for c in (speed, per, iwer)] == ["C5a", "C5b", "C5c"]
    assert speed["measured"]["ratio"] == pytest.approx(15.0) and speed["reproduced"] is True
    assert per["reproduced"] is True and per["p_value"] == 0.01 and per["p_mapsswe"] == 0.02
    # lower I-WER without significance does not show that the formatter beats WFST ITN
    assert iwer["reproduced"] is False and iwer["measured"]["delta"] == pytest.approx(-0.1)
    assert "significant at 0.05" in per["note"] and "not significant at 0.05 (p=0.200)" in iwer["note"]
    assert C.formatter_claims(formatter_section(iwer_p=0.01))[2]["reproduced"] is True
    speed, per, iwer = C.formatter_claims(formatter_section(seq2seq_per=0.2, formatter_iwer=0.3, seq2seq_long=1.0))
    assert (speed["reproduced"], per["reproduced"], iwer["reproduced"]) == (False, False, False)
    section = formatter_section()
    del section["results"]["full seq2seq"]
    speed, per, iwer = C.formatter_claims(section)
    assert speed["reproduced"] is None and per["reproduced"] is None and iwer["reproduced"] is False
    # a seq2seq baseline that rewrites the words is not a baseline: C5a and C5b are not measurable, C5c stands
    speed, per, iwer = C.formatter_claims(formatter_section(seq2seq_per=0.73, seq2seq_cer=0.73, iwer_p=0.01))
    assert speed["reproduced"] is None and per["reproduced"] is None and iwer["reproduced"] is True
    assert per["note"].startswith("not measurable: the full seq2seq baseline is not fit (CER 73.0% > 10%")
    assert per["measured"]["b"] == 0.73 and speed["measured"]["ratio"] == pytest.approx(15.0)  # still reported
    assert render_results().claims_markdown([speed, per]).count("| not measurable |") == 2
    for claim in C.formatter_claims({"not_measured": "no formatter data"}):
        assert claim["reproduced"] is None and "no formatter data" in claim["note"]


class FakeM2:
    """Runs its encoder ``passes`` times per batch and returns both styles."""

    def __init__(self, passes: int = 1, empty: bool = False) -> None:
        self.encoder = torch.nn.Identity()
        self.passes, self.empty = passes, empty

    def transcribe(self, audio, batch_size=4, mode=None, verbose=True):
        assert mode == "both"
        for _ in range(0, len(audio), batch_size):
            for _ in range(self.passes):
                self.encoder(torch.zeros(1))
        text = "" if self.empty else "and it came to pass"
        return {"normalized": [text] * len(audio), "punctuated": [text.capitalize() + "."] * len(audio)}


@pytest.mark.parametrize(
    ("model", "expected"), [(FakeM2(), True), (FakeM2(passes=2), False), (FakeM2(empty=True), False)]
)
def test_one_pass_styles(tmp_path, model, expected):
    write_system(tmp_path, "ctc_m2")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "ctc_m2.nemo").write_bytes(b"")
    claim = C.claim_one_pass_styles(tmp_path, batch_size=8, loader=lambda path: model)
    measured = claim["measured"]
    assert measured["batches"] == 4 and measured["utterances"] == 30
    assert measured["encoder_calls"] == 4 * model.passes
    assert measured["wer_normalized"] == 0.0 and measured["per_punctuated"] == 0.0
    assert claim["reproduced"] is expected


def test_compute_claims_and_markdown(tmp_path):
    write_system(tmp_path, "rnnt_conditioned")
    write_system(tmp_path, "cascade", written=no_marks)
    claims = C.compute_claims(
        tmp_path, formatter_section(formatter_iwer=0.1), measure_one_pass=False, num_resamples=RESAMPLES
    )
    ids = ["C1", "C2", "C3", "C4", "C5a", "C5b", "C5c", "C6", "C7", "C8", "C9", "C10"]
    assert [c["id"] for c in claims] == ids
    assert [c["reproduced"] for c in claims] == [True, None, None, None, True, True, False] + [None] * 5
    table = render_results().claims_markdown(claims)
    lines = table.splitlines()
    assert lines[0].startswith("| id | paper | claim |")
    rows = [line for line in lines if line.startswith("| C")]
    assert len(rows) == 12
    assert all(row.count(" | ") == lines[0].count(" | ") for row in rows)  # pipes in cells are escaped
    assert "PER 0.00% (rnnt_conditioned) vs 100.00% (cascade)" in rows[0] and rows[0].endswith("| yes |")
    assert rows[1].endswith("| not measured |")
    assert "15.0x" in rows[4]
    assert "- C2: not measured: run examples/demo_pc.py --claims" in table
    json.dumps(claims)  # serializable


def _lm_report(pairs: dict) -> dict:
    """A benchmarks/quality_lm_fusion.py report: system -> (WER-PC with LM, without, bootstrap p)."""
    systems = {}
    for name, (with_lm, without, p) in pairs.items():
        paired = {
            "a": with_lm,
            "b": without,
            "delta": with_lm - without,
            "ci95": [-0.02, 0.01],
            "p": p,
            "p_mapsswe": p,
        }
        systems[name] = {
            "best_alpha": 0.5,
            "lm": {"order": 6},
            "lm_text": "demo/lm/text.json",
            "test": {"num_utterances": 40, "paired": {"wer_pc": paired}},
        }
    return {"settings": {"demo_dir": "demo", "strategy": "beam", "beam_size": 8}, "systems": systems}


@pytest.mark.parametrize(("with_lm", "p", "expected"), [(0.60, 0.01, True), (0.60, 0.20, False), (0.70, 0.01, False)])
def test_lm_fusion_claim_needs_a_significantly_lower_wer_pc(with_lm, p, expected):
    report = _lm_report({"rnnt_conditioned": (with_lm, 0.65, p), "ctc_inter": (0.60, 0.62, 0.001)})
    claim = C.claim_lm_fusion(report)
    assert claim["id"] == "C7" and claim["reproduced"] is expected and claim["p_value"] == p
    measured = render_results().describe_measured(claim)
    assert "WER-PC" in measured and "(rnnt_conditioned + LM)" in measured
    assert "LM weight 0.5 (dev)" in claim["note"] and "ctc_inter: -2.00 points" in claim["note"]
    assert "beam 8 decoding, an order-6 LM over demo/lm/text.json" in claim["note"]
    missing = C.claim_lm_fusion(_lm_report({"ctc_inter": (0.6, 0.62, 0.001)}))
    assert missing["reproduced"] is None and missing["note"].startswith("not measured")


def test_lm_fusion_claim_reads_the_demo_lm_rows_without_a_report(tmp_path):
    write_system(tmp_path, "rnnt_conditioned", written=no_marks)
    write_system(tmp_path, "rnnt_conditioned_lm")
    (tmp_path / "lm").mkdir()
    summary = {"beam_size": 8, "modes": {"punctuated": {"alpha": 0.4}, "normalized": {"alpha": 0.8}}}
    (tmp_path / "lm" / "rnnt_conditioned.json").write_text(json.dumps(summary))
    claim = C.claim_lm_fusion(None, demo_dir=tmp_path, num_resamples=RESAMPLES)
    assert claim["reproduced"] is True and claim["measured"]["a"] == 0.0 and claim["measured"]["b"] > 0.0
    assert claim["p_value"] < 0.05 and "beam 8 decoding" in claim["note"] and "LM weight 0.4 (dev)" in claim["note"]
    worse = tmp_path / "worse"
    write_system(worse, "rnnt_conditioned")
    write_system(worse, "rnnt_conditioned_lm", written=no_marks)
    assert C.claim_lm_fusion(None, demo_dir=worse, num_resamples=RESAMPLES)["reproduced"] is False
    assert C.claim_lm_fusion(None, demo_dir=tmp_path / "none")["note"].startswith("not measured")


def test_run_all_refuses_an_lm_report_of_another_demo_folder(tmp_path):
    report = tmp_path / "lm.json"
    report.write_text(json.dumps(_lm_report({"rnnt_conditioned": (0.6, 0.65, 0.01)})))
    run_all = load_run_all()
    with pytest.raises(SystemExit, match="measured on"):
        run_all.lm_fusion_report(str(report), tmp_path / "other_demo")
    assert run_all.lm_fusion_report(None, tmp_path) is None
    report.write_text("{not json")
    with pytest.raises(SystemExit, match="not a readable"):
        run_all.lm_fusion_report(str(report), tmp_path)
    with pytest.raises(SystemExit, match="not a readable"):
        run_all.lm_fusion_report(str(tmp_path / "missing.json"), tmp_path)


def test_run_all_refuses_an_unknown_section_and_a_bad_previous_rtf_before_any_work(tmp_path):
    run_all = load_run_all()
    with pytest.raises(SystemExit, match="--skip: unknown section.s. formater"):
        run_all.main(["--demo-dir", str(tmp_path), "--skip", "rtf,formater"])
    with pytest.raises(SystemExit, match="--rtf-previous .*missing.json: not a readable"):
        run_all.main(["--demo-dir", str(tmp_path), "--rtf-previous", str(tmp_path / "missing.json")])
    (tmp_path / "other.json").write_text(json.dumps({"claims": {}}))
    with pytest.raises(SystemExit, match="has no 'rtf' section"):
        run_all.main(["--demo-dir", str(tmp_path), "--rtf-previous", str(tmp_path / "other.json")])
    assert run_all._previous_rtf(None) is None


def load_run_all():
    return load_benchmark("run_all")


def render_results():
    """The claims table and the README block are drawn by benchmarks/render_results.py."""
    return load_benchmark("render_results")


def test_run_all_claims_only(tmp_path):
    demo = tmp_path / "demo"
    write_system(demo, "ctc_inter")
    write_system(demo, "ctc_punctuated", written=drop_word)
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results:claims benchmarks/results/run_all.json -->\n<!-- results:end -->\nend\n")
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    run_all = load_run_all()
    run_all.main(
        [
            "--demo-dir",
            str(demo),
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
            "--readme",
            str(readme),
            "--skip",
            "rtf,formatter,restore,m2",
            "--resamples",
            str(RESAMPLES),
        ]
    )
    results = json.loads(out_json.read_text())
    assert results["rtf"] == {"not_measured": "skipped (--skip)"}
    verdicts = {c["id"]: c["reproduced"] for c in results["claims"]}
    assert verdicts["C4"] is True and verdicts["C1"] is None and verdicts["C5a"] is None
    markdown = out_md.read_text()
    assert "## a. RTF" in markdown and "Not measured: skipped (--skip)." in markdown
    made = results["provenance"]  # the page ends with the run that its JSON records
    assert markdown.endswith(f", revision {made['revision'] or 'unknown'}, {made['date']}.\n")
    text = readme.read_text()
    assert text.startswith(f"intro\n<!-- results:claims {out_json} -->\n")
    assert text.endswith("<!-- results:end -->\nend\n")
    assert "| C4 | 004 |" in text


def _rtf_demo():
    return load_benchmark("run_all_rtf")


def test_rtf_rounds_interleave_the_figures_item_by_item():
    rtf_demo, calls = _rtf_demo(), []
    jobs = {key: (lambda item, key=key: calls.append((key[0], item))) for key in (("a", "x"), ("b", "x"), ("c", "x"))}
    seconds = rtf_demo.timed_rounds(jobs, items=2, rounds=2)
    assert [len(v) for v in seconds.values()] == [2, 2, 2] and all(s > 0 for v in seconds.values() for s in v)
    order = ["".join(job for job, _ in calls[k : k + 3]) for k in range(0, len(calls), 3)]
    assert order == ["abc", "bca", "bca", "cab"]  # each item of each round starts at another job
    assert [item for _, item in calls] == [0, 0, 0, 1, 1, 1] * 2


def test_rtf_figures_are_medians_and_ratios_are_paired_per_round():
    rtf_demo = _rtf_demo()
    # round 2 ran on a loaded machine: both figures slow, their ratio unchanged
    per_round = {("rnnt_conditioned", "punctuated"): [1.0, 3.0, 1.2], ("rnnt_conditioned", "both"): [1.2, 3.6, 1.44]}
    figures = rtf_demo.summarize(per_round, audio_seconds=10.0)
    assert figures[("rnnt_conditioned", "punctuated")]["rtf"] == pytest.approx(0.12)
    assert figures[("rnnt_conditioned", "punctuated")]["spread_pct"] == pytest.approx(100 * (0.3 - 0.1) / 0.12)
    ratios = rtf_demo.rtf_ratios(figures)
    both = ratios["conditioned_both_over_punctuated"]
    assert both["median"] == pytest.approx(1.2) and both["min"] == pytest.approx(1.2)
    assert both["max"] == pytest.approx(1.2)
    assert ratios["conditioned_punctuated_over_dual_punctuated"] is None
    assert ratios["cascade_over_conditioned_punctuated"] is None


def test_rtf_agreement_names_the_largest_difference():
    rtf_demo = _rtf_demo()

    def section(p_rtf, ratio):
        return {
            "systems": {"rnnt_conditioned": {"punctuated": {"rtf": p_rtf}, "parameters": 5}},
            "ratios": {"conditioned_both_over_punctuated": {"median": ratio}, "missing": None},
        }

    close = rtf_demo.agreement(section(0.102, 1.2), section(0.1, 1.2))
    assert close["agree"] and close["max_abs_pct"] == pytest.approx(2.0)
    far = rtf_demo.agreement(section(0.1, 1.32), section(0.1, 1.2))
    assert not far["agree"] and far["differences_pct"]["ratio conditioned_both_over_punctuated"] == pytest.approx(10)


def test_silent_systems_make_a_claim_not_measurable(tmp_path):
    # two systems that output nothing tie at 100% WER: that neither supports nor refutes a claim
    write_system(tmp_path, "rnnt_conditioned", written=lambda t: "", normalized=lambda t: "")
    write_system(tmp_path, "rnnt_punctuated", written=lambda t: "", normalized=lambda t: "")
    claim = C.claim_joint_vs_punctuated(tmp_path, RESAMPLES)
    assert claim["reproduced"] is None and claim["note"].startswith("not measurable")
    assert claim["measured"]["constant_share"] == {"rnnt_conditioned": 1.0, "rnnt_punctuated": 1.0}
    assert R.empty_share(tmp_path / "predictions" / "rnnt_conditioned.json") == 1.0


def test_constant_share_counts_the_most_frequent_output(tmp_path):
    path = write_system(tmp_path, "ctc_inter", written=lambda t: "the", n=10)
    assert R.constant_share(path) == 1.0 and R.empty_share(path) == 0.0
    path = write_system(tmp_path, "ctc_punctuated", n=12)  # six sentences, each twice
    assert R.constant_share(path) == pytest.approx(2 / 12)


def test_the_aed_claims_block_holds_papers_001_claims_only(tmp_path):
    write_aed_designs(tmp_path, style_layers=lambda t: t, mixed_m2=lambda t: t)
    claims = [
        C.claim_intermediate_ctc(tmp_path, RESAMPLES),  # no CTC systems here: not measured
        A.claim_aed_designs(tmp_path, RESAMPLES),
        A.claim_multi_vs_single_style(tmp_path, RESAMPLES),
    ]
    source = tmp_path / "run_all.json"
    results = {"demo_config": {"hours": 3.0, "systems": ["aed_prompt"]}, "claims": claims}
    source.write_text(json.dumps(results | {"command": "python run_all.py", "markdown": "x.md"}))
    text = render_results().render_claims_aed(source)
    rows = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| C")]
    assert rows == ["| C8", "| C9"]  # C4 left out, C9 kept though not measured
    assert "| C4" in render_results().render_claims(source)


@pytest.mark.parametrize(
    "systems, recipe",
    [
        (
            ["ctc_inter", "rnnt_dual", "aed_prompt"],
            "1000 steps per CTC model and 500 per RNN-T model from `ctc_inter`'s encoder, 300 per AED",
        ),
        (["aed_prompt", "aed_normalized"], "Whisper tiny.en's encoder, then 300 steps per AED"),
        (["rnnt_dual"], "then 500 steps per RNN-T model from `ctc_inter`'s encoder"),
    ],
)
def test_the_claims_block_names_the_steps_of_the_families_the_run_trained(systems, recipe):
    config = {"backbone": "whisper_tiny", "asr_steps": 1000, "rnnt_steps": 500, "rnnt_init": "ctc_inter"}
    results = {"demo_config": config | {"aed_steps": 300, "systems": systems}, "claims": []}
    block = render_results().claims_block(results | {"command": "python run_all.py", "markdown": "x.md"})
    assert recipe in block
    for family, phrase in (("ctc", "CTC model"), ("rnnt", "RNN-T model"), ("aed", "AED")):
        assert (phrase in block) == any(name.startswith(family) for name in systems)


def test_lm_fusion_claim_falls_back_to_ctc_inter_when_the_rnnt_has_no_lm_rows(tmp_path):
    assert C.lm_claim_system(tmp_path) == "rnnt_conditioned"  # nothing decoded: C7 stays not measured
    write_system(tmp_path, "ctc_inter", written=no_marks)
    write_system(tmp_path, "ctc_inter_lm")
    write_system(tmp_path, "rnnt_conditioned")  # a transducer head on the AED: no LM rows
    assert C.lm_claim_system(tmp_path) == "ctc_inter"
    assert C.lm_claim_system(tmp_path, _lm_report({"rnnt_conditioned": (0.6, 0.65, 0.01)})) == "rnnt_conditioned"
    claim = C.claim_lm_fusion(None, system="ctc_inter", demo_dir=tmp_path, num_resamples=RESAMPLES)
    assert claim["reproduced"] is True and claim["measured"]["systems"] == ["ctc_inter + LM", "ctc_inter"]
    assert "`ctc_inter` + LM" in claim["rule"]
    write_system(tmp_path, "rnnt_conditioned_lm")
    assert C.lm_claim_system(tmp_path) == "rnnt_conditioned"
