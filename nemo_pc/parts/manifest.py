"""Reading and writing NeMo JSON-lines manifests, with errors that name the file and the line.

Schema (../DESIGN.md): ``audio_filepath``, ``duration``, optional ``offset``, ``text`` (punctuated and cased where
known), ``text_normalized``, ``pc_source`` (``book`` | ``formatter`` | ``none``) and, where known, ``utt_id``,
``speaker``, ``chapter`` and ``split``.
"""

from __future__ import annotations

import json
import os
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

PC_SOURCES = ("book", "formatter", "none")
T = TypeVar("T")


class ManifestError(ValueError):
    """A manifest line that cannot be used; the message names the file and the 1-based line number.

    ``line`` is ``None`` for an item that has no line, such as a lhotse cut (``path`` then names the cut).
    """

    def __init__(self, path: str | Path, line: int | None, message: str, kind: str = "bad line") -> None:
        self.path = str(path)
        self.line = line
        self.reason = message
        self.kind = kind
        super().__init__(f"{path}: {message}" if line is None else f"{path}:{line}: {message}")

    def __reduce__(self):
        # rebuilt from its fields, so that it crosses a process boundary (a spawned worker's error) unchanged
        return type(self), (self.path, self.line, self.reason, self.kind)


@dataclass
class DropCounter:
    """Counts dropped manifest lines by reason, so that nothing is dropped silently."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, reason: str, where: str) -> None:
        self.counts[reason] += 1
        self.examples.setdefault(reason, where)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> dict:
        return {"total": self.total, "by_reason": dict(self.counts), "first_example": dict(self.examples)}


def iter_manifest(
    path: str | Path, on_error: Callable[[ManifestError], None] | None = None
) -> Iterator[tuple[int, dict]]:
    """Yields ``(line_number, entry)`` for every non-blank line of a JSON-lines manifest.

    Args:
        path: the manifest.
        on_error: called with the error of a line that is not UTF-8, not JSON or not a JSON object; that line is
            then skipped. Without it the error is raised.

    Raises:
        FileNotFoundError: the manifest does not exist.
        ManifestError: a bad line, when ``on_error`` is not given.
    """
    path = Path(path)
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                entry = _parse_line(raw, path, number)
            except ManifestError as err:
                if on_error is None:
                    raise
                on_error(err)
                continue
            if entry is not None:
                yield number, entry


def _parse_line(raw: bytes, path: Path, number: int) -> dict | None:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ManifestError(path, number, f"not UTF-8 ({err.reason} at byte {err.start})", "not UTF-8") from None
    if not line.strip():
        return None
    try:
        entry = json.loads(line)
    except json.JSONDecodeError as err:
        raise ManifestError(path, number, f"bad JSON: {err.msg} (column {err.colno})", "bad JSON") from None
    if not isinstance(entry, dict):
        raise ManifestError(path, number, f"expected a JSON object, got {type(entry).__name__}", "not an object")
    return entry


def require_text(entry: Mapping, field_name: str, path: str | Path, line: int | None, allow_empty: bool = True) -> str:
    """Returns ``entry[field_name]`` as a string, or raises a :class:`ManifestError` naming the field."""
    if field_name not in entry:
        raise ManifestError(
            path, line, f"missing field {field_name!r} (fields: {', '.join(sorted(entry))})", f"missing {field_name}"
        )
    value = entry[field_name]
    if not isinstance(value, str):
        raise ManifestError(
            path,
            line,
            f"field {field_name!r} must be a string, got {type(value).__name__}",
            f"non-string {field_name}",
        )
    if not allow_empty and not value.strip():
        raise ManifestError(path, line, f"field {field_name!r} is empty", f"empty {field_name}")
    return value


def audio_path(path: str, manifest: str | Path) -> Path:
    """Where a line's ``audio_filepath`` points: the path as given when it exists or is absolute, else relative to
    the manifest's folder (as NeMo's ``get_full_path`` reads it)."""
    candidate = Path(path).expanduser()
    if not candidate.is_absolute() and not candidate.exists():
        candidate = Path(manifest).parent / candidate
    return candidate


def spread_subset(entries: Sequence[T], count: int | None) -> list[T]:
    """At most ``count`` of ``entries``, evenly spaced over them and in their order (every one of them when
    ``count`` is 0 or ``None``, or not below their number): a subset of a speaker-sorted split that keeps its
    speakers."""
    if not count or len(entries) <= count:
        return list(entries)
    step = len(entries) / count
    return [entries[int(index * step)] for index in range(count)]


def read_manifest(path: str | Path) -> list[dict]:
    """All entries of a manifest (see :func:`iter_manifest` for the errors)."""
    return [entry for _, entry in iter_manifest(path)]


@contextmanager
def atomic_open(path: str | Path, mode: str = "w") -> Iterator:
    """Opens a temporary file next to ``path`` and renames it onto ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temporary(path)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_manifest(path: str | Path, entries: Iterable[Mapping]) -> Path:
    """Writes a JSON-lines manifest atomically: a temporary file in the same folder, then a rename."""
    with atomic_open(path) as handle:
        for entry in entries:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return Path(path)


def _create_temporary(path: Path) -> tuple[int, str]:
    """A new temporary file next to ``path``, created with mode 0o666 so that the process umask applies (as for
    ``open``); ``tempfile.mkstemp`` would make it 0o600. The umask is never read or changed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temporary file name for {path.name}")


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Writes a text file atomically (temporary file, then rename)."""
    with atomic_open(path) as handle:
        handle.write(text)
    return Path(path)


def save_model_atomic(model, output: str | Path) -> Path:
    """Saves a NeMo model (``model.save_to``) atomically: a hidden temporary next to ``output`` that a killed run's
    successor removes (:data:`nemo_pc.parts.output_lock.TEMPORARY`), then a rename. Returns ``output``."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.name}.{secrets.token_hex(6)}.tmp")
    try:
        model.save_to(str(partial))
        partial.replace(output)
    finally:
        partial.unlink(missing_ok=True)
    return output
