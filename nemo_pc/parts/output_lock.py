"""One writer per output folder: a file lock that a run holds on the folder it writes, for as long as it writes.

The lock is ``<folder>/.nemo_pc.lock``, held with ``flock`` and holding the holder's pid, host, start time and
command line. A second run on the same folder (or on a folder inside a locked one) stops at once with
:class:`OutputFolderLocked`, whose message names the holder; the CLI turns it into one line and exit code 2.

The kernel lets go of a ``flock`` when its process ends, however it ends, so a run that was killed leaves only the
file and the temporaries of its unfinished atomic writes: the next run takes the lock over, removes those
temporaries and warns that the earlier holder stopped without finishing. A run that ends
normally removes the file. Holding a folder is re-entrant within one process (the demo holds its output folder and
then calls the corpus builders on folders inside it). Torch-free; POSIX only, like the rest of the tool chain.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_NAME = ".nemo_pc.lock"
TEMPORARY = re.compile(r"\..+\.(?:[0-9a-f]{12}|[0-9]+)\.tmp")
"""Names of the temporary files of atomic writes (:func:`nemo_pc.parts.manifest.atomic_open`, the synthesizer's flac,
the shar staging folder): removed when a dead run's lock is taken over."""

_held: dict[Path, int] = {}  # folder -> how many nested holds of this process


class OutputFolderLocked(ValueError):
    """Another live process holds the output folder (a ``ValueError``: the CLI reports it in one line)."""


@contextlib.contextmanager
def hold_output_folder(folder: str | Path) -> Iterator[Path]:
    """Holds ``folder`` (created if missing) for the duration of the block.

    Raises:
        OutputFolderLocked: another running process holds ``folder`` or a folder above it.
    """
    folder = Path(folder).resolve()
    if folder in _held:
        _held[folder] += 1
        try:
            yield folder
        finally:
            _held[folder] -= 1
        return
    for parent in folder.parents:
        if parent not in _held and (parent / LOCK_NAME).is_file():
            _check_free(parent)
    folder.mkdir(parents=True, exist_ok=True)
    fd = _acquire(folder)
    _held[folder] = 1
    try:
        yield folder
    finally:
        del _held[folder]
        with contextlib.suppress(OSError):
            (folder / LOCK_NAME).unlink()
        os.close(fd)


def _acquire(folder: Path) -> int:
    """Locks ``folder/.nemo_pc.lock`` and writes this process into it; returns the open descriptor."""
    path = folder / LOCK_NAME
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            raise OutputFolderLocked(_busy_message(folder, holder)) from None
        try:
            same_file = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same_file = False
        if same_file:  # not a file that its holder removed between our open and our lock
            break
        os.close(fd)
    stale = _read(fd)
    if stale:
        removed = _remove_temporaries(folder)
        print(
            f"warning: {folder}: taking over the lock of {_describe(stale)}, which is no longer running; "
            f"its unfinished outputs are redone ({removed} temporary file(s) of it removed)",
            file=sys.stderr,
        )
    me = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv and sys.argv[0] else "python",
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
    return fd


def _remove_temporaries(folder: Path) -> int:
    """Removes the temporary files of atomic writes (``.<name>.<hex or pid>.tmp``) that a killed run left."""
    removed = 0
    for parent, dirs, files in os.walk(folder):
        for name in [*files, *dirs]:
            if TEMPORARY.fullmatch(name):
                path = Path(parent, name)
                if name in dirs:
                    shutil.rmtree(path)
                else:
                    path.unlink()
                removed += 1
        dirs[:] = [name for name in dirs if not TEMPORARY.fullmatch(name)]
    return removed


def _check_free(folder: Path) -> None:
    """Raises if another process holds ``folder``; probes with a shared lock that is let go at once."""
    try:
        fd = os.open(folder / LOCK_NAME, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise OutputFolderLocked(_busy_message(folder, _read(fd))) from None
    finally:
        os.close(fd)


def _read(fd: int) -> dict:
    try:
        holder = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        return {"pid": "?"}
    return holder if isinstance(holder, dict) else {"pid": "?"}


def _describe(holder: dict) -> str:
    where = f" on {holder['host']}" if holder.get("host") else ""
    since = f" since {holder['started']}" if holder.get("started") else ""
    command = f" ({holder['command']})" if holder.get("command") else ""
    return f"pid {holder.get('pid', '?')}{where}{since}{command}"


def _busy_message(folder: Path, holder: dict) -> str:
    return f"{folder}: another run writes here: {_describe(holder)}; wait for it to end or use another folder"
