"""Data: manifest I/O, corpus builders and datasets."""

from nemo_pc.data.manifest import (
    DropCounter,
    ManifestError,
    atomic_open,
    iter_manifest,
    read_manifest,
    require_text,
    write_manifest,
    write_text_atomic,
)

__all__ = [
    "DropCounter",
    "ManifestError",
    "atomic_open",
    "iter_manifest",
    "read_manifest",
    "require_text",
    "write_manifest",
    "write_text_atomic",
]
