"""Joint punctuated + normalized RNN-T (paper 000): one NeMo model class; every variant is a config.

Variants (``configs/rnnt/variant/``, each with either predictor of ``configs/rnnt/predictor/``):
    * ``single``: one predictor + joint trained on one target (``pc.target``), the baselines of Table I.
    * ``dual``: a predictor + joint pair per mode on the shared encoder, L = L_N + L_P (§III-A).
    * ``conditioned``: one predictor with a mode embedding, L = (1 − α) L_N + α L_P (§III-C), LSTM or stateless.

Any variant is a TDT model with ``loss=tdt`` (``configs/rnnt/loss/tdt.yaml``: ``tdt_kwargs``, the joint's
duration outputs and TDT decoding), as in NeMo.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from lightning.pytorch import Trainer
from nemo.collections.asr.models import EncDecRNNTBPEModel
from nemo.collections.asr.parts.submodules.rnnt_decoding import RNNTBPEDecoding
from nemo.collections.asr.parts.utils.timestamp_utils import process_timestamp_outputs
from nemo.core.classes.mixins import AccessMixin
from omegaconf import DictConfig, OmegaConf
from torch.utils.data import DataLoader

from nemo_pc.data.datasets.pc_batch import PCBatch
from nemo_pc.losses import ModeWeightedRNNTLoss
from nemo_pc.losses.mode_weighted import AUTO, SCAN, TDT_SCAN, resolve_loss_name
from nemo_pc.metrics.mode_wer import MultiModeWER
from nemo_pc.models.aux_ctc import AuxCTCMixin
from nemo_pc.models.rnnt_pc_parts import ModeRows, build_mode_rows
from nemo_pc.models.vocabulary import carry_rows, pieces, row_sources
from nemo_pc.modules import DualRNNTDecoder, DualRNNTJoint, ModeConditioningMixin, ModeDecoderJoint
from nemo_pc.parts.lm_fusion import decoding_cfg_for_mode, ngram_lm_mode
from nemo_pc.parts.loss_guard import global_step, loss_is_finite, nonfinite_policy, norm_statistics
from nemo_pc.parts.mixins.pc_data import PCDataMixin
from nemo_pc.parts.mixins.transcription import BOTH, PCTranscribeConfig, PCTranscriptionMixin, resolve_mode
from nemo_pc.parts.modes import MODES, mode_id
from nemo_pc.parts.text import DEFAULT_MARKS, normalize

DECODER_KINDS = ("single", "dual", "conditioned")


def _reduce_sum(value: torch.Tensor) -> torch.Tensor:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        value = value.clone()
        torch.distributed.all_reduce(value)
    return value


class EncDecRNNTPCBPEModel(PCTranscriptionMixin, PCDataMixin, AuxCTCMixin, EncDecRNNTBPEModel):
    """RNN-T with normalized (mode 0) and punctuated (mode 1) output from one shared encoder.

    Config keys, besides those of :class:`EncDecRNNTBPEModel`:
        pc.decoders: ``single`` | ``dual`` | ``conditioned``; must match ``decoder``/``joint`` (dual needs
            :class:`~nemo_pc.modules.DualRNNTDecoder` + :class:`~nemo_pc.modules.DualRNNTJoint`, conditioned a
            mode-conditioned predictor).
        pc.target: the mode a ``single`` model is trained on (``normalized`` | ``punctuated``).
        pc.alpha: α of the conditioned loss (default 0.5).
        pc.default_mode: the mode ``transcribe`` returns when none is asked for (``punctuated`` by default).
        aux_ctc: a CTC head on the normalized mode (the hybrid RNNT-CTC variant, NeMo's keys;
            :mod:`nemo_pc.models.aux_ctc`).
        pc.ngram_lm_mode: the mode whose decoding fuses the n-gram LM of NeMo's decoding config
            (``decoding.greedy.ngram_lm_model`` / ``decoding.beam.ngram_lm_model``), default ``punctuated``; the
            other mode decodes without it (:mod:`nemo_pc.parts.lm_fusion`).
        train_ds / validation_ds / test_ds: :func:`nemo_pc.data.datasets.pc_dataset.pc_dataloader_from_config` configs
            (``pc_fraction`` keeps P labels on a share of the training utterances; ``use_lhotse: true`` reads
            shar, tarred audio or manifests with NeMo's lhotse loader), set up by
            :class:`~nemo_pc.parts.mixins.pc_data.PCDataMixin`.
    """

    def __init__(self, cfg: DictConfig, trainer: Trainer | None = None) -> None:
        # NeMo's fused joint computes its own loss (joint.set_loss runs before this class sets the mode-weighted
        # one), so the mode weights and masks would be silently skipped.
        if any(
            OmegaConf.select(cfg, key, default=False) for key in ("joint.fuse_loss_wer", "joint.head.fuse_loss_wer")
        ):
            raise ValueError("joint.fuse_loss_wer: not supported by P&C RNN-T models (it bypasses the mode-weighted "
                             "loss); set model.joint.fuse_loss_wer=false")  # fmt: skip
        super().__init__(cfg=cfg, trainer=trainer)
        self.pc_kind, self.head_modes, weights = self._read_pc_config()
        self.loss = self._build_loss(weights, trainer)
        self.setup_aux_ctc()
        self._setup_mode_decodings(self.cfg.decoding)

    @classmethod
    def list_available_models(cls) -> list:
        """No pretrained P&C checkpoints: NeMo's stock names must not resolve to this class (``from_pretrained``)."""
        return []

    def extract_rnnt_loss_cfg(self, cfg: DictConfig | None):
        """NeMo's loss config reader; nemo_pc's ``scan``, ``tdt_scan`` and ``auto`` read as ``default`` (``tdt``
        when the config has ``tdt_kwargs``) here, so that NeMo's constructor builds a loss it knows (and sets the
        TDT durations of the decoding), which ``__init__`` then replaces."""
        if cfg is not None and cfg.get("loss_name") in (SCAN, TDT_SCAN, AUTO):
            if cfg.get("tdt_kwargs") is not None:
                return "tdt", cfg.tdt_kwargs
            return "default", {}
        return super().extract_rnnt_loss_cfg(cfg)

    def _build_loss(self, weights: dict[int, float], trainer: Trainer | None) -> ModeWeightedRNNTLoss:
        loss_cfg = self.cfg.get("loss") or {}
        loss_name, loss_kwargs = self.extract_rnnt_loss_cfg(self.cfg.get("loss", None))
        extra = self.joint.num_extra_outputs
        self.loss_name = resolve_loss_name(loss_cfg.get("loss_name"), trainer, tdt=loss_name == "tdt")
        if self.loss_name in (SCAN, TDT_SCAN):
            loss_name = self.loss_name
        if extra and self.loss_name not in ("tdt", TDT_SCAN):
            raise ValueError(f"joint.num_extra_outputs={extra} (TDT durations) needs loss.loss_name=tdt, tdt_scan "
                             f"or auto with loss.tdt_kwargs; got {self.loss_name}")  # fmt: skip
        tokens = self.joint.num_classes_with_blank - 1 - extra
        return ModeWeightedRNNTLoss(tokens, weights, loss_name, loss_kwargs if loss_name != SCAN else None)

    def _read_pc_config(self) -> tuple[str, list[int], dict[int, float]]:
        pc = self.cfg.get("pc") or {}
        kind = pc.get("decoders", "conditioned")
        if kind not in DECODER_KINDS:
            raise ValueError(f"pc.decoders must be one of {DECODER_KINDS}, got {kind!r}")
        dual = isinstance(self.decoder, DualRNNTDecoder) and isinstance(self.joint, DualRNNTJoint)
        conditioned = isinstance(self.decoder, ModeConditioningMixin)
        expected = {"single": not dual and not conditioned, "dual": dual, "conditioned": conditioned}
        if not expected[kind]:
            raise ValueError(f"pc.decoders={kind} does not match decoder {type(self.decoder).__name__}")
        if kind == "single":
            target = mode_id(pc.get("target", "punctuated"), "pc.target")
            return kind, [target], {target: 1.0}
        if kind == "dual":
            return kind, [0, 1], {0: 1.0, 1: 1.0}
        alpha = float(pc.get("alpha", 0.5))
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"pc.alpha must be in [0, 1], got {alpha}")
        return kind, [0, 1], {0: 1.0 - alpha, 1: alpha}

    @property
    def default_mode(self) -> str:
        """The mode name ``transcribe`` returns by default (``pc.default_mode``, else the trained target)."""
        pc = self.cfg.get("pc") or {}
        fallback = MODES[1] if 1 in self.head_modes else MODES[self.head_modes[0]]
        return MODES[mode_id(pc.get("default_mode", fallback), "pc.default_mode")]

    @property
    def default_mode_id(self) -> int:
        mode = mode_id(self.default_mode)
        return mode if mode in self.head_modes else self.head_modes[0]

    def modules_for_mode(self, mode: int) -> tuple[torch.nn.Module, torch.nn.Module]:
        """The predictor and joint that decode ``mode``: a 2-Decoder model's pair of that mode, a conditioned
        predictor's view bound to it, or a single model's own modules."""
        if self.pc_kind == "dual":
            return self.decoder.for_mode(mode), self.joint.for_mode(mode)
        if self.pc_kind == "conditioned":
            return self.decoder.for_mode(mode), self.joint
        return self.decoder, self.joint

    def _setup_mode_decodings(self, decoding_cfg: DictConfig) -> None:
        self.decodings = {}
        lm_mode = ngram_lm_mode(self.cfg.get("pc"))
        for mode in self.head_modes:
            decoder, joint = self.modules_for_mode(mode)
            self.decodings[mode] = RNNTBPEDecoding(
                decoding_cfg=decoding_cfg_for_mode(decoding_cfg, mode, lm_mode),
                decoder=decoder,
                joint=joint,
                tokenizer=self.tokenizer,
            )
        self.decoding = self.decodings[self.default_mode_id]
        self.wer = MultiModeWER(
            self.decodings,
            use_cer=self._cfg.get("use_cer", False),
            log_prediction=self._cfg.get("log_prediction", True),
        )

    def change_decoding_strategy(self, decoding_cfg: DictConfig | None = None, verbose: bool = True) -> None:
        """As in NeMo, for the decoding of every mode."""
        super().change_decoding_strategy(decoding_cfg, verbose=verbose)
        self._setup_mode_decodings(self.cfg.decoding)

    def change_vocabulary(
        self, new_tokenizer_dir: str | DictConfig, new_tokenizer_type: str, decoding_cfg: DictConfig | None = None
    ) -> None:
        """NeMo's ``change_vocabulary`` (what ``speech_to_text_finetune.py`` calls for a new tokenizer), keeping the
        P&C model: each piece the old tokenizer has keeps its predictor and joint rows, a new piece starts from its
        related pieces (:mod:`nemo_pc.models.vocabulary`) rather than from NeMo's re-initialised heads, and the
        mode-weighted loss, every mode's decoding and the ``aux_ctc`` head are rebuilt for the new vocabulary."""
        old_tokenizer, weights = self.tokenizer, dict(self.loss.mode_weights)
        old = {name: module.state_dict() for name, module in self._token_modules().items()}
        super().change_vocabulary(new_tokenizer_dir, new_tokenizer_type, decoding_cfg)
        self.loss = self._build_loss(weights, self._trainer)
        self.change_aux_ctc_vocabulary()
        rows = row_sources(old_tokenizer, pieces(self.tokenizer), self.cfg.get("marks") or DEFAULT_MARKS)
        for name, module in self._token_modules().items():
            carry_rows(module, old[name], rows, self.joint.num_extra_outputs if name == "joint" else 0)
        self._setup_mode_decodings(self.cfg.decoding)

    def _token_modules(self) -> dict[str, torch.nn.Module]:
        modules = {"decoder": self.decoder, "joint": self.joint}
        if self.ctc_decoder is not None:
            modules["ctc_decoder"] = self.ctc_decoder
        return modules

    # Training and validation: every utterance once per trained mode (a row), with its mode passed explicitly.

    def encode_rows(self, batch: PCBatch) -> tuple[torch.Tensor, torch.Tensor, ModeRows]:
        """Runs the encoder once on the batch's utterances and gathers its output to the batch's mode rows."""
        encoded, encoded_len = self.forward(input_signal=batch.audio, input_signal_length=batch.audio_len)
        rows = build_mode_rows(batch, self.head_modes)
        return encoded.index_select(0, rows.utt_index), encoded_len.index_select(0, rows.utt_index), rows

    def joint_scores(self, encoded: torch.Tensor, rows: ModeRows) -> torch.Tensor:
        """The joint's scores ``(R, T, U + 1, V + 1)`` of every row through the predictor and joint of its mode."""
        if self.pc_kind == "single":
            g, _, _ = self.decoder(targets=rows.targets, target_length=rows.target_len)
            return self.joint(encoder_outputs=encoded, decoder_outputs=g)
        g, _, _ = self.decoder(targets=rows.targets, target_length=rows.target_len, modes=rows.modes)
        if self.pc_kind == "dual":
            return self.joint(encoder_outputs=encoded, decoder_outputs=g, modes=rows.modes)
        return self.joint(encoder_outputs=encoded, decoder_outputs=g)

    def rows_loss(self, encoded: torch.Tensor, encoded_len: torch.Tensor, rows: ModeRows) -> tuple:
        """The mode-weighted RNN-T loss of the rows and each mode's term."""
        return self.loss(
            log_probs=self.joint_scores(encoded, rows),
            targets=rows.targets,
            input_lengths=encoded_len,
            target_lengths=rows.target_len,
            modes=rows.modes,
            active=rows.active,
        )

    def _update_wer(self, encoded: torch.Tensor, encoded_len: torch.Tensor, rows: ModeRows) -> None:
        self.wer.update(encoded, encoded_len, rows.targets, rows.target_len, modes=rows.modes, active=rows.active)

    def training_step(self, batch: PCBatch, batch_nb: int) -> dict | None:
        """NeMo's RNN-T training step (loss, auxiliary losses, logs, batch WER every ``log_every_n_steps``) over
        the mode rows of a :class:`PCBatch`; also logs each mode's loss term."""
        if AccessMixin.is_access_enabled(self.model_guid):
            AccessMixin.reset_registry(self)
        saved = norm_statistics(self)
        encoded, encoded_len, rows = self.encode_rows(batch)
        loss, terms = self.rows_loss(encoded, encoded_len, rows)
        loss, ctc = self.with_aux_ctc(loss, encoded, encoded_len, rows)
        loss = self.add_auxiliary_losses(loss)
        if AccessMixin.is_access_enabled(self.model_guid):
            AccessMixin.reset_registry(self)
        if not loss_is_finite(loss, batch, global_step(self), nonfinite_policy(self.cfg), saved):
            return None  # Lightning skips the backward pass and the optimizer step
        logs = {
            "train_loss": loss,
            "learning_rate": self._optimizer.param_groups[0]["lr"],
            "global_step": torch.tensor(self.trainer.global_step, dtype=torch.float32),
            **{f"train_loss_{MODES[mode]}": term for mode, term in terms.items()},
            **({"train_ctc_loss": ctc.detach()} if ctc is not None else {}),
        }
        if (self.trainer.global_step + 1) % self.trainer.log_every_n_steps == 0:
            self._update_wer(encoded, encoded_len, rows)
            _, scores, words = self.wer.compute()
            self.wer.reset()
            logs["training_batch_wer"] = scores.float() / words.clamp(min=1.0)
        self.log_dict(logs)
        if self._optim_normalize_joint_txu:
            self._optim_normalize_txu = [encoded_len.max(), rows.target_len.max()]
        return {"loss": loss}

    def validation_pass(self, batch: PCBatch, batch_idx: int, dataloader_idx: int = 0) -> dict:
        """Loss (when ``compute_eval_loss``) and WER, overall and per mode, of one batch's mode rows."""
        encoded, encoded_len, rows = self.encode_rows(batch)
        logs = {}
        if self.compute_eval_loss:
            loss, _ = self.rows_loss(encoded, encoded_len, rows)
            logs["val_loss"], _ = self.with_aux_ctc(loss, encoded, encoded_len, rows)
        self._update_wer(encoded, encoded_len, rows)
        wer, scores, words = self.wer.compute()
        self.wer.reset()
        logs.update(val_wer_num=scores, val_wer_denom=words, val_wer=wer)
        for mode, (mode_scores, mode_words) in self.wer.per_mode().items():
            logs[f"val_wer_num_{MODES[mode]}"] = mode_scores
            logs[f"val_wer_denom_{MODES[mode]}"] = mode_words
        self.log("global_step", torch.tensor(self.trainer.global_step, dtype=torch.float32))
        return logs

    def _epoch_end(self, outputs: list[dict], prefix: str, result: dict) -> dict:
        logs = result["log"]
        for suffix in ["", *(f"_{MODES[mode]}" for mode in self.head_modes)]:
            num = _reduce_sum(torch.stack([out[f"{prefix}_wer_num{suffix}"] for out in outputs]).sum().float())
            denom = _reduce_sum(torch.stack([out[f"{prefix}_wer_denom{suffix}"] for out in outputs]).sum().float())
            logs[f"{prefix}_wer{suffix}"] = num / denom.clamp(min=1.0)
        return result

    def multi_validation_epoch_end(self, outputs: list[dict], dataloader_idx: int = 0) -> dict:
        """Sums errors and words over batches and processes, overall and per mode."""
        return self._epoch_end(outputs, "val", super().multi_validation_epoch_end(outputs, dataloader_idx))

    def multi_test_epoch_end(self, outputs: list[dict], dataloader_idx: int = 0) -> dict:
        return self._epoch_end(outputs, "test", super().multi_test_epoch_end(outputs, dataloader_idx))

    # Transcription

    @torch.no_grad()
    def transcribe(
        self,
        audio: str | list[str] | np.ndarray | DataLoader,
        use_lhotse: bool = True,
        batch_size: int = 4,
        return_hypotheses: bool = False,
        partial_hypothesis: list | None = None,
        num_workers: int = 0,
        channel_selector: Any = None,
        augmentor: DictConfig | None = None,
        verbose: bool = True,
        timestamps: bool | None = None,
        override_config: PCTranscribeConfig | None = None,
        *,
        mode: str | None = None,
        style: str | None = None,
        **config_kwargs: Any,
    ) -> list | dict:
        """NeMo's ``transcribe`` (same positional arguments) with an output ``mode``: ``normalized``,
        ``punctuated`` or ``both`` (``style`` is an alias); see :mod:`nemo_pc.parts.mixins.transcription`.

        ``both`` runs the encoder once per batch, decodes once per mode and returns
        ``{"normalized": [...], "punctuated": [...]}``.

        Raises:
            ValueError: an unknown mode (the message names the argument).
            TypeError: a keyword argument that no transcribe config field has.
        """
        arguments = dict(use_lhotse=use_lhotse, batch_size=batch_size, return_hypotheses=return_hypotheses,
                         partial_hypothesis=partial_hypothesis, num_workers=num_workers,
                         channel_selector=channel_selector, augmentor=augmentor, verbose=verbose,
                         timestamps=timestamps)  # fmt: skip
        override_config = self.pc_transcribe_config(override_config, arguments, mode, style, config_kwargs)
        return super().transcribe(audio=audio, override_config=override_config)

    def _transcribe_output_processing(self, outputs: dict, trcfg: PCTranscribeConfig) -> list | dict:
        encoded, encoded_len = outputs.pop("encoded"), outputs.pop("encoded_len")
        requested = resolve_mode(trcfg, self.default_mode)
        names = MODES if requested == BOTH else (requested,)
        results = {name: self.decode_mode(encoded, encoded_len, mode_id(name), trcfg) for name in names}
        return results if requested == BOTH else results[requested]

    def decode_mode(self, encoded: torch.Tensor, encoded_len: torch.Tensor, mode: int, trcfg: Any = None) -> list:
        """Decodes encoder output in one mode with the current decoding strategy.

        A ``single`` model trained on punctuated text answers the normalized mode by normalizing its output.

        Raises:
            ValueError: the model cannot write the mode.
        """
        source = mode if mode in self.head_modes else 1
        if source not in self.head_modes:
            raise ValueError(f"mode: this model writes only {MODES[self.head_modes[0]]} text, not {MODES[mode]}")
        hyps = self.decodings[source].rnnt_decoder_predictions_tensor(
            encoded,
            encoded_len,
            return_hypotheses=getattr(trcfg, "return_hypotheses", False),
            partial_hypotheses=getattr(trcfg, "partial_hypothesis", None),
        )
        if source != mode:
            for hyp in hyps:
                hyp.text = normalize(hyp.text)
        if getattr(trcfg, "timestamps", None):
            hyps = process_timestamp_outputs(
                hyps, self.encoder.subsampling_factor, self.cfg["preprocessor"]["window_stride"]
            )
        return hyps

    # Export

    @property
    def decoder_joint(self) -> ModeDecoderJoint:
        """The exportable decoding step of every variant (every head), with the mode as an input; what NeMo's
        ``export`` writes as ``decoder_joint-*``. :func:`nemo_pc.pipelines.onnx_rnnt.export_for_onnxruntime` exports
        a subset of the heads."""
        return ModeDecoderJoint(self.decoder, self.joint)
