"""Whisper's written output per utterance, kept on disk so that a rerun on the same audio decodes nothing.

An entry is found by two keys. The audio key is a SHA-256 of the samples Whisper reads: the file's bytes for a whole
file, the segment's float32 samples for an ``offset`` entry, so an edited file is decoded again. The setting key is a
SHA-256 of everything else that changes the text: the model's ``model.bin`` (hashed once per process and file
version), the weight type, beam size, seed, language and the faster-whisper and CTranslate2 versions. The entries
live in ``whisper.sqlite`` in :func:`~nemo_pc.data.recipes.spoken.default_cache_dir`, beside the spoken-form cache;
several processes can share it. Deleting the file clears it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path

import numpy as np

from nemo_pc.data.recipes.spoken import default_cache_dir

CACHE_FILE = "whisper.sqlite"
_CHUNK = 1 << 20
_MODEL_HASHES: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def model_identity(model_dir: str | Path) -> str:
    """The SHA-256 of a CTranslate2 model folder's ``model.bin``, computed once per process for each version of the
    file (its path, size and modification time)."""
    path = Path(model_dir).resolve() / "model.bin"
    stat = path.stat()
    version = (str(path), stat.st_size, stat.st_mtime_ns)
    if version not in _MODEL_HASHES:
        _MODEL_HASHES[version] = file_sha256(path)
    return _MODEL_HASHES[version]


def audio_key(audio: str | Path | np.ndarray) -> str:
    """The key of what Whisper reads: ``file:`` and the file's SHA-256, or ``samples:`` and that of the samples."""
    if isinstance(audio, (str, Path)):
        return f"file:{file_sha256(audio)}"
    samples = np.ascontiguousarray(audio, dtype=np.float32)
    return f"samples:{hashlib.sha256(samples.tobytes()).hexdigest()}"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def setting_key(model_dir: str | Path, compute_type: str, beam_size: int, seed: int, language: str) -> str:
    """The SHA-256 of the model's identity and every decoding setting that changes Whisper's output."""
    setting = {
        "model": model_identity(model_dir),
        "compute_type": compute_type,
        "beam_size": beam_size,
        "seed": seed,
        "language": language,
        "faster_whisper": _version("faster-whisper"),
        "ctranslate2": _version("ctranslate2"),
    }
    return hashlib.sha256(json.dumps(setting, sort_keys=True).encode()).hexdigest()


class TranscriptCache:
    """Whisper's text per audio key for one setting key, in ``cache_dir/whisper.sqlite``.

    Args:
        setting: the :func:`setting_key` of the model and decoding settings.
        cache_dir: the folder of ``whisper.sqlite``; default :func:`default_cache_dir`.
    """

    def __init__(self, setting: str, cache_dir: str | Path | None = None) -> None:
        self.setting = setting
        self.path = (Path(cache_dir) if cache_dir else default_cache_dir()) / CACHE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=120)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS whisper "
            "(setting TEXT NOT NULL, audio TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (setting, audio))"
        )

    def get(self, audio_keys: Iterable[str]) -> dict[str, str]:
        """The stored text of each audio key that has one."""
        keys = sorted(set(audio_keys))
        found: dict[str, str] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT audio, text FROM whisper WHERE setting = ? AND audio IN ({marks})"
            found.update(self._db.execute(query, [self.setting, *chunk]))
        return found

    def put(self, texts: Mapping[str, str]) -> None:
        """Stores texts by audio key, in one transaction."""
        if texts:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO whisper VALUES (?, ?, ?)",
                    [(self.setting, key, text) for key, text in texts.items()],
                )

    def close(self) -> None:
        self._db.close()
