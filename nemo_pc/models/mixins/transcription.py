"""One transcription API for both P&C ASR families: an output ``mode`` on top of NeMo's ``transcribe``.

``mode`` is ``"normalized"``, ``"punctuated"`` or ``"both"`` (``both`` returns ``{"normalized": [...],
"punctuated": [...]}`` from one encoder pass per batch); the words are those of :mod:`nemo_pc.parts.modes`. Without
a mode, the config's ``prompt`` decides (NeMo's ``transcribe_speech.py`` passes ``+prompt.mode=...``), else the
model's default mode (``pc.default_mode``).

Each model keeps its NeMo parent's positional ``transcribe`` signature (the RNN-T one starts with ``use_lhotse``,
the CTC one does not, as in NeMo): :func:`transcribe_with_mode` builds it from the parent's. ``mode`` is
keyword-only, and a keyword that neither NeMo's ``TranscribeConfig`` nor :class:`PCTranscribeConfig` knows is
refused with a ``TypeError``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nemo.collections.asr.parts.mixins import TranscribeConfig

from nemo_pc.parts.modes import parse_request, prompt_mode


@dataclass
class PCTranscribeConfig(TranscribeConfig):
    """NeMo's transcribe config plus the output mode and a prompt that may name it; see the module docstring."""

    mode: str | None = None
    prompt: Any = None


CONFIG_FIELDS = frozenset(field.name for field in dataclasses.fields(PCTranscribeConfig)) - {"_internal"}


def resolve_mode(trcfg: Any, default: str) -> str:
    """The requested output mode name, ``"both"`` included: the config's ``mode``, else its prompt's, else
    ``default``.

    Raises:
        ValueError: an unknown mode; the message names where it came from.
    """
    mode, argument = getattr(trcfg, "mode", None), "mode"
    if mode is None:
        mode, argument = prompt_mode(getattr(trcfg, "prompt", None)), "prompt mode"
    if mode is None:
        mode, argument = default, "pc.default_mode"
    return parse_request(mode, argument)  # names, their initials N/P, the ids 0/1, or both


def transcribe_with_mode(parent: type) -> Callable:
    """A ``transcribe`` method with the positional parameters (and defaults) of ``parent.transcribe``, a NeMo ASR
    model's, plus a keyword-only ``mode`` and any :class:`PCTranscribeConfig` field as a keyword.

    The method builds the transcribe config (:meth:`PCTranscriptionMixin.pc_transcribe_config`), refuses a mode
    the model does not write before any audio is read (``model.requested_mode``) and calls ``parent.transcribe``
    with it.
    """
    signature = inspect.signature(parent.transcribe)
    positional = [p for p in signature.parameters.values() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    names = [p.name for p in positional]

    def transcribe(self, audio, *args, mode: str | None = None, **kwargs):
        config_kwargs = {key: value for key, value in kwargs.items() if key not in names}
        bound = signature.bind(self, audio, *args, **{key: kwargs[key] for key in kwargs if key in names})
        bound.apply_defaults()
        arguments = {name: bound.arguments[name] for name in names[2:] if name != "override_config"}
        override_config = self.pc_transcribe_config(bound.arguments["override_config"], arguments, mode,
                                                    config_kwargs)  # fmt: skip
        self.requested_mode(override_config)
        return parent.transcribe(self, audio=audio, override_config=override_config)

    keyword = [
        inspect.Parameter("mode", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="str | None"),
        inspect.Parameter("config_kwargs", inspect.Parameter.VAR_KEYWORD),
    ]
    transcribe.__signature__ = signature.replace(parameters=[*positional, *keyword])
    transcribe.__doc__ = f"""NeMo's ``{parent.__name__}.transcribe`` (same positional arguments) with an output
        ``mode``: ``normalized``, ``punctuated`` or ``both``; see :mod:`nemo_pc.models.mixins.transcription`. With
        ``both`` the result is ``{{"normalized": [...], "punctuated": [...]}}`` from one encoder pass per batch.

        Raises:
            ValueError: an unknown mode, or one the model does not write (the message names the argument).
            TypeError: a keyword argument that no transcribe config field has.
        """
    return transcribe


class PCTranscriptionMixin:
    """What both model classes share: the transcribe config, the mode checks and the default mode.

    A model sets :attr:`default_mode` and :meth:`requested_mode`, and its ``transcribe`` is
    :func:`transcribe_with_mode` of its NeMo parent.
    """

    default_mode: str

    @classmethod
    def get_transcribe_config(cls) -> PCTranscribeConfig:
        """NeMo's transcribe config with ``mode`` and ``prompt`` (see :class:`PCTranscribeConfig`)."""
        return PCTranscribeConfig()

    def pc_transcribe_config(
        self,
        override_config: TranscribeConfig | None,
        arguments: dict[str, Any],
        mode: str | None,
        config_kwargs: dict[str, Any],
    ) -> PCTranscribeConfig:
        """The config of one ``transcribe`` call: ``override_config`` when given (as in NeMo, the other arguments
        are then ignored, except ``mode``), else one built from ``arguments`` and ``config_kwargs``.

        Raises:
            TypeError: a keyword that no transcribe config field has.
            ValueError: an unknown mode.
        """
        unknown = sorted(set(config_kwargs) - CONFIG_FIELDS)
        if unknown:
            raise TypeError(f"transcribe() got unknown keyword argument(s) {unknown}; known: {sorted(CONFIG_FIELDS)}")
        if override_config is None:
            override_config = PCTranscribeConfig(**arguments, **config_kwargs)
        if mode is not None:
            override_config.mode = mode
        resolve_mode(override_config, self.default_mode)  # refuse a bad mode before any audio is read
        return override_config

    def _transcribe_on_end(self, trcfg: TranscribeConfig) -> None:
        """NeMo's RNN-T and CTC models put the encoder and decoder in training mode after transcribing (their
        ``unfreeze`` calls ``train()``); the whole model goes back to the mode it had instead. A model in eval mode
        left half in training mode would use dropout, and a multi-lookahead streaming encoder would draw a random
        ``att_context_size`` at every call."""
        super()._transcribe_on_end(trcfg)
        self.train(mode=trcfg._internal.training_mode)
