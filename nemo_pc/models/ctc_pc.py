"""Punctuated CTC with an intermediate normalized CTC (papers/004) and multi-style transcription (papers/001)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from lightning.pytorch import Trainer
from nemo.collections.asr.losses.ctc import CTCLoss
from nemo.collections.asr.models.ctc_bpe_models import EncDecCTCModelBPE
from nemo.collections.asr.parts.mixins.transcription import TranscribeConfig
from nemo.collections.asr.parts.submodules.ctc_decoding import CTCBPEDecoding
from nemo.utils import logging
from omegaconf import DictConfig, OmegaConf
from torch import nn

from nemo_pc.data.datasets.pc_batch import PCBatch
from nemo_pc.data.datasets.style_dataset import check_style_tokenizer
from nemo_pc.metrics.mode_wer import text_errors
from nemo_pc.models.ctc_heads import CTCHead, ctc_heads
from nemo_pc.models.mixins.pc_model import PCConfig, PCModelMixin
from nemo_pc.models.vocabulary import carry_rows, pieces, row_sources
from nemo_pc.modules.style_encoder import LayerTaps, StyleBranch, StyleEmbedding, to_decoder_input
from nemo_pc.parts.lm_fusion import has_ngram_lm, without_ngram_lm
from nemo_pc.parts.modes import MODES, NORMALIZED, NORMALIZED_ID, PUNCTUATED, requested_ids
from nemo_pc.parts.styles import check_format, parse_mixed

TARGETS = ("punctuated", "normalized", "mixed")


@dataclass
class InterConfig:
    """``pc.inter``: the intermediate normalized CTC of papers/004."""

    weight: float = 0.0
    layer: int | None = None
    transcribe: bool = False


@dataclass
class StyleLayersConfig:
    """``pc.style_layers``: the copied top layers of papers/001."""

    branch_layer: int | None = None
    weight: float = 1.0


@dataclass
class StyleEmbeddingConfig:
    """``pc.style_embedding``: the one-hot style input of papers/001."""

    layers: list[int] = field(default_factory=list)
    weight: float = 1.0


WHISPER_TOKENIZER = "whisper"
"""``tokenizer.type`` of a Whisper subset (:mod:`nemo_pc.data.tokenizers.whisper_subset`)."""


@dataclass
class CTCPCConfig(PCConfig):
    """The CTC's ``model.pc`` keys: those of :class:`~nemo_pc.models.mixins.pc_model.PCConfig` and the ones
    :class:`EncDecCTCPCBPEModel` lists."""

    mixed_format: str = "m2"
    ctc_weight: float = 1.0
    inter: InterConfig = field(default_factory=InterConfig)
    style_layers: StyleLayersConfig = field(default_factory=StyleLayersConfig)
    style_embedding: StyleEmbeddingConfig = field(default_factory=StyleEmbeddingConfig)

    @classmethod
    def check(cls, pc: DictConfig) -> None:
        if pc.target not in TARGETS:
            raise ValueError(f"pc.target must be one of {TARGETS}, got {pc.target!r}")
        if pc.target == "mixed":
            check_format(pc.mixed_format)
        super().check(pc)


class EncDecCTCPCBPEModel(PCModelMixin, EncDecCTCModelBPE):
    """CTC model that writes punctuated text, normalized text, or both.

    One class covers papers/004 (punctuated CTC with an intermediate normalized CTC) and the three architectures
    of papers/001 on CTC; each variant is a config. The tokenizer is one cased, punctuated SentencePiece model;
    mixed-style targets need the style tags of :data:`nemo_pc.parts.styles.STYLE_TAGS` as user-defined symbols.

    Config keys under ``pc`` (besides NeMo's ``EncDecCTCModelBPE`` keys):
        target: what the main (last-layer) head learns: ``punctuated``, ``normalized`` or ``mixed``.
        mixed_format: ``m0``, ``m1`` or ``m2`` for ``target: mixed``.
        marks: the mark set kept in punctuated targets (default ``.,?``).
        default_mode: the mode ``transcribe`` returns when none is asked for (default: that of the main head;
            ``default_style`` in older checkpoints).
        ngram_lm_mode: the mode whose heads decode with the n-gram LM of NeMo's decoding config
            (``decoding.greedy.ngram_lm_model`` / ``decoding.beam.ngram_lm_model``), default ``punctuated``; the
            other mode's heads and a mixed main head decode without it (:mod:`nemo_pc.parts.lm_fusion`).
        ctc_weight: λ_CTC, the weight of the main loss.
        inter.weight: λ_inter of the intermediate normalized CTC; 0 turns it off.
        inter.layer: the layer whose output it reads (1-based); null means ⌊l/2⌋.
        inter.transcribe: whether ``transcribe``'s normalized mode reads the intermediate head (``true``) or the
            last layer's punctuated output, normalized by the text rules (``false``, the default: papers/004 scores
            its WER on the last layer; the intermediate loss is an auxiliary one).
        style_layers.branch_layer: E_i; null turns style layers off. Layers after E_i are copied for the
            normalized style, which gets its own head.
        style_layers.weight: weight of the normalized-branch loss.
        style_embedding.layers: 1-based layers whose input gets the projected one-hot style vector; empty turns it
            off. The main head then serves both styles, and the normalized pass re-runs the layers from the first
            conditioned one.
        style_embedding.weight: weight of the normalized-pass loss.

    The heads are :class:`~nemo_pc.models.ctc_heads.CTCHead` descriptions (``self.heads``, built once by
    :func:`~nemo_pc.models.ctc_heads.ctc_heads`): each has a name (its word in the logs), a mode (that of its targets
    and its decoding), the encoder layer it reads and its own CTC loss (``self.ctc_losses[name]``). Utterances whose
    ``pc_source`` is ``"none"`` take no loss on a punctuated or mixed main target.

    ``tokenizer.type`` is NeMo's ``bpe`` (a SentencePiece folder) or ``whisper``: Whisper's BPE over the tokens of a
    subset folder (:mod:`nemo_pc.data.tokenizers.whisper_subset`; ``nemo-pc build-tokenizer --whisper``), whose two
    files the ``.nemo`` carries. With it, ``init_token_rows`` (a ``.nemo`` of an attention encoder-decoder that
    writes Whisper's tokens) starts each head's row of every token as that model's output row of the token
    (:meth:`init_token_rows`), where NeMo's ``init_from_nemo_model`` starts the encoder.

    ``train_ds`` / ``validation_ds`` / ``test_ds`` are
    :func:`nemo_pc.data.datasets.pc_dataset.pc_dataloader_from_config`
    configs (``use_lhotse: true`` reads shar, tarred audio or manifests with NeMo's lhotse loader), set up by
    :class:`~nemo_pc.models.mixins.pc_data.PCDataMixin`; ``transcribe`` keeps NeMo's audio loader. The ``pc``
    section, the modes, each mode's decoding, the training step and the epoch ends are those of
    :class:`~nemo_pc.models.mixins.pc_model.PCModelMixin`.
    """

    pc_config_class = CTCPCConfig

    def __init__(self, cfg: DictConfig, trainer: Trainer | None = None) -> None:
        super().__init__(cfg=cfg, trainer=trainer)
        pc = self.cfg.pc
        if pc.target == "mixed":
            check_style_tokenizer(self.tokenizer)
        layers = self.encoder.layers
        self.heads = ctc_heads(pc, len(layers))
        self.style_branch = self.normalized_decoder = self.inter_decoder = self.style_embedding = None
        if pc.style_layers.branch_layer is not None:
            self.style_branch = StyleBranch(layers, int(pc.style_layers.branch_layer), self.encoder.out_proj)
            self.normalized_decoder = self.from_config_dict(self.cfg.decoder)
        if self.heads.inter is not None:
            self.inter_decoder = self.from_config_dict(self.cfg.decoder)
        if pc.style_embedding.layers:
            self.style_embedding = StyleEmbedding(
                self.encoder.d_model, pc.style_embedding.layers, len(layers), encoder_style=self.heads.main.mode
            )
            if self.cfg.encoder.get("conv_norm_type", "batch_norm") == "batch_norm":
                logging.warning(
                    "pc.style_embedding with batch-norm convolutions: the running statistics mix both styles; "
                    "set encoder.conv_norm_type=layer_norm"
                )
        self._taps = LayerTaps(layers, [head.layer for head in self.heads if head.layer is not None])
        self.ctc_losses = self._build_ctc_losses()
        self.setup_mode_decodings()

    def _setup_tokenizer(self, tokenizer_cfg: DictConfig) -> None:
        """NeMo's tokenizer setup, plus ``type: whisper`` (a Whisper subset folder, see the class docstring)."""
        if str(tokenizer_cfg.get("type", "")).lower() != WHISPER_TOKENIZER:
            super()._setup_tokenizer(tokenizer_cfg)
            return
        from nemo_pc.data.tokenizers.whisper_bpe import TOKENIZER_FILE
        from nemo_pc.data.tokenizers.whisper_subset import KEPT_FILE, WhisperSubsetTokenizer

        self.tokenizer_cfg = OmegaConf.to_container(tokenizer_cfg, resolve=True)
        self.tokenizer_dir, self.tokenizer_type = self.tokenizer_cfg.pop("dir"), WHISPER_TOKENIZER
        files = {}
        for key, name in (("tokenizer_file", TOKENIZER_FILE), ("kept_file", KEPT_FILE)):
            path = self.tokenizer_cfg.get(key) or str(Path(self.tokenizer_dir) / name)
            files[key] = self.register_artifact(f"tokenizer.{key}", path)
        self.tokenizer = WhisperSubsetTokenizer(files["tokenizer_file"], files["kept_file"])
        self._derive_tokenizer_properties()

    def init_token_rows(self, aed_path: str | Path) -> int:
        """Each CTC head's row of every token starts as the output row of its Whisper id in the AED ``aed_path``
        (Whisper's token embedding, which its decoder's output shares); the blank row and the biases start at
        zero. Returns the rows set per head.

        Raises:
            ValueError: the tokenizer is not a Whisper subset, or the AED's rows are not as wide as the heads' input.
            FileNotFoundError: ``aed_path`` is not a file.
        """
        from nemo_pc.models.aed_pc import EncDecAEDPCModel

        if self.tokenizer_type != WHISPER_TOKENIZER:
            raise ValueError(f"init_token_rows needs tokenizer.type={WHISPER_TOKENIZER}, got {self.tokenizer_type}")
        if not Path(aed_path).is_file():
            raise FileNotFoundError(2, "init_token_rows: no such .nemo file", str(aed_path))
        aed = EncDecAEDPCModel.restore_from(str(aed_path), map_location="cpu")
        source = aed.log_softmax.mlp.layer0.weight.detach()
        kept = torch.tensor(self.tokenizer.kept)
        for name, module in self._decoders().items():
            conv = module.decoder_layers[0]
            if conv.in_channels != source.shape[1]:
                raise ValueError(
                    f"init_token_rows: {aed_path} has rows of width {source.shape[1]}, the {name} reads "
                    f"{conv.in_channels} features"
                )
            with torch.no_grad():
                conv.weight.zero_()
                conv.weight[: len(kept), :, 0] = source[kept]
                conv.bias.zero_()
        del aed
        return len(kept)

    def maybe_init_from_pretrained_checkpoint(self, cfg: DictConfig, map_location: str = "cpu") -> None:
        """NeMo's ``init_from_nemo_model`` / ``init_from_pretrained_model`` / ``init_from_ptl_ckpt``, plus one step:
        when the checkpoint set the encoder but not the style layers (e.g. ``include: [encoder]`` from a
        single-style model), the style layers start as copies of the loaded top layers, as they would from scratch.
        """
        branch = self.style_branch
        before = [p.detach().clone() for p in branch.parameters()] if branch is not None else []
        top = next(iter(self.encoder.layers[-1].parameters())).detach().clone()
        super().maybe_init_from_pretrained_checkpoint(cfg, map_location=map_location)
        if cfg.get("init_token_rows"):
            rows = self.init_token_rows(cfg.init_token_rows)
            logging.info(f"{rows} token rows of every CTC head initialized from {cfg.init_token_rows}")
        if branch is None or torch.equal(top, next(iter(self.encoder.layers[-1].parameters()))):
            return
        if all(torch.equal(old, new) for old, new in zip(before, branch.parameters(), strict=True)):
            branch.copy_from(self.encoder.layers, self.encoder.out_proj)
            logging.info("style layers initialized from the top layers of the initialized encoder")

    def _build_ctc_losses(self) -> nn.ModuleDict:
        """One CTC loss per head, by head name (per utterance: the model masks and averages)."""
        blank = self.decoder.num_classes_with_blank - 1
        return nn.ModuleDict(
            {head.name: CTCLoss(num_classes=blank, zero_infinity=True, reduction="none") for head in self.heads}
        )

    # Data (setup_training_data and its twins: PCDataMixin)

    def pc_mixed_format(self) -> str | None:
        """``pc.mixed_format`` for a mixed main target, else ``None``."""
        return self.cfg.pc.mixed_format if self.cfg.pc.target == "mixed" else None

    # Forward

    def forward(
        self, input_signal=None, input_signal_length=None, processed_signal=None, processed_signal_length=None
    ):
        """NeMo's CTC forward on the main head: ``(log_probs, encoded_len, greedy_predictions)``."""
        main = self.heads.main
        outputs, encoded_len = self.forward_heads(
            input_signal, input_signal_length, processed_signal, processed_signal_length, heads=(main,)
        )
        return outputs[main], encoded_len, outputs[main].argmax(dim=-1)

    def forward_heads(
        self,
        input_signal=None,
        input_signal_length=None,
        processed_signal=None,
        processed_signal_length=None,
        heads: Sequence[CTCHead] | None = None,
    ) -> tuple[dict[CTCHead, torch.Tensor], torch.Tensor]:
        """Runs the shared encoder once and the requested heads of :attr:`heads` (default: the main head).

        Returns:
            Log-probabilities ``(B, T, V+1)`` by head, and the encoded lengths.
        """
        requested = (self.heads.main,) if heads is None else tuple(heads)
        unknown = [head.name for head in requested if head not in tuple(self.heads)]
        if unknown:
            raise ValueError(f"heads: this model has no {unknown[0]} head")
        if processed_signal is None:
            processed_signal, processed_signal_length = self.preprocessor(
                input_signal=input_signal, length=input_signal_length
            )
        if self.spec_augmentation is not None and self.training:
            processed_signal = self.spec_augmentation(input_spec=processed_signal, length=processed_signal_length)
        with self._taps, self.conditioned_encoder():
            encoded, encoded_len = self.encoder(audio_signal=processed_signal, length=processed_signal_length)
        outputs = {head: self._head_log_probs(head, encoded) for head in self.heads if head in requested}
        return outputs, encoded_len

    def _head_log_probs(self, head: CTCHead, encoded: torch.Tensor) -> torch.Tensor:
        """One head's log-probabilities from the encoder output and the layer inputs the taps recorded."""
        if head == self.heads.main:
            return self.decoder(encoder_output=encoded)
        if head == self.heads.inter:
            state, _ = self._taps.state(head.layer)
            return self.inter_decoder(encoder_output=to_decoder_input(state, self.encoder.out_proj))
        return self._normalized_log_probs(head, encoded)

    def conditioned_encoder(self) -> contextlib.AbstractContextManager:
        """The block inside which ``self.encoder`` is the main head's encoder: with ``pc.style_embedding`` it adds the
        main head's mode vector to the conditioned layers (:meth:`StyleEmbedding.applied`); otherwise it does
        nothing. Outside it ``self.encoder`` is NeMo's encoder, unchanged."""
        if self.style_embedding is None:
            return contextlib.nullcontext()
        return self.style_embedding.applied(self.encoder.layers)

    def forward_for_export(self, *args, **kwargs):
        """NeMo's export forward (encoder, then the main head) with the main head's conditioning applied."""
        with self.conditioned_encoder():
            return super().forward_for_export(*args, **kwargs)

    def _normalized_log_probs(self, head: CTCHead, encoded: torch.Tensor) -> torch.Tensor:
        """The normalized head: the style branch on its layer's input, or a re-run of the conditioned layers from
        its layer's input with the normalized mode's vector."""
        if self.style_branch is not None:
            if head.layer is None:
                return self.normalized_decoder(encoder_output=encoded)
            state, kwargs = self._taps.state(head.layer)
            return self.normalized_decoder(encoder_output=self.style_branch(state, kwargs))
        state, kwargs = self._taps.state(head.layer)
        hidden = self.style_embedding.run(self.encoder.layers, state, kwargs, head.mode)
        return self.decoder(encoder_output=to_decoder_input(hidden, self.encoder.out_proj))

    @property
    def main_mode_id(self) -> int:
        """The mode of the main head: normalized for a normalized target, else punctuated (a mixed transcript
        holds both)."""
        return self.heads.main.mode

    # Decoding

    def mode_decoding(self, mode: int, decoding_cfg: DictConfig) -> CTCBPEDecoding:
        """NeMo's ``self.decoding`` where the mode's config is the model's (with its n-gram LM, if any), else a
        decoding of the mode's config (the same without the LM)."""
        if decoding_cfg is self.cfg.decoding:
            return self.decoding
        return CTCBPEDecoding(decoding_cfg, tokenizer=self.tokenizer)

    def setup_mode_decodings(self) -> None:
        """Each mode's decoding (``self.decodings``, as in :class:`PCModelMixin`) and, for a mixed main head,
        ``self.mixed_decoding``: a mixed transcript is in neither mode, so it decodes without the n-gram LM."""
        super().setup_mode_decodings()
        self.mixed_decoding = None
        if self.heads.main.mixed_format is not None:
            full = self.cfg.decoding
            plain = without_ngram_lm(full) if has_ngram_lm(full) else full
            self.mixed_decoding = self.mode_decoding(self.heads.main.mode, plain)

    def head_decoding(self, head: CTCHead) -> CTCBPEDecoding:
        """The decoding of a head's output: that of its mode, or :attr:`mixed_decoding` for a mixed transcript."""
        if head.mixed_format is not None:
            return self.mixed_decoding
        return self.decodings[head.mode]

    def change_vocabulary(
        self, new_tokenizer_dir: str | DictConfig, new_tokenizer_type: str, decoding_cfg: DictConfig | None = None
    ) -> None:
        """NeMo's ``change_vocabulary`` (what ``speech_to_text_finetune.py`` calls for a new tokenizer), for every
        CTC head: each piece the old tokenizer has keeps its output rows, a new piece starts from its related pieces
        (:mod:`nemo_pc.models.vocabulary`), and each head's loss and every mode's decoding are rebuilt."""
        old_tokenizer = self.tokenizer
        old = {name: module.state_dict() for name, module in self._decoders().items()}
        super().change_vocabulary(new_tokenizer_dir, new_tokenizer_type, decoding_cfg)
        if self.cfg.pc.target == "mixed":
            check_style_tokenizer(self.tokenizer)
        for name in ("normalized_decoder", "inter_decoder"):
            if getattr(self, name) is not None:
                setattr(self, name, self.from_config_dict(self.cfg.decoder))
        self.ctc_losses = self._build_ctc_losses()
        rows = row_sources(old_tokenizer, pieces(self.tokenizer), self.cfg.pc.marks)
        for name, module in self._decoders().items():
            carry_rows(module, old[name], rows)
        self.setup_mode_decodings()

    def _decoders(self) -> dict[str, torch.nn.Module]:
        """The CTC decoder modules, by attribute name."""
        names = ("decoder", "normalized_decoder", "inter_decoder")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}

    # Training

    def _targets(self, batch: PCBatch, mode: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The targets of a head of ``mode``, their lengths, and the mask of utterances that have them (None: all).
        Punctuated targets (also mixed ones) exist only where the utterance has a P transcript."""
        if mode == NORMALIZED_ID:
            return batch.tokens_n, batch.tokens_n_len, None
        return batch.tokens_p, batch.tokens_p_len, batch.p_mask

    def _head_loss(self, head: CTCHead, log_probs: torch.Tensor, lengths: torch.Tensor, batch: PCBatch):
        """A head's CTC loss on its mode's targets: the mean over the utterances that have them."""
        targets, target_lengths, mask = self._targets(batch, head.mode)
        per_utt = self.ctc_losses[head.name](
            log_probs=log_probs, targets=targets, input_lengths=lengths, target_lengths=target_lengths
        )
        if mask is None:
            return per_utt.mean()
        mask = mask.to(per_utt.dtype)
        return (per_utt * mask).sum() / mask.sum().clamp(min=1.0)

    def compute_losses(self, batch: PCBatch) -> tuple[torch.Tensor, dict[CTCHead, torch.Tensor]]:
        """L = λ_CTC L_main + λ_inter L_inter + w L_normalized over one
        :class:`~nemo_pc.data.datasets.pc_batch.PCBatch`, and each head's loss."""
        total, losses, _, _ = self._losses(batch)
        return total, losses

    def _losses(self, batch: PCBatch) -> tuple[torch.Tensor, dict[CTCHead, torch.Tensor], dict, torch.Tensor]:
        """The losses of one encoder pass (the weighted total and each head's, each weighted by its ``pc`` key),
        and each head's log-probabilities with the encoded lengths."""
        outputs, lengths = self.forward_heads(
            input_signal=batch.audio, input_signal_length=batch.audio_len, heads=tuple(self.heads)
        )
        total, losses = None, {}
        for head in self.heads:
            losses[head] = self._head_loss(head, outputs[head], lengths, batch)
            term = OmegaConf.select(self.cfg.pc, head.weight) * losses[head]
            total = term if total is None else total + term
        return total, losses, outputs, lengths

    def training_losses(self, batch: PCBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor], tuple]:
        """The weighted loss of the heads, each head's loss (``train_{head}_loss``), and the main head's output."""
        total, losses, outputs, lengths = self._losses(batch)
        logs = {f"train_{head.name}_loss": value for head, value in losses.items()}
        return total, logs, (outputs[self.heads.main], lengths, batch)

    def _main_wer(self, log_probs: torch.Tensor, lengths: torch.Tensor, batch: PCBatch) -> tuple:
        """NeMo's WER of the main head on its own targets: ``(wer, errors, words)``."""
        main, main_len, _ = self._targets(batch, self.heads.main.mode)
        self.wer.update(predictions=log_probs, targets=main, targets_lengths=main_len, predictions_lengths=lengths)
        result = self.wer.compute()
        self.wer.reset()
        return result

    def training_batch_wer(self, state: tuple) -> torch.Tensor:
        """The main head's WER on one training batch."""
        return self._main_wer(*state)[0]

    def validation_pass(self, batch: PCBatch, batch_idx: int, dataloader_idx: int = 0) -> dict:
        """From one encoder pass: the loss and each head's (``val_loss_{head}``), the main head's WER
        (``val_wer``), and the errors and words of each mode the model writes, as ``transcribe`` writes it
        (``val_wer_num_{mode}``, ``val_wer_denom_{mode}``; punctuated on the utterances with a P transcript)."""
        loss, losses, outputs, lengths = self._losses(batch)
        wer, wer_num, wer_denom = self._main_wer(outputs[self.heads.main], lengths, batch)
        logs = {"val_loss": loss, "val_wer_num": wer_num, "val_wer_denom": wer_denom, "val_wer": wer}
        logs.update({f"val_loss_{head.name}": value.detach() for head, value in losses.items()})
        hypotheses = self._decode_modes(outputs, lengths, self.mode_heads(self.mode_ids), False)
        references, has_punctuated = self._reference_texts(batch), batch.p_mask.tolist()
        for name, hyps in hypotheses.items():
            keep = [k for k in range(len(hyps)) if name == NORMALIZED or has_punctuated[k]]
            texts = [hyps[k] if isinstance(hyps[k], str) else hyps[k].text for k in keep]
            errors, words = text_errors(texts, [references[name][k] for k in keep], self.cfg.get("use_cer", False))
            logs[f"val_wer_num_{name}"] = torch.tensor(float(errors), device=loss.device)
            logs[f"val_wer_denom_{name}"] = torch.tensor(float(words), device=loss.device)
        return logs

    def _reference_texts(self, batch: PCBatch) -> dict[str, list[str]]:
        """Each mode's reference texts of a batch (the punctuated part of a mixed transcript)."""

        def texts(tokens: torch.Tensor, lengths: torch.Tensor) -> list[str]:
            return [self.tokenizer.ids_to_text(row[:n].tolist()) for row, n in zip(tokens, lengths, strict=True)]

        punctuated = texts(batch.tokens_p, batch.tokens_p_len)
        mixed_format = self.heads.main.mixed_format
        if mixed_format is not None:
            punctuated = [parse_mixed(text, mixed_format)[1] for text in punctuated]
        return {NORMALIZED: texts(batch.tokens_n, batch.tokens_n_len), PUNCTUATED: punctuated}

    # Transcription

    def mode_head(self, mode: int) -> CTCHead:
        """The head whose transcript gives ``mode`` (:meth:`CTCHead.mode_text` reads the mode's text from it): the
        main head when it writes that mode (a mixed transcript holds both), else the normalized style head, else
        the intermediate head when ``pc.inter.transcribe`` is set, else the main head (its punctuated text,
        normalized by the text rules)."""
        main = self.heads.main
        if main.mixed_format is not None or main.mode == mode:
            return main
        if self.heads.normalized is not None:
            return self.heads.normalized
        if self.heads.inter is not None and self.cfg.pc.inter.transcribe:
            return self.heads.inter
        return main

    def mode_heads(self, modes: Sequence[int]) -> dict[int, CTCHead]:
        """:meth:`mode_head` of each mode, in the order given."""
        return {mode: self.mode_head(mode) for mode in modes}

    @property
    def normalized_by_rules(self) -> bool:
        """Whether ``transcribe``'s normalized mode is the main head's punctuated text, normalized by the text rules
        (papers/004's default), so that one decoding gives both modes."""
        head = self.mode_head(NORMALIZED_ID)
        return head.mode != NORMALIZED_ID and head.mixed_format is None

    def _transcribe_forward(self, batch, trcfg: TranscribeConfig):
        mode_heads = self.mode_heads(requested_ids(self.requested_mode(trcfg)))
        heads = (self.heads.main, *mode_heads.values())
        outputs, lengths = self.forward_heads(input_signal=batch[0], input_signal_length=batch[1], heads=heads)
        return {"outputs": outputs, "logits_len": lengths, "mode_heads": mode_heads}

    def _transcribe_output_processing(self, outputs, trcfg: TranscribeConfig):
        results = self._decode_modes(
            outputs["outputs"], outputs["logits_len"], outputs["mode_heads"], trcfg.return_hypotheses
        )
        if len(results) == 1:
            return next(iter(results.values()))
        return results

    def _decode_modes(
        self,
        outputs: dict[CTCHead, torch.Tensor],
        lengths: torch.Tensor,
        mode_heads: dict[int, CTCHead],
        hypotheses: bool,
    ) -> dict[str, list]:
        """Each mode's transcripts (``{mode name: [...]}``) from the heads' log-probabilities; each head that a mode
        reads is decoded once."""
        decoded = {
            head: self.head_decoding(head).ctc_decoder_predictions_tensor(
                outputs[head], decoder_lengths=lengths, return_hypotheses=hypotheses
            )
            for head in dict.fromkeys(mode_heads.values())
        }
        return {
            MODES[mode]: [self._mode_hypothesis(hyp, mode, head) for hyp in decoded[head]]
            for mode, head in mode_heads.items()
        }

    @staticmethod
    def _mode_hypothesis(hypothesis, mode: int, head: CTCHead):
        text = head.mode_text(hypothesis if isinstance(hypothesis, str) else hypothesis.text, mode)
        if isinstance(hypothesis, str):
            return text
        hypothesis = copy.copy(hypothesis)  # one decoded hypothesis may serve both modes
        hypothesis.text = text
        return hypothesis
