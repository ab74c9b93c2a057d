"""The demo's RNN-T training under each memory allocator: glibc's, tcmalloc and jemalloc, side by side in one run.

``benchmarks/speed_rnnt_after_validation.py`` found that what a validation leaves in the process's heap slows the
steps after it. This runs that benchmark (the demo's ``rnnt_conditioned`` recipe for ``--steps`` steps, validating
every ``--val-every`` on the demo's validation sets, then the same without validation) once per allocator and round,
each in its own process with the allocator's library in ``LD_PRELOAD`` (none for glibc's); the order of the
allocators turns by one each round, so that a machine that slows down over the run does not favour one of them.
Each child records the allocator it found mapped (``nemo_pc.parts.provenance.malloc_library``), so a library that
failed to load cannot pass for another.

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


def summary(runs: list[dict], allocators: list[str]) -> list[dict]:
    """Per allocator: the mean over rounds of each measure, and its ratio to the first allocator's."""
    keys = ("fit_seconds", "step_seconds_validating", "validation_seconds", "step_seconds_no_validation")
    means = {}
    for allocator in allocators:
        mine = [run for run in runs if run["allocator"] == allocator]
        means[allocator] = {key: sum(run[key] for run in mine) / len(mine) for key in keys}
    base = means[allocators[0]]
    return [
        {
            "allocator": allocator,
            **{key: round(value, 1) for key, value in means[allocator].items()},
            "fit_speedup": round(base["fit_seconds"] / means[allocator]["fit_seconds"], 3),
            "steps_speedup_no_validation": round(
                base["step_seconds_no_validation"] / means[allocator]["step_seconds_no_validation"], 3
            ),
        }
        for allocator in allocators
    ]


def markdown(results: dict) -> str:
    """The means of a results file as a table, the base allocator first."""
    lines = [
        f"{results['rounds']} round(s) of {results['steps']} steps of the demo's `rnnt_conditioned` recipe, "
        f"validating every {results['val_every']} (`fit s`: the whole training, validations included; `step s`: "
        "the steps' own time), and the same steps without validation; means over the rounds, each run in its own "
        "process:",
        "",
        "| allocator | fit s | step s | validation s | step s, no validation | fit speedup | steps speedup |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["summary"]:
        lines.append(
            f"| {row['allocator']} | {row['fit_seconds']:.1f} | {row['step_seconds_validating']:.1f} | "
            f"{row['validation_seconds']:.1f} | {row['step_seconds_no_validation']:.1f} | {row['fit_speedup']:.2f}x | "
            f"{row['steps_speedup_no_validation']:.2f}x |"
        )
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
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if min(args.steps, args.val_every, args.rounds) < 1:
        parser.error("--steps, --val-every and --rounds must be 1 or more")
    if not Path(args.demo_dir, "config.json").is_file():
        parser.error(f"{args.demo_dir}: not a demo folder (no config.json; run examples/demo_pc.py first)")
    allocators = [name.strip() for name in args.allocators.split(",") if name.strip()]
    libraries = {allocator: library_path(allocator) for allocator in allocators}
    runs = []
    with tempfile.TemporaryDirectory(prefix="speed_allocator_") as work:
        for round_index in range(args.rounds):
            for allocator in rotated(allocators, round_index):
                validating, plain = _child(allocator, libraries[allocator], args, Path(work))
                run = {
                    "round": round_index,
                    "allocator": allocator,
                    "library": libraries[allocator],
                    "fit_seconds": validating["seconds"],
                    "step_seconds_validating": validating["step_seconds"],
                    "validation_seconds": validating["validation_seconds"],
                    "step_seconds_no_validation": plain["step_seconds"],
                    "weights_sha256": validating.get("weights_sha256"),
                    "weights_sha256_no_validation": plain.get("weights_sha256"),
                }
                runs.append(run)
                print(json.dumps(run), file=sys.stderr, flush=True)
    results = {"steps": args.steps, "val_every": args.val_every, "rounds": args.rounds, "runs": runs}
    results["summary"] = summary(runs, allocators)
    digests = {run[key] for run in runs for key in ("weights_sha256", "weights_sha256_no_validation")}
    results["same_weights"] = len(digests) == 1
    print("\n" + markdown(results))
    if args.json:
        write_results(args.json, results)


if __name__ == "__main__":
    main()
