"""``text_normalized`` derived from a manifest's punctuated ``text``: the one place every manifest reader gets it.

A NeMo manifest whose lines hold only ``audio_filepath``, ``duration`` and punctuated, cased ``text`` (what NeMo's
P&C models train on) trains nemo_pc models as it is. Where a line has no ``text_normalized``, it is derived from
``text``: its spoken form (NeMo TN for digits, symbols and abbreviations, through the spoken-form cache of
:class:`~nemo_pc.data.recipes.spoken.SpokenForm`, as the book recipes get it), then
:func:`~nemo_pc.parts.text.normalize`. ``text`` stays the punctuated target as written. A line that has
``text_normalized`` keeps it.

The derived texts of a manifest are cached by content: the cache file is named by a hash of the manifest's bytes
and of the rules (:func:`rules_id`: :data:`~nemo_pc.parts.text.TEXT_RULES_VERSION`, :data:`DERIVATION_VERSION`, the
TN mode and the ``nemo_text_processing`` version), so an edited manifest or a changed rule is derived again; every
cache file is written atomically. A line whose ``text`` has no word cannot be trained on: it is left out and counted
with its reason (a warning names how many and the first), never dropped silently. A line with neither
``text_normalized`` nor a string ``text`` is an error that names the file and line.

Readers: :func:`iter_pc_manifest` (the map-style dataset, the tokenizer builder and ``export-shar``),
:func:`derived_manifest_paths` (NeMo's lhotse readers, which read the files themselves) and
:func:`prepare_manifest` (``nemo-pc prepare-manifest``: the derived manifest written ahead of time).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nemo_pc.data.recipes.spoken import TN_MODES, SpokenForm, default_cache_dir
from nemo_pc.parts.manifest import DropCounter, ManifestError, atomic_open, iter_manifest, require_text
from nemo_pc.parts.text import TEXT_RULES_VERSION, normalize

DERIVATION_VERSION = 1
"""Raised when this module derives other texts from the same manifest (e.g. a change to what goes through TN)."""

NO_WORD = "no word in 'text'"
"""Why a line is left out: its ``text`` normalizes to nothing (empty, or marks only)."""

CHUNK = 500
"""Lines sent to TN at once: the spoken-form cache commits each chunk, so a killed run resumes where it stopped."""

_LOG = logging.getLogger(__name__)


def check_tn(tn: str) -> str:
    """``tn`` if it is a TN mode (``"nemo"`` or ``"none"``), else a ``ValueError``."""
    if tn not in TN_MODES:
        raise ValueError(f"tn must be one of {TN_MODES}, got {tn!r}")
    return tn


def rules_id(tn: str) -> str:
    """What the derived texts depend on besides the manifest: the text rules, this module and the TN version."""
    check_tn(tn)
    tn_version = "-"
    if tn == "nemo":
        from importlib.metadata import PackageNotFoundError, version

        try:
            tn_version = version("nemo_text_processing")
        except PackageNotFoundError:
            tn_version = "absent"
    return f"text rules {TEXT_RULES_VERSION}; derivation {DERIVATION_VERSION}; tn {tn} {tn_version}"


def content_key(manifest: str | Path, tn: str, extra: str = "") -> str:
    """SHA-256 of :func:`rules_id`, ``extra`` and the manifest's bytes."""
    digest = hashlib.sha256(f"{rules_id(tn)}\0{extra}\0".encode())
    with Path(manifest).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_folder(cache_dir: str | Path | None = None) -> Path:
    """Where derived texts and manifests are kept: ``<cache_dir>/normalized`` (default
    :func:`~nemo_pc.data.recipes.spoken.default_cache_dir`, i.e. ``$NEMO_PC_CACHE`` or ``~/.cache/nemo_pc``)."""
    return (Path(cache_dir) if cache_dir else default_cache_dir()) / "normalized"


@dataclass
class DerivedTexts:
    """The derived ``text_normalized`` of each line that has none, and why the others are left out, by line."""

    texts: dict[int, str] = field(default_factory=dict)
    left_out: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"texts": self.texts, "left_out": self.left_out}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> DerivedTexts:
        data = json.loads(text)
        return cls({int(k): v for k, v in data["texts"].items()}, {int(k): v for k, v in data["left_out"].items()})


def derived_texts(
    manifest: str | Path, tn: str = "nemo", cache_dir: str | Path | None = None, progress: bool | None = None
) -> DerivedTexts:
    """The derived texts of a manifest, from the cache when its content was derived before under the same rules.

    Args:
        manifest: a NeMo manifest.
        tn: ``"nemo"`` (NeMo TN for the lines that hold digits, symbols or abbreviations) or ``"none"``.
        cache_dir: see :func:`cache_folder`; also the TN grammars and spoken-form cache.
        progress: a progress bar over the lines (``None``: only on a terminal).

    Raises:
        ManifestError: a line that is not a JSON object, or without ``text_normalized`` and a string ``text``.
    """
    manifest = Path(manifest)
    cache = cache_folder(cache_dir) / f"{content_key(manifest, tn)[:40]}.json"
    if cache.is_file():
        try:
            return DerivedTexts.from_json(cache.read_text(encoding="utf-8"))
        except (ValueError, KeyError, AttributeError):
            _LOG.warning("%s: unreadable cache file, deriving %s again", cache, manifest)
    derived = _derive(manifest, SpokenForm(tn, cache_dir), progress)
    with atomic_open(cache) as handle:
        handle.write(derived.to_json())
    return derived


def _derive(manifest: Path, spoken: SpokenForm, progress: bool | None) -> DerivedTexts:
    from tqdm import tqdm

    todo = [
        (number, require_text(entry, "text", manifest, number))
        for number, entry in iter_manifest(manifest)
        if "text_normalized" not in entry
    ]
    derived = DerivedTexts()
    with tqdm(
        total=len(todo),
        desc=f"text_normalized of {manifest.name}",
        unit="line",
        disable=None if progress is None else not progress,
    ) as bar:
        for start in range(0, len(todo), CHUNK):
            chunk = todo[start : start + CHUNK]
            for (number, _), said in zip(chunk, spoken.convert([text for _, text in chunk]), strict=True):
                normalized = normalize(said)
                if normalized:
                    derived.texts[number] = normalized
                else:
                    derived.left_out[number] = NO_WORD
            bar.update(len(chunk))
    return derived


def iter_pc_manifest(
    manifest: str | Path,
    tn: str = "nemo",
    cache_dir: str | Path | None = None,
    drops: DropCounter | None = None,
    progress: bool | None = None,
) -> Iterator[tuple[int, dict]]:
    """Yields ``(line_number, entry)`` as :func:`~nemo_pc.parts.manifest.iter_manifest` does, every entry with a
    ``text_normalized`` (derived where the line has none, see :func:`derived_texts`); a line left out is added to
    ``drops`` and logged. The cache is read only when a line without ``text_normalized`` comes."""
    for number, entry, _ in _iter_lines(Path(manifest), tn, cache_dir, drops, progress):
        yield number, entry


def _iter_lines(
    manifest: Path, tn: str, cache_dir: str | Path | None, drops: DropCounter | None, progress: bool | None
) -> Iterator[tuple[int, dict, bool]]:
    """``(line_number, entry, derived)``; ``derived`` says whether ``text_normalized`` was derived."""
    derived = None
    for number, entry in iter_manifest(manifest):
        if "text_normalized" in entry:
            yield number, entry, False
            continue
        if derived is None:
            derived = derived_texts(manifest, tn, cache_dir, progress)
            _log_derived(manifest, derived)
        if number in derived.left_out:
            if drops is not None:
                drops.add(derived.left_out[number], f"{manifest}:{number}")
            continue
        if number not in derived.texts:
            raise ManifestError(manifest, number, "the manifest changed while it was read; run again", "changed")
        yield number, {**entry, "text_normalized": derived.texts[number]}, True


def _log_derived(manifest: Path, derived: DerivedTexts) -> None:
    _LOG.info("%s: text_normalized derived from text for %d lines", manifest, len(derived.texts))
    if derived.left_out:
        first = min(derived.left_out)
        _LOG.warning(
            "%s: %d lines left out (%s; first: line %d)",
            manifest,
            len(derived.left_out),
            derived.left_out[first],
            first,
        )


@dataclass
class PreparedManifest:
    """What :func:`prepare_manifest` wrote: the lines, how many got a derived ``text_normalized``, and the lines
    left out by reason."""

    path: Path
    lines: int = 0
    derived: int = 0
    drops: DropCounter = field(default_factory=DropCounter)


def prepare_manifest(
    manifest: str | Path,
    output: str | Path,
    tn: str = "nemo",
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
    anchor_audio: bool = True,
) -> PreparedManifest:
    """Writes (atomically) ``manifest`` with every line's ``text_normalized``, the lines left out dropped and counted.

    Every other field is kept. When ``output`` is in another folder (and ``anchor_audio``), an ``audio_filepath``
    that is relative to the manifest's folder is written as an absolute path, so that it still names the same file
    (NeMo and nemo_pc read a relative path relative to the manifest); a tarred manifest's member names are not
    paths (``anchor_audio=False``). Running it again derives nothing anew: the derived texts are cached
    by content (:func:`derived_texts`).

    Raises:
        ManifestError: a bad line (naming the file and line).
        ValueError: no line left to write.
    """
    manifest, output = Path(manifest), Path(output)
    anchor = anchor_audio and manifest.resolve().parent != output.resolve().parent
    report = PreparedManifest(output)
    with atomic_open(output) as handle:
        for _, entry, derived in _iter_lines(manifest, tn, cache_dir, report.drops, progress):
            if anchor:
                entry = _anchored(entry, manifest)
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
            report.lines += 1
            report.derived += derived
        if not report.lines:
            raise ValueError(f"{manifest}: no line to write ({report.drops.as_dict()['by_reason'] or 'empty'})")
    return report


def _anchored(entry: dict, manifest: Path) -> dict:
    """``entry`` with a relative ``audio_filepath`` that exists beside the manifest written as an absolute path."""
    audio = entry.get("audio_filepath")
    if not isinstance(audio, str) or not audio or Path(audio).is_absolute():
        return entry
    beside = manifest.resolve().parent / audio
    return {**entry, "audio_filepath": str(beside)} if beside.exists() else entry


def needs_derivation(manifest: str | Path) -> bool:
    """Whether some line lacks ``text_normalized`` (a fast byte-level check; the readers check each line again)."""
    with Path(manifest).open("rb") as handle:
        return any(line.strip() and b'"text_normalized"' not in line for line in handle)


def derived_manifest(
    manifest: str | Path, tn: str = "nemo", cache_dir: str | Path | None = None, anchor_audio: bool = True
) -> Path:
    """The manifest itself when every line has ``text_normalized``, else its :func:`prepare_manifest` copy in the
    cache (named by content, as :func:`derived_texts`), for readers that read a manifest file themselves."""
    manifest = Path(manifest)
    if not needs_derivation(manifest):
        return manifest
    key = content_key(manifest, tn, extra=f"{manifest.resolve().parent}\0{anchor_audio}")
    target = cache_folder(cache_dir) / f"{manifest.stem}.{key[:40]}.json"
    if not target.is_file():
        prepare_manifest(manifest, target, tn, cache_dir, anchor_audio=anchor_audio)
        _LOG.info("%s: read through its derived copy %s", manifest, target)
    return target


def derived_manifest_paths(value, tn: str = "nemo", cache_dir: str | Path | None = None, anchor_audio: bool = True):
    """A data config's ``manifest_filepath`` (a path, a comma-separated string, a list of paths or of
    ``[path, weight]`` pairs) with each existing manifest replaced by :func:`derived_manifest`; anything else (a
    brace pattern of sharded manifests) is kept as it is."""

    def one(path):
        if not (isinstance(path, str) and Path(path).is_file()):
            return path
        return str(derived_manifest(path, tn, cache_dir, anchor_audio))

    if isinstance(value, str):
        return ",".join(one(part) for part in value.split(","))
    if isinstance(value, (list, tuple)):
        return [[one(item[0]), *item[1:]] if isinstance(item, (list, tuple)) and item else one(item) for item in value]
    return value
