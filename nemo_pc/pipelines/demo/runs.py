"""The invocations that made a demo folder: ``timings.json`` is ``{"runs": [record, ...]}``, oldest first.

Each invocation appends one record (:func:`invocation_record`): its command line, the code revision
(:func:`nemo_pc.parts.provenance.revision`), start and finish (UTC, ISO 8601), whether the folder was empty when it
started, the machine and the seconds of each step it ran (a resumed invocation skips the steps on disk). Records
written before revisions were kept hold only ``finished`` and ``seconds``; every reader here takes both kinds.
REPORT.md and the README's demo block say who made the folder with the phrases of this module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from nemo_pc.parts.manifest import write_text_atomic
from nemo_pc.parts.output_lock import LOCK_NAME
from nemo_pc.parts.provenance import command_line, is_dirty, machine, revision, utc_now, without_machine_paths

TIMINGS = "timings.json"


def folder_is_empty(out_dir: str | Path) -> bool:
    """Whether ``out_dir`` holds nothing a demo step wrote (its lock file aside)."""
    out_dir = Path(out_dir)
    return not out_dir.is_dir() or all(path.name == LOCK_NAME for path in out_dir.iterdir())


def invocation_record(
    seconds: Mapping[str, float],
    started: str,
    from_empty_folder: bool,
    argv: Sequence[str] | None = None,
    speed: Mapping[str, float] | None = None,
    finished: bool = True,
) -> dict:
    """The record of this invocation, finished now (``finished=False``: still running, ``finished`` is ``None``);
    ``argv`` defaults to ``sys.argv``. ``speed``: the machine's matrix-product rate at the invocation's ``start`` and
    ``end`` (GFLOP/s, :func:`speed_probe`), kept in the record's ``machine`` so that two runs' minutes can be read with
    the speed of the machine each ran on."""
    found = machine()
    if speed:
        found["matmul_gflops"] = dict(speed)
    return {
        "command": command_line(argv),
        "revision": revision(),
        "started": started,
        "finished": utc_now() if finished else None,
        "from_empty_folder": from_empty_folder,
        "machine": found,
        "seconds": dict(seconds),
    }


def read_runs(out_dir: str | Path) -> list[dict]:
    """The records of ``out_dir/timings.json``, oldest first; none when it is missing or unreadable."""
    path = Path(out_dir) / TIMINGS
    if not path.is_file():
        return []
    try:
        return list(json.loads(path.read_text())["runs"])
    except (ValueError, KeyError, TypeError):
        return []


def append_run(out_dir: str | Path, record: Mapping) -> list[dict]:
    """Appends ``record`` to ``out_dir/timings.json`` (atomic) and returns every record."""
    return write_run(out_dir, record, len(read_runs(out_dir)))


def write_run(out_dir: str | Path, record: Mapping, index: int) -> list[dict]:
    """Writes ``record`` as record ``index`` of ``out_dir/timings.json`` (atomic), after the ``index`` records before
    it: an invocation rewrites its own record as its steps finish. Returns every record."""
    runs = [*read_runs(out_dir)[:index], dict(record)]
    write_text_atomic(Path(out_dir) / TIMINGS, json.dumps({"runs": runs}, indent=2) + "\n")
    return runs


def step_minutes(runs: Sequence[Mapping]) -> float:
    """Minutes of the steps of every invocation."""
    return sum(sum(run["seconds"].values()) for run in runs) / 60.0


def invocations_phrase(runs: Sequence[Mapping]) -> str:
    """``one invocation from an empty folder``, ``one invocation`` (an older record, or a folder that an unrecorded
    invocation had begun) or ``N invocations (resumed)``."""
    if len(runs) != 1:
        return f"{len(runs)} invocations (resumed)"
    return "one invocation from an empty folder" if runs[0].get("from_empty_folder") else "one invocation"


def revision_phrase(run: Mapping) -> str:
    """``revision `<12 hex>` `` (``+dirty`` kept), or ``revision not recorded``."""
    recorded = run.get("revision")
    if not recorded:
        return "revision not recorded"
    commit, _, flag = recorded.partition("+")
    return f"revision `{commit[:12]}{'+' + flag if flag else ''}`"


def machine_phrase(run: Mapping) -> str | None:
    """``N CPUs, M torch threads`` of the invocation's machine (with its memory allocator and its matrix-product rate
    at the start and the end where the record has them); ``None`` for a record without one."""
    found = run.get("machine")
    if not found:
        return None
    phrase = f"{found.get('cpus', '?')} CPUs, {found.get('torch_threads', '?')} torch threads"
    phrase += f", allocator {found['malloc']}" if found.get("malloc") else ""
    return phrase + (f", {speed_phrase(found['matmul_gflops'])}" if found.get("matmul_gflops") else "")


def speed_phrase(speed: Mapping[str, float]) -> str:
    """``fp32 matmul 45.0 GFLOP/s at the start, 41.0 before the formatter, 38.2 at the end`` (any may be
    missing)."""
    places = {"start": "at the start", "formatter": "before the formatter", "end": "at the end"}
    sides = [f"{speed[key]:.1f} {place}" for key, place in places.items() if speed.get(key) is not None]
    return "fp32 matmul GFLOP/s " + ", ".join(sides) if sides else "fp32 matmul rate not recorded"


def _software(found: Mapping) -> str:
    names = (("cpu_model", ""), ("platform", ""), ("python", "Python "), ("torch", "torch "), ("nemo", "NeMo "))
    return ", ".join(f"{label}{found[key]}" for key, label in names if found.get(key))


def _row(number: int, run: Mapping) -> str:
    found = run.get("machine") or {}
    cells = [
        str(number),
        revision_phrase(run).removeprefix("revision "),
        run.get("started", "-"),
        run.get("finished") or ("-" if "finished" not in run else "stopped"),
        f"{sum(run['seconds'].values()) / 60:.1f}",
        f"`{without_machine_paths(run['command'])}`" if run.get("command") else "-",
        "; ".join(filter(None, [machine_phrase(run), _software(found)])) or "-",
    ]
    return "| " + " | ".join(cells) + " |"


def _revision_note(runs: Sequence[Mapping]) -> str:
    dirty = [str(number) for number, run in enumerate(runs, 1) if is_dirty(run.get("revision"))]
    unknown = sum(1 for run in runs if not run.get("revision"))
    if dirty:
        note = f"Invocation {', '.join(dirty)} ran with tracked files changed from its commit (`+dirty`): the commit "
        note += "alone does not make these figures again."
    else:
        note = "No recorded revision had tracked files changed from its commit."
    if unknown:
        note += f" {unknown} invocation(s) recorded no revision (an older record, or a tree without its git folder)."
    return note


def _stopped_note(runs: Sequence[Mapping]) -> str:
    stopped = [str(number) for number, run in enumerate(runs, 1) if "finished" in run and not run["finished"]]
    if not stopped:
        return ""
    return (
        f" Invocation {', '.join(stopped)} stopped before its end (`stopped`): its minutes are those of the steps it "
        "finished."
    )


def made_by_section(runs: Sequence[Mapping], out_dir: str | Path) -> list[str]:
    """REPORT.md's lines on the invocations that made ``out_dir`` (named by its last folder, never its full path)."""
    utc = all(run.get("started") for run in runs)
    dates = "Dates are UTC" if utc else "Dates with `+00:00` are UTC (older records kept the local time)"
    return [
        "## How this folder was made",
        "",
        f"`{Path(out_dir).name}/` was made by {invocations_phrase(runs)}: {step_minutes(runs):.1f} min of steps "
        f"in all. {dates}; the full record is `timings.json`.",
        "",
        "| invocation | revision | started | finished | steps (min) | command | machine |",
        "|---:|---|---|---|---:|---|---|",
        *(_row(number, run) for number, run in enumerate(runs, 1)),
        "",
        _revision_note(runs) + _stopped_note(runs),
    ]
