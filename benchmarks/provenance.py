"""What a results file records about its making, and the one writer of the benchmarks' JSON results.

Every benchmark that writes ``--json`` writes it with :func:`write_results`: the results plus a ``provenance`` entry
(the command line, the checkout's revision and the UTC date when the results are written), written atomically.
``benchmarks/render_results.py`` prints the provenance under each block it renders.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from nemo_pc.parts.manifest import write_text_atomic

REPO = Path(__file__).resolve().parents[1]


def revision() -> str | None:
    """The checkout's commit, with ``+dirty`` when tracked files differ from it; ``None`` outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
        status = ["git", "status", "--porcelain", "--untracked-files=no"]
        dirty = subprocess.run(status, cwd=REPO, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {**results, "provenance": provenance(argv)}
    write_text_atomic(path, json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")
    return path
