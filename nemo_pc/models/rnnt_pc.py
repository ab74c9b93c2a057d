"""Joint punctuated + normalized RNN-T (paper 000): one NeMo model class; every variant is a config.

Variants (``configs/rnnt/variant/``, each with either predictor of ``configs/rnnt/predictor/``):
    * ``single``: one predictor + joint trained on one target (``pc.target``), the baselines of Table I.
    * ``dual``: a predictor + joint pair per mode on the shared encoder, L = L_N + L_P (§III-A).
    * ``conditioned``: one predictor with a mode embedding, L = (1 − α) L_N + α L_P (§III-C), LSTM or stateless.

Any variant is a TDT model with ``loss=tdt`` (``configs/rnnt/loss/tdt.yaml``: ``tdt_kwargs``, the joint's
duration outputs and TDT decoding), as in NeMo.

The variant is what the ``decoder`` and ``joint`` modules are, and every variant answers one interface: the
predictor and joint take each row's mode (``modes=``) in training, and :meth:`EncDecRNNTPCBPEModel.decoder_for`
gives NeMo's decoding the predictor and joint of one mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from lightning.pytorch import Trainer
from nemo.collections.asr.models import EncDecRNNTBPEModel
from nemo.collections.asr.parts.submodules.rnnt_decoding import RNNTBPEDecoding
from nemo.collections.asr.parts.utils.timestamp_utils import process_timestamp_outputs
from omegaconf import DictConfig, OmegaConf

from nemo_pc.data.datasets.pc_batch import PCBatch
from nemo_pc.losses import ModeWeightedRNNTLoss
from nemo_pc.losses.mode_weighted import AUTO, SCAN, TDT_SCAN, resolve_loss_name
from nemo_pc.metrics.mode_wer import MultiModeWER
from nemo_pc.models.aux_ctc import AuxCTCMixin
from nemo_pc.models.mixins.pc_model import PCConfig, PCModelMixin
from nemo_pc.models.mixins.transcription import PCTranscribeConfig
from nemo_pc.models.rnnt_pc_parts import VARIANTS, ModeRows, build_mode_rows, mode_weights, sample_one_mode
from nemo_pc.models.vocabulary import carry_rows, pieces, row_sources
from nemo_pc.modules import ModeDecoderJoint
from nemo_pc.modules.dual import per_mode
from nemo_pc.parts.modes import MODES, NORMALIZED_ID, PUNCTUATED_ID, mode_id, requested_ids
from nemo_pc.parts.text import normalize


@dataclass
class RNNTPCConfig(PCConfig):
    """The RNN-T's ``model.pc`` keys: those of :class:`~nemo_pc.models.mixins.pc_model.PCConfig` and

    Attributes:
        alpha: α of the conditioned loss, L = (1 − α) L_N + α L_P.

    A config may also name its variant in ``pc.decoders`` (``single`` | ``dual`` | ``conditioned``, what the
    packaged configs and older checkpoints carry); the modules are the variant, and the name, when given, must match
    them (:func:`~nemo_pc.models.rnnt_pc_parts.mode_weights`).
    """

    alpha: float = 0.5

    @classmethod
    def check(cls, pc: DictConfig) -> None:
        if pc.get("decoders") is not None and pc.decoders not in VARIANTS:
            raise ValueError(f"pc.decoders must be one of {VARIANTS}, got {pc.decoders!r}")
        mode_id(pc.target, "pc.target")
        if not 0.0 <= float(pc.alpha) <= 1.0:
            raise ValueError(f"pc.alpha must be in [0, 1], got {pc.alpha}")
        super().check(pc)


class EncDecRNNTPCBPEModel(PCModelMixin, AuxCTCMixin, EncDecRNNTBPEModel):
    """RNN-T with normalized (mode 0) and punctuated (mode 1) output from one shared encoder.

    Config keys, besides those of :class:`EncDecRNNTBPEModel`:
        decoder / joint: the variant (``configs/rnnt/variant/``): :class:`~nemo_pc.modules.DualRNNTDecoder` +
            :class:`~nemo_pc.modules.DualRNNTJoint` (2-Decoder), a mode-conditioned predictor with NeMo's joint, or
            NeMo's predictor and joint (single).
        pc.decoders: optional, the variant's name; must match ``decoder``/``joint`` when given.
        pc.target: the mode a ``single`` model is trained on (``normalized`` | ``punctuated``).
        pc.alpha: α of the conditioned loss (default 0.5).
        pc.marks: the mark set of the punctuated targets (default ``.,?``; ``marks`` in older checkpoints).
        pc.default_mode: the mode ``transcribe`` returns when none is asked for (default: punctuated, unless the
            model writes normalized text only).
        aux_ctc: a CTC head on the normalized mode (the hybrid RNNT-CTC variant, NeMo's keys;
            :mod:`nemo_pc.models.aux_ctc`).
        pc.ngram_lm_mode: the mode whose decoding fuses the n-gram LM of NeMo's decoding config
            (``decoding.greedy.ngram_lm_model`` / ``decoding.beam.ngram_lm_model``), default ``punctuated``; the
            other mode decodes without it (:mod:`nemo_pc.parts.lm_fusion`).
        train_ds / validation_ds / test_ds: :func:`nemo_pc.data.datasets.pc_dataset.pc_dataloader_from_config` configs
            (``train_ds.pc_fraction`` keeps P labels on a share of the training utterances; ``use_lhotse: true``
            reads shar, tarred audio or manifests with NeMo's lhotse loader), set up by
            :class:`~nemo_pc.models.mixins.pc_data.PCDataMixin`.

    The ``pc`` section, the modes, each mode's decoding, the training step and the epoch ends are those of
    :class:`~nemo_pc.models.mixins.pc_model.PCModelMixin`.
    """

    pc_config_class = RNNTPCConfig

    def __init__(self, cfg: DictConfig, trainer: Trainer | None = None) -> None:
        # NeMo's fused joint computes its own loss (joint.set_loss runs before this class sets the mode-weighted
        # one), so the mode weights and masks would be silently skipped.
        if any(
            OmegaConf.select(cfg, key, default=False) for key in ("joint.fuse_loss_wer", "joint.head.fuse_loss_wer")
        ):
            raise ValueError(
                "joint.fuse_loss_wer: not supported by P&C RNN-T models (it bypasses the mode-weighted "
                "loss); set model.joint.fuse_loss_wer=false"
            )
        super().__init__(cfg=cfg, trainer=trainer)
        weights = mode_weights(self.decoder, self.joint, self.cfg.pc)
        self.head_modes = list(weights)
        self.loss = self._build_loss(weights, trainer)
        self.setup_aux_ctc()
        self.setup_mode_decodings()

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
            raise ValueError(
                f"joint.num_extra_outputs={extra} (TDT durations) needs loss.loss_name=tdt, tdt_scan "
                f"or auto with loss.tdt_kwargs; got {self.loss_name}"
            )
        tokens = self.joint.num_classes_with_blank - 1 - extra
        return ModeWeightedRNNTLoss(tokens, weights, loss_name, loss_kwargs if loss_name != SCAN else None)

    @property
    def main_mode_id(self) -> int:
        """Punctuated, unless the model is trained on normalized text only."""
        return PUNCTUATED_ID if PUNCTUATED_ID in self.head_modes else NORMALIZED_ID

    def source_mode(self, mode: int) -> int:
        """The head that writes ``mode``: its own, or the punctuated one (normalized by the text rules) for a
        model trained on punctuated text only."""
        return mode if mode in self.head_modes else PUNCTUATED_ID

    def decoder_for(self, mode: int) -> tuple[Any, Any]:
        """The predictor and joint that decode ``mode``: a 2-Decoder model's pair of that mode, a conditioned
        predictor bound to it (:class:`~nemo_pc.modules.mode_conditioning.ModeBoundPredictor`) with the shared
        joint, or a single model's own modules."""
        return per_mode(self.decoder).for_mode(mode), per_mode(self.joint).for_mode(mode)

    def decoded_mode_ids(self) -> tuple[int, ...]:
        """The modes with a head of their own."""
        return tuple(self.head_modes)

    def pretrain_predictor_lm(self, cfg: DictConfig | dict | None = None, progress=None) -> dict | None:
        """Trains the predictor on text alone as a next-piece LM of each mode the model learns
        (:mod:`nemo_pc.models.predictor_lm`), before training on speech; ``cfg`` defaults to
        ``model.predictor_lm``. Returns the run's record (with the text's line counts), or ``None`` when the config
        names no text or no steps."""
        from nemo_pc.models.predictor_lm import DEFAULTS, pretrain_predictor, read_lm_text

        given = cfg if cfg is not None else self.cfg.get("predictor_lm")
        options = DEFAULTS | dict(OmegaConf.to_container(given) if isinstance(given, DictConfig) else given or {})
        unknown = sorted(set(options) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"predictor_lm: unknown key(s) {unknown}; known: {sorted(DEFAULTS)}")
        if not options["text"] or not options["steps"]:
            return None
        from nemo.utils import logging

        tokens, counts = read_lm_text(
            options["text"], self.tokenizer, self.cfg.pc.marks, options["max_lines"], options["max_tokens"]
        )
        logging.info(f"predictor LM: {options['steps']} steps on {counts['lines']} lines of {options['text']}")
        record = pretrain_predictor(
            self,
            tokens,
            int(options["steps"]),
            batch_size=int(options["batch_size"]),
            lr=float(options["lr"]),
            seed=int(options["seed"]),
            modes=tuple(self.head_modes),
            progress=progress,
        )
        logging.info(f"predictor LM: loss {record['first_loss']} -> {record['last_loss']} in {record['seconds']} s")
        return record | {"text": str(options["text"]), **counts}

    def mode_decoding(self, mode: int, decoding_cfg: DictConfig) -> RNNTBPEDecoding:
        """NeMo's RNN-T decoding on the predictor and joint of ``mode``."""
        decoder, joint = self.decoder_for(mode)
        return RNNTBPEDecoding(decoding_cfg=decoding_cfg, decoder=decoder, joint=joint, tokenizer=self.tokenizer)

    def setup_mode_decodings(self) -> None:
        """Every mode's decoding; ``self.decoding`` (what NeMo's own calls use, e.g. ``conformer_stream_step``) is
        the default mode's head's, and the WER scores each mode with its own."""
        super().setup_mode_decodings()
        self.decoding = self.decodings[self.source_mode(self.default_mode_id)]
        self.wer = MultiModeWER(
            self.decodings,
            use_cer=self._cfg.get("use_cer", False),
            log_prediction=self._cfg.get("log_prediction", True),
        )

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
        rows = row_sources(old_tokenizer, pieces(self.tokenizer), self.cfg.pc.marks)
        for name, module in self._token_modules().items():
            carry_rows(module, old[name], rows, self.joint.num_extra_outputs if name == "joint" else 0)
        self.setup_mode_decodings()

    def _token_modules(self) -> dict[str, torch.nn.Module]:
        modules = {"decoder": self.decoder, "joint": self.joint}
        if self.ctc_decoder is not None:
            modules["ctc_decoder"] = self.ctc_decoder
        return modules

    # Training and validation: every utterance once per trained mode (a row), with its mode passed explicitly.

    def encode_rows(self, batch: PCBatch) -> tuple[torch.Tensor, torch.Tensor, ModeRows]:
        """Runs the encoder once on the batch's utterances and gathers its output to the batch's mode rows (in
        training with ``pc.sample_modes``, one row per utterance, :func:`sample_one_mode`)."""
        encoded, encoded_len = self.forward(input_signal=batch.audio, input_signal_length=batch.audio_len)
        rows = build_mode_rows(batch, self.head_modes)
        if self.training and self.cfg.pc.get("sample_modes", False):
            rows = sample_one_mode(rows)  # one mode per utterance and step: half the joint's rows
        return encoded.index_select(0, rows.utt_index), encoded_len.index_select(0, rows.utt_index), rows

    def joint_scores(self, encoded: torch.Tensor, rows: ModeRows) -> torch.Tensor:
        """The joint's scores ``(R, T, U + 1, V + 1)`` of every row through the predictor and joint of its mode."""
        g, _, _ = per_mode(self.decoder)(targets=rows.targets, target_length=rows.target_len, modes=rows.modes)
        return per_mode(self.joint)(encoder_outputs=encoded, decoder_outputs=g, modes=rows.modes)

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

    def training_losses(self, batch: PCBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor], tuple]:
        """The loss over the mode rows of a :class:`PCBatch` (with the ``aux_ctc`` term) and each mode's term."""
        encoded, encoded_len, rows = self.encode_rows(batch)
        loss, terms = self.rows_loss(encoded, encoded_len, rows)
        loss, ctc = self.with_aux_ctc(loss, encoded, encoded_len, rows)
        logs = {f"train_loss_{MODES[mode]}": term for mode, term in terms.items()}
        if ctc is not None:
            logs["train_ctc_loss"] = ctc.detach()
        if self._optim_normalize_joint_txu:
            self._optim_normalize_txu = [encoded_len.max(), rows.target_len.max()]
        return loss, logs, (encoded, encoded_len, rows)

    def training_batch_wer(self, state: tuple) -> torch.Tensor:
        """The WER of one training batch's mode rows, each scored with its mode's decoding."""
        self._update_wer(*state)
        wer, _, _ = self.wer.compute()
        self.wer.reset()
        return wer

    def validation_pass(self, batch: PCBatch, batch_idx: int, dataloader_idx: int = 0) -> dict:
        """Loss and each mode's loss term (when ``compute_eval_loss``) and WER, overall and per mode, of one
        batch's mode rows."""
        encoded, encoded_len, rows = self.encode_rows(batch)
        logs = {}
        if self.compute_eval_loss:
            loss, terms = self.rows_loss(encoded, encoded_len, rows)
            logs["val_loss"], _ = self.with_aux_ctc(loss, encoded, encoded_len, rows)
            logs.update({f"val_loss_{MODES[mode]}": term.detach() for mode, term in terms.items()})
        self._update_wer(encoded, encoded_len, rows)
        wer, scores, words = self.wer.compute()
        logs.update(val_wer_num=scores, val_wer_denom=words, val_wer=wer)
        for mode, (mode_scores, mode_words) in self.wer.per_mode().items():
            logs[f"val_wer_num_{MODES[mode]}"] = mode_scores
            logs[f"val_wer_denom_{MODES[mode]}"] = mode_words
        self.wer.reset()
        self.log("global_step", torch.tensor(self.trainer.global_step, dtype=torch.float32))
        return logs

    # Transcription

    def _transcribe_output_processing(self, outputs: dict, trcfg: PCTranscribeConfig) -> list | dict:
        encoded, encoded_len = outputs.pop("encoded"), outputs.pop("encoded_len")
        modes = requested_ids(self.requested_mode(trcfg))
        results = {MODES[mode]: self.decode_mode(encoded, encoded_len, mode, trcfg) for mode in modes}
        return results if len(results) > 1 else results[MODES[modes[0]]]

    def decode_mode(self, encoded: torch.Tensor, encoded_len: torch.Tensor, mode: int, trcfg: Any = None) -> list:
        """Decodes encoder output in one mode with the current decoding strategy.

        A ``single`` model trained on punctuated text answers the normalized mode by normalizing its output.

        Raises:
            ValueError: the model cannot write the mode.
        """
        source = self.source_mode(mode)
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
