"""The CTC heads of the P&C attention encoder-decoder (:class:`~nemo_pc.models.EncDecAEDPCModel`): papers/001's
auxiliary CTC, and the punctuated CTC model's heads trained on the AED's encoder as it trains.

``aux_ctc`` configures them (null: none):
    ctc_loss_weight: w of L = (1 - w) CE + w L_CTC (papers/001: 0.2).
    ctc_reduction: NeMo's CTC reduction of the head on the encoder's output (``mean_volume``: per target token).
    tokenizer.dir: the heads' SentencePiece (a ``.nemo`` carries its model file).
    decoder: NeMo's ``ConvASRDecoder`` (sizes filled in from the encoder and the tokenizer).
    target: what the head on the encoder's output learns: ``normalized`` (papers/001's auxiliary CTC, the default)
        or ``punctuated`` (the punctuated CTC model's main head, papers/004; utterances without a punctuated
        transcript do not count in it).
    inter: ``{layer, weight}``: a normalized head on the state after ``layer`` encoder blocks (papers/004's
        intermediate CTC), read as the CTC model's ``inter_decoder`` reads it; L_CTC = (1 - weight) L_main +
        weight L_inter. Null or absent: no such head.

With ``target: punctuated`` and an ``inter`` head the AED carries exactly the heads of the ``ctc`` family's ``inter``
variant on a Whisper encoder: :mod:`nemo_pc.models.aed_ctc_export` writes them, with the encoder, as that CTC model.
Their own learning rate is NeMo's ``optim_param_groups`` (``ctc_decoder``, ``ctc_inter_decoder``).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch
from nemo.collections.asr.losses.ctc import CTCLoss
from nemo.collections.common.tokenizers import SentencePieceTokenizer
from omegaconf import open_dict

from nemo_pc.modules.style_encoder import LayerTaps, to_decoder_input
from nemo_pc.parts.modes import NORMALIZED, PUNCTUATED

CTC_TARGETS = (NORMALIZED, PUNCTUATED)


class AEDCTCHeadsMixin:
    """``aux_ctc`` of the AED: the heads, their loss (:meth:`ctc_term`) and the normalized head's log-probabilities
    (:meth:`normalized_ctc_log_probs`). The model's :meth:`encode` runs the encoder inside :meth:`ctc_taps`."""

    def setup_aux_ctc(self) -> None:
        """Builds the heads, their tokenizer and losses from ``aux_ctc`` (nothing when it is absent or null).

        Raises:
            ValueError: ``aux_ctc.target`` not one of :data:`CTC_TARGETS`, an ``inter.layer`` outside ``[1, blocks -
                1]`` or an ``inter.weight`` outside ``(0, 1)``.
        """
        self.ctc_decoder, self.ctc_inter_decoder, self.ctc_tokenizer, self.ctc_loss_weight = None, None, None, 0.0
        self.ctc_target, self.ctc_inter_layer, self.ctc_inter_weight, self._ctc_taps = NORMALIZED, None, 0.0, None
        aux = self.cfg.get("aux_ctc")
        if not aux:
            return
        target = aux.get("target") or NORMALIZED
        if target not in CTC_TARGETS:
            raise ValueError(f"aux_ctc.target must be one of {CTC_TARGETS}, got {target!r}")
        with open_dict(aux):
            if not aux.tokenizer.get("model_path"):
                aux.tokenizer.model_path = str(Path(aux.tokenizer.dir) / "tokenizer.model")
            model_path = self.register_artifact("aux_ctc.tokenizer.model_path", aux.tokenizer.model_path)
            self.ctc_tokenizer = SentencePieceTokenizer(model_path=model_path)
            aux.decoder.feat_in = self.encoder._feat_out
            aux.decoder.num_classes = self.ctc_tokenizer.vocab_size
            aux.decoder.vocabulary = list(self.ctc_tokenizer.vocab)
        self.ctc_target = target
        self.ctc_decoder = self.from_config_dict(aux.decoder)
        self.ctc_loss_weight = float(aux.get("ctc_loss_weight", 0.2))
        self.ctc_loss = CTCLoss(
            num_classes=self.ctc_tokenizer.vocab_size,
            zero_infinity=True,
            reduction=aux.get("ctc_reduction", "mean_volume"),
        )
        inter = aux.get("inter")
        if inter:
            self._setup_inter_head(inter, aux.decoder)

    def _setup_inter_head(self, inter, decoder_cfg) -> None:
        layers = self.encoder.layers
        layer, weight = int(inter.layer), float(inter.weight)
        if not 1 <= layer < len(layers):
            raise ValueError(
                f"aux_ctc.inter.layer must be in [1, {len(layers) - 1}] for {len(layers)} blocks, got {layer}"
            )
        if not 0.0 < weight < 1.0:
            raise ValueError(f"aux_ctc.inter.weight must be in (0, 1), got {weight}")
        self.ctc_inter_layer, self.ctc_inter_weight = layer, weight
        self.ctc_inter_decoder = self.from_config_dict(decoder_cfg)
        self._ctc_taps = LayerTaps(layers, [layer])

    def ctc_taps(self) -> contextlib.AbstractContextManager:
        """The block the encoder runs in: it records the intermediate head's layer input when there is one."""
        return self._ctc_taps if self._ctc_taps is not None else contextlib.nullcontext()

    def _ctc_targets(self, batch, tokens: torch.Tensor, lengths: torch.Tensor, device) -> tuple:
        """A batch's texts (Whisper's pieces) re-encoded in the heads' SentencePiece: ``(targets, lengths)``."""
        texts = [self.tokenizer.ids_to_text(tokens[i, : lengths[i]].tolist()) for i in range(tokens.shape[0])]
        ids = [self.ctc_tokenizer.text_to_ids(text) for text in texts]
        target_len = torch.tensor([len(t) for t in ids], device=device)
        padded = torch.zeros(len(ids), max(1, int(target_len.max())), dtype=torch.long, device=device)
        for row, target in enumerate(ids):
            padded[row, : len(target)] = torch.tensor(target, device=device)
        return padded, target_len

    def _normalized_term(self, log_probs: torch.Tensor, encoded_len: torch.Tensor, batch) -> torch.Tensor:
        targets, target_len = self._ctc_targets(batch, batch.tokens_n, batch.tokens_n_len, log_probs.device)
        return self.ctc_loss(
            log_probs=log_probs, targets=targets, input_lengths=encoded_len, target_lengths=target_len
        )

    def _punctuated_term(self, log_probs: torch.Tensor, encoded_len: torch.Tensor, batch) -> torch.Tensor:
        """The punctuated head's loss per target token over the utterances that have a punctuated transcript (a zero
        that keeps the graph when none has)."""
        targets, target_len = self._ctc_targets(batch, batch.tokens_p, batch.tokens_p_len, log_probs.device)
        per_utt = torch.nn.functional.ctc_loss(
            log_probs.transpose(0, 1),
            targets,
            encoded_len,
            target_len,
            blank=self.ctc_tokenizer.vocab_size,
            reduction="none",
            zero_infinity=True,
        )
        mask = batch.p_mask.to(per_utt.device, per_utt.dtype)
        return (per_utt * mask).sum() / (target_len.to(per_utt.dtype) * mask).sum().clamp(min=1.0)

    def ctc_term(self, encoded: torch.Tensor, encoded_len: torch.Tensor, batch) -> tuple[torch.Tensor | None, dict]:
        """L_CTC of a batch (None without heads) and each head's loss to log. ``encoded`` must come from
        :meth:`encode` of the same batch (the intermediate head reads what its taps recorded)."""
        if self.ctc_decoder is None:
            return None, {}
        log_probs = self.ctc_decoder(encoder_output=encoded)
        if self.ctc_target == PUNCTUATED:
            main = self._punctuated_term(log_probs, encoded_len, batch)
        else:
            main = self._normalized_term(log_probs, encoded_len, batch)
        if self.ctc_inter_decoder is None:
            return main, {"ctc_loss": main.detach()}
        inter = self._normalized_term(self.inter_ctc_log_probs(), encoded_len, batch)
        loss = (1.0 - self.ctc_inter_weight) * main + self.ctc_inter_weight * inter
        return loss, {"ctc_loss": loss.detach(), "ctc_main_loss": main.detach(), "ctc_inter_loss": inter.detach()}

    def inter_ctc_log_probs(self) -> torch.Tensor:
        """The intermediate head's log-probabilities on the state the taps recorded in the last :meth:`encode`."""
        state, _ = self._ctc_taps.state(self.ctc_inter_layer)
        return self.ctc_inter_decoder(encoder_output=to_decoder_input(state, self.encoder.out_proj))

    def normalized_ctc_log_probs(self, encoded: torch.Tensor) -> torch.Tensor | None:
        """Log-probabilities of the head that learns the normalized text (the main one, or the intermediate one
        beside a punctuated main head) for ``encoded`` of the last :meth:`encode`; None when no head learns it."""
        if self.ctc_decoder is None:
            return None
        if self.ctc_target == NORMALIZED:
            return self.ctc_decoder(encoder_output=encoded)
        if self.ctc_inter_decoder is None:
            return None
        return self.inter_ctc_log_probs()
