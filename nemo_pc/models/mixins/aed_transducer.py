"""A transducer head on the P&C attention encoder-decoder (:class:`~nemo_pc.models.EncDecAEDPCModel`): its prediction
network is a copy of the AED's decoder (:mod:`nemo_pc.modules.aed_transducer`), trained from the AED's weights while
the AED stays as it is, so that one ``.nemo`` writes with either head.

``transducer`` configures it (null or absent: none; ``configs/aed/transducer/``):
    decoders: ``conditioned`` (one copy of the decoder, the mode read from the AED's prompt) or ``dual`` (a copy per
        mode: papers/000's two decoders).
    cross_attention: the prediction network attends to the encoder's states, as the AED's decoder does (default
        true); false: it reads the labels alone.
    stack: encoder frames per joint frame (2: 40 ms on Whisper's 20 ms frames).
    lm_scale: the weight of the decoder's own next-token logits in the joint (1.0; 0 leaves them out).
    decode_lm_scale: that weight when decoding (transcription and validation) only; null: ``lm_scale``. A larger one
        leans the head's choices toward the AED's decoder (docs/pc_stage.md, "The decoder's weight at decoding").
    frequent / random: each training step's loss runs over the batch's targets, the ``frequent`` most frequent tokens
        learned so far and ``random`` more drawn from the others the head may write.
    vocab_text: JSON-lines files (``text`` per line) whose tokens, in both modes, the head may write beside those of
        its training targets (read when the model is built; a ``.nemo`` keeps the token set).
    max_symbols: tokens per joint frame in decoding (5).
    max_repeats: in decoding, a token that would follow this many copies of itself ends its frame as a blank would
        (0: no such rule). 3 since a head decoded at ``decode_lm_scale`` 4 wrote one token 144 times on a 3-s real clip
        (docs/pc_stage.md, "A repeated token in the transducer heads' decoding").
    transcribe: ``transcribe`` and validation decode with the transducer (true) or with the AED's decoder (false);
        :meth:`AEDTransducerMixin.decode_with` switches it.
    seed: the seed of the sampled vocabularies.
    cache_states_gb: the encoder is frozen, so its states of an utterance are kept (in memory, up to this many GB,
        keyed on the utterance's samples) and read again when the utterance comes back in a later epoch; 0: none.
    prune / simple_scale: ``prune`` > 0 trains with the pruned RNN-T loss (:mod:`nemo_pc.losses.pruned_rnnt`): the
        joint runs on windows of ``prune`` label positions per frame, picked by a simple joint (this joint without its
        tanh) whose loss is added times ``simple_scale``; 0 (the default): the whole lattice.
    train_modes: the modes the transducer learns (null: both); ``[punctuated]`` makes a punctuated-only transducer,
        whose normalized output is its punctuated output normalized by the text rules.
    freeze_embedding: the copies' token and position embeddings stay the AED decoder's (false: they train). Their
        token rows are Whisper's whole vocabulary, 40% of a conditioned head's trainable weights.
    frozen_layers: the lower blocks of each copy that stay the AED decoder's (0: every block trains).

While a model has a transducer, training trains the transducer alone: the encoder, the AED's decoder and head and
the CTC heads are frozen (their weights stay those of the AED it started from), the features take no SpecAugment, and
the loss is the transducer's (each utterance in one of its modes, drawn at every step; in validation every mode).
The copies start as the AED's decoder when the model is built and again after NeMo's ``init_from_nemo_model`` loads
an AED without a trained transducer. NeMo's ``optim_param_groups.transducer_predictor`` sets the copies' own
learning rate.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from nemo.collections.asr.parts.utils.rnnt_utils import Hypothesis
from omegaconf import DictConfig

from nemo_pc.data.datasets.pc_batch import PCBatch
from nemo_pc.modules.aed_transducer import (
    TransducerJoint,
    TransducerPredictor,
    greedy_batch,
    sample_vocabulary,
    transducer_loss,
)
from nemo_pc.modules.token_rows import as_paths, head_options, text_token_ids
from nemo_pc.parts.modes import MODES, NORMALIZED_ID, PUNCTUATED_ID

DEFAULTS = {
    "decoders": "conditioned",
    "cross_attention": True,
    "stack": 2,
    "lm_scale": 1.0,
    "decode_lm_scale": None,
    "frequent": 512,
    "random": 256,
    "vocab_text": None,
    "max_symbols": 5,
    "max_repeats": 3,
    "transcribe": True,
    "seed": 0,
    "train_modes": None,
    "cache_states_gb": 2.0,
    "prune": 0,
    "simple_scale": 0.5,
    "freeze_embedding": False,
    "frozen_layers": 0,
}


def transducer_options(cfg: DictConfig | dict | None) -> dict | None:
    """``transducer`` with its defaults filled in; None when absent.

    Raises:
        ValueError: an unknown key (the message lists the known ones).
    """
    return head_options("transducer", cfg, DEFAULTS)


class AEDTransducerMixin:
    """``transducer`` of the AED (module docstring): :meth:`setup_transducer`, the loss
    (:meth:`transducer_batch_loss`) and decoding (:meth:`transducer_decode_modes`)."""

    def setup_transducer(self) -> None:
        """Builds the head from ``transducer`` (nothing when it is absent), starts it from the AED's decoder unless
        the model is being restored, and freezes the rest of the model.

        Raises:
            ValueError: an unknown key, or an AED variant other than ``prompt`` (the head reads the prompt).
        """
        self.transducer_predictor = self.transducer_joint = None
        options = transducer_options(self.cfg.get("transducer"))
        if options is None:
            return
        scale = options["decode_lm_scale"]
        if scale is not None and (
            isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale < 0
        ):
            raise ValueError(f"transducer.decode_lm_scale must be null or a weight of 0 or more, got {scale!r}")
        repeats = options["max_repeats"]
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 0:
            raise ValueError(f"transducer.max_repeats must be an integer of 0 or more, got {repeats!r}")
        modes = options["train_modes"]
        if modes is not None and (not modes or any(mode not in MODES for mode in modes)):
            raise ValueError(f"transducer.train_modes must be a non-empty list of {MODES}, got {modes!r}")
        if self.cfg.pc.variant != "prompt":
            raise ValueError(f"transducer: needs pc.variant=prompt (the mode prompt), got {self.cfg.pc.variant!r}")
        decoder = self.transf_decoder
        width = decoder.hidden_size
        self.transducer_predictor = TransducerPredictor(decoder, options["decoders"], options["cross_attention"])
        vocab_size = self.log_softmax.mlp.layer0.weight.shape[0]
        self.transducer_joint = TransducerJoint(width, width, vocab_size, int(options["stack"]), options["lm_scale"])
        self._transducer_rng = torch.Generator().manual_seed(int(options["seed"]))
        if not self._is_model_being_restored():
            self.transducer_from_aed()
            for path in as_paths(options["vocab_text"]):
                self.add_transducer_text(path)
        self._freeze_all_but_transducer()

    @property
    def transducer_options(self) -> dict:
        return transducer_options(self.cfg.get("transducer")) or {}

    def transducer_from_aed(self) -> None:
        """The prediction networks take the AED decoder's weights, the joint's token rows its output rows."""
        self.transducer_predictor.copy_from(self.transf_decoder)
        with torch.no_grad():
            self.transducer_joint.token_out.copy_(self.log_softmax.mlp.layer0.weight)
            self.transducer_joint.token_bias.zero_()

    def add_transducer_text(self, path: str) -> int:
        """The tokens of a JSON-lines text (``text`` per line, in both modes) join those the head may write; returns
        how many lines were read."""
        ids, count = text_token_ids(self.tokenizer, "".join(self.cfg.pc.marks), path)
        self.transducer_joint.allow(ids)
        return count

    def _freeze_all_but_transducer(self) -> None:
        options = self.transducer_options
        kept = self.transducer_predictor.frozen_names(bool(options["freeze_embedding"]), int(options["frozen_layers"]))
        for name, parameter in self.named_parameters():
            trains = name.startswith(("transducer_predictor.", "transducer_joint."))
            parameter.requires_grad_(trains and name.removeprefix("transducer_predictor.") not in kept)

    def maybe_init_from_pretrained_checkpoint(self, cfg, map_location: str = "cpu"):
        """NeMo's initialisation from another checkpoint; an AED loaded without a trained transducer (no token
        counted) starts the transducer again, from the loaded decoder."""
        super().maybe_init_from_pretrained_checkpoint(cfg, map_location)
        if self.transducer_joint is not None and float(self.transducer_joint.token_counts.sum()) == 0:
            self.transducer_from_aed()

    @property
    def transducer_modes(self) -> tuple[int, ...]:
        """The modes the transducer learns (``transducer.train_modes``; both by default)."""
        modes = self.transducer_options.get("train_modes")
        return (NORMALIZED_ID, PUNCTUATED_ID) if modes is None else tuple(MODES.index(mode) for mode in modes)

    @property
    def transducer_decodes(self) -> bool:
        return self.transducer_joint is not None and bool(self.transducer_options["transcribe"])

    def decode_with(self, head: str) -> None:
        """``transducer``, ``decoder_ctc`` or ``aed``: the head that ``transcribe`` and validation decode with.

        Raises:
            ValueError: an unknown head, or a head the model does not have.
        """
        heads = {"transducer": self.transducer_joint, "decoder_ctc": getattr(self, "decoder_ctc_head", None)}
        if head not in (*heads, "aed"):
            raise ValueError(f"head must be 'transducer', 'decoder_ctc' or 'aed', got {head!r}")
        if head != "aed" and heads[head] is None:
            raise ValueError(f"head={head}: this model has no {head} head (model.{head} is null)")
        for name, module in heads.items():
            if module is not None:
                with _open(self.cfg):
                    self.cfg[name].transcribe = head == name

    # Training

    def transducer_rows(self, batch: PCBatch) -> list[tuple[int, int, list[int]]]:
        """``(utterance, mode, token ids)`` rows: every mode the transducer learns that an utterance has a target in
        (normalized always, punctuated where its P mask allows); in training one of them per utterance, drawn at
        random."""
        rows, learns = [], self.transducer_modes
        for utt in range(batch.audio.shape[0]):
            options = []
            if NORMALIZED_ID in learns:
                options.append((utt, NORMALIZED_ID, batch.tokens_n[utt, : batch.tokens_n_len[utt]].tolist()))
            if bool(batch.p_mask[utt]) and PUNCTUATED_ID in learns:
                options.append((utt, PUNCTUATED_ID, batch.tokens_p[utt, : batch.tokens_p_len[utt]].tolist()))
            if self.training and options:
                options = [options[int(torch.randint(len(options), (1,), generator=self._transducer_rng))]]
            rows.extend(options)
        return rows

    def transducer_states(self, batch: PCBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`frozen_states` of a batch, cached up to ``transducer.cache_states_gb``."""
        return self.frozen_states(batch, float(self.transducer_options["cache_states_gb"]))

    def frozen_states(self, batch: PCBatch, cache_gb: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The frozen AED's cross-attention states ``(B, T, D)``, zero past each utterance's length, their mask and
        lengths, without SpecAugment or grad. With ``cache_gb`` > 0, the utterances in the cache are read from it and
        only the others go through the encoder (as one smaller batch)."""
        keys = [_audio_key(batch.audio[row, : int(batch.audio_len[row])]) for row in range(batch.audio.shape[0])]
        cache = self.__dict__.setdefault("_transducer_cache", {})
        missing = [row for row, key in enumerate(keys) if key not in cache]
        rows: list[torch.Tensor | None] = [cache.get(key) for key in keys]
        if missing:
            index = torch.tensor(missing, device=batch.audio.device)
            audio_len = batch.audio_len.index_select(0, index)
            audio = batch.audio.index_select(0, index)[:, : int(audio_len.max())]
            states, _, lengths = self._encode_for_transducer(audio, audio_len)
            budget = cache_gb * 2**30
            for row, state, length in zip(missing, states, lengths.tolist(), strict=True):
                rows[row] = state[:length]
                if self.__dict__.get("_transducer_cache_bytes", 0) < budget:
                    cache[keys[row]] = state[:length].detach().cpu().clone()
                    self._transducer_cache_bytes = (
                        self.__dict__.get("_transducer_cache_bytes", 0) + state[:length].nbytes
                    )
        device = batch.audio.device
        lengths = torch.tensor([row.shape[0] for row in rows], device=device)
        states = torch.nn.utils.rnn.pad_sequence([row.to(device) for row in rows], batch_first=True)
        mask = (torch.arange(states.shape[1], device=device)[None] < lengths[:, None]).to(states.dtype)
        return states, mask, lengths

    def _encode_for_transducer(
        self, audio: torch.Tensor, audio_len: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        training = self.encoder.training
        self.encoder.eval()  # frozen: no dropout either
        try:
            with torch.no_grad():
                processed, processed_len = self.preprocessor(input_signal=audio, length=audio_len)
                encoded, encoded_len = self.encoder(audio_signal=processed, length=processed_len)
                states, mask = self.cross_states(encoded, encoded_len)
        finally:
            self.encoder.train(training)
        return states * mask[..., None], mask, encoded_len

    def transducer_batch_loss(self, batch: PCBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor], tuple]:
        """The transducer's loss over a batch's rows (mean over rows), each mode's term, and the AED's states."""
        states, mask, lengths = self.transducer_states(batch)
        rows = self.transducer_rows(batch)
        options, joint = self.transducer_options, self.transducer_joint
        if self.training:
            joint.count([ids for _, _, ids in rows])
        kept = torch.nonzero(joint.kept()).squeeze(1)
        frequent = torch.topk(joint.token_counts, min(int(options["frequent"]), int((joint.token_counts > 0).sum())))
        vocab = sample_vocabulary(
            [ids for _, _, ids in rows],
            frequent.indices.cpu(),
            kept.cpu(),
            int(options["random"]),
            self._transducer_rng,
        ).to(states.device)
        total, terms = states.new_zeros(()), {}
        if not rows:  # nothing to learn here (a punctuated-only transducer on a batch without a P target)
            anchor = sum(p.sum() for p in self.transducer_joint.parameters()) * 0.0
            return anchor, {}, (states, mask, batch)
        for mode in sorted({mode for _, mode, _ in rows}):
            chosen = [row for row in rows if row[1] == mode]
            chunk = len(chosen) if self.training else 1  # validation: a row at a time (long clips, no backward)
            parts = []
            for start in range(0, len(chosen), chunk):
                part = chosen[start : start + chunk]
                utts = torch.tensor([utt for utt, _, _ in part], device=states.device)
                targets = [ids for _, _, ids in part]
                parts.append(self._mode_losses(mode, targets, states[utts], mask[utts], lengths[utts], vocab))
            losses = torch.cat(parts)
            terms[mode] = losses.mean()
            total = total + losses.sum()
        loss = total / max(len(rows), 1)
        logs = {f"transducer_loss_{MODES[mode]}": term.detach() for mode, term in terms.items()}
        return loss, logs, (states, mask, batch)

    def _mode_losses(self, mode, targets, states, mask, lengths, vocab) -> torch.Tensor:
        prompt = [self.tokenizer.bos, self.tokenizer.mode_token_id(mode)]
        width = len(prompt) + max(len(ids) for ids in targets)
        prefix = torch.full((len(targets), width), self.tokenizer.pad, dtype=torch.long, device=states.device)
        prefix_mask = torch.zeros(len(targets), width, dtype=torch.bool, device=states.device)
        for row, ids in enumerate(targets):
            prefix[row, : len(prompt) + len(ids)] = torch.tensor(prompt + ids)
            prefix_mask[row, : len(prompt) + len(ids)] = True
        g = self.transducer_predictor(mode, prefix, prefix_mask, states, mask)[:, len(prompt) - 1 :]
        f, f_len = self.transducer_joint.frames(states, lengths)
        options = self.transducer_options
        prune = int(options["prune"]) if self.training else 0
        return transducer_loss(
            self.transducer_joint, f, f_len, g, self._lm_head(), targets, vocab, prune, float(options["simple_scale"])
        )

    def _lm_head(self):
        return self.log_softmax.mlp.layer0 if self.transducer_joint.lm_scale else None

    # Decoding

    def transducer_decode_modes(
        self, states: torch.Tensor, mask: torch.Tensor, modes: list[int], return_hypotheses: bool = False
    ) -> dict[int, list]:
        """Greedy transducer decoding of each mode (:func:`greedy_batch`), as :meth:`decode_modes` returns it.

        Raises:
            ValueError: the punctuated mode of a normalized-only transducer.
        """
        from nemo_pc.parts.text import normalize

        training = self.training
        lengths = mask.sum(dim=1).long()
        out = {}
        learned = self.transducer_modes
        if PUNCTUATED_ID in modes and PUNCTUATED_ID not in learned:
            raise ValueError("mode: this model's transducer writes only normalized text, not punctuated")
        sources = {mode: mode if mode in learned else PUNCTUATED_ID for mode in modes}
        joint = self.transducer_joint
        trained_scale, decode_scale = joint.lm_scale, self.transducer_options.get("decode_lm_scale")
        self.eval()
        try:
            if decode_scale is not None:  # the joint's weight for this decoding only
                joint.lm_scale = float(decode_scale)
            for mode in sorted(set(sources.values())):
                prompt = [self.tokenizer.bos, self.tokenizer.mode_token_id(mode)]
                ids = greedy_batch(
                    self.transducer_predictor,
                    self.transducer_joint,
                    self._lm_head(),
                    mode,
                    prompt,
                    states,
                    lengths,
                    int(self.transducer_options["max_symbols"]),
                    int(self.transducer_options["max_repeats"]),
                )
                out[mode] = [
                    Hypothesis(
                        score=0.0,
                        y_sequence=torch.tensor(row, dtype=torch.long),
                        text=self.tokenizer.ids_to_text(row).strip() if row else "",
                    )
                    for row in ids
                ]
        finally:
            joint.lm_scale = trained_scale
            self.train(training)
        for mode, source in sources.items():
            if mode != source:  # a punctuated-only transducer: the normalized output by the text rules
                out[mode] = [dataclasses.replace(hyp, text=normalize(hyp.text)) for hyp in out[source]]
        out = {mode: out[mode] for mode in modes}
        if not return_hypotheses:
            return {mode: [hyp.text for hyp in hyps] for mode, hyps in out.items()}
        return out


def _audio_key(samples: torch.Tensor) -> bytes:
    """The cache key of one utterance: a digest of its samples."""
    import hashlib

    return hashlib.blake2b(samples.detach().cpu().float().numpy().tobytes(), digest_size=16).digest()


def _open(cfg):
    from omegaconf import open_dict

    return open_dict(cfg)
