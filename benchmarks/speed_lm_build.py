"""The demo's token LMs built one after another and side by side: wall seconds of each, their ratio, and whether the
files are the same.

Reads a finished demo folder's LM text (``lm/text.json``) and tokenizers, and builds the LMs its ``lm/`` holds (or
those named by ``--lms``, e.g. ``punctuated_order6_bpe_v128``) into two fresh folders under ``--work``: first with
one process, then with ``--workers`` (:func:`nemo_pc.pipelines.lm_build.build_lms`), in one run on the same cores.

    .venv/bin/python benchmarks/speed_lm_build.py --demo-dir demo_out --json benchmarks/results/speed_lm_build.json
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tarfile
from pathlib import Path

from suite import Stopwatch, num, results_path, write_results

from nemo_pc.pipelines.demo.lm_steps import LM_FIELDS
from nemo_pc.pipelines.lm_build import LMJob, build_lms


def demo_jobs(demo_dir: Path, folder: Path, names: list[str] | None) -> list[LMJob]:
    """One job per LM of the demo folder (``<mode>_order<n>_<tokenizer>.nemo``), written into ``folder``."""
    built = sorted(path.stem for path in (demo_dir / "lm").glob("*_order*_*.nemo"))
    names = names or built
    jobs = []
    for name in names:
        mode, order, tokenizer = name.split("_", 2)
        if mode not in LM_FIELDS or not order.startswith("order"):
            sys.exit(f"speed_lm_build: error: {name!r} is not an LM name like punctuated_order6_bpe_v128")
        tokenizer_dir = demo_dir / "tokenizers" / f"tokenizer_spe_{tokenizer}"
        if not tokenizer_dir.is_dir():
            sys.exit(f"speed_lm_build: error: {tokenizer_dir} does not exist (the tokenizer of {name})")
        text = demo_dir / "lm" / "text.json"
        jobs.append(LMJob(text, tokenizer_dir, folder / f"{name}.nemo", int(order[5:]), LM_FIELDS[mode]))
    if not jobs:
        sys.exit(f"speed_lm_build: error: {demo_dir / 'lm'} has no LM to build (run the demo first)")
    return jobs


def members(path: Path) -> dict[str, bytes]:
    """A ``.nemo``'s files by name (the archive's own dates left aside)."""
    with tarfile.open(path) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", type=Path, default=Path("demo_out"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/speed_lm_build"))
    parser.add_argument("--lms", default="", help="comma-separated LM names (default: every LM of the demo folder)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, default=results_path(__file__))
    args = parser.parse_args(argv)
    if not (args.demo_dir / "lm" / "text.json").is_file():
        sys.exit(f"speed_lm_build: error: {args.demo_dir / 'lm' / 'text.json'} does not exist (run the demo first)")
    names = [name for name in args.lms.split(",") if name] or None
    runs = {}
    for label, workers in (("one process", 1), (f"{args.workers} processes", args.workers)):
        folder = args.work / f"workers{workers}"
        shutil.rmtree(folder, ignore_errors=True)
        jobs = demo_jobs(args.demo_dir, folder, names)
        with Stopwatch() as watch:
            build_lms(jobs, workers)
        runs[label] = {
            "workers": workers,
            "seconds": round(watch.seconds, 1),
            "lms": [job.target.name for job in jobs],
        }
        print(f"{label}: {num(watch.seconds)} s", file=sys.stderr)
    one, many = (args.work / "workers1"), (args.work / f"workers{args.workers}")
    same = all(members(a) == members(many / a.name) for a in sorted(one.glob("*.nemo")))
    seconds = [run["seconds"] for run in runs.values()]
    results = {
        "demo_dir": str(args.demo_dir),
        "runs": runs,
        "speedup": round(seconds[0] / seconds[1], 2),
        "same_files": same,
    }
    write_results(args.json, results)
    print(f"speedup {results['speedup']}x, same files: {same}")


if __name__ == "__main__":
    main()
