"""Section a of ``benchmarks/run_all.py``: steady real-time factors of a demo folder's models, ONNX Runtime on CPU.

Every timed figure (a system and an output kind) runs once per round on every utterance, and a round interleaves
the figures utterance by utterance, so a change of machine load hits every figure alike. A figure's RTF is the
median of its rounds; its spread is (max - min) / median over the rounds. Each ratio is taken within each round
(paired) and reported as the median of the rounds with its range. The cascade's formatter also runs at batch 1,
on one utterance's normalized output at a time. ``--rtf-previous`` compares every figure with an earlier run's
JSON: two runs agree when no figure or ratio differs by more than ``AGREEMENT_PCT``.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/run_all.py --demo-dir demo_out --skip formatter,restore,m2 \
        --json benchmarks/results/rtf_run1.json --markdown /tmp/rtf_run1.md
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path

from suite import Stopwatch, num, spread_pct

from nemo_pc.parts.modes import BOTH, MODES

AGREEMENT_PCT = 5.0

# ratio name -> (numerator, denominator), each a (system, output kind) figure
RATIOS = {
    "conditioned_punctuated_over_dual_punctuated": (("rnnt_conditioned", "punctuated"), ("rnnt_dual", "punctuated")),
    # paper 000's 2-Decoder runs both decoders: its P output costs the all-heads export, or both outputs
    "conditioned_punctuated_over_dual_all_heads": (
        ("rnnt_conditioned", "punctuated"),
        ("rnnt_dual", "punctuated_all_heads"),
    ),
    "conditioned_punctuated_over_dual_both": (("rnnt_conditioned", "punctuated"), ("rnnt_dual", "both")),
    "conditioned_both_over_punctuated": (("rnnt_conditioned", "both"), ("rnnt_conditioned", "punctuated")),
    "dual_both_over_punctuated": (("rnnt_dual", "both"), ("rnnt_dual", "punctuated")),
    "cascade_over_conditioned_punctuated": (("cascade", "punctuated"), ("rnnt_conditioned", "punctuated")),
}


def timed_rounds(jobs: dict[tuple[str, str], Callable[[int], object]], items: int, rounds: int) -> dict:
    """Seconds of every job in every round. A round runs every job on item 0, then every job on item 1, and so on,
    starting each item at another job, so that a change of machine load reaches every job alike; a job's seconds
    in a round are the sum over the items."""
    keys = list(jobs)
    seconds: dict[tuple[str, str], list[float]] = {key: [] for key in keys}
    for round_index in range(max(rounds, 1)):
        sums = dict.fromkeys(keys, 0.0)
        for item in range(items):
            shift = (round_index + item) % len(keys) if keys else 0
            for key in keys[shift:] + keys[:shift]:
                with Stopwatch() as watch:
                    jobs[key](item)
                sums[key] += watch.seconds
        for key in keys:
            seconds[key].append(sums[key])
    return seconds


def summarize(per_round: dict[tuple[str, str], list[float]], audio_seconds: float) -> dict[tuple[str, str], dict]:
    """RTF per round of every figure, its median and spread."""
    out = {}
    for key, seconds in per_round.items():
        rtf = [s / audio_seconds for s in seconds]
        out[key] = {"rtf": statistics.median(rtf), "spread_pct": spread_pct(rtf), "rounds": rtf}
    return out


def rtf_ratios(figures: dict[tuple[str, str], dict]) -> dict[str, dict | None]:
    """Every ratio of :data:`RATIOS` with both figures measured: the median of the per-round ratios and their range
    (None where a figure is missing)."""
    ratios: dict[str, dict | None] = {}
    for name, (top, bottom) in RATIOS.items():
        if top not in figures or bottom not in figures:
            ratios[name] = None
            continue
        per_round = [a / b for a, b in zip(_rounds(figures, top), _rounds(figures, bottom), strict=True)]
        ratios[name] = {"median": statistics.median(per_round), "min": min(per_round), "max": max(per_round)}
    return ratios


def _rounds(figures: dict, key: tuple[str, str]) -> list[float]:
    return figures[key]["rounds"]


def agreement(current: dict, previous: dict) -> dict:
    """Relative difference (percent) of every figure and ratio measured in both runs (``rtf`` sections)."""
    diffs = {}
    for system, row in current.get("systems", {}).items():
        for kind, value in row.items():
            old = previous.get("systems", {}).get(system, {}).get(kind)
            if isinstance(value, dict) and isinstance(old, dict) and "rtf" in value and "rtf" in old:
                diffs[f"{system}/{kind}"] = 100.0 * (value["rtf"] - old["rtf"]) / old["rtf"]
    for name, value in current.get("ratios", {}).items():
        old = previous.get("ratios", {}).get(name)
        if value and old:
            diffs[f"ratio {name}"] = 100.0 * (value["median"] - old["median"]) / old["median"]
    worst = max((abs(v) for v in diffs.values()), default=math.nan)
    return {"differences_pct": diffs, "max_abs_pct": worst, "agree": worst <= AGREEMENT_PCT}


def features(model, manifest: Path) -> tuple[list, float]:
    """Log-mel features of every utterance (batch 1) and the seconds of audio."""
    import torch

    from nemo_pc.data.datasets.pc_dataset import pc_dataloader_from_config

    loader = pc_dataloader_from_config({"manifest_filepath": str(manifest), "batch_size": 1}, model.tokenizer)
    feats_list, seconds = [], 0.0
    for batch in loader:
        with torch.no_grad():
            feats, lengths = model.preprocessor(input_signal=batch.audio, length=batch.audio_len)
        feats_list.append((feats.numpy(), lengths.numpy()))
        seconds += float(batch.audio_len.sum()) / model.preprocessor._sample_rate
    return feats_list, seconds


def rnnt_jobs(name: str, path: Path, manifest: Path, folder: Path, dual: bool, threads: int) -> tuple[dict, dict]:
    """Timed jobs of one RNN-T model (normalized, punctuated, both; the dual's punctuated-head export), and facts:
    audio seconds, parameters, the normalized outputs (the cascade's input)."""
    from nemo_pc.pipelines.inference import load_asr_model
    from nemo_pc.pipelines.onnx_rnnt import OnnxRNNTPCRunner, export_for_onnxruntime

    model = load_asr_model(path)
    feats, seconds = features(model, manifest)
    runner = OnnxRNNTPCRunner(export_for_onnxruntime(model, folder / "all"), threads=threads)
    single = runner
    if dual:
        head = export_for_onnxruntime(model, folder / "punctuated_head", modes=[1])
        single = OnnxRNNTPCRunner(head, threads=threads)

    def one(mode: int, on) -> Callable[[int], list]:
        return lambda i: on.transcribe_features(*feats[i], [mode])

    jobs = {
        (name, "normalized"): one(0, runner),
        (name, "punctuated"): one(1, single),
        (name, "both"): lambda i: runner.transcribe_all(*feats[i]),
    }
    if dual:
        jobs[(name, "punctuated_all_heads")] = one(1, runner)
    normalized = [runner.transcribe_features(f, n, [0])[0] for f, n in feats]
    facts = {"audio_seconds": seconds, "parameters": sum(p.numel() for p in model.parameters())}
    return jobs, facts | {"normalized": normalized}


def rtf_section(demo_dir: Path, paths: dict, args, work: Path, model_path: Callable[[Path, str], Path]) -> dict:
    """RTF of ``rnnt_conditioned``, ``rnnt_dual`` and the cascade (the conditioned model's normalized pass plus
    the text formatter) on the same test audio, in interleaved rounds."""
    import torch

    from nemo_pc.parts.manifest import read_manifest, write_manifest

    test = demo_dir / "manifests" / "test.json"
    if not test.is_file():
        return {"not_measured": f"no test manifest {test}"}
    torch.set_num_threads(args.threads)
    entries = read_manifest(test)
    subset = write_manifest(work / "rtf_test.json", entries[: args.rtf_utterances] if args.rtf_utterances else entries)
    section: dict = {"utterances": len(read_manifest(subset)), "threads": args.threads, "rounds": args.repeats}
    jobs, parameters, audio_seconds, normalized, missing = {}, {}, None, None, {}
    for name, dual in (("rnnt_conditioned", False), ("rnnt_dual", True)):
        path = model_path(demo_dir, name)
        if not path.is_file():
            missing[name] = {"not_measured": f"no {path}"}
            continue
        model_jobs, facts = rnnt_jobs(name, path, subset, work / f"onnx_{name}", dual, args.threads)
        jobs |= model_jobs
        audio_seconds, parameters[name] = facts["audio_seconds"], facts["parameters"]
        normalized = facts["normalized"] if name == "rnnt_conditioned" else normalized
    formatter_job = _formatter_job(normalized, paths)
    if isinstance(formatter_job, str):
        missing["cascade"] = {"not_measured": formatter_job}
    else:
        jobs[("cascade", "formatter")] = formatter_job
    items = section["utterances"]
    figures = summarize(timed_rounds(jobs, items, args.repeats), audio_seconds) if jobs else {}
    if ("cascade", "formatter") in figures:
        asr, text = figures[("rnnt_conditioned", "normalized")], figures[("cascade", "formatter")]
        rounds = [a + b for a, b in zip(asr["rounds"], text["rounds"], strict=True)]
        figures[("cascade", "punctuated")] = {
            "rtf": statistics.median(rounds),
            "spread_pct": spread_pct(rounds),
            "rounds": rounds,
        }
    section["audio_seconds"] = audio_seconds
    section["systems"] = dict(missing)
    for (system, kind), figure in figures.items():
        section["systems"].setdefault(system, {})[kind] = figure
    for name, count in parameters.items():
        section["systems"][name]["parameters"] = count
    section["ratios"] = rtf_ratios(figures)
    return section


def _formatter_job(normalized: list[str] | None, paths: dict) -> Callable[[int], object] | str:
    """The text formatter on one utterance's normalized output (batch 1, as the ASR runs)."""
    if normalized is None:
        return "no rnnt_conditioned model"
    if not (paths["tagger"] and paths["rewriter"]):
        return "no tagger.nemo / rewriter.nemo"
    from nemo_pc.formatter.pipeline import TextFormatter

    formatter = TextFormatter.from_files(paths["tagger"], paths["rewriter"], span_itn="neural", detect_spans=False)
    formatter.format(normalized[:2])  # first-call setup is not part of the timing
    return lambda i: formatter.format([normalized[i]])


def _cell(figure: dict | None) -> str:
    if not figure:
        return "-"
    return f"{figure['rtf']:.4f} (±{figure['spread_pct'] / 2:.1f}%)"


def rtf_markdown(section: dict) -> list[str]:
    """Section a of ``run_all.md`` and of a ``run_all_rtf`` block: every figure with its spread, every ratio."""
    if "not_measured" in section:
        return [f"Not measured: {section['not_measured']}."]
    lines = [
        f"{section['utterances']} test utterances ({num(section.get('audio_seconds'), 1)} s of audio), batch 1, "
        f"{section['threads']} thread(s), median of {section['rounds']} interleaved rounds (± half the range of "
        "the rounds, relative).",
        "",
        "| system | normalized | punctuated | both | punctuated, all heads |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in section["systems"].items():
        if "not_measured" in row:
            lines.append(f"| `{name}` | not measured: {row['not_measured']} | | | |")
            continue
        kinds = ("formatter", "punctuated") if name == "cascade" else (*MODES, BOTH)
        cells = [_cell(row.get(kind)) for kind in kinds]
        if name == "cascade":
            cells = [f"formatter alone {cells[0]}", cells[1], "-"]
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {_cell(row.get('punctuated_all_heads'))} |")
    if "formatter" in section["systems"].get("cascade", {}):
        lines += ["", "`cascade` punctuated = the `rnnt_conditioned` normalized pass + the text formatter, per round."]
    lines += ["", "| ratio (per round) | median | min | max |", "|---|---:|---:|---:|"]
    for name, value in section["ratios"].items():
        if value is None:
            lines.append(f"| {name} | - | - | - |")
        else:
            lines.append(f"| {name} | {value['median']:.3f} | {value['min']:.3f} | {value['max']:.3f} |")
    if "agreement" in section:
        check = section["agreement"]
        verdict = "agree" if check["agree"] else "do not agree"
        worst = check["max_abs_pct"]
        lines += [
            "",
            f"Against the previous run (`{check['previous']}`): the largest difference of a figure or "
            f"ratio is {worst:.1f}%; the runs {verdict} within {AGREEMENT_PCT:.0f}%.",
        ]
    return lines
