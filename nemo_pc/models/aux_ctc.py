"""The CTC head of the hybrid RNNT-CTC P&C variant, on the normalized mode.

NeMo's hybrid model (``EncDecHybridRNNTCTCBPEModel``) adds a CTC decoder on the encoder, configured under
``aux_ctc``, and trains L = (1 − w) L_RNNT + w L_CTC. The P&C RNN-T does the same with the same keys, so a stock
hybrid checkpoint's ``aux_ctc`` and ``ctc_decoder`` weights load as they are (``nemo-pc adapt``). The CTC head learns
the normalized mode: a released hybrid model's CTC head writes normalized text, and the normalized targets exist for
every utterance. Transcription decodes the RNN-T heads (both modes); :meth:`AuxCTCMixin.ctc_transcripts` decodes the
CTC head's normalized text from encoder output.

Config keys (under ``aux_ctc``, NeMo's names):
    decoder: a ``ConvASRDecoder`` config (``feat_in``, ``num_classes`` and ``vocabulary`` are set by the model).
    ctc_loss_weight: w (default 0.3).
    ctc_reduction: as in NeMo (default ``mean_batch``).
    decoding: NeMo's CTC decoding config (default greedy).
"""

from __future__ import annotations

import torch
from nemo.collections.asr.losses.ctc import CTCLoss
from nemo.collections.asr.parts.submodules.ctc_decoding import CTCBPEDecoding
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

from nemo_pc.models.rnnt_pc_parts import ModeRows
from nemo_pc.parts.modes import NORMALIZED_ID


class AuxCTCMixin:
    """The ``aux_ctc`` head of :class:`~nemo_pc.models.EncDecRNNTPCBPEModel` (see the module docstring)."""

    ctc_decoder: torch.nn.Module | None

    def setup_aux_ctc(self) -> None:
        """Builds the CTC head, its loss and decoding from ``aux_ctc`` (nothing when the key is absent or null).

        Raises:
            ValueError: the model does not train the normalized mode.
        """
        self.ctc_decoder = None
        if not self.cfg.get("aux_ctc"):
            return
        if NORMALIZED_ID not in self.head_modes:
            raise ValueError("aux_ctc: the CTC head learns the normalized mode, which this model does not train")
        vocabulary = list(self.joint.vocabulary)
        with open_dict(self.cfg.aux_ctc):
            decoder = self.cfg.aux_ctc.decoder
            if not decoder.get("feat_in"):
                decoder.feat_in = self.encoder._feat_out
            decoder.vocabulary = ListConfig(vocabulary)
            decoder.num_classes = len(vocabulary)
            if self.cfg.aux_ctc.get("decoding") is None:
                self.cfg.aux_ctc.decoding = {"strategy": "greedy"}
        self.ctc_decoder = self.from_config_dict(self.cfg.aux_ctc.decoder)
        self.ctc_loss_weight = float(self.cfg.aux_ctc.get("ctc_loss_weight", 0.3))
        self.ctc_loss = CTCLoss(
            num_classes=self.ctc_decoder.num_classes_with_blank - 1,
            zero_infinity=True,
            reduction=self.cfg.aux_ctc.get("ctc_reduction", "mean_batch"),
        )
        self.ctc_decoding = CTCBPEDecoding(self.cfg.aux_ctc.decoding, tokenizer=self.tokenizer)

    def with_aux_ctc(
        self, loss: torch.Tensor, encoded: torch.Tensor, encoded_len: torch.Tensor, rows: ModeRows
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(1 − w) loss + w L_CTC`` over the normalized rows, and L_CTC (``loss`` and None without a CTC head)."""
        if self.ctc_decoder is None:
            return loss, None
        keep = torch.nonzero(rows.active & (rows.modes == NORMALIZED_ID)).squeeze(1)
        log_probs = self.ctc_decoder(encoder_output=encoded.index_select(0, keep))
        ctc = self.ctc_loss(
            log_probs=log_probs,
            targets=rows.targets.index_select(0, keep),
            input_lengths=encoded_len.index_select(0, keep),
            target_lengths=rows.target_len.index_select(0, keep),
        )
        return (1.0 - self.ctc_loss_weight) * loss + self.ctc_loss_weight * ctc, ctc

    def ctc_transcripts(self, encoded: torch.Tensor, encoded_len: torch.Tensor) -> list:
        """The CTC head's greedy (or configured) normalized transcripts of encoder output ``(B, D, T)``."""
        if self.ctc_decoder is None:
            raise ValueError("aux_ctc: this model has no CTC head")
        log_probs = self.ctc_decoder(encoder_output=encoded)
        return self.ctc_decoding.ctc_decoder_predictions_tensor(log_probs, decoder_lengths=encoded_len)

    def change_aux_ctc_vocabulary(self, decoding_cfg: DictConfig | None = None) -> None:
        """Rebuilds the CTC head for the current tokenizer (after ``change_vocabulary``), keeping its config."""
        if self.ctc_decoder is None:
            return
        config = OmegaConf.create(OmegaConf.to_container(self.cfg.aux_ctc, resolve=True))
        with open_dict(self.cfg):
            self.cfg.aux_ctc = config
            if decoding_cfg is not None:
                self.cfg.aux_ctc.decoding = decoding_cfg
        self.setup_aux_ctc()
