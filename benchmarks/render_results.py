"""Renders the result blocks of README.md and docs/*.md from the results files in benchmarks/results/.

A block names its kind and its source between two markers; everything between them is this script's output::

    <!-- results:demo benchmarks/results/demo_default_whisper -->
    (rendered text)
    <!-- results:end -->

Kinds: ``claims``, ``run_all_formatter``, ``run_all_rtf`` (``benchmarks/run_all.py``'s JSON: the claims table,
section b, section a); ``demo`` and ``demo_steps`` (a demo output folder kept in benchmarks/results: its test table,
its seconds per step); ``formatter_loso``, ``formatter_loso_all``, ``train_dev_gap``, ``lm_fusion``, ``lm_loso``,
``asr_recipe``, ``train_speed``, ``streaming``, ``lhotse_speed``, ``builder_scale``, ``rnnt_loss``, ``longform`` (the
JSON of the benchmark of that name); ``streaming_train`` (a training curve).
Rewrite every block of the given files, or only check them::

    .venv/bin/python benchmarks/render_results.py README.md docs/*.md
    .venv/bin/python benchmarks/render_results.py --check README.md docs/*.md   # exit 1 when a block is stale

tests/test_docs.py runs the check, so a block whose results file changed fails the tests until it is rendered again.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from nemo_pc.parts.manifest import write_text_atomic

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(
    r"<!-- results:(?P<kind>[a-z_]+) (?P<source>\S+(?: \S+)*?) -->\n(?P<body>.*?)<!-- results:end -->", re.S
)
MULTI_SOURCE = {"train_dev_gap", "asr_recipe"}  # kinds that take several results files, one table
OPEN = re.compile(r"<!-- results:(?!end )(\S+)")


def _pct(value) -> str:
    return "-" if value is None else f"{100.0 * value:.1f}%"


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


def _run_all():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import run_all
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return run_all


def render_claims(source: Path) -> str:
    """The claims table of a ``benchmarks/run_all.py`` JSON, with the run it was measured on."""
    return _run_all().readme_block(_read_json(source))


def _run_all_section(source: Path, name: str, lines: list[str]) -> str:
    results = _read_json(source)
    return "\n".join([f"`{results['command']}` ({name}; `{source_name(source)}`):", "", *lines]) + "\n"


def render_run_all_formatter(source: Path) -> str:
    """Section b of a ``benchmarks/run_all.py`` JSON: the formatter against the full seq2seq and NeMo WFST ITN."""
    run_all = _run_all()
    return _run_all_section(source, "section b", run_all.formatter_markdown(_read_json(source)["formatter"]))


def render_run_all_rtf(source: Path) -> str:
    """Section a of a ``benchmarks/run_all.py`` JSON: RTF of the exported models with ONNX Runtime."""
    run_all = _run_all()
    return _run_all_section(
        source, "section a", run_all.bench_module("rtf_demo").rtf_markdown(_read_json(source)["rtf"])
    )


def _demo_eval(folder: Path, system: str) -> dict | None:
    path = folder / "eval" / f"{system}.json"
    return _read_json(path) if path.is_file() else None


def _demo_systems(folder: Path, config: dict) -> list[str]:
    names = []
    for system in config.get("systems", []):
        names += [system] + ([f"{system}_lm"] if (folder / "eval" / f"{system}_lm.json").is_file() else [])
    return names + [
        name for name in ("cascade", "hybrid", "whisper_tiny_en") if (folder / "eval" / f"{name}.json").is_file()
    ]


def _last_run_seconds(folder: Path) -> dict[str, float]:
    runs = _read_json(folder / "timings.json").get("runs") or []
    if not runs:
        raise ValueError(f"{folder / 'timings.json'}: no runs")
    return runs[-1]["seconds"]


def render_demo(source: Path) -> str:
    """One table of a demo output folder: N-output WER, WER-PC, PER and CER on test, N-output WER on test_seen."""
    config = _read_json(source / "config.json")
    seconds = _last_run_seconds(source)
    anchor = sum(value for key, value in seconds.items() if "whisper" in key)
    finished = (_read_json(source / "timings.json")["runs"][-1]).get("finished", "?")
    rows, n_test, n_seen = [], None, None
    for system in _demo_systems(source, config):
        report, seen = _demo_eval(source, system), _demo_eval(source, f"{system}@test_seen")
        n_test = report["num_utterances"]
        n_seen = seen["num_utterances"] if seen else n_seen
        m = report["metrics"]
        rows.append([f"`{system}`", _pct(report["normalized_output"]["wer"]), _pct(m["wer_pc"]), _pct(m["per"]),
                     _pct(m["cer"]), _pct(seen["normalized_output"]["wer"]) if seen else "-"])  # fmt: skip
    head = (
        f"Run of {finished}: {config['hours']} h corpus planned, seed {config['seed']}, backbone "
        f"`{config.get('backbone') or 'fastconformer'}`, base encoder {config['base_steps']} steps, RNN-T "
        f"{config['rnnt_steps']} steps, CTC {config['asr_steps']} steps, tokenizer {config['vocab_size']} pieces. "
        f"**{_minutes(sum(seconds.values()))}** of steps ({_minutes(sum(seconds.values()) - anchor)} without the "
        f"Whisper anchor). Test: {n_test} utterances of {config['held_out_voices']} voices that no training "
        f"utterance uses; test_seen: {n_seen} utterances of training voices reading chapters no other split reads. "
        f"Greedy decoding; `_lm`: beam {config['lm_beam_size']} with a token {config['lm_order']}-gram LM per mode. "
        f"Source: `{source_name(source)}/` (`eval/`, `timings.json`, "
        "`REPORT.md`)."
    )
    columns = ["system", "N-output WER:", "WER-PC:", "PER:", "CER:", "N-output WER, test_seen:"]
    return "\n".join([head, "", *_table(columns, rows)]) + "\n"


def render_demo_steps(source: Path) -> str:
    """Seconds of each step of a demo run's last ``timings.json`` entry, as one table."""
    seconds = _last_run_seconds(source)
    rows = [[key, f"{value:.1f}"] for key, value in seconds.items()]
    rows.append(["**all steps**", f"**{sum(seconds.values()):.1f}** ({_minutes(sum(seconds.values()))})"])
    return "\n".join(_table(["step", "seconds:"], rows)) + "\n"


def render_formatter_loso(source: Path) -> str:
    """``benchmarks/formatter_loso.py``: the formatter on the documents of a source it did or did not train on."""
    report = _read_json(source)
    lines = [
        f"{report['documents']} test documents of source `{report['leave_out']}` (`{source_name(source)}`):",
        "",
        *_table(
            ["system", "PER:", "CER:", "I-WER:"],
            [[name, *(_pct(r.get(m)) for m in ("per", "cer", "i_wer"))] for name, r in report["results"].items()],
        ),
    ]
    return "\n".join(lines) + "\n"


def render_formatter_loso_all(source: Path) -> str:
    """``benchmarks/formatter_loso_all.py``: per left-out source, PER and the I-WER of every span ITN policy and of
    NeMo WFST ITN; the mean over sources and the mean ratio to WFST's I-WER."""
    report = _read_json(source)
    systems = list(next(iter(report["sources"].values()))["results"])
    rows = []
    for name, entry in report["sources"].items():
        results = entry["results"]
        rows.append([f"`{name}`", entry["documents"], _pct(results["neural"]["per"]),
                     *(_pct(results[s]["i_wer"]) for s in systems)])  # fmt: skip
    mean = report["mean"]
    rows.append(["**mean**", "", _pct(mean["neural"]["per"]), *(_pct(mean[s]["i_wer"]) for s in systems)])
    rows.append(["I-WER ÷ WFST's (mean of ratios)", "", "",
                 *(f"{mean[s]['i_wer_vs_wfst']:.2f}×" for s in systems)])  # fmt: skip
    rows.append(["sources worse than WFST", "", "", *(mean[s]["sources_worse_than_wfst"] for s in systems)])
    columns = ["left out", "docs:", "PER:", *(f"I-WER {s}:" for s in systems)]
    lines = _table(columns, rows)
    if report.get("pooled"):
        pooled = report["pooled"]
        lines += ["", "All held-out documents together, each system against NeMo WFST ITN (paired bootstrap over "
                  "documents):", ""]  # fmt: skip
        lines += _table(["system", "docs:", "I-WER:", "difference:", "95% interval:", "p:"], [
            [name, row["documents"], _pct(row["i_wer"]), f"{100 * row['delta_vs_wfst']:+.1f}",
             "-" if row["ci95"] is None else f"[{100 * row['ci95'][0]:+.1f}, {100 * row['ci95'][1]:+.1f}]",
             _p(row["p"])] for name, row in pooled.items() if name != "NeMo WFST ITN"])  # fmt: skip
    if not report.get("complete"):
        lines += ["", "Incomplete: not every source has been scored yet."]
    return "\n".join(lines) + "\n"


def render_train_dev_gap(*sources: Path) -> str:
    """``benchmarks/train_dev_gap.py``: normalized WER of each model on each split (a generalization gap or not)."""
    reports = [_read_json(source) for source in sources]
    splits = list(dict.fromkeys(split for report in reports for split in report["wer"]))
    rows = [[f"`{report['model']}`", *(_pct(report["wer"].get(s)) for s in splits), f"`{source_name(source)}`"]
            for source, report in zip(sources, reports, strict=True)]  # fmt: skip
    lines = _table(["model", *(f"{s}:" for s in splits), "source"], rows)
    sizes = sorted({report["utterances"] for report in reports})
    lines += [
        "",
        f"WER of the normalized output on {' or '.join(map(str, sizes))} random utterances (seed 0) per split.",
    ]
    return "\n".join(lines) + "\n"


def _p(value) -> str:
    return "-" if value is None else "<0.001" if value < 0.001 else f"{value:.3f}"


def _change(paired: dict, metric: str) -> str:
    d = paired[metric]
    return (
        f"{100 * d['b']:.2f} → {100 * d['a']:.2f}% ({100 * d['delta']:+.2f}, p {_p(d['p'])}, "
        f"MAPSSWE {_p(d.get('p_mapsswe'))})"
    )


def render_lm_fusion(source: Path) -> str:
    """``benchmarks/lm_fusion.py``: each system's test WER, WER-PC and PER without and with the LM (dev weight)."""
    report = _read_json(source)
    st = report["settings"]
    decoding = "greedy" if st["strategy"] == "greedy" else f"beam {st['beam_size']}"
    lines = [
        f"{decoding}, token {st['order']}-gram, LM weight tuned on dev by WER-PC over {st['alphas']}; demo folder "
        f"`{st['demo_dir']}`; p: paired bootstrap (`{source_name(source)}`).",
        "",
    ]
    rows = [[f"`{name}`", r["best_alpha"], r["test"]["num_utterances"],
             *(_change(r["test"]["paired"], m) for m in ("wer", "wer_pc", "per"))]
            for name, r in report["systems"].items()]  # fmt: skip
    columns = ["system", "LM weight (dev):", "test utterances:", "WER", "WER-PC", "PER"]
    return "\n".join(lines + _table(columns, rows)) + "\n"


def render_lm_loso(source: Path) -> str:
    """``benchmarks/lm_loso.py``: WER per source of the test utterances with no LM, the full LM, and the LM without
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
    """``benchmarks/asr_recipe.py``: each recipe variant's seconds and dev WER curve, one table per results file."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from asr_recipe import recipe_table
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    lines = []
    for source in sources:
        report = _read_json(source)
        where = f"on `{report['demo_dir']}` (`{source_name(source)}`)"
        lines += ["" if lines else None, f"{report['steps']} steps, {report['jobs']} at a time, {where}:", ""]
        lines += recipe_table(report["rows"])
    return "\n".join(line for line in lines if line is not None) + "\n"


def render_train_speed(source: Path) -> str:
    """``benchmarks/train_speed.py``: steps/s, audio s/s, padding and mean loss per variant, one table per run."""
    report = _read_json(source)
    lines = [f"{report['machine']}; {report['corpus']} (`{source_name(source)}`)."]
    for run in report["runs"]:
        lines += ["", f"`{run['command']}`" + (f" ({run['corpus']})" if run.get("corpus") else "") + ":", ""]
        first: dict[str, float] = {}
        rows = [[r["model"], r["variant"], f"{r['steps_per_s']:.3f}", f"{r['audio_s_per_s']:.1f}",
                 _pct(r["padding_share"]), f"{r['mean_loss']:.1f}",
                 f"{r['steps_per_s'] / first.setdefault(r['model'], r['steps_per_s']):.2f}x"]
                for r in run["rows"]]  # fmt: skip
        columns = ["model", "variant", "steps/s:", "audio s/s:", "padding:", "mean loss:", "speed vs the first row:"]
        lines += _table(columns, rows)
    return "\n".join(lines) + "\n"


def _num2(value) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def render_streaming(source: Path) -> str:
    """``benchmarks/streaming.py``: per lookahead, the offline pass and each streaming backend (WER, PER, WER-PC,
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
            cells = [*(first if k == 0 else ("", "")), backend, _num2(r["wer_normalized"]),
                     _num2(r["per_punctuated"]), _num2(r["wer_pc_punctuated"]),
                     f"{same['normalized']} / {same['punctuated']}" if same else "-",
                     f"{r['step_ms_median']:.1f} / {r['step_ms_p90']:.1f}" if "step_ms_median" in r else "-",
                     f"{r['rtf']:.3f}"]  # fmt: skip
            rows.append(cells)
    ref = report.get("reference")
    if ref:
        scores = [_num2(ref[key]) for key in ("wer_normalized", "per_punctuated", "wer_pc_punctuated")]
        rows.append(["full context", "-", f"offline `{ref['model']}`", *scores, "-", "-", f"{ref['rtf']:.3f}"])
    columns = ["att_context_size", "chunk / lookahead (ms)", "pass", "N-WER", "PER", "WER-PC",
               "same text as offline (N / P)", "step ms median / p90", "RTF"]  # fmt: skip
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
    rows = [[f"{p['step']:,}", f"{p['val_loss']:.2f}", _num2(p["val_wer_normalized"]), _num2(p["val_wer_punctuated"])]
            for p in report["curve"]]  # fmt: skip
    columns = ["step:", "dev loss:", "dev WER, normalized:", "dev WER, punctuated:"]
    return "\n".join(lines + _table(columns, rows)) + "\n"


def render_lhotse_speed(source: Path) -> str:
    """``benchmarks/lhotse_speed.py``: batches/s, audio s/s and padding of each loader variant."""
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
        rows.append([f"`{name}` ({loader})", source_kind, buckets, f"{v['batches_per_s']:.2f}",
                     f"{v['audio_s_per_s']:.0f}", _pct(v["padding_share"])])  # fmt: skip
    columns = ["variant", "source", "buckets", "batches/s:", "audio s/s:", "padding:"]
    return "\n".join(lines + _table(columns, rows)) + "\n"


def render_builder_scale(source: Path) -> str:
    """``benchmarks/builder_scale.py``: time, throughput and peak memory of the builder per corpus size and jobs."""
    report = _read_json(source)
    lines = [
        f"`{report['command']}`, {report['cpus']} CPUs (`{source_name(source)}`):",
        "",
    ]
    rows = [[f"{r['utterances']:,}", f"{r['chapters']:,}", r["num_jobs"], f"{r['seconds']:.1f}",
             f"{r['utterances_per_second']:,.0f}", f"{r['peak_rss_mib']:.0f} MiB",
             f"{r['kept_utterances']:,} / {r['dropped_utterances']:,}"] for r in report["rows"]]  # fmt: skip
    columns = ["utterances:", "readings:", "jobs:", "seconds:", "utterances/s:", "peak memory:", "kept / dropped:"]
    return "\n".join(lines + _table(columns, rows)) + "\n"


def render_rnnt_loss(source: Path) -> str:
    """``benchmarks/rnnt_loss.py``: forward + backward time of nemo_pc's scan loss and NeMo's numba loss on CPU."""
    r = _read_json(source)
    return (
        f"Joint output {tuple(r['shape'])}, {r['threads']} threads: scan {r['scan_seconds']:.2f} s, numba "
        f"{r['numba_seconds']:.2f} s ({r['numba_over_scan']:.1f}x), largest difference {r['max_abs_difference']:.1e} "
        f"(`{source_name(source)}`).\n"
    )


def render_longform(source: Path) -> str:
    """``benchmarks/longform.py``: per recording length, memory, RTF and the word disagreement with per-utterance
    transcription of utterances cut by a seam and of the others (both modes)."""
    r = _read_json(source)
    lines = [
        f"{r['model']}; {r['chunk_seconds']:g} s chunks, {r['context_seconds']:g} s context, {r['threads']} "
        f"thread(s), utterances of `{r['manifest']}` with {r['pause_seconds']:g} s pauses:",
        "",
    ]
    rows = []
    for row in r["rows"]:
        agreement = row["agreement"]
        cells = [f"{row['audio_seconds'] / 60:.2f} min", row["chunks"], f"{row['loaded_rss_mb']:.0f} MB",
                 f"{row['peak_rss_mb']:.0f} MB", f"{row['rtf']:.3f}", f"{row['cpu_rtf']:.4f}",
                 f"{row['load_average']:.1f}"]  # fmt: skip
        for mode in ("punctuated", "normalized"):
            cells += [_pct(agreement[mode][part]["word_disagreement"]) for part in ("seam", "inside")]
        rows.append(cells)
    columns = ["audio:", "chunks:", "RSS loaded:", "peak RSS:", "RTF wall:", "RTF CPU:", "load:",
               "P seam:", "P inside:", "N seam:", "N inside:"]  # fmt: skip
    return "\n".join(lines + _table(columns, rows)) + "\n"


RENDERERS: dict[str, Callable[[Path], str]] = {
    "claims": render_claims,
    "run_all_formatter": render_run_all_formatter,
    "run_all_rtf": render_run_all_rtf,
    "demo": render_demo,
    "demo_steps": render_demo_steps,
    "formatter_loso": render_formatter_loso,
    "formatter_loso_all": render_formatter_loso_all,
    "train_dev_gap": render_train_dev_gap,
    "lm_fusion": render_lm_fusion,
    "lm_loso": render_lm_loso,
    "asr_recipe": render_asr_recipe,
    "train_speed": render_train_speed,
    "streaming": render_streaming,
    "streaming_train": render_streaming_train,
    "lhotse_speed": render_lhotse_speed,
    "builder_scale": render_builder_scale,
    "rnnt_loss": render_rnnt_loss,
    "longform": render_longform,
}


# blocks


def source_name(path: str | Path) -> str:
    """``path`` as a block names it: relative to the repository when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


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
    """How the results file was made (``benchmarks/provenance.py``), when it records it."""
    made = _read_json(path).get("provenance")
    if not made:
        return None
    return f"`{source_name(path)}`: `{made['command']}`, revision {made['revision'] or 'unknown'}, {made['date']}."


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
