"""The demo's RNN-T training under each memory allocator: glibc's, tcmalloc and jemalloc, side by side in one run.

``benchmarks/speed_rnnt_after_validation.py`` found that what a validation leaves in the process's heap slows the
steps after it. This runs that benchmark (the demo's ``rnnt_conditioned`` recipe for ``--steps`` steps, validating
every ``--val-every`` on the demo's validation sets, then the same without validation) once per allocator and round,
each in its own process with the allocator's library in ``LD_PRELOAD`` (none for glibc's); the order of the
allocators turns by one each round, so that a machine that slows down over the run does not favour one of them.
Each child records the allocator it found mapped (``nemo_pc.parts.provenance.malloc_library``), so a library that
failed to load cannot pass for another, and the SHA-256 of the weights it trained.

``--synth-hours H`` also times the demo's corpus step in the same rounds: ``nemo-pc synth`` of an ``H``-hour KJV
corpus (``--tn none``, 2 jobs) into a new folder under each allocator, whose TTS programs (espeak-ng, flite,
festival, sox) inherit ``LD_PRELOAD`` as they do in the demo.

    apt-get install libtcmalloc-minimal4 libjemalloc2
    .venv/bin/python benchmarks/speed_allocator.py --demo-dir demo_out --steps 200 --val-every 100 --rounds 2 \\
        --json benchmarks/results/speed_allocator.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from suite import write_results

LIBRARIES = {"glibc": None, "tcmalloc": "libtcmalloc_minimal.so.4", "jemalloc": "libjemalloc.so.2"}
"""Each allocator and the file name of its Debian library (``libtcmalloc-minimal4``, ``libjemalloc2``)."""
LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")


def library_path(allocator: str, dirs: tuple[str, ...] = LIBRARY_DIRS) -> str | None:
    """The library to preload for ``allocator`` (``None`` for glibc's).

    Raises:
        SystemExit: an unknown allocator, or one whose library is in none of ``dirs``.
    """
    if allocator not in LIBRARIES:
        raise SystemExit(f"--allocators: unknown allocator {allocator!r} (known: {', '.join(LIBRARIES)})")
    name = LIBRARIES[allocator]
    if name is None:
        return None
    for folder in dirs:
        if Path(folder, name).is_file():
            return str(Path(folder, name))
    raise SystemExit(f"--allocators: {allocator}: {name} is in none of {', '.join(dirs)} (install it with apt)")


def rotated(items: list[str], round_index: int) -> list[str]:
    """``items`` turned left by ``round_index`` places."""
    shift = round_index % len(items)
    return items[shift:] + items[:shift]


def _child(allocator: str, library: str | None, args: argparse.Namespace, work: Path) -> list[dict]:
    out = work / f"{allocator}.json"
    env = {key: value for key, value in os.environ.items() if key != "LD_PRELOAD"}
    if library:
        env["LD_PRELOAD"] = library
    command = [sys.executable, str(Path(__file__).with_name("speed_rnnt_after_validation.py"))]
    command += ["--demo-dir", args.demo_dir, "--steps", str(args.steps), "--val-every", str(args.val_every)]
    command += ["--window", str(args.steps), "--json", str(out)]
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"the run under {allocator} failed (exit code {done.returncode}); see above")
    rows = json.loads(out.read_text())["rows"]
    found = {row.get("malloc") for row in rows}
    if found != {allocator}:
        raise SystemExit(f"the run under {allocator} found {sorted(map(str, found))} mapped instead")
    return rows


def _synth(allocator: str, library: str | None, hours: float, work: Path, round_index: int) -> float:
    """Seconds of ``nemo-pc synth`` of an ``hours``-hour corpus under ``allocator``."""
    import time

    env = {key: value for key, value in os.environ.items() if key != "LD_PRELOAD"}
    if library:
        env["LD_PRELOAD"] = library
    root = work / f"synth_{allocator}_{round_index}"
    command = [str(Path(sys.executable).with_name("nemo-pc")), "synth", str(root), "--hours", str(hours)]
    command += ["--tn", "none", "--num-jobs", "2", "--seen-test-share", "0"]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"nemo-pc synth under {allocator} failed (exit code {done.returncode}): {' '.join(command)}")
    return round(seconds, 1)


MEASURES = ("fit_seconds", "step_seconds_validating", "validation_seconds", "step_seconds_no_validation")
SPEEDUPS = {"fit_speedup": "fit_seconds", "steps_speedup_no_validation": "step_seconds_no_validation"}
SPEEDUPS |= {"synth_speedup": "synth_seconds"}


def summary(runs: list[dict], allocators: list[str]) -> list[dict]:
    """Per allocator: the mean over rounds of each measure every run has, and the base's (the first allocator's)
    time over its own for ``fit_seconds``, ``step_seconds_no_validation`` and ``synth_seconds``."""
    keys = [key for key in (*MEASURES, "synth_seconds") if all(key in run for run in runs)]
    means = {}
    for allocator in allocators:
        mine = [run for run in runs if run["allocator"] == allocator]
        means[allocator] = {key: sum(run[key] for run in mine) / len(mine) for key in keys}
    base = means[allocators[0]]
    rows = []
    for allocator in allocators:
        row = {"allocator": allocator, **{key: round(value, 1) for key, value in means[allocator].items()}}
        for name, key in SPEEDUPS.items():
            if key in base:
                row[name] = round(base[key] / means[allocator][key], 3)
        rows.append(row)
    return rows


def markdown(results: dict) -> str:
    """The means of a results file as tables (the trainings, the corpus), the base allocator first."""
    rows, lines = results["summary"], []
    if rows and "fit_seconds" in rows[0]:
        lines += [
            f"{results['rounds']} round(s) of {results['steps']} steps of the demo's `rnnt_conditioned` recipe, "
            f"validating every {results['val_every']} (`fit s`: the whole training, validations included; `step s`: "
            "the steps' own time), and the same steps without validation; means over the rounds, each run in its "
            "own process:",
            "",
            "| allocator | fit s | step s | validation s | step s, no validation | fit speedup | steps speedup |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for row in rows:
            lines.append(
                f"| {row['allocator']} | {row['fit_seconds']:.1f} | {row['step_seconds_validating']:.1f} | "
                f"{row['validation_seconds']:.1f} | {row['step_seconds_no_validation']:.1f} | "
                f"{row['fit_speedup']:.2f}x | {row['steps_speedup_no_validation']:.2f}x |"
            )
    if rows and "synth_seconds" in rows[0]:
        lines += [""] if lines else []
        lines += [
            f"`nemo-pc synth` of a {results['synth_hours']} h corpus (`--tn none`, 2 jobs), means over "
            f"{results['rounds']} round(s):",
            "",
            "| allocator | synth s | speedup |",
            "|---|---:|---:|",
        ]
        lines += [f"| {row['allocator']} | {row['synth_seconds']:.1f} | {row['synth_speedup']:.2f}x |" for row in rows]
    if "same_weights" in results:
        same = "the same" if results["same_weights"] else "NOT the same"
        lines += ["", f"Every run trained {same} weights (SHA-256 of `model_weights.ckpt`)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", default="demo_out", help="a demo folder with its AED (or rnnt_init) trained")
    parser.add_argument("--allocators", default="glibc,tcmalloc,jemalloc", help="comma-separated, the base first")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--val-every", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--synth-hours", type=float, default=0.0, help="also time nemo-pc synth of this many hours")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if min(args.val_every, args.rounds) < 1 or args.steps < 0 or args.synth_hours < 0:
        parser.error("--val-every and --rounds must be 1 or more, --steps and --synth-hours 0 or more")
    if args.steps == 0 and args.synth_hours == 0:
        parser.error("nothing to time: --steps 0 needs --synth-hours")
    if args.steps and not Path(args.demo_dir, "config.json").is_file():
        parser.error(f"{args.demo_dir}: not a demo folder (no config.json; run examples/demo_pc.py first)")
    allocators = [name.strip() for name in args.allocators.split(",") if name.strip()]
    libraries = {allocator: library_path(allocator) for allocator in allocators}
    runs = []
    with tempfile.TemporaryDirectory(prefix="speed_allocator_") as work:
        for round_index in range(args.rounds):
            for allocator in rotated(allocators, round_index):
                run = {"round": round_index, "allocator": allocator, "library": libraries[allocator]}
                if args.steps:
                    validating, plain = _child(allocator, libraries[allocator], args, Path(work))
                    run |= {
                        "fit_seconds": validating["seconds"],
                        "step_seconds_validating": validating["step_seconds"],
                        "validation_seconds": validating["validation_seconds"],
                        "step_seconds_no_validation": plain["step_seconds"],
                        "weights_sha256": validating.get("weights_sha256"),
                        "weights_sha256_no_validation": plain.get("weights_sha256"),
                    }
                if args.synth_hours > 0:
                    run["synth_seconds"] = _synth(
                        allocator, libraries[allocator], args.synth_hours, Path(work), round_index
                    )
                runs.append(run)
                print(json.dumps(run), file=sys.stderr, flush=True)
    results = {"steps": args.steps, "val_every": args.val_every, "rounds": args.rounds, "runs": runs}
    results |= {"synth_hours": args.synth_hours} if args.synth_hours > 0 else {}
    results["summary"] = summary(runs, allocators)
    if args.steps:
        digests = {run[key] for run in runs for key in ("weights_sha256", "weights_sha256_no_validation")}
        results["same_weights"] = len(digests) == 1
    print("\n" + markdown(results))
    if args.json:
        write_results(args.json, results)


if __name__ == "__main__":
    main()
