"""Offline TTS voices from Debian ``main`` (espeak-ng, flite, festival) and the sox chain that makes 16 kHz flac.

Each voice is one synthetic speaker. espeak-ng gives English accents times voice variants; flite and festival
give a few voices each. Every engine pauses at ``, . ?``; espeak-ng and festival end a sentence only where the next
word is capitalized, so the text given to :func:`synthesize` should keep its case and punctuation.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nemo_pc.parts.provenance import MALLOC_LIBRARIES

ENGINES = ("espeak-ng", "flite", "festival")
ESPEAK_VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5")
FLITE_VOICES = ("kal16", "rms", "slt", "awb")
FESTIVAL_VOICES = {"kal_diphone": "M", "ked_diphone": "M", "cmu_us_slt_arctic_hts": "F"}
_FLITE_GENDER = {"kal16": "M", "rms": "M", "slt": "F", "awb": "M"}
TRAINING_ALLOCATORS = tuple(MALLOC_LIBRARIES)
"""The allocator libraries (by file-name prefix) that ``make demo`` may preload for training and the TTS programs
run without: under tcmalloc the two processes started per utterance made ``nemo-pc synth`` 0.87x as fast
(docs/pc_stage.md, "The memory allocator")."""


def tool_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default ``os.environ``) for the TTS and sox processes: the :data:`TRAINING_ALLOCATORS` taken out
    of ``LD_PRELOAD`` (the variable dropped when nothing else is left in it); every other variable as it is."""
    env = dict(os.environ if environ is None else environ)
    preload = env.get("LD_PRELOAD")
    if preload is None:
        return env
    kept = [
        entry
        for entry in preload.replace(" ", ":").split(":")
        if entry and not Path(entry).name.startswith(TRAINING_ALLOCATORS)
    ]
    if kept:
        env["LD_PRELOAD"] = ":".join(kept)
    else:
        env.pop("LD_PRELOAD")
    return env


@dataclass(frozen=True)
class Voice:
    """A TTS voice: ``engine`` is one of :data:`ENGINES`, ``name`` what the engine calls it, ``sex`` M or F."""

    engine: str
    name: str
    sex: str

    @property
    def key(self) -> str:
        return f"{self.engine}:{self.name}"


def available_voices(engines: tuple[str, ...] = ENGINES) -> list[Voice]:
    """The installed voices of the given engines, sorted by key; engines that are not installed give none."""
    voices: list[Voice] = []
    if "espeak-ng" in engines and shutil.which("espeak-ng"):
        for accent in _espeak_accents():
            voices += [Voice("espeak-ng", f"{accent}+{v}", v[0].upper()) for v in ESPEAK_VARIANTS]
    if "flite" in engines and shutil.which("flite"):
        listed = subprocess.run(["flite", "-lv"], capture_output=True, text=True).stdout.split()
        voices += [Voice("flite", name, _FLITE_GENDER[name]) for name in FLITE_VOICES if name in listed]
    if "festival" in engines and shutil.which("text2wave"):
        roots = [p.name for p in Path("/usr/share/festival/voices").glob("*/*")]
        voices += [Voice("festival", name, sex) for name, sex in FESTIVAL_VOICES.items() if name in roots]
    return sorted(voices, key=lambda v: v.key)


def _espeak_accents() -> list[str]:
    """English accents of espeak-ng's own (``gmw/``) voice files; mbrola voices are left out."""
    listing = subprocess.run(["espeak-ng", "--voices=en"], capture_output=True, text=True, check=True).stdout
    accents = set()
    for line in listing.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 5 and fields[4].startswith("gmw/"):
            accents.add(fields[1])
    return sorted(accents)


def synthesize(
    voice: Voice,
    text: str,
    flac_path: str | Path,
    tempo: float = 1.0,
    pitch_cents: float = 0.0,
    rate: int = 16000,
    formant: float = 1.0,
    tilt_db: float = 0.0,
) -> Path:
    """Speaks ``text`` with ``voice`` into a mono 16-bit flac at ``rate`` Hz, written atomically and without dither,
    so that the same arguments give the same bytes.

    Args:
        voice: the voice.
        text: spoken-form text with its case and punctuation.
        flac_path: where the flac goes.
        tempo: speed factor applied by sox (pitch kept).
        pitch_cents: pitch shift applied by sox.
        rate: output sample rate.
        formant: sox ``speed`` factor, with the tempo compensated: pitch and formants scale by it, the speaking
            rate stays ``tempo``.
        tilt_db: treble gain above 3 kHz in dB.
    """
    flac_path = Path(flac_path)
    flac_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nemo_pc_tts_") as tmp:
        text_file, wav = Path(tmp) / "text.txt", Path(tmp) / "raw.wav"
        text_file.write_text(text + "\n", encoding="utf-8")
        env = tool_environment()
        subprocess.run(_tts_command(voice, text_file, wav), check=True, capture_output=True, env=env)
        out = flac_path.with_name(f".{flac_path.name}.{os.getpid()}.tmp")
        effects = []
        if abs(formant - 1.0) > 1e-3:
            effects += ["speed", f"{formant:.3f}"]
        if abs(tempo / formant - 1.0) > 1e-3:
            effects += ["tempo", "-s", f"{tempo / formant:.3f}"]
        if abs(pitch_cents) > 0.5:
            effects += ["pitch", f"{pitch_cents:.0f}"]
        if abs(tilt_db) > 0.05:
            effects += ["treble", f"{tilt_db:.1f}", "3000"]
        effects += ["gain", "-n", "-3"]  # the same peak level for every voice; no clipping from pitch or treble
        # -D: no dither, whose noise differs from run to run; the same seed then gives bit-identical flac
        command = ["sox", "-D", str(wav), "-c", "1", "-b", "16", "-t", "flac", str(out), *effects, "rate", str(rate)]
        try:
            subprocess.run(command, check=True, capture_output=True, env=env)
            os.replace(out, flac_path)
        finally:
            out.unlink(missing_ok=True)
    return flac_path


def _tts_command(voice: Voice, text_file: Path, wav: Path) -> list[str]:
    if voice.engine == "espeak-ng":
        return ["espeak-ng", "-v", voice.name, "-f", str(text_file), "-w", str(wav)]
    if voice.engine == "flite":
        return ["flite", "-voice", voice.name, "-f", str(text_file), "-o", str(wav)]
    if voice.engine == "festival":
        return ["text2wave", "-eval", f"(voice_{voice.name})", str(text_file), "-o", str(wav)]
    raise ValueError(f"unknown TTS engine {voice.engine!r}; expected one of {ENGINES}")
