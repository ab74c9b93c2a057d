"""One transcription API for both P&C ASR families: an output ``mode`` on top of NeMo's ``transcribe``.

``mode`` is ``"normalized"``, ``"punctuated"`` or ``"both"`` (``both`` returns ``{"normalized": [...],
"punctuated": [...]}`` from one encoder pass per batch). ``style`` (the word of papers/001) is an alias of ``mode``
in every place that takes one: the ``transcribe`` keyword, the config field and the prompt slot. Without a mode,
the config's ``prompt`` decides (NeMo's ``transcribe_speech.py`` passes ``+prompt.mode=...``), else the model's
``pc.default_mode``.

Each model keeps its NeMo parent's positional ``transcribe`` signature (the RNN-T one starts with ``use_lhotse``,
the CTC one does not, as in NeMo); ``mode`` and ``style`` are keyword-only, and a keyword that neither NeMo's
``TranscribeConfig`` nor :class:`PCTranscribeConfig` knows is refused with a ``TypeError``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from nemo.collections.asr.parts.mixins import TranscribeConfig

from nemo_pc.parts.modes import MODES, mode_id

BOTH = "both"


@dataclass
class PCTranscribeConfig(TranscribeConfig):
    """NeMo's transcribe config plus the output mode (``style`` is its alias); see the module docstring."""

    mode: str | None = None
    style: str | None = None
    prompt: Any = None


CONFIG_FIELDS = frozenset(field.name for field in dataclasses.fields(PCTranscribeConfig)) - {"_internal"}


def _prompt_mode(prompt: Any) -> str | None:
    """The ``mode`` (or ``style``) slot of a prompt: a string, a dict, ``{"slots": {...}}`` or a list of turns."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, dict):
        for key in ("mode", "style"):
            if key in prompt:
                return prompt[key]
        return _prompt_mode(prompt.get("slots"))
    if isinstance(prompt, (list, tuple)):
        for turn in prompt:
            found = _prompt_mode(turn)
            if found is not None:
                return found
    return None


def resolve_mode(trcfg: Any, default: str) -> str:
    """The requested output mode name, ``"both"`` included.

    Raises:
        ValueError: an unknown mode, or ``mode`` and ``style`` that disagree; the message names the argument.
    """
    mode, style = getattr(trcfg, "mode", None), getattr(trcfg, "style", None)
    if mode is not None and style is not None and mode != style:
        raise ValueError(f"mode={mode!r} and its alias style={style!r} disagree; give one of them")
    argument = "mode" if mode is not None else "style"
    mode = mode if mode is not None else style
    if mode is None:
        mode, argument = _prompt_mode(getattr(trcfg, "prompt", None)), "prompt mode"
    if mode is None:
        mode, argument = default, "pc.default_mode"
    if isinstance(mode, str) and mode.strip().lower() == BOTH:
        return BOTH
    try:
        return MODES[mode_id(mode, argument)]  # names, their initials N/P, or the ids 0/1
    except ValueError:
        raise ValueError(f"{argument}: mode must be one of {', '.join((*MODES, BOTH))}, got {mode!r}") from None


class PCTranscriptionMixin:
    """What both model classes share: the transcribe config, the mode checks and the default mode.

    A model sets :attr:`default_mode` and calls :meth:`pc_transcribe_config` from its ``transcribe``.
    """

    default_mode: str

    @classmethod
    def get_transcribe_config(cls) -> PCTranscribeConfig:
        """NeMo's transcribe config with ``mode``, ``style`` and ``prompt`` (see :class:`PCTranscribeConfig`)."""
        return PCTranscribeConfig()

    def pc_transcribe_config(
        self,
        override_config: TranscribeConfig | None,
        arguments: dict[str, Any],
        mode: str | None,
        style: str | None,
        config_kwargs: dict[str, Any],
    ) -> PCTranscribeConfig:
        """The config of one ``transcribe`` call: ``override_config`` when given (as in NeMo, the other arguments
        are then ignored, except ``mode``/``style``), else one built from ``arguments`` and ``config_kwargs``.

        Raises:
            TypeError: a keyword that no transcribe config field has.
            ValueError: an unknown mode.
        """
        unknown = sorted(set(config_kwargs) - CONFIG_FIELDS)
        if unknown:
            raise TypeError(f"transcribe() got unknown keyword argument(s) {unknown}; known: {sorted(CONFIG_FIELDS)}")
        if override_config is None:
            override_config = PCTranscribeConfig(**arguments, **config_kwargs)
        if mode is not None or style is not None:
            override_config.mode, override_config.style = mode, style
        resolve_mode(override_config, self.default_mode)  # refuse a bad mode before any audio is read
        return override_config

    def _transcribe_on_end(self, trcfg: TranscribeConfig) -> None:
        """NeMo's RNN-T and CTC models put the encoder and decoder in training mode after transcribing (their
        ``unfreeze`` calls ``train()``); the whole model goes back to the mode it had instead. A model in eval mode
        left half in training mode would use dropout, and a multi-lookahead streaming encoder would draw a random
        ``att_context_size`` at every call."""
        super()._transcribe_on_end(trcfg)
        self.train(mode=trcfg._internal.training_mode)
