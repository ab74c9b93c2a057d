"""Tiny fixtures for long-form transcription: a recording of several utterances with pauses, tiny models whose
encoder sees a bounded window, so that chunked encoding with enough context gives exactly the whole-file frames,
and strict SRT/WebVTT readers.

The windowed models use NeMo's local attention (``rel_pos_local_attn`` with ``att_context_size``) and features
without per-recording normalization (``normalize: NA``); each encoder frame then depends on a bounded stretch of
audio (the attention window, the convolution kernels and the subsampling, summed over the layers), and a chunk read
with more context than that computes the owned frames as the whole-file pass does.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nemo_pc.testing.asr import SAMPLE_RATE, tone_audio, write_wav

LOCAL_CONTEXT = [6, 6]
"""Encoder frames of local attention on each side (tiny two-layer encoders reach about 1 s of audio with it)."""


def windowed(config: dict, context: Sequence[int] = LOCAL_CONTEXT) -> dict:
    """A copy of a tiny model config with local attention and unnormalized features (see the module docstring)."""
    config = copy.deepcopy(config)
    config["encoder"]["self_attention_model"] = "rel_pos_local_attn"
    config["encoder"]["att_context_size"] = list(context)
    config["preprocessor"]["normalize"] = "NA"
    return config


def write_recording(
    path: str | Path,
    utterances: int = 6,
    utterance_seconds: float = 1.0,
    pause_seconds: float = 0.6,
    sample_rate: int = SAMPLE_RATE,
    channels: int = 1,
) -> Path:
    """A recording of ``utterances`` tone utterances (:func:`nemo_pc.testing.asr.tone_audio`, cycling over four
    patterns) with quiet pauses between them, written as 16-bit PCM."""
    pause = np.zeros(int(pause_seconds * sample_rate), dtype=np.float32)
    parts = []
    for index in range(utterances):
        parts += [tone_audio(index % 4, utterance_seconds, sample_rate), pause]
    audio = np.concatenate(parts[:-1])
    if channels > 1:
        audio = np.stack([audio] * channels, axis=1)
    return write_wav(path, audio, sample_rate)


SRT_TIME = r"\d{2}:[0-5]\d:[0-5]\d,\d{3}"
VTT_TIME = r"\d{2}:[0-5]\d:[0-5]\d\.\d{3}"


def _seconds(stamp: str) -> float:
    hours, minutes, rest = stamp.replace(",", ".").split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(rest)


def _require(condition: bool, what: str, block: str) -> None:
    if not condition:
        raise ValueError(f"{what}: {block!r}")


def parse_srt(text: str) -> list[tuple[float, float, str]]:
    """A strict SubRip reader for tests: cues numbered from 1 without gaps, one timing line, one or more non-empty
    text lines, one blank line between cues, one newline at the end; returns ``(start, end, text)`` per cue.

    Raises:
        ValueError: the first thing that breaks the format.
    """
    _require(text.endswith("\n") and not text.endswith("\n\n"), "SRT must end with one newline", text[-20:])
    cues = []
    for number, block in enumerate(text.rstrip("\n").split("\n\n"), start=1):
        lines = block.split("\n")
        _require(lines[0] == str(number), f"cue number {number} expected", block)
        timing = re.fullmatch(f"({SRT_TIME}) --> ({SRT_TIME})", lines[1]) if len(lines) > 1 else None
        _require(timing is not None, "bad SRT timing line", block)
        _require(len(lines) >= 3 and all(line.strip() for line in lines[2:]), "empty SRT cue text", block)
        cues.append((_seconds(timing[1]), _seconds(timing[2]), "\n".join(lines[2:])))
    return cues


def parse_vtt(text: str) -> list[tuple[float, float, str]]:
    """A strict WebVTT reader for tests: the ``WEBVTT`` header, then cues of one timing line and one or more
    non-empty text lines without ``-->``, a bare ``&`` or any tag; returns ``(start, end, text)`` per cue.

    Raises:
        ValueError: the first thing that breaks the format.
    """
    blocks = text.rstrip("\n").split("\n\n")
    _require(blocks[0] == "WEBVTT", "WebVTT header expected", blocks[0])
    cues = []
    for block in blocks[1:]:
        lines = block.split("\n")
        timing = re.fullmatch(f"({VTT_TIME}) --> ({VTT_TIME})", lines[0])
        _require(timing is not None, "bad WebVTT timing line", block)
        body = lines[1:]
        _require(bool(body) and all(line.strip() and "-->" not in line for line in body), "bad cue text", block)
        _require(not re.search(r"<|&(?!amp;|lt;|gt;)", "\n".join(body)), "unescaped cue text", block)
        cues.append((_seconds(timing[1]), _seconds(timing[2]), "\n".join(body)))
    return cues


def agreement_table(seam: float, inside: float) -> dict:
    """The ``agreement`` of a long-form benchmark's results (both modes), for the renderers' tests: the word
    disagreement with per-utterance transcription of the utterances a seam cuts and of the others."""
    split = {"seam": {"word_disagreement": seam}, "inside": {"word_disagreement": inside}}
    return {"punctuated": split, "normalized": copy.deepcopy(split)}


def write_results(path: Path, results: dict) -> Path:
    """``results`` as a benchmark's JSON results file at ``path``, for the renderers' tests."""
    path.write_text(json.dumps(results))
    return path
