"""What made a result: the code revision, the command line, the date and the machine.

One home for the record that a demo folder's ``timings.json`` and ``benchmarks/suite.py``'s results files keep, so
that a number can be traced to the code that wrote it. Torch-free at import: :func:`machine` imports torch only when
it is called.
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
"""The folder that holds the ``nemo_pc`` package: a git checkout's root when the package runs from one."""
REVISION_ENV = "NEMO_PC_REVISION"
DIRTY = "+dirty"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def revision(root: str | Path = CHECKOUT) -> str | None:
    """The commit of the checkout at ``root``, with ``+dirty`` when tracked files differ from it.

    ``$NEMO_PC_REVISION`` wins when set: a tree exported without its git folder (``git archive``) names its revision
    that way. ``None`` when ``root`` is no checkout's root: the git folder of an enclosing checkout (or none at all,
    an installed package) is not this tree's.
    """
    if os.environ.get(REVISION_ENV):
        return os.environ[REVISION_ENV]
    root = Path(root)
    try:
        if Path(_git(root, "rev-parse", "--show-toplevel")).resolve() != root.resolve():
            return None
        head = _git(root, "rev-parse", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + (DIRTY if dirty else "")


def is_dirty(recorded: str | None) -> bool:
    """Whether a recorded revision had tracked files that differ from its commit."""
    return bool(recorded and recorded.endswith(DIRTY))


def utc_now() -> str:
    """The date and time now, UTC, ISO 8601 to the second (``2026-11-27T15:46:15+00:00``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def command_line(argv: Sequence[str] | None = None) -> str:
    """``argv`` (default ``sys.argv``) as one shell line, its arguments as given; a script (``*.py``) is prefixed
    with ``python`` and an installed entry point (an absolute ``argv[0]``) is named without its folder."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return ""
    program = Path(argv[0]).name if Path(argv[0]).is_absolute() and not argv[0].endswith(".py") else argv[0]
    words = ["python", program] if program.endswith(".py") else [program]
    return shlex.join([*words, *argv[1:]])


def without_machine_paths(command: str) -> str:
    """``command`` with each absolute path (a word, or the value of ``--key=/path``) cut to its last name, for text
    that other machines read."""

    def short(word: str) -> str:
        key, equals, value = word.rpartition("=") if word.startswith("-") else ("", "", word)
        return f"{key}{equals}{Path(value).name}" if value.startswith("/") else word

    try:
        words = shlex.split(command)
    except ValueError:  # an unclosed quote: the words as written
        words = command.split()
    return shlex.join(short(word) for word in words)


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str | None:
    """The processor's name (``model name`` of ``/proc/cpuinfo`` on Linux, else :func:`platform.processor`); two
    machines of one platform can differ in it, and with it in speed and in float results; ``None`` when unknown."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or None


MALLOC_LIBRARIES = {"libtcmalloc": "tcmalloc", "libjemalloc": "jemalloc", "libmimalloc": "mimalloc"}
"""The memory allocators that :func:`malloc_library` tells apart from glibc's, by the file name of the library."""


def malloc_library(maps: str | Path = "/proc/self/maps") -> str | None:
    """The memory allocator this process runs with: ``tcmalloc``, ``jemalloc`` or ``mimalloc`` when its library is
    mapped (preloaded with ``LD_PRELOAD``, as ``make demo`` does), else ``glibc``; ``None`` where ``maps`` cannot
    be read (not Linux)."""
    try:
        text = Path(maps).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name = line.rsplit("/", 1)[-1] if "/" in line else ""
        for prefix, allocator in MALLOC_LIBRARIES.items():
            if name.startswith(prefix):
                return allocator
    return "glibc"


def machine() -> dict:
    """``{"cpus", "cpu_model", "torch_threads", "platform", "python", "torch", "nemo", "malloc"}`` of this process
    (a version, name or thread count that cannot be had is ``None``)."""
    try:
        import torch

        threads = torch.get_num_threads()
    except ImportError:
        threads = None
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "torch_threads": threads,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": _version("torch"),
        "nemo": _version("nemo_toolkit"),
        "malloc": malloc_library(),
    }


PROBE_SIZE = 512
"""The side of the square fp32 matrices :func:`speed_probe` multiplies."""


def speed_probe(seconds: float = 1.0, size: int = PROBE_SIZE) -> float:
    """This process's matrix-product rate now, in GFLOP/s: ``size`` x ``size`` fp32 products at torch's thread count,
    repeated for about ``seconds`` (at least three). Machines of one platform string can differ in speed by 2x from
    day to day, so a timed run records it at its start and its end beside its minutes."""
    import time

    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)  # the first product pays for the thread pool's start
    done, start = 0, time.perf_counter()
    while done < 3 or time.perf_counter() - start < seconds:
        torch.mm(a, b)
        done += 1
    elapsed = time.perf_counter() - start
    return round(2 * size**3 * done / elapsed / 1e9, 1)
