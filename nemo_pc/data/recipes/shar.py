"""Lhotse shar copies of nemo_pc manifests, for NeMo's lhotse dataloading (``shar_path``).

:func:`export_shar` writes ``cuts.NNNNNN.jsonl.gz`` and ``recording.NNNNNN.tar`` (FLAC) shards. Each cut holds the
utterance's audio (the ``offset`` / ``duration`` segment of a segmented manifest), ``text`` as its supervision text
and every other manifest field (``text_normalized``, ``pc_source``, ``utt_id``, ``speaker``, ...) in
``cut.custom``: what NeMo's manifest readers make of the same line, so that
:class:`~nemo_pc.data.datasets.pc_lhotse.LhotsePCDataset` reads both alike.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import shutil
from pathlib import Path

from nemo_pc.data.datasets.pc_dataset import PCUtterance, check_pc_entry
from nemo_pc.data.normalized_text import iter_pc_manifest
from nemo_pc.parts.manifest import ManifestError
from nemo_pc.parts.text import DEFAULT_MARKS

SHAR_FIELDS = {"recording": "flac"}
SHAR_ATTRIBUTES = ("shard_origin", "shar_epoch")
"""What lhotse's shar reader adds to ``cut.custom``."""
NOT_CUSTOM = ("audio_filepath", "duration", "offset", "text")
"""Manifest fields that the cut holds elsewhere (its recording, duration and supervision)."""

_LOG = logging.getLogger(__name__)


def export_shar(
    manifest: str | Path, output_dir: str | Path, shard_size: int = 1000, overwrite: bool = False
) -> dict[str, list[str]]:
    """Writes a nemo_pc manifest as lhotse shar into ``output_dir``; returns the shard paths by field.

    Every line is checked first (as the training dataset checks it; a line without ``text_normalized`` gets it
    derived from ``text``, :func:`~nemo_pc.data.normalized_text.iter_pc_manifest`), then the shards are written to a
    temporary folder beside ``output_dir`` and renamed onto it, so ``output_dir`` is complete or absent. Running it
    again reads what is there: a folder that holds this manifest's cuts at this shard size is kept as it is.

    Raises:
        ManifestError: a bad line, or audio that cannot be read (naming the file and line).
        FileExistsError: ``output_dir`` holds something else and ``overwrite`` is false.
        ValueError: ``shard_size`` below 1.
    """
    from tqdm import tqdm

    if shard_size < 1:
        raise ValueError(f"shard_size must be 1 or more, got {shard_size}")
    manifest, output_dir = Path(manifest), Path(output_dir)
    lines = [
        (number, entry, check_pc_entry(entry, manifest, number, DEFAULT_MARKS, 1.0, 0))
        for number, entry in iter_pc_manifest(manifest)
    ]
    if not lines:
        raise ValueError(f"{manifest}: no utterance")
    expected = [_summary(_cut_id(entry, manifest, number), entry.get("text"), entry) for number, entry, _ in lines]
    if output_dir.exists():
        if not overwrite and _holds(output_dir, expected, shard_size):
            _LOG.info("%s already holds the %d cuts of %s", output_dir, len(lines), manifest)
            return _shard_paths(output_dir)
        if not overwrite:
            raise FileExistsError(f"{output_dir} exists and holds other data; remove it or overwrite it (--overwrite)")
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = output_dir.parent / f".{output_dir.name}.{secrets.token_hex(6)}.tmp"
    try:
        progress = tqdm(total=len(lines), desc=f"export-shar {manifest.name}", unit="utt")
        _write(staging, manifest, lines, shard_size, progress)
        _replace_dir(staging, output_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _shard_paths(output_dir)


def _cut_id(entry: dict, manifest: Path, number: int) -> str:
    return str(entry.get("utt_id") or f"{manifest.stem}-{number:07d}")


def _cut(entry: dict, item: PCUtterance, cut_id: str):
    """The cut of one checked line, with its recording's header read but no audio."""
    from lhotse import Recording, SupervisionSegment

    recording = Recording.from_file(item.audio_filepath)
    cut = recording.to_cut()
    duration = min(item.duration, recording.duration - item.offset)
    if item.offset > 0 or duration < recording.duration:
        cut = cut.truncate(offset=item.offset, duration=duration, preserve_id=True)
    cut.id = cut_id
    cut.supervisions = [
        SupervisionSegment(
            id=cut_id, recording_id=recording.id, start=0.0, duration=cut.duration, text=entry.get("text")
        )
    ]
    cut.custom = {key: value for key, value in entry.items() if key not in NOT_CUSTOM}
    return cut


def _write(folder: Path, manifest: Path, lines: list, shard_size: int, progress) -> None:
    from lhotse.shar import SharWriter

    folder.mkdir()
    with progress, SharWriter(str(folder), fields=SHAR_FIELDS, shard_size=shard_size) as writer:
        for number, entry, item in lines:
            try:
                writer.write(_cut(entry, item, _cut_id(entry, manifest, number)))
            except Exception as err:  # soundfile, audioread and lhotse raise many types, some in several lines
                reason = " ".join(str(err).split())
                raise ManifestError(
                    manifest, number, f"cannot read audio {item.audio_filepath}: {reason}", "bad audio"
                ) from err
            progress.update()


def _replace_dir(staging: Path, output_dir: Path) -> None:
    """Renames ``staging`` onto ``output_dir``; an old ``output_dir`` is moved aside first, then removed."""
    old = None
    if output_dir.exists():
        old = output_dir.parent / f".{output_dir.name}.{secrets.token_hex(6)}.old"
        os.replace(output_dir, old)
    os.replace(staging, output_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _shard_paths(folder: Path) -> dict[str, list[str]]:
    return {field: sorted(str(path) for path in folder.glob(f"{field}.*")) for field in ("cuts", *SHAR_FIELDS)}


def _holds(folder: Path, expected: list[tuple], shard_size: int) -> bool:
    """Whether ``folder`` is a shar export of the ``expected`` cut summaries (ids, texts, fields) at
    ``shard_size``."""
    from lhotse import CutSet

    paths = _shard_paths(folder)
    if len(paths["cuts"]) != math.ceil(len(expected) / shard_size) or len(paths["recording"]) != len(paths["cuts"]):
        return False
    try:
        stored = [
            _summary(cut.id, cut.supervisions[0].text, cut.custom or {})
            for cut in CutSet.from_shar(fields={"cuts": paths["cuts"]})
        ]
    except Exception:  # not a shar folder, or a damaged one
        return False
    return stored == expected


def _summary(cut_id: str, text: str | None, fields: dict) -> tuple:
    return cut_id, text, {key: value for key, value in fields.items() if key not in (*NOT_CUSTOM, *SHAR_ATTRIBUTES)}
