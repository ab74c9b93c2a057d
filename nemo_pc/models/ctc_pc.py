"""Punctuated CTC with an intermediate normalized CTC (papers/004) and multi-style transcription (papers/001)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from lightning.pytorch import Trainer
from nemo.collections.asr.losses.ctc import CTCLoss
from nemo.collections.asr.models.ctc_bpe_models import EncDecCTCModelBPE
from nemo.collections.asr.parts.mixins.transcription import TranscribeConfig
from nemo.collections.asr.parts.submodules.ctc_decoding import CTCBPEDecoding
from nemo.utils import logging
from omegaconf import DictConfig

from nemo_pc.data.datasets.pc_batch import PCBatch
from nemo_pc.data.datasets.style_dataset import check_style_tokenizer
from nemo_pc.metrics.mode_wer import text_errors
from nemo_pc.models.mixins.pc_model import PCConfig, PCModelMixin
from nemo_pc.models.vocabulary import carry_rows, pieces, row_sources
from nemo_pc.modules.style_encoder import LayerTaps, StyleBranch, StyleEmbedding, to_decoder_input
from nemo_pc.parts.lm_fusion import ngram_lm_mode
from nemo_pc.parts.modes import MODES, NORMALIZED, NORMALIZED_ID, PUNCTUATED, PUNCTUATED_ID, requested_ids
from nemo_pc.parts.styles import check_format, parse_mixed
from nemo_pc.parts.text import normalize

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

    Utterances whose ``pc_source`` is ``"none"`` take no loss on a punctuated or mixed main target.

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
        self.inter_layer = int(pc.inter.layer or len(layers) // 2)
        if pc.inter.weight > 0 and not 1 <= self.inter_layer < len(layers):
            raise ValueError(f"pc.inter.layer must be in [1, {len(layers) - 1}], got {self.inter_layer}")
        self.style_branch = self.normalized_decoder = self.inter_decoder = self.style_embedding = None
        if pc.style_layers.branch_layer is not None:
            self.style_branch = StyleBranch(layers, int(pc.style_layers.branch_layer), self.encoder.out_proj)
            self.normalized_decoder = self.from_config_dict(self.cfg.decoder)
        if pc.inter.weight > 0:
            self.inter_decoder = self.from_config_dict(self.cfg.decoder)
        if pc.style_embedding.layers:
            self.style_embedding = StyleEmbedding(
                self.encoder.d_model, pc.style_embedding.layers, len(layers), encoder_style=self.main_style_id
            )
            if self.cfg.encoder.get("conv_norm_type", "batch_norm") == "batch_norm":
                logging.warning(
                    "pc.style_embedding with batch-norm convolutions: the running statistics mix both styles; "
                    "set encoder.conv_norm_type=layer_norm"
                )
        if self.style_branch is not None and self.style_embedding is not None:
            raise ValueError("pc.style_layers and pc.style_embedding are alternatives; configure one of them")
        self._taps = LayerTaps(layers, self._tapped_layers())
        self.style_loss = CTCLoss(
            num_classes=self.decoder.num_classes_with_blank - 1, zero_infinity=True, reduction="none"
        )
        self.setup_mode_decodings()

    def maybe_init_from_pretrained_checkpoint(self, cfg: DictConfig, map_location: str = "cpu") -> None:
        """NeMo's ``init_from_nemo_model`` / ``init_from_pretrained_model`` / ``init_from_ptl_ckpt``, plus one step:
        when the checkpoint set the encoder but not the style layers (e.g. ``include: [encoder]`` from a
        single-style model), the style layers start as copies of the loaded top layers, as they would from scratch.
        """
        branch = self.style_branch
        before = [p.detach().clone() for p in branch.parameters()] if branch is not None else []
        top = next(iter(self.encoder.layers[-1].parameters())).detach().clone()
        super().maybe_init_from_pretrained_checkpoint(cfg, map_location=map_location)
        if branch is None or torch.equal(top, next(iter(self.encoder.layers[-1].parameters()))):
            return
        if all(torch.equal(old, new) for old, new in zip(before, branch.parameters(), strict=True)):
            branch.copy_from(self.encoder.layers, self.encoder.out_proj)
            logging.info("style layers initialized from the top layers of the initialized encoder")

    def _tapped_layers(self) -> list[int]:
        tapped = []
        if self.inter_decoder is not None:
            tapped.append(self.inter_layer)
        if self.style_branch is not None and self.style_branch.branch_layer < len(self.encoder.layers):
            tapped.append(self.style_branch.branch_layer)
        if self.style_embedding is not None:
            tapped.append(self.style_embedding.first_layer)
        return tapped

    # Data (setup_training_data and its twins: PCDataMixin)

    def pc_mixed_format(self) -> str | None:
        """``pc.mixed_format`` for a mixed main target, else ``None``."""
        return self.cfg.pc.mixed_format if self.cfg.pc.target == "mixed" else None

    # Forward

    def forward(
        self, input_signal=None, input_signal_length=None, processed_signal=None, processed_signal_length=None
    ):
        """NeMo's CTC forward on the main head: ``(log_probs, encoded_len, greedy_predictions)``."""
        outputs, encoded_len = self.forward_heads(
            input_signal, input_signal_length, processed_signal, processed_signal_length, heads=("main",)
        )
        return outputs["main"], encoded_len, outputs["main"].argmax(dim=-1)

    def forward_heads(
        self,
        input_signal=None,
        input_signal_length=None,
        processed_signal=None,
        processed_signal_length=None,
        heads: tuple[str, ...] = ("main",),
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Runs the shared encoder once and the requested heads: ``main``, ``inter`` and ``normalized``.

        Returns:
            Log-probabilities ``(B, T, V+1)`` per head, and the encoded lengths.
        """
        if processed_signal is None:
            processed_signal, processed_signal_length = self.preprocessor(
                input_signal=input_signal, length=input_signal_length
            )
        if self.spec_augmentation is not None and self.training:
            processed_signal = self.spec_augmentation(input_spec=processed_signal, length=processed_signal_length)
        with self._taps, self.conditioned_encoder():
            encoded, encoded_len = self.encoder(audio_signal=processed_signal, length=processed_signal_length)
        outputs = {}
        if "main" in heads:
            outputs["main"] = self.decoder(encoder_output=encoded)
        if "inter" in heads:
            inter_state, _ = self._taps.state(self.inter_layer)
            outputs["inter"] = self.inter_decoder(encoder_output=to_decoder_input(inter_state, self.encoder.out_proj))
        if "normalized" in heads:
            outputs["normalized"] = self._normalized_head(encoded)
        return outputs, encoded_len

    def conditioned_encoder(self) -> contextlib.AbstractContextManager:
        """The block inside which ``self.encoder`` is the main head's encoder: with ``pc.style_embedding`` it adds the
        main style's vector to the conditioned layers (:meth:`StyleEmbedding.applied`); otherwise it does nothing.
        Outside it ``self.encoder`` is NeMo's encoder, unchanged."""
        if self.style_embedding is None:
            return contextlib.nullcontext()
        return self.style_embedding.applied(self.encoder.layers)

    def forward_for_export(self, *args, **kwargs):
        """NeMo's export forward (encoder, then the main head) with the main style's conditioning applied."""
        with self.conditioned_encoder():
            return super().forward_for_export(*args, **kwargs)

    def _normalized_head(self, encoded: torch.Tensor) -> torch.Tensor:
        """The normalized style from the style branch, or a re-run of the conditioned layers with style N."""
        if self.style_branch is not None:
            if self.style_branch.branch_layer == len(self.encoder.layers):
                return self.normalized_decoder(encoder_output=encoded)
            state, kwargs = self._taps.state(self.style_branch.branch_layer)
            return self.normalized_decoder(encoder_output=self.style_branch(state, kwargs))
        if self.style_embedding is None:
            raise ValueError("this model has no normalized head: configure pc.style_layers or pc.style_embedding")
        state, kwargs = self._taps.state(self.style_embedding.first_layer)
        hidden = self.style_embedding.run(self.encoder.layers, state, kwargs, NORMALIZED_ID)
        return self.decoder(encoder_output=to_decoder_input(hidden, self.encoder.out_proj))

    @property
    def main_mode_id(self) -> int:
        """The mode of the main head: normalized for a normalized target, else punctuated (a mixed transcript
        holds both)."""
        return NORMALIZED_ID if self.cfg.pc.target == NORMALIZED else PUNCTUATED_ID

    @property
    def main_style_id(self) -> int:
        """:attr:`main_mode_id`, the encoder's own style of a style embedding (papers/001's word)."""
        return self.main_mode_id

    @property
    def has_normalized_head(self) -> bool:
        """Whether a style branch or a style embedding gives the normalized style its own pass."""
        return self.style_branch is not None or self.style_embedding is not None

    # Decoding

    def mode_decoding(self, mode: int, decoding_cfg: DictConfig) -> CTCBPEDecoding:
        """NeMo's ``self.decoding`` where the mode's config is the model's (with its n-gram LM, if any), else a
        decoding of the mode's config (the same without the LM)."""
        if decoding_cfg is self.cfg.decoding:
            return self.decoding
        return CTCBPEDecoding(decoding_cfg, tokenizer=self.tokenizer)

    def change_vocabulary(
        self, new_tokenizer_dir: str | DictConfig, new_tokenizer_type: str, decoding_cfg: DictConfig | None = None
    ) -> None:
        """NeMo's ``change_vocabulary`` (what ``speech_to_text_finetune.py`` calls for a new tokenizer), for every
        CTC head: each piece the old tokenizer has keeps its output rows, a new piece starts from its related pieces
        (:mod:`nemo_pc.models.vocabulary`), and the style loss and every mode's decoding are rebuilt."""
        old_tokenizer = self.tokenizer
        old = {name: module.state_dict() for name, module in self._ctc_heads().items()}
        super().change_vocabulary(new_tokenizer_dir, new_tokenizer_type, decoding_cfg)
        if self.cfg.pc.target == "mixed":
            check_style_tokenizer(self.tokenizer)
        for name in ("normalized_decoder", "inter_decoder"):
            if getattr(self, name) is not None:
                setattr(self, name, self.from_config_dict(self.cfg.decoder))
        self.style_loss = CTCLoss(
            num_classes=self.decoder.num_classes_with_blank - 1, zero_infinity=True, reduction="none"
        )
        rows = row_sources(old_tokenizer, pieces(self.tokenizer), self.cfg.pc.marks)
        for name, module in self._ctc_heads().items():
            carry_rows(module, old[name], rows)
        self.setup_mode_decodings()

    def _ctc_heads(self) -> dict[str, torch.nn.Module]:
        names = ("decoder", "normalized_decoder", "inter_decoder")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}

    def head_decoding(self, head: str):
        """The decoding of a head's output: its mode's (``main`` writes the main target, ``inter`` and
        ``normalized`` the normalized mode). A mixed transcript is in neither mode and decodes without the LM."""
        if head != "main":
            return self.decodings[NORMALIZED_ID]
        if self.cfg.pc.target == "mixed":
            return self.decodings[1 - ngram_lm_mode(self.cfg.pc)]  # the mode without the LM
        return self.decodings[self.main_mode_id]

    # Training

    def _training_heads(self) -> tuple[str, ...]:
        heads = ["main"]
        if self.inter_decoder is not None:
            heads.append("inter")
        if self.has_normalized_head:
            heads.append("normalized")
        return tuple(heads)

    def _masked_ctc(self, log_probs, lengths, targets, target_lengths, mask=None) -> torch.Tensor:
        per_utt = self.style_loss(
            log_probs=log_probs, targets=targets, input_lengths=lengths, target_lengths=target_lengths
        )
        if mask is None:
            return per_utt.mean()
        mask = mask.to(per_utt.dtype)
        return (per_utt * mask).sum() / mask.sum().clamp(min=1.0)

    def compute_losses(self, batch: PCBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """L = λ_CTC L_main + λ_inter L_inter + w L_normalized over one
        :class:`~nemo_pc.data.datasets.pc_batch.PCBatch`."""
        total, losses, _, _ = self._head_losses(batch)
        return total, losses

    def _main_targets(self, batch: PCBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The main head's targets, their lengths, and the mask of utterances that have them (None: all)."""
        if self.cfg.pc.target == NORMALIZED:
            return batch.tokens_n, batch.tokens_n_len, None
        return batch.tokens_p, batch.tokens_p_len, batch.p_mask

    def _head_losses(self, batch: PCBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor], dict, torch.Tensor]:
        """The losses of one encoder pass (the weighted total and each head's), and each head's log-probabilities
        with the encoded lengths."""
        outputs, lengths = self.forward_heads(
            input_signal=batch.audio, input_signal_length=batch.audio_len, heads=self._training_heads()
        )
        pc = self.cfg.pc
        normalized, normalized_len = batch.tokens_n, batch.tokens_n_len
        main, main_len, p_mask = self._main_targets(batch)
        losses = {"main": self._masked_ctc(outputs["main"], lengths, main, main_len, p_mask)}
        total = pc.ctc_weight * losses["main"]
        if "inter" in outputs:
            losses["inter"] = self._masked_ctc(outputs["inter"], lengths, normalized, normalized_len)
            total = total + pc.inter.weight * losses["inter"]
        if "normalized" in outputs:
            losses["normalized"] = self._masked_ctc(outputs["normalized"], lengths, normalized, normalized_len)
            weight = pc.style_layers.weight if self.style_branch is not None else pc.style_embedding.weight
            total = total + weight * losses["normalized"]
        return total, losses, outputs, lengths

    def training_losses(self, batch: PCBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor], tuple]:
        """The weighted loss of the heads, each head's loss (``train_{head}_loss``), and the main head's output."""
        total, losses, outputs, lengths = self._head_losses(batch)
        logs = {f"train_{name}_loss": value for name, value in losses.items()}
        return total, logs, (outputs["main"], lengths, batch)

    def _main_wer(self, log_probs: torch.Tensor, lengths: torch.Tensor, batch: PCBatch) -> tuple:
        """NeMo's WER of the main head on its own targets: ``(wer, errors, words)``."""
        main, main_len, _ = self._main_targets(batch)
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
        loss, losses, outputs, lengths = self._head_losses(batch)
        wer, wer_num, wer_denom = self._main_wer(outputs["main"], lengths, batch)
        logs = {"val_loss": loss, "val_wer_num": wer_num, "val_wer_denom": wer_denom, "val_wer": wer}
        logs.update({f"val_loss_{name}": value.detach() for name, value in losses.items()})
        hypotheses = self._decode_modes(outputs, lengths, self._mode_sources(self.mode_ids), False)
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
        if self.cfg.pc.target == "mixed":
            punctuated = [parse_mixed(text, self.cfg.pc.mixed_format)[1] for text in punctuated]
        return {NORMALIZED: texts(batch.tokens_n, batch.tokens_n_len), PUNCTUATED: punctuated}

    # Transcription

    def _mode_sources(self, modes: Sequence[int]) -> dict[str, str]:
        """Which head gives each mode: ``main``, ``inter``, ``normalized``, ``parse`` or ``rules``."""
        target = self.cfg.pc.target
        sources = {}
        for name in (MODES[mode] for mode in modes):
            if target == "mixed":
                sources[name] = "parse"
            elif name == target:
                sources[name] = "main"
            elif self.has_normalized_head:
                sources[name] = "normalized"
            elif self.inter_decoder is not None and self.cfg.pc.inter.transcribe:
                sources[name] = "inter"
            else:
                sources[name] = "rules"
        return sources

    @property
    def normalized_source(self) -> str:
        """Where ``transcribe``'s normalized mode comes from: ``main``, ``inter``, ``normalized`` (a style head),
        ``parse`` (a mixed transcript) or ``rules`` (the punctuated output, normalized)."""
        return self._mode_sources([NORMALIZED_ID])[NORMALIZED]

    def _transcribe_forward(self, batch, trcfg: TranscribeConfig):
        sources = self._mode_sources(requested_ids(self.requested_mode(trcfg)))
        heads = tuple({"main", *(s for s in sources.values() if s in ("inter", "normalized"))})
        outputs, lengths = self.forward_heads(input_signal=batch[0], input_signal_length=batch[1], heads=heads)
        return {"outputs": outputs, "logits_len": lengths, "sources": sources}

    def _transcribe_output_processing(self, outputs, trcfg: TranscribeConfig):
        results = self._decode_modes(
            outputs["outputs"], outputs["logits_len"], outputs["sources"], trcfg.return_hypotheses
        )
        if len(results) == 1:
            return next(iter(results.values()))
        return results

    def _decode_modes(self, outputs: dict, lengths: torch.Tensor, sources: dict[str, str], hypotheses: bool) -> dict:
        """Each mode's transcripts (``{mode: [...]}``) from the heads' log-probabilities; each head that a mode
        reads is decoded once."""
        heads = {"main" if source in ("parse", "rules") else source for source in sources.values()}
        decoded = {
            head: self.head_decoding(head).ctc_decoder_predictions_tensor(
                outputs[head], decoder_lengths=lengths, return_hypotheses=hypotheses
            )
            for head in heads
        }
        results = {}
        for name, source in sources.items():
            hyps = decoded["main" if source in ("parse", "rules") else source]
            results[name] = [self._mode_hypothesis(hyp, name, source) for hyp in hyps]
        return results

    def _mode_hypothesis(self, hypothesis, mode: str, source: str):
        text = hypothesis if isinstance(hypothesis, str) else hypothesis.text
        if source == "parse":
            normalized, punctuated = parse_mixed(text, self.cfg.pc.mixed_format)
            text = normalized if mode == NORMALIZED else punctuated
        elif source == "rules":
            text = normalize(text)
        if isinstance(hypothesis, str):
            return text
        hypothesis = copy.copy(hypothesis)  # one decoded hypothesis may serve both modes
        hypothesis.text = text
        return hypothesis
