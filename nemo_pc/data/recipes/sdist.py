"""PyPI source distributions pinned by version and SHA-256, fetched once into a cache keyed on the hash.

A pinned sdist is looked for, in this order: in a folder the caller names (``sdist_dir``, files as ``pip download``
leaves them), in the cache (``cache_dir/<sha256>/<filename>``), and last on a PEP 503 simple index
(``{index_url}/{normalized-name}/``, default ``$PIP_INDEX_URL`` or https://pypi.org/simple), whose page links the file
as ``<a href="...tar.gz#sha256=...">``. A download goes to a temporary file next to its cache entry, is checked against
the pinned hash, and only then renamed into place, so the cache never holds a partial or a wrong file. ``pip download``
is not used: it builds the package's metadata, which fails for some old sdists (aeneas needs numpy to do so).

Every failure (not on the index, unreachable, a hash that differs, not a tar archive) raises :class:`SdistError`, whose
message names the package; the CLI reports it in one line with exit code 2.
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from nemo_pc.parts.manifest import atomic_open

DEFAULT_INDEX_URL = "https://pypi.org/simple"


class SdistError(ValueError):
    """A pinned sdist that cannot be had or read; the message names the package and what went wrong."""


@dataclass(frozen=True)
class PinnedSdist:
    """One file of a PyPI release, pinned by its SHA-256.

    Attributes:
        package: the project's name on PyPI.
        version: the release.
        filename: the sdist's file name on the index.
        sha256: the file's hex SHA-256.
    """

    package: str
    version: str
    filename: str
    sha256: str

    @property
    def label(self) -> str:
        return f"{self.package}=={self.version} ({self.filename})"


def normalized_name(name: str) -> str:
    """A project name as PEP 503 writes it in index URLs (runs of ``-_.`` become ``-``, lower case)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def default_index_url() -> str:
    """``$PIP_INDEX_URL``, else PyPI's simple index."""
    return os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX_URL


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_sdist(
    pin: PinnedSdist,
    cache_dir: str | Path,
    index_url: str | None = None,
    sdist_dir: str | Path | None = None,
    timeout: float = 60.0,
) -> Path:
    """The local path of a pinned sdist, downloaded into ``cache_dir/<sha256>/`` if no verified copy exists yet.

    Args:
        pin: the file and its hash.
        cache_dir: the download cache.
        index_url: a PEP 503 simple index; default :func:`default_index_url`.
        sdist_dir: a folder that may hold ``pin.filename`` already (it is used in place, after its hash is checked).
        timeout: seconds for each request.

    Raises:
        SdistError: a copy with another hash, a file not on the index, an unreachable index, a failed download.
    """
    if sdist_dir is not None and (Path(sdist_dir) / pin.filename).is_file():
        return _verified(Path(sdist_dir) / pin.filename, pin)
    cached = Path(cache_dir) / pin.sha256 / pin.filename
    if cached.is_file():
        return _verified(cached, pin)
    url = find_sdist_url(pin, index_url or default_index_url(), timeout)
    digest = hashlib.sha256()
    try:
        with atomic_open(cached, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
            for block in iter(lambda: response.read(1 << 20), b""):
                digest.update(block)
                out.write(block)
            if digest.hexdigest() != pin.sha256:
                raise SdistError(f"{pin.label}: {url} has sha256 {digest.hexdigest()}, expected {pin.sha256}")
    except (urllib.error.URLError, OSError) as err:
        raise SdistError(f"{pin.label}: download from {url} failed: {_reason(err)}") from None
    return cached


def _verified(path: Path, pin: PinnedSdist) -> Path:
    found = file_sha256(path)
    if found != pin.sha256:
        raise SdistError(f"{pin.label}: {path} has sha256 {found}, expected {pin.sha256}")
    return path


def find_sdist_url(pin: PinnedSdist, index_url: str, timeout: float = 60.0) -> str:
    """The URL of ``pin.filename`` on a PEP 503 simple index (relative links resolved against the project page).

    Raises:
        SdistError: the page cannot be read, does not link the file, or links it with another ``#sha256=``.
    """
    page = f"{index_url.rstrip('/')}/{normalized_name(pin.package)}/"
    try:
        with urllib.request.urlopen(page, timeout=timeout) as response:
            charset = response.headers.get_content_charset() or "utf-8"
            html = response.read().decode(charset, errors="replace")
    except (urllib.error.URLError, OSError) as err:
        raise SdistError(f"{pin.label}: index page {page} cannot be read: {_reason(err)}") from None
    links = _Links()
    links.feed(html)
    for href in links.hrefs:
        url = urljoin(page, href)
        parts = urlsplit(url)
        if unquote(parts.path.rsplit("/", 1)[-1]) != pin.filename:
            continue
        listed = dict(item.split("=", 1) for item in parts.fragment.split("&") if "=" in item).get("sha256")
        if listed is not None and listed.lower() != pin.sha256:
            raise SdistError(f"{pin.label}: {page} lists sha256 {listed}, expected {pin.sha256}")
        return url.split("#", 1)[0]
    raise SdistError(f"{pin.label}: {page} does not link {pin.filename}")


def open_sdist(path: str | Path, pin: PinnedSdist) -> tarfile.TarFile:
    """The sdist opened as a tar archive (gzip or not).

    Raises:
        SdistError: the file is not a tar archive.
    """
    try:
        return tarfile.open(path)
    except (tarfile.TarError, OSError) as err:
        raise SdistError(f"{pin.label}: {path} is not a tar archive ({err})") from None


def _reason(err: BaseException) -> str:
    reason = getattr(err, "reason", None) or getattr(err, "strerror", None) or str(err)
    return str(reason) or type(err).__name__


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs.extend(value for name, value in attrs if name == "href" and value)
