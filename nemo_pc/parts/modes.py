"""The output modes of a P&C model: the one place that names them, numbers them and parses them.

A P&C model writes text in one of two modes: ``normalized`` (id 0, N: lower case, no marks, spoken-form numbers)
and ``punctuated`` (id 1, P: cased, with the marks of the mark set). papers/001 calls them "styles"; they are the
same thing, and the package says "mode" everywhere. The ids are those of the manifest schema and of a
mode-conditioned predictor's mode embedding. ``both`` asks a model for the two modes from one encoder pass.

This module imports neither torch nor NeMo, so that every layer of the package can import it.
"""

from __future__ import annotations

from typing import Any

NORMALIZED, PUNCTUATED = "normalized", "punctuated"
MODES = (NORMALIZED, PUNCTUATED)
"""Mode names by id: 0 = normalized (N), 1 = punctuated (P)."""
NORMALIZED_ID, PUNCTUATED_ID = 0, 1
BOTH = "both"
"""The request for every mode at once (a ``{mode name: outputs}`` result)."""


def mode_id(mode: str | int, argument: str = "mode") -> int:
    """The id of a mode given by name (``"normalized"``, ``"punctuated"``, also ``"N"``/``"P"``) or id.

    Raises:
        ValueError: an unknown mode; the message names ``argument``.
    """
    if isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode < len(MODES):
        return mode
    if isinstance(mode, str):
        key = mode.strip().lower()
        for index, name in enumerate(MODES):
            if key in (name, name[0]):
                return index
    raise ValueError(f"{argument} must be one of {', '.join(MODES)} (or 0/1), got {mode!r}")


def mode_name(mode: str | int, argument: str = "mode") -> str:
    """The name of a mode given by name, initial or id.

    Raises:
        ValueError: an unknown mode; the message names ``argument``.
    """
    return MODES[mode_id(mode, argument)]


def parse_request(mode: str | int, argument: str = "mode") -> str:
    """A requested output: a mode name (from a name, initial or id) or :data:`BOTH`.

    Raises:
        ValueError: anything else; the message names ``argument``.
    """
    if isinstance(mode, str) and mode.strip().lower() == BOTH:
        return BOTH
    try:
        return mode_name(mode, argument)
    except ValueError:
        raise ValueError(f"{argument}: mode must be one of {', '.join((*MODES, BOTH))}, got {mode!r}") from None


def requested_ids(request: str) -> list[int]:
    """The mode ids a parsed request (:func:`parse_request`) asks for, in id order."""
    return list(range(len(MODES))) if request == BOTH else [mode_id(request)]


def prompt_mode(prompt: Any) -> str | None:
    """The ``mode`` slot of a prompt: a string, a dict, ``{"slots": {...}}`` or a list of turns (NeMo's
    ``transcribe_speech.py`` passes ``+prompt.mode=...``); ``None`` when the prompt names no mode."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, dict):
        if "mode" in prompt:
            return prompt["mode"]
        return prompt_mode(prompt.get("slots"))
    if isinstance(prompt, (list, tuple)):
        for turn in prompt:
            found = prompt_mode(turn)
            if found is not None:
                return found
    return None
