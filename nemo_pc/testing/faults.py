"""Fault injection for kill-and-resume tests: run a command that SIGKILLs itself at a chosen file rename.

Every finished output of nemo_pc is put in place by a rename (``os.replace`` after a temporary file, or fsspec's
move for Lightning checkpoints), so a rename is where a kill does the most harm::

    python -m nemo_pc.testing.faults before:3 nemo-pc synth corpus ...   # killed with the 3rd file written, unnamed
    python -m nemo_pc.testing.faults after:2:*.ckpt examples/speech_to_text_ctc_pc.py ...   # after the 2nd ckpt
    python -m nemo_pc.testing.faults count:renames.txt nemo-pc build-lm ...   # no kill: list the renamed files

``before:N[:GLOB]`` kills the process just before the N-th rename (of a file whose name matches GLOB): the temporary
file is whole, the output not yet there. ``after:N[:GLOB]`` kills it just after. ``count:PATH`` writes the renamed
file names to PATH, one a line, when the command ends. The command is ``nemo-pc <args>`` or a Python script and its
arguments (run as ``__main__``, its folder first on ``sys.path``). Only this process is hooked, not its workers.

:func:`held_elsewhere` holds an output folder from another process, for the tests of one writer per folder.
"""

from __future__ import annotations

import atexit
import contextlib
import fnmatch
import os
import runpy
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


def install(spec: str) -> None:
    """Hooks ``os.replace`` and ``os.rename`` (which ``Path.replace``, ``Path.rename`` and ``shutil.move`` call)."""
    kind, _, rest = spec.partition(":")
    if kind == "count":
        renamed: list[str] = []
        atexit.register(lambda: Path(rest).write_text("".join(f"{name}\n" for name in renamed)))
        _hook(lambda target, done: done and renamed.append(Path(target).name))
        return
    if kind not in ("before", "after"):
        raise ValueError(f"fault spec {spec!r}: expected before:N[:GLOB], after:N[:GLOB] or count:PATH")
    number, _, pattern = rest.partition(":")
    seen = [0]

    def on_rename(target: str, done: bool) -> None:
        if not fnmatch.fnmatch(Path(target).name, pattern or "*"):
            return
        if not done:
            seen[0] += 1
        if seen[0] == int(number) and done == (kind == "after"):
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    _hook(on_rename)


def _hook(on_rename) -> None:
    for name in ("replace", "rename"):
        original = getattr(os, name)

        def hooked(src, dst, *args, _original=original, **kwargs):
            on_rename(os.fsdecode(dst), False)
            _original(src, dst, *args, **kwargs)
            on_rename(os.fsdecode(dst), True)

        setattr(os, name, hooked)


@contextlib.contextmanager
def held_elsewhere(folder: str | Path) -> Iterator[int]:
    """Another process holds ``folder`` (:mod:`nemo_pc.parts.output_lock`) until the block ends; yields its pid."""
    code = (
        "import sys, time\nfrom nemo_pc.parts.output_lock import hold_output_folder\n"
        "with hold_output_folder(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        if holder.stdout.readline().strip() != "held":
            raise RuntimeError(f"the process that was to hold {folder} stopped")
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()


def main(argv: list[str]) -> int:
    spec, command = argv[0], argv[1:]
    install(spec)
    if command[0] == "nemo-pc":
        from nemo_pc import cli

        # only the command under test is imported, so that a fault test does not pay for the others' imports
        cli.COMMANDS = {name: entry for name, entry in cli.COMMANDS.items() if name == command[1]}
        return cli.main(command[1:])
    sys.argv = command
    sys.path.insert(0, str(Path(command[0]).resolve().parent))
    runpy.run_path(command[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
