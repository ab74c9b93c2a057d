"""What the demo's LM decoding costs at each beam size, and what the beam buys.

``make demo`` decodes each LM system (``lm_systems``: the RNN-Ts and ``ctc_inter``) on ``test`` with beam search and
its token n-gram LMs at ``lm_beam_size`` (8), after tuning each mode's weight on 80 ``dev`` utterances; on 2 cores
those decodes are one of the run's largest steps. This decodes a finished demo folder's LM systems on ``test`` at each
``--beams`` size with the LMs and weights the run chose (``lm/<system>.json``), one after another in one process,
times each decode and scores it as the demo scores ``<system>_lm`` (N-output WER, WER-PC, PER, punctuation F1),
beside the system's greedy figures from the folder's ``eval/``. The row at the run's own beam is checked against the
run's ``predictions/<system>_lm.json`` (the share of utterances whose two outputs are the same).

The weights were tuned at the run's beam, so a run at another beam could tune other weights; the tuning decodes
(``lm_alphas`` x modes x 80 ``dev`` utterances) scale with the beam as the test decode does, so the LM step's minutes
at another beam are estimated as the run's recorded minutes times the ratio of the test decodes' seconds.

    .venv/bin/python benchmarks/speed_lm_decoding.py --demo-dir demo_out --beams 2,4,8 \
        --json benchmarks/results/speed_lm_decoding.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from suite import num, pct, write_results

from nemo_pc.parts.manifest import iter_manifest
from nemo_pc.parts.modes import MODES


def lm_choices(demo_dir: Path, system: str) -> tuple[int, dict]:
    """The run's beam size and ``{mode: LMChoice}`` of ``system`` from ``lm/<system>.json``; an LM path that does not
    exist as written (the run's working folder differed) is looked up in the folder's ``lm/``."""
    from nemo_pc.pipelines.lm import LMChoice

    path = demo_dir / "lm" / f"{system}.json"
    try:
        summary = json.loads(path.read_text())
        modes, run_beam = summary["modes"], int(summary["beam_size"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path}: not an LM summary of the demo (beam_size, modes): {error}") from None
    choices = {}
    for mode, choice in modes.items():
        lm = choice["lm"]
        if lm is not None and not Path(lm).is_file():
            lm = str(demo_dir / "lm" / Path(lm).name)
        choices[mode] = LMChoice(lm, float(choice["alpha"]), choice.get("dev_grid", {}))
    return run_beam, choices


def figures(report: dict) -> dict:
    metrics = report["metrics"]
    return {
        "wer_normalized": report["normalized_output"]["wer"],
        "wer_pc": metrics["wer_pc"],
        "per": metrics["per"],
        "punct_f1": metrics["punct_micro_f1"],
    }


def same_share(a: Path, b: Path) -> float:
    """The share of lines whose written and normalized outputs are the same in two prediction manifests."""
    rows_a = [entry for _, entry in iter_manifest(a)]
    rows_b = [entry for _, entry in iter_manifest(b)]
    if len(rows_a) != len(rows_b):
        return 0.0
    same = sum(
        x["pred_text"] == y["pred_text"] and x.get("pred_text_normalized") == y.get("pred_text_normalized")
        for x, y in zip(rows_a, rows_b, strict=True)
    )
    return same / len(rows_a) if rows_a else 0.0


def write_predictions(demo_dir: Path, outputs: dict[str, list[str]], target: Path) -> Path:
    """The outputs as a prediction manifest of the folder's test split, written as the demo writes ``<system>_lm``
    (a model without its own normalized LM decoding gets its written output normalized)."""
    from nemo_pc.pipelines.demo.config import DemoConfig
    from nemo_pc.pipelines.demo.pipeline import Demo

    demo = Demo(DemoConfig(out_dir=str(demo_dir)), log=lambda _: None)
    return demo._write_predictions(target, outputs["punctuated"], outputs.get("normalized"))


def measure_system(demo_dir: Path, system: str, beams: list[int], batch_size: int, work: Path) -> dict:
    from nemo_pc.pipelines.demo.lm_steps import lm_modes
    from nemo_pc.pipelines.demo.scoring import score_predictions
    from nemo_pc.pipelines.inference import load_asr_model
    from nemo_pc.pipelines.lm import transcribe_with_lms

    run_beam, choices = lm_choices(demo_dir, system)
    model = load_asr_model(demo_dir / "models" / f"{system}.nemo")
    modes = lm_modes(model)
    test = demo_dir / "manifests" / "test.json"
    run_predictions = demo_dir / "predictions" / f"{system}_lm.json"
    rows = []
    for beam in beams:
        start = time.perf_counter()
        outputs = transcribe_with_lms(model, test, choices, beam_size=beam, batch_size=batch_size, modes=modes)
        seconds = round(time.perf_counter() - start, 1)
        predictions = write_predictions(demo_dir, outputs, work / f"{system}_beam{beam}.json")
        row = {"beam": beam, "seconds": seconds, **figures(score_predictions(predictions))}
        if beam == run_beam and run_predictions.is_file():
            row["same_as_run"] = round(same_share(predictions, run_predictions), 4)
        rows.append(row)
        print(f"{system} beam {beam}: {seconds:.1f} s, N-WER {100 * row['wer_normalized']:.1f}%", file=sys.stderr)
    greedy_eval = demo_dir / "eval" / f"{system}.json"
    greedy = figures(json.loads(greedy_eval.read_text())) if greedy_eval.is_file() else None
    return {
        "system": system,
        "modes": list(modes),
        "run_beam": run_beam,
        "alphas": {mode: choice.alpha for mode, choice in choices.items()},
        "greedy": greedy,
        "rows": rows,
    }


def run_minutes(demo_dir: Path, system: str) -> float | None:
    """The run's recorded seconds of ``transcribe <system> with LM`` (weights tuned, then test), last invocation."""
    timings = demo_dir / "timings.json"
    if not timings.is_file():
        return None
    runs = json.loads(timings.read_text()).get("runs") or []
    seconds = runs[-1].get("seconds", {}).get(f"transcribe {system} with LM") if runs else None
    return None if seconds is None else round(seconds / 60, 2)


def add_estimates(result: dict, demo_dir: Path) -> None:
    """Each row's estimated LM step minutes: the run's recorded minutes times the test decodes' ratio."""
    recorded = run_minutes(demo_dir, result["system"])
    result["run_step_minutes"] = recorded
    base = next((row for row in result["rows"] if row["beam"] == result["run_beam"]), None)
    for row in result["rows"]:
        row["step_minutes_estimate"] = (
            round(recorded * row["seconds"] / base["seconds"], 2) if recorded and base and base["seconds"] else None
        )


def markdown(results: dict) -> str:
    lines = [
        f"LM decoding of `{results['demo_dir']}`'s LM systems on test ({results['test_utterances']} utterances), "
        f"the run's LMs and weights, batches of {results['batch_size']}, one process on {results['threads']} "
        "threads; step minutes: the run's recorded LM step times the test decodes' ratio (an estimate):",
        "",
        "| system | beam | test decode (s) | LM step (min) | N-WER | WER-PC | PER | punct F1 | same as the run |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results["systems"]:
        greedy = result["greedy"]
        if greedy:
            lines.append(
                f"| `{result['system']}` | greedy | | | {pct(greedy['wer_normalized'])} | {pct(greedy['wer_pc'])} "
                f"| {pct(greedy['per'])} | {pct(greedy['punct_f1'])} | |"
            )
        for row in result["rows"]:
            mark = "**" if row["beam"] == result["run_beam"] else ""
            same = row.get("same_as_run")
            lines.append(
                f"| `{result['system']}` | {mark}{row['beam']}{mark} | {num(row['seconds'], 1)} "
                f"| {num(row.get('step_minutes_estimate'), 1)} | {pct(row['wer_normalized'])} | {pct(row['wer_pc'])} "
                f"| {pct(row['per'])} | {pct(row['punct_f1'])} | {'' if same is None else pct(same)} |"
            )
    total = {}
    for result in results["systems"]:
        for row in result["rows"]:
            if row.get("step_minutes_estimate") is not None:
                total[row["beam"]] = total.get(row["beam"], 0.0) + row["step_minutes_estimate"]
    if total:
        sums = ", ".join(f"beam {beam}: {minutes:.1f}" for beam, minutes in sorted(total.items()))
        lines += ["", f"The LM decodes' minutes of a run, summed over the systems (estimated): {sums}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", type=Path, required=True)
    parser.add_argument("--systems", default=None, help="comma-separated; default: every system with lm/<name>.json")
    parser.add_argument("--beams", default="2,4,8")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the demo's batch size")
    parser.add_argument("--work-dir", type=Path, default=None, help="prediction manifests (default: a temp folder)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        beams = sorted({int(beam) for beam in args.beams.split(",") if beam.strip()})
    except ValueError:
        beams = []
    if not beams or min(beams) < 1:
        print(f"error: --beams must be beam sizes of 1 or more, got {args.beams!r}", file=sys.stderr)
        sys.exit(2)
    test = args.demo_dir / "manifests" / "test.json"
    if not test.is_file():
        print(f"error: {test}: no such manifest (not a finished demo folder?)", file=sys.stderr)
        sys.exit(2)
    if args.systems:
        systems = [name.strip() for name in args.systems.split(",") if name.strip()]
    else:
        systems = sorted(path.stem for path in (args.demo_dir / "lm").glob("*.json") if (
            args.demo_dir / "models" / f"{path.stem}.nemo").is_file())  # fmt: skip
    for system in systems:
        for needed in (args.demo_dir / "lm" / f"{system}.json", args.demo_dir / "models" / f"{system}.nemo"):
            if not needed.is_file():
                print(f"error: {needed}: no such file (not an LM system of this folder?)", file=sys.stderr)
                sys.exit(2)
    if not systems:
        print(f"error: {args.demo_dir / 'lm'}: no LM system's lm/<system>.json", file=sys.stderr)
        sys.exit(2)
    for system in systems:
        try:
            lm_choices(args.demo_dir, system)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(2)
    import torch

    from nemo_pc.pipelines.demo.config import DemoConfig

    batch_size = args.batch_size or DemoConfig.batch_size
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work_dir or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        measured = []
        for system in systems:
            result = measure_system(args.demo_dir, system, beams, batch_size, work)
            add_estimates(result, args.demo_dir)
            measured.append(result)
    results = {
        "demo_dir": str(args.demo_dir),
        "test_utterances": sum(1 for _ in iter_manifest(test)),
        "batch_size": batch_size,
        "threads": torch.get_num_threads(),
        "beams": beams,
        "modes": list(MODES),
        "systems": measured,
    }
    print(markdown(results))
    if args.json:
        write_results(args.json, results)


if __name__ == "__main__":
    main()
