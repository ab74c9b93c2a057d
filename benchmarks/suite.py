"""What every script of ``benchmarks/`` shares: its timer, its results writer and paths, and its number formats.

* Timing: :func:`time_runs` runs a callable after warm-up runs and keeps the seconds of each timed run
  (:class:`Timing`: the middle run, the best, the spread); :class:`Stopwatch` times one stage (wall and CPU
  seconds); :class:`CallTimer` records the seconds of every call of a wrapped callable.
* Results: :func:`write_results` writes a results JSON atomically with its ``provenance`` (the command line, the
  checkout's revision and the UTC date); ``benchmarks/render_results.py`` prints the provenance under each block it
  renders. :func:`results_path` is a script's default results file, ``benchmarks/results/<script name>.json``.
* Children: :func:`row_from_child` runs one measurement in a forked process of its own and returns the row it
  puts on its queue, so that every variant of a speed benchmark sees the same fresh process.
* Formats: :func:`num`, :func:`pct` and :func:`p_value`, the cells of every rendered table.

The scripts that train or score as the demo does import the demo application from the package
(:mod:`nemo_pc.pipelines.demo`).

A script of this folder imports it as ``suite``: ``python benchmarks/<script>.py`` puts the script's folder first
on ``sys.path``, and pytest does the same (``pythonpath`` in ``pyproject.toml``).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "benchmarks" / "results"


# timing


def spread_pct(values: Sequence[float]) -> float:
    """(max - min) / median, in percent (NaN for a zero median)."""
    middle = statistics.median(values)
    return 100.0 * (max(values) - min(values)) / middle if middle else math.nan


@dataclass(frozen=True)
class Timing:
    """Seconds of each timed run of one callable."""

    runs: tuple[float, ...]

    @property
    def median(self) -> float:
        """The middle run (the later of the two middle runs for an even count): a time that was measured."""
        return sorted(self.runs)[len(self.runs) // 2]

    @property
    def best(self) -> float:
        """The fastest run: the time least disturbed by other work on the machine."""
        return min(self.runs)

    @property
    def spread_pct(self) -> float:
        """(slowest - fastest) / median of the runs, in percent."""
        return spread_pct(self.runs)


def time_runs(run: Callable[[], object], repeats: int, warmup: int = 1, before: Callable[[], object] | None = None):
    """Calls ``run`` ``warmup`` times untimed, then ``repeats`` times timed (at least once).

    ``before`` runs ahead of every call, warm-up included, outside the timing (e.g. clearing gradients).

    Returns:
        ``(timing, last)``: the :class:`Timing` of the timed runs and what the last call returned.
    """
    runs, last = [], None
    for k in range(warmup + max(repeats, 1)):
        if before is not None:
            before()
        start = time.perf_counter()
        last = run()
        if k >= warmup:
            runs.append(time.perf_counter() - start)
    return Timing(tuple(runs)), last


class Stopwatch:
    """Wall and CPU seconds of a ``with`` block: ``with Stopwatch() as watch: ...`` then ``watch.seconds``.

    Read inside the block (or after :meth:`start` without a block), ``seconds`` and ``cpu_seconds`` are the time so
    far."""

    def start(self) -> Stopwatch:
        self._wall, self._cpu, self._end = time.perf_counter(), time.process_time(), None
        return self

    def __enter__(self) -> Stopwatch:
        return self.start()

    def __exit__(self, *exc) -> None:
        self._end = (time.perf_counter(), time.process_time())

    @property
    def seconds(self) -> float:
        return (self._end[0] if self._end else time.perf_counter()) - self._wall

    @property
    def cpu_seconds(self) -> float:
        return (self._end[1] if self._end else time.process_time()) - self._cpu


class CallTimer:
    """A callable that calls ``function`` and appends the seconds of each call to ``seconds``."""

    def __init__(self, function: Callable) -> None:
        self.function = function
        self.seconds: list[float] = []

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        result = self.function(*args, **kwargs)
        self.seconds.append(time.perf_counter() - start)
        return result


# results


def results_path(script: str | Path, suffix: str = ".json") -> Path:
    """``benchmarks/results/<script name><suffix>``: where a script writes its results by default (relative to the
    working directory when it is the checkout, as the commands of the docs run)."""
    path = RESULTS_DIR / f"{Path(script).stem}{suffix}"
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def shown_path(path: Path | str | None) -> str | None:
    """A path as a results file records it: relative to the working directory when it lies under it (the command
    names ``demo_out``, the record says ``demo_out``, not the machine's absolute folder), else as given."""
    if path is None:
        return None
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def revision() -> str | None:
    """The checkout's commit, with ``+dirty`` when tracked files differ from it; ``$NEMO_PC_REVISION`` when set, else
    ``None`` for a tree exported without its git folder (:func:`nemo_pc.parts.provenance.revision`)."""
    from nemo_pc.parts.provenance import revision as checkout_revision

    return checkout_revision(REPO)


def provenance(argv: Sequence[str] | None = None) -> dict:
    """``{"command", "revision", "date"}`` of this process (``argv``: the script and its arguments)."""
    argv = list(sys.argv if argv is None else argv)
    return {
        "command": " ".join(["python", *argv]),
        "revision": revision(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }


def write_results(path: str | Path, results: dict, argv: Sequence[str] | None = None) -> Path:
    """Writes ``results`` with its ``provenance`` as indented JSON to ``path`` (atomic; folders created)."""
    from nemo_pc.parts.manifest import write_text_atomic  # imported here: timing children need no more than time

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {**results, "provenance": provenance(argv)}
    write_text_atomic(path, json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")
    return path


def weights_digest(nemo_path: str | Path) -> str:
    """The SHA-256 of the ``model_weights.ckpt`` in a ``.nemo`` archive: two trainings that end in the same weights
    have the same digest (the archive's other members, such as its config, may differ).

    Raises:
        SystemExit: ``nemo_path`` holds no ``model_weights.ckpt``.
    """
    import hashlib
    import tarfile

    with tarfile.open(nemo_path) as archive:
        for member in archive.getmembers():
            if Path(member.name).name == "model_weights.ckpt":
                return hashlib.sha256(archive.extractfile(member).read()).hexdigest()
    raise SystemExit(f"{nemo_path}: no model_weights.ckpt in the archive")


def row_from_child(target: Callable, args: Sequence, label: str) -> dict:
    """Runs ``target(*args, queue)`` in a forked process and returns what it puts on ``queue`` (one row).

    Raises:
        SystemExit: the child ended without a row (its traceback is on stderr above); ``label`` names the run.
    """
    import multiprocessing
    from queue import Empty

    context = multiprocessing.get_context("fork")  # the parent imports no torch; loader workers fork as usual
    queue = context.Queue()
    process = context.Process(target=target, args=(*args, queue))
    process.start()
    row = None
    while row is None and (process.is_alive() or not queue.empty()):
        try:
            row = queue.get(timeout=5)
        except Empty:
            pass
    process.join()
    if row is None:
        raise SystemExit(f"{label} failed (exit code {process.exitcode}); see above")
    return row


def variant_rounds(
    script: str | Path,
    variants: Sequence[str],
    work: Path,
    arguments: Sequence[str],
    jobs: int,
    threads: int,
    resume: bool = False,
) -> Iterator[tuple[int, dict]]:
    """Runs ``python SCRIPT --one VARIANT *arguments`` for each variant, ``jobs`` processes at a time with
    ``OMP_NUM_THREADS=threads``, and yields ``(round, row)`` from each child's ``work/VARIANT/row.json`` in the
    variants' order. With ``resume``, a variant whose row file exists is not run again.

    Raises:
        SystemExit: a child failed (its output is on stderr above).
    """
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    for start in range(0, len(variants), jobs):
        processes = []
        for variant in variants[start : start + jobs]:
            if resume and (work / variant / "row.json").is_file():
                processes.append((variant, None))
                continue
            command = [sys.executable, str(script), "--one", variant, *arguments]
            # the children's output goes to stderr: a pipe that nobody reads would stall them once full
            processes.append((variant, subprocess.Popen(command, env=env, stdout=sys.stderr)))
        for variant, process in processes:
            if process is not None and process.wait() != 0:
                raise SystemExit(f"variant {variant} failed (exit code {process.returncode}); see above")
            yield start // jobs, json.loads((work / variant / "row.json").read_text())


# formats


def num(value, digits: int = 4) -> str:
    """``value`` with ``digits`` decimals; ``-`` for None."""
    return "-" if value is None else f"{value:.{digits}f}"


def pct(value, digits: int = 1, unit: str = "%") -> str:
    """A rate as a percentage with ``digits`` decimals (``unit=""``: the number alone); ``-`` for None."""
    return "-" if value is None else f"{100.0 * value:.{digits}f}{unit}"


def p_value(value) -> str:
    """A p-value with three decimals, ``<0.001`` below that; ``-`` for None."""
    if value is None:
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"
