"""One transcription API for both P&C ASR families: an output ``mode`` on top of NeMo's ``transcribe``.

``mode`` is ``"normalized"``, ``"punctuated"`` or ``"both"`` (``both`` returns ``{"normalized": [...],
"punctuated": [...]}`` from one encoder pass per batch); the words are those of :mod:`nemo_pc.parts.modes`. Without
a mode, the config's ``prompt`` decides (NeMo's ``transcribe_speech.py`` passes ``+prompt.mode=...``), else the
model's default mode (``pc.default_mode``).

:meth:`PCTranscriptionMixin.transcribe` is the one ``transcribe`` of the three families (RNN-T, CTC, AED): NeMo's
arguments with NeMo's defaults, plus ``mode``, all by keyword after ``audio``. NeMo's parents disagree on the
positions (the RNN-T one puts ``use_lhotse`` second, the CTC, AED and hybrid ones ``batch_size``; the RNN-T and
hybrid ones place ``partial_hypothesis`` differently), so a call that means one thing to one parent cannot mean
another here: it is refused. A keyword that no transcribe config field has is refused with a ``TypeError``, except
for the AED, whose extra keywords are its prompt's slots, as in NeMo.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from nemo.collections.asr.parts.mixins import TranscribeConfig
from nemo.collections.asr.parts.utils.rnnt_utils import Hypothesis

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


class PCTranscriptionMixin:
    """What the model families share: ``transcribe`` with an output mode, the transcribe config, the mode checks.

    A model sets :attr:`default_mode` and :meth:`requested_mode`; this class comes before its NeMo parent in its
    bases, whose ``transcribe`` runs the transcription.
    """

    default_mode: str

    def transcribe(
        self,
        audio: Any,
        *,
        use_lhotse: bool = True,
        batch_size: int = 4,
        return_hypotheses: bool = False,
        partial_hypothesis: list[Hypothesis] | None = None,
        num_workers: int = 0,
        channel_selector: Any = None,
        augmentor: Any = None,
        verbose: bool = True,
        timestamps: bool | None = None,
        override_config: TranscribeConfig | None = None,
        mode: str | None = None,
        **config_kwargs: Any,
    ) -> list | dict[str, list]:
        """NeMo's ``transcribe`` with an output ``mode``: ``normalized``, ``punctuated`` or ``both`` (a
        ``{"normalized": [...], "punctuated": [...]}`` result from one encoder pass per batch). Without ``mode``, the
        config's prompt decides, else ``pc.default_mode``.

        Args:
            audio: paths, a manifest, arrays or a DataLoader, as for NeMo's ``transcribe``.
            use_lhotse, batch_size, return_hypotheses, partial_hypothesis, num_workers, channel_selector,
                augmentor, verbose, timestamps: NeMo's (a family that has no use for one ignores it, as NeMo does).
            override_config: a transcribe config of the model's class (:meth:`get_transcribe_config`); as in NeMo,
                the other arguments are then ignored, except ``mode``.
            mode: the output mode.
            **config_kwargs: other fields of the transcribe config (e.g. ``prompt``); the AED's prompt slots.

        Raises:
            ValueError: an unknown mode, or one the model does not write (the message names the argument), before
                any audio is read.
            TypeError: a keyword argument that no transcribe config field has.
        """
        arguments = dict(
            use_lhotse=use_lhotse,
            batch_size=batch_size,
            return_hypotheses=return_hypotheses,
            partial_hypothesis=partial_hypothesis,
            num_workers=num_workers,
            channel_selector=channel_selector,
            augmentor=augmentor,
            verbose=verbose,
            timestamps=timestamps,
        )
        trcfg = self.pc_transcribe_config(override_config, arguments, mode, config_kwargs)
        self.requested_mode(trcfg)
        # the AED's NeMo transcribe sets the config's timestamps from this argument
        return super().transcribe(audio=audio, timestamps=trcfg.timestamps, override_config=trcfg)

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
        are then ignored, except ``mode``), else one built from ``arguments`` and ``config_kwargs``. A family whose
        extra keywords mean something else (the AED's prompt slots) overrides this.

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
