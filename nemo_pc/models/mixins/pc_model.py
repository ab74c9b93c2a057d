"""One model surface for both P&C ASR families (the CTC and the RNN-T model): what they share, written once.

:class:`PCModelMixin` sits before the NeMo parent in each family's bases and holds

* the ``model.pc`` config section: :class:`PCConfig` (defaults, validation, the keys of older checkpoints read as
  fallbacks); a family extends it with its own keys;
* the modes: the mode of the main output, the modes the model writes, and the default one (one definition, so the
  default mode and its id never disagree);
* one decoding per mode (``self.decodings``, the n-gram LM only where ``pc.ngram_lm_mode`` says,
  :func:`~nemo_pc.parts.lm_fusion.decoding_cfg_for_mode`) and ``change_decoding_strategy``;
* NeMo's training step (auxiliary losses, the AccessMixin registry, ``training_batch_wer`` every
  ``log_every_n_steps``, the non-finite loss guard) around one family hook;
* the validation and test epoch ends: WER and each mode's WER from errors and words summed over batches and
  processes, each head's or mode's loss averaged;
* ``transcribe`` with an output ``mode`` (:mod:`nemo_pc.models.mixins.transcription`) and the data setup
  (:mod:`nemo_pc.models.mixins.pc_data`).

A family implements :attr:`main_mode_id`, :meth:`mode_decoding`, :meth:`training_losses` and
:meth:`training_batch_wer`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from nemo.core.classes.mixins import AccessMixin
from omegaconf import DictConfig, OmegaConf, open_dict

from nemo_pc.models.mixins.pc_data import PCDataMixin
from nemo_pc.models.mixins.transcription import PCTranscriptionMixin, resolve_mode
from nemo_pc.parts.lm_fusion import DEFAULT_LM_MODE, decoding_cfg_for_mode, ngram_lm_mode
from nemo_pc.parts.loss_guard import global_step, loss_is_finite, nonfinite_policy, norm_statistics
from nemo_pc.parts.modes import MODES, NORMALIZED_ID, PUNCTUATED, PUNCTUATED_ID, mode_id, requested_ids
from nemo_pc.parts.text import DEFAULT_MARKS


@dataclass
class PCConfig:
    """The ``model.pc`` keys of both families (a family's subclass adds its own).

    Attributes:
        target: what the main output learns (``punctuated`` or ``normalized``; the CTC model also has ``mixed``).
        marks: the mark set kept in punctuated targets; data configs read it (``${model.pc.marks}``).
        default_mode: the mode ``transcribe`` returns when none is asked for; ``None`` (or a mode the model does
            not write) means the mode of its main output.
        ngram_lm_mode: the mode whose decoding fuses the n-gram LM of the decoding config
            (:mod:`nemo_pc.parts.lm_fusion`).
    """

    target: str = PUNCTUATED
    marks: str = DEFAULT_MARKS
    default_mode: str | None = None
    ngram_lm_mode: str = DEFAULT_LM_MODE

    @classmethod
    def section(cls, cfg: DictConfig) -> DictConfig:
        """``cfg.pc`` over the defaults, checked. Keys of older checkpoints are read where the new ones are unset:
        ``pc.default_style`` (now ``pc.default_mode``) and the RNN-T's top-level ``marks`` (now ``pc.marks``).

        Raises:
            ValueError: a bad value; the message names the key.
        """
        section = cfg.get("pc") or {}
        given = OmegaConf.create(
            OmegaConf.to_container(section, resolve=True) if OmegaConf.is_config(section) else section
        )
        legacy = {}
        if given.get("marks") is None and cfg.get("marks"):
            legacy["marks"] = cfg.marks
        if given.get("default_mode") is None and given.get("default_style") is not None:
            legacy["default_mode"] = given.default_style
        if "default_style" in given:
            del given["default_style"]
        pc = OmegaConf.merge(dataclasses.asdict(cls()), given, legacy)
        cls.check(pc)
        return pc

    @classmethod
    def check(cls, pc: DictConfig) -> None:
        """Refuses bad values of the keys this class knows (a subclass checks its own, then calls this).

        Raises:
            ValueError: the message names the key.
        """
        if pc.default_mode is not None:
            mode_id(pc.default_mode, "pc.default_mode")
        ngram_lm_mode(pc)


def _reduce_sum(value: torch.Tensor) -> torch.Tensor:
    """The sum of ``value`` over the processes of a distributed run (``value`` itself otherwise)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        value = value.clone()
        torch.distributed.all_reduce(value)
    return value


class PCModelMixin(PCTranscriptionMixin, PCDataMixin):
    """What both P&C ASR model classes share (see the module docstring); first in their bases."""

    pc_config_class: ClassVar[type[PCConfig]] = PCConfig

    def __init__(self, cfg: DictConfig, trainer: Any = None) -> None:
        with open_dict(cfg):
            cfg.pc = self.pc_config_class.section(cfg)
        nonfinite_policy(cfg)  # a bad model.nonfinite_loss is refused when the model is built, not at a NaN
        super().__init__(cfg=cfg, trainer=trainer)

    @classmethod
    def list_available_models(cls) -> list:
        """No pretrained P&C checkpoints: NeMo's stock names must not resolve to this class (``from_pretrained``)."""
        return []

    # Modes

    @property
    def main_mode_id(self) -> int:
        """The mode of the model's main output (a family's hook)."""
        raise NotImplementedError

    @property
    def mode_ids(self) -> tuple[int, ...]:
        """The modes ``transcribe`` can return: both, unless the main output is normalized (nothing then writes
        punctuated text)."""
        return (NORMALIZED_ID,) if self.main_mode_id == NORMALIZED_ID else (NORMALIZED_ID, PUNCTUATED_ID)

    @property
    def default_mode_id(self) -> int:
        """The id of :attr:`default_mode`: ``pc.default_mode`` when the model writes it, else :attr:`main_mode_id`.
        Read from the config at each call, so a changed ``pc.default_mode`` takes effect."""
        configured = self.cfg.pc.get("default_mode")
        if configured is not None and mode_id(configured, "pc.default_mode") in self.mode_ids:
            return mode_id(configured)
        return self.main_mode_id

    @property
    def default_mode(self) -> str:
        """The mode ``transcribe`` returns when none is asked for (see :attr:`default_mode_id`)."""
        return MODES[self.default_mode_id]

    def requested_mode(self, trcfg: Any) -> str:
        """The mode a transcribe config asks for (:func:`~nemo_pc.models.mixins.transcription.resolve_mode`).

        Raises:
            ValueError: an unknown mode, or one the model does not write; the message names the argument.
        """
        request = resolve_mode(trcfg, self.default_mode)
        missing = [MODES[mode] for mode in requested_ids(request) if mode not in self.mode_ids]
        if missing:
            raise ValueError(f"mode: this model writes only {MODES[self.main_mode_id]} text, not {missing[0]}")
        return request

    # Data

    def pc_data_defaults(self, name: str) -> dict:
        """The model's sample rate and ``pc.marks`` for data configs that leave them out, and for training data the
        top-level ``pc_fraction`` of older RNN-T checkpoints (now ``train_ds.pc_fraction``)."""
        rate = self.cfg.get("sample_rate", self.cfg.preprocessor.get("sample_rate", 16000))
        defaults = {"sample_rate": rate, "marks": self.cfg.pc.marks}
        if name == "train" and self.cfg.get("pc_fraction") is not None:
            defaults["pc_fraction"] = self.cfg.pc_fraction
        return defaults

    # Decoding

    def mode_decoding(self, mode: int, decoding_cfg: DictConfig):
        """The decoding object of one mode from its decoding config (a family's hook)."""
        raise NotImplementedError

    def decoded_mode_ids(self) -> tuple[int, ...]:
        """The modes that get a decoding of their own (every mode by default)."""
        return (NORMALIZED_ID, PUNCTUATED_ID)

    def setup_mode_decodings(self) -> None:
        """``self.decodings``: one decoding per mode from ``cfg.decoding``; the n-gram LM of that config reaches the
        mode ``pc.ngram_lm_mode`` only."""
        full, lm_mode = self.cfg.decoding, ngram_lm_mode(self.cfg.pc)
        self.decodings = {
            mode: self.mode_decoding(mode, decoding_cfg_for_mode(full, mode, lm_mode))
            for mode in self.decoded_mode_ids()
        }

    def change_decoding_strategy(self, decoding_cfg: DictConfig | None = None, verbose: bool = True) -> None:
        """As in NeMo, for the decoding of every mode."""
        super().change_decoding_strategy(decoding_cfg, verbose=verbose)
        self.setup_mode_decodings()

    # Training and validation

    def training_losses(self, batch: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor], Any]:
        """The loss of one batch, the family's own training logs, and what :meth:`training_batch_wer` needs
        (a family's hook)."""
        raise NotImplementedError

    def training_batch_wer(self, state: Any) -> torch.Tensor:
        """The WER of one training batch from what :meth:`training_losses` returned (a family's hook)."""
        raise NotImplementedError

    def _wer_due(self) -> bool:
        """NeMo's rule: the training WER every ``log_every_n_steps`` steps (every step without a trainer)."""
        if self._trainer is None:
            return True
        return (self._trainer.global_step + 1) % self._trainer.log_every_n_steps == 0

    def training_step(self, batch: Any, batch_nb: int) -> dict | None:
        """NeMo's ASR training step around :meth:`training_losses`: the AccessMixin registry is reset before and
        after, auxiliary losses (e.g. adapters') are added, a non-finite loss skips the step
        (:mod:`nemo_pc.parts.loss_guard`), and ``training_batch_wer`` is logged every ``log_every_n_steps``."""
        if AccessMixin.is_access_enabled(self.model_guid):
            AccessMixin.reset_registry(self)
        saved = norm_statistics(self)
        loss, family_logs, state = self.training_losses(batch)
        loss = self.add_auxiliary_losses(loss)
        if AccessMixin.is_access_enabled(self.model_guid):
            AccessMixin.reset_registry(self)
        if not loss_is_finite(loss, batch, global_step(self), nonfinite_policy(self.cfg), saved):
            return None  # Lightning skips the backward pass and the optimizer step
        logs = {"train_loss": loss, **family_logs}
        if self._optimizer is not None:
            logs["learning_rate"] = self._optimizer.param_groups[0]["lr"]
        if self._trainer is not None:
            logs["global_step"] = torch.tensor(self._trainer.global_step, dtype=torch.float32)
        if self._wer_due():
            logs["training_batch_wer"] = self.training_batch_wer(state)
        self.log_dict(logs)
        return {"loss": loss}

    def _epoch_end(self, outputs: list[dict], prefix: str, result: dict) -> dict:
        """WER, overall and per mode (every ``{prefix}_wer_num*`` key of the outputs), from errors and words summed
        over batches and processes; each ``{prefix}_loss_*`` averaged over batches. A mode with no reference words
        in the set (e.g. punctuated on a set whose transcripts carry no marks) gets no WER, rather than 0."""
        logs = result["log"]
        for key in sorted(outputs[0]):
            if key.startswith(f"{prefix}_wer_num"):
                suffix = key[len(f"{prefix}_wer_num") :]
                num = _reduce_sum(torch.stack([out[key] for out in outputs]).sum().float())
                denom = _reduce_sum(torch.stack([out[f"{prefix}_wer_denom{suffix}"] for out in outputs]).sum().float())
                if suffix and denom.item() == 0:
                    continue  # the same on every process: the sums are reduced over all of them
                logs[f"{prefix}_wer{suffix}"] = num / denom.clamp(min=1.0)
            elif key.startswith(f"{prefix}_loss_"):
                logs[key] = torch.stack([out[key].float() for out in outputs]).mean()
        return result

    def multi_validation_epoch_end(self, outputs: list[dict], dataloader_idx: int = 0) -> dict:
        """NeMo's, with errors and words summed over processes, overall and per mode, and each loss term."""
        return self._epoch_end(outputs, "val", super().multi_validation_epoch_end(outputs, dataloader_idx))

    def multi_test_epoch_end(self, outputs: list[dict], dataloader_idx: int = 0) -> dict:
        return self._epoch_end(outputs, "test", super().multi_test_epoch_end(outputs, dataloader_idx))
