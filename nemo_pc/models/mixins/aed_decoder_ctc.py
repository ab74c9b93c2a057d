"""The AED's decoder as a CTC head on the P&C attention encoder-decoder (:class:`~nemo_pc.models.EncDecAEDPCModel`):
a copy of the decoder, read without its causal mask, writes a CTC distribution over Whisper's tokens per group of
encoder frames, in the mode its prompt names (:mod:`nemo_pc.modules.aed_decoder_ctc`). It trains from the AED's
weights while the AED stays as it is, so one ``.nemo`` writes with either head (docs/pc_stage.md, "The AED's decoder
as a CTC head").

``decoder_ctc`` configures it (null or absent: none; ``configs/aed/decoder_ctc/``):
    stack: encoder frames per query (4: 80 ms on Whisper's 20 ms frames; 30 s of audio is 375 queries of the
        decoder's 448 positions).
    inter_block: null: a pass per mode, after its prompt; a block number: one pass after the punctuated prompt, the
        normalized CTC on that block's output and the punctuated CTC on the last block's (papers/004's intermediate
        normalized CTC, inside the decoder; half the decoder's work).
    inter_transcribe: with ``inter_block``, whether ``transcribe``'s normalized mode reads the intermediate block
        (true) or, as papers/004 reads its model and the CTC model's ``pc.inter.transcribe`` defaults, the last
        block's punctuated text normalized by the text rules (false, the default): the intermediate normalized CTC
        then trains the head alone (docs/pc_stage.md, "The normalized output of the decoder head").
    train_modes: the modes it learns (null: both; ``[punctuated]``: its normalized output is its punctuated output
        normalized by the text rules).
    vocab_from_train: the tokens of the training manifests' transcripts, in both modes, are those it may write from
        the first step (read when the model is built; a ``.nemo`` keeps the token set).
    vocab_text: JSON-lines files (``text`` per line) whose tokens, in both modes, it may write as well.
    freeze_rows: the output rows and their biases stay the AED's (false: they train with the queries), so that a token
        of ``vocab_text`` that no training target uses keeps the AED's row instead of being pushed down as a negative
        alone (docs/pc_stage.md, "The tokens the decoder head may write").
    negatives: null: each step's loss reads every token the head may write; N: the tokens of the training targets
        (those of ``vocab_from_train``'s manifests, and those counted so far) and N others drawn at random from the
        rest, a step costing little more than one over the targets' tokens alone. Decoding reads every token.
    transcribe: ``transcribe`` and validation decode with this head (true) or with the AED's decoder (false);
        :meth:`~nemo_pc.models.mixins.aed_transducer.AEDTransducerMixin.decode_with` switches it.
    cache_states_gb: the encoder is frozen, so its states of an utterance are kept (in memory, up to this many GB)
        and read again when the utterance comes back; 0: none.
    decoding: how ``transcribe`` decodes with this head (null: greedy): ``strategy`` (``greedy`` or ``beam``),
        ``beam_size`` (8), ``beam_beta`` (1.0, added per written token), ``ngram_lm_model`` (an n-gram LM over the
        head's tokens: ``nemo-pc build-lm`` over the folder :meth:`write_decoder_ctc_tokens` writes) and
        ``ngram_lm_alpha``; the LM joins the beam search of the mode ``pc.ngram_lm_mode`` names (the other mode is
        searched without it). :func:`nemo_pc.parts.lm_fusion.ngram_lm_decoding` sets it for a block.

While a model has this head, training trains it alone: the encoder, the AED's decoder and its CTC heads are frozen,
the features take no SpecAugment, and the loss is the sum over modes of each mode's CTC loss (per target token,
averaged over the utterances that have a target in the mode). The copy's token embedding stays the AED's (it embeds
the prompt's two tokens alone). The head starts as the AED's decoder and output rows when the model is built, and
again after NeMo's ``init_from_nemo_model`` loads an AED without a trained head. NeMo's
``optim_param_groups.decoder_ctc_decoder`` sets the copy's own learning rate.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path

import torch
from nemo.collections.asr.parts.utils.rnnt_utils import Hypothesis
from omegaconf import DictConfig

from nemo_pc.data.datasets.pc_batch import PCBatch
from nemo_pc.modules.aed_decoder_ctc import BeamCTC, DecoderCTCHead, decoder_ctc_hidden, greedy_ctc
from nemo_pc.modules.aed_transducer import sample_vocabulary
from nemo_pc.modules.token_rows import as_paths, head_options, text_token_ids
from nemo_pc.parts.lm_fusion import ngram_lm_mode
from nemo_pc.parts.modes import MODES, NORMALIZED_ID, PUNCTUATED_ID

DEFAULTS = {
    "stack": 4,
    "inter_block": None,
    "inter_transcribe": False,
    "train_modes": None,
    "vocab_from_train": True,
    "vocab_text": None,
    "freeze_rows": False,
    "negatives": None,
    "transcribe": True,
    "cache_states_gb": 2.0,
    "decoding": None,
}
DECODING_DEFAULTS = {
    "strategy": "greedy",
    "beam_size": 8,
    "beam_beta": 1.0,
    "ngram_lm_model": None,
    "ngram_lm_alpha": 0.0,
    "top_k": 16,
}
DECODING_STRATEGIES = ("greedy", "beam")


def decoder_ctc_options(cfg: DictConfig | dict | None) -> dict | None:
    """``decoder_ctc`` with its defaults filled in; None when absent.

    Raises:
        ValueError: an unknown key (the message lists the known ones).
    """
    return head_options("decoder_ctc", cfg, DEFAULTS)


def decoder_ctc_decoding(cfg: DictConfig | dict | None) -> dict:
    """``decoder_ctc.decoding`` with its defaults filled in (null: greedy).

    Raises:
        ValueError: an unknown key or strategy, a beam size below 1, a negative LM weight, or an LM with greedy
            decoding (each named in the message).
    """
    options = head_options("decoder_ctc.decoding", cfg, DECODING_DEFAULTS) or dict(DECODING_DEFAULTS)
    strategy, beam, alpha = options["strategy"], options["beam_size"], options["ngram_lm_alpha"]
    if strategy not in DECODING_STRATEGIES:
        raise ValueError(f"decoder_ctc.decoding.strategy must be one of {DECODING_STRATEGIES}, got {strategy!r}")
    if isinstance(beam, bool) or not isinstance(beam, int) or beam < 1:
        raise ValueError(f"decoder_ctc.decoding.beam_size must be an integer >= 1, got {beam!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha < 0:
        raise ValueError(f"decoder_ctc.decoding.ngram_lm_alpha must be a number >= 0, got {alpha!r}")
    top_k = options["top_k"]
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"decoder_ctc.decoding.top_k must be an integer >= 1 or null (every token), got {top_k!r}")
    if options["ngram_lm_model"] and strategy != "beam":
        raise ValueError("decoder_ctc.decoding.ngram_lm_model: an n-gram LM joins beam search only (strategy: beam)")
    return options


class AEDDecoderCTCMixin:
    """``decoder_ctc`` of the AED (module docstring): :meth:`setup_decoder_ctc`, the loss
    (:meth:`decoder_ctc_batch_loss`) and decoding (:meth:`decoder_ctc_decode_modes`)."""

    def setup_decoder_ctc(self) -> None:
        """Builds the head from ``decoder_ctc`` (nothing when it is absent), starts it from the AED's decoder unless
        the model is being restored, and freezes the rest of the model.

        Raises:
            ValueError: an unknown key, bad ``train_modes``, an AED variant other than ``prompt``, or a transducer
                configured as well.
        """
        self.decoder_ctc_decoder = self.decoder_ctc_head = None
        options = decoder_ctc_options(self.cfg.get("decoder_ctc"))
        if options is None:
            return
        modes = options["train_modes"]
        if modes is not None and (not modes or any(mode not in MODES for mode in modes)):
            raise ValueError(f"decoder_ctc.train_modes must be a non-empty list of {MODES}, got {modes!r}")
        if self.cfg.pc.variant != "prompt":
            raise ValueError(f"decoder_ctc: needs pc.variant=prompt (the mode prompt), got {self.cfg.pc.variant!r}")
        inter, blocks = options["inter_block"], len(self.transf_decoder._decoder.layers)
        if inter is not None and (isinstance(inter, bool) or not isinstance(inter, int) or not 1 <= inter < blocks):
            raise ValueError(f"decoder_ctc.inter_block must be null or in [1, {blocks - 1}], got {inter!r}")
        negatives = options["negatives"]
        if negatives is not None and (isinstance(negatives, bool) or not isinstance(negatives, int) or negatives < 0):
            raise ValueError(f"decoder_ctc.negatives must be null or an integer >= 0, got {negatives!r}")
        if self.cfg.get("transducer"):
            raise ValueError("decoder_ctc and transducer are alternatives: configure one head on the AED")
        decoder_ctc_decoding(options["decoding"])
        self._decoder_ctc_search = None  # the last beam search built (its LM loaded once)
        self.decoder_ctc_decoder = copy.deepcopy(self.transf_decoder)
        self.decoder_ctc_decoder._decoder.diagonal = None  # every position sees every other
        width = self.transf_decoder.hidden_size
        vocab_size = self.log_softmax.mlp.layer0.weight.shape[0]
        self.decoder_ctc_head = DecoderCTCHead(width, width, vocab_size, int(options["stack"]))
        # the training targets' tokens, read from the manifests when the model is built (not saved: a restored model
        # reads the tokens it has counted)
        self.decoder_ctc_head.register_buffer("target_rows", torch.zeros(vocab_size, dtype=torch.bool), False)
        self._decoder_ctc_draws = torch.Generator().manual_seed(0)
        if not self._is_model_being_restored():
            self.decoder_ctc_from_aed()
            for path in as_paths(options["vocab_text"]):
                self.add_decoder_ctc_text(path)
            if options["vocab_from_train"]:
                for path in _train_manifests(self.cfg.get("train_ds")):
                    self.add_decoder_ctc_text(path, targets=True)
        frozen = {"decoder_ctc_head.token_out", "decoder_ctc_head.token_bias"} if options["freeze_rows"] else set()
        for name, parameter in self.named_parameters():
            trains = name.startswith(("decoder_ctc_decoder.", "decoder_ctc_head.")) and name not in frozen
            parameter.requires_grad_(trains and not name.startswith("decoder_ctc_decoder._embedding.token_embedding"))

    @property
    def decoder_ctc_options(self) -> dict:
        return decoder_ctc_options(self.cfg.get("decoder_ctc")) or {}

    def decoder_ctc_from_aed(self) -> None:
        """The copy takes the AED decoder's weights, the output its rows, the queries their starting projection."""
        self.decoder_ctc_decoder.load_state_dict(self.transf_decoder.state_dict())
        self.decoder_ctc_decoder._decoder.diagonal = None
        embedding = self.transf_decoder._embedding.token_embedding.weight.detach()
        self.decoder_ctc_head.start_from(embedding, self.log_softmax.mlp.layer0.weight.detach())

    def add_decoder_ctc_text(self, path: str, targets: bool = False) -> int:
        """The tokens of a JSON-lines text (``text`` per line, in both modes) join those the head may write (and,
        ``targets``, the training targets' tokens that ``negatives`` keeps in every step); returns how many lines were
        read."""
        ids, count = text_token_ids(self.tokenizer, "".join(self.cfg.pc.marks), path)
        self.decoder_ctc_head.allow(ids)
        if targets and ids:
            self.decoder_ctc_head.target_rows[torch.tensor(sorted(ids))] = True
        return count

    def decoder_ctc_token_ids(self) -> list[int]:
        """The Whisper ids the head may write, ascending: output ``k`` of its CTC is token ``ids[k]`` (the blank
        after them), as an n-gram LM over its outputs numbers them."""
        return torch.nonzero(self.decoder_ctc_head.kept()).squeeze(1).tolist()

    def write_decoder_ctc_tokens(self, folder: str | Path) -> Path:
        """``folder`` with the head's tokens (:meth:`decoder_ctc_token_ids`) and the AED's tokenizer, the
        tokenizer with which ``nemo-pc build-lm`` builds an LM over the head's outputs
        (:class:`nemo_pc.data.tokenizers.token_encoder.HeadTokensEncoder`)."""
        from nemo_pc.data.tokenizers.token_encoder import write_head_tokens

        return write_head_tokens(folder, self.tokenizer.source_json, self.decoder_ctc_token_ids())

    def decoder_ctc_search(self, vocab_size: int, with_lm: bool) -> Callable:
        """How a mode's log-probabilities over ``vocab_size`` tokens and the blank become token indices, as
        ``decoder_ctc.decoding`` says: :func:`greedy_ctc`, or a :class:`BeamCTC` (with the LM when ``with_lm``),
        kept for the next call with the same settings."""
        options = decoder_ctc_decoding(self.decoder_ctc_options["decoding"])
        if options["strategy"] == "greedy":
            return greedy_ctc
        lm, alpha = (options["ngram_lm_model"], options["ngram_lm_alpha"]) if with_lm else (None, 0.0)
        search = BeamCTC(vocab_size, options["beam_size"], lm, alpha, options["beam_beta"], options["top_k"])
        if self._decoder_ctc_search is None or self._decoder_ctc_search.key != search.key:
            self._decoder_ctc_search = search
        return self._decoder_ctc_search

    def decoder_ctc_step_vocab(self, kept: torch.Tensor) -> torch.Tensor:
        """The token ids one training step's loss reads, sorted: every one of ``kept`` (``(V,)`` bool) without
        ``negatives``; else the training targets' tokens (``kept`` holds the batch's) and ``negatives`` more of the
        rest of ``kept``, drawn at random."""
        negatives, head = self.decoder_ctc_options.get("negatives"), self.decoder_ctc_head
        if negatives is None:
            return torch.nonzero(kept).squeeze(1)
        targets = torch.nonzero(kept & (head.target_rows | (head.token_counts > 0))).squeeze(1)
        none = torch.zeros(0, dtype=torch.long)
        pool = torch.nonzero(kept).squeeze(1).cpu()
        drawn = sample_vocabulary([targets.tolist()], none, pool, negatives, self._decoder_ctc_draws)
        return drawn.to(kept.device)

    def maybe_init_from_pretrained_checkpoint(self, cfg, map_location: str = "cpu"):
        """NeMo's initialisation from another checkpoint; an AED loaded without a trained head (no token counted)
        starts the head again, from the loaded decoder (its token set stays the one built from its texts)."""
        super().maybe_init_from_pretrained_checkpoint(cfg, map_location)
        head = self.decoder_ctc_head
        if head is not None and float(head.token_counts.sum()) == 0:
            self.decoder_ctc_from_aed()

    @property
    def decoder_ctc_modes(self) -> tuple[int, ...]:
        modes = self.decoder_ctc_options.get("train_modes")
        return (NORMALIZED_ID, PUNCTUATED_ID) if modes is None else tuple(MODES.index(mode) for mode in modes)

    @property
    def decoder_ctc_transcribed_modes(self) -> tuple[int, ...]:
        """The modes ``transcribe`` reads from the head's own CTC: those it learns, without the normalized mode of an
        intermediate block unless ``inter_transcribe``."""
        options = self.decoder_ctc_options
        by_rules = options.get("inter_block") is not None and not options.get("inter_transcribe")
        by_rules = by_rules and PUNCTUATED_ID in self.decoder_ctc_modes
        return tuple(mode for mode in self.decoder_ctc_modes if not (by_rules and mode == NORMALIZED_ID))

    @property
    def normalized_by_rules(self) -> bool:
        """Whether the model transcribes with a head whose normalized output is its punctuated output normalized by
        the text rules (``train_modes: [punctuated]``, or ``inter_block`` without ``inter_transcribe``), as the CTC
        model's property says."""
        return self.decoder_ctc_decodes and NORMALIZED_ID not in self.decoder_ctc_transcribed_modes

    @property
    def decoder_ctc_decodes(self) -> bool:
        return self.decoder_ctc_head is not None and bool(self.decoder_ctc_options["transcribe"])

    def decoder_ctc_log_probs(
        self, utts: list[int], modes: list[int], states: torch.Tensor, lengths: torch.Tensor, vocab: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities ``(R, T', len(vocab) + 1)`` of rows ``(utts[r], modes[r])`` over the batch's ``states``
        ``(B, T, D)`` (zero past ``lengths``), and their lengths. Without ``inter_block`` a row is one pass after its
        mode's prompt; with it, an utterance is one pass after the punctuated prompt, whose block ``inter_block`` gives
        the normalized rows and the last block the punctuated ones."""
        head, inter = self.decoder_ctc_head, self.decoder_ctc_options.get("inter_block")
        chosen = sorted(set(utts)) if inter is not None else utts
        index = torch.tensor(chosen, device=states.device)
        states, lengths = states.index_select(0, index), lengths.index_select(0, index)
        queries, query_len = head.queries(states, lengths)
        mask = (torch.arange(states.shape[1], device=states.device)[None] < lengths[:, None]).to(states.dtype)
        decoder = self.decoder_ctc_decoder
        if inter is None:
            prompts = torch.stack([self.mode_prompt(mode, 1, states.device)[0] for mode in modes])
            (hidden,) = decoder_ctc_hidden(decoder, prompts, queries, query_len, states, mask)
            return head.log_probs(hidden, vocab), query_len
        prompts = self.mode_prompt(PUNCTUATED_ID, len(chosen), states.device)
        blocks = [int(inter), len(decoder._decoder.layers)]
        normalized, punctuated = decoder_ctc_hidden(decoder, prompts, queries, query_len, states, mask, blocks)
        outputs = {NORMALIZED_ID: normalized, PUNCTUATED_ID: punctuated}
        place = {utt: k for k, utt in enumerate(chosen)}
        hidden = torch.stack([outputs[mode][place[utt]] for utt, mode in zip(utts, modes, strict=True)])
        rows = torch.tensor([place[utt] for utt in utts], device=states.device)
        return head.log_probs(hidden, vocab), query_len.index_select(0, rows)

    # Training

    def decoder_ctc_batch_loss(self, batch: PCBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor], tuple]:
        """The sum over modes of each mode's CTC loss, each mode's term, and the AED's states."""
        states, mask, lengths = self.frozen_states(batch, float(self.decoder_ctc_options["cache_states_gb"]))
        rows = []  # (utterance, mode, Whisper ids)
        for utt in range(batch.audio.shape[0]):
            if NORMALIZED_ID in self.decoder_ctc_modes:
                rows.append((utt, NORMALIZED_ID, batch.tokens_n[utt, : batch.tokens_n_len[utt]].tolist()))
            if bool(batch.p_mask[utt]) and PUNCTUATED_ID in self.decoder_ctc_modes:
                rows.append((utt, PUNCTUATED_ID, batch.tokens_p[utt, : batch.tokens_p_len[utt]].tolist()))
        head = self.decoder_ctc_head
        if not rows:  # nothing to learn here (a punctuated-only head on a batch without a P target)
            anchor = sum(p.sum() for p in head.parameters()) * 0.0
            return anchor, {}, (states, mask, batch)
        if self.training:
            head.count([ids for _, _, ids in rows])
        kept = head.kept()
        for _, _, ids in rows:
            kept[torch.tensor(ids, dtype=torch.long, device=kept.device)] = True
        vocab = self.decoder_ctc_step_vocab(kept) if self.training else torch.nonzero(kept).squeeze(1)
        index = torch.full((kept.shape[0],), -1, dtype=torch.long, device=kept.device)
        index[vocab] = torch.arange(len(vocab), device=kept.device)
        log_probs, out_len = self.decoder_ctc_log_probs(
            [utt for utt, _, _ in rows], [mode for _, mode, _ in rows], states, lengths, vocab.to(states.device)
        )
        targets = [index[torch.tensor(ids, dtype=torch.long, device=kept.device)] for _, _, ids in rows]
        target_len = torch.tensor([len(t) for t in targets], device=states.device)
        per_row = torch.nn.functional.ctc_loss(
            log_probs.transpose(0, 1),
            torch.cat(targets).to(states.device) if sum(map(len, targets)) else target_len.new_zeros(0),
            out_len,
            target_len,
            blank=len(vocab),
            reduction="none",
            zero_infinity=True,
        ) / target_len.clamp(min=1)
        terms = {}
        for mode in sorted({mode for _, mode, _ in rows}):
            chosen = torch.tensor([k for k, row in enumerate(rows) if row[1] == mode], device=states.device)
            terms[mode] = per_row.index_select(0, chosen).mean()
        loss = sum(terms.values())
        logs = {f"decoder_ctc_loss_{MODES[mode]}": term.detach() for mode, term in terms.items()}
        return loss, logs, (states, mask, batch)

    # Decoding

    def decoder_ctc_decode_modes(
        self, states: torch.Tensor, mask: torch.Tensor, modes: list[int], return_hypotheses: bool = False
    ) -> dict[int, list]:
        """CTC decoding of each mode (``decoding``: greedy, or beam search with the LM in ``pc.ngram_lm_mode``), as
        :meth:`decode_modes` returns it.

        Raises:
            ValueError: the punctuated mode of a normalized-only head.
        """
        from nemo_pc.parts.text import normalize

        if PUNCTUATED_ID in modes and PUNCTUATED_ID not in self.decoder_ctc_modes:
            raise ValueError("mode: this model's decoder_ctc head writes only normalized text, not punctuated")
        read = self.decoder_ctc_transcribed_modes
        sources = {mode: mode if mode in read else PUNCTUATED_ID for mode in modes}
        lengths = mask.sum(dim=1).long()
        states = states * mask[..., None].to(states.dtype)
        vocab = torch.tensor(self.decoder_ctc_token_ids(), dtype=torch.long, device=states.device)
        lm_mode = ngram_lm_mode(self.cfg.pc)
        training, out = self.training, {}
        self.eval()
        try:
            with torch.no_grad():  # every mode's rows in one call: with inter_block, one pass gives both
                decoded, size = sorted(set(sources.values())), states.shape[0]
                utts = list(range(size)) * len(decoded)
                rows = [mode for mode in decoded for _ in range(size)]
                log_probs, out_len = self.decoder_ctc_log_probs(utts, rows, states, lengths, vocab)
                for k, mode in enumerate(decoded):
                    out[mode], part = [], slice(k * size, (k + 1) * size)
                    search = self.decoder_ctc_search(len(vocab), mode == lm_mode)
                    for row in search(log_probs[part], out_len[part]):
                        ids = vocab[torch.tensor(row, dtype=torch.long)].cpu() if row else torch.zeros(0).long()
                        text = self.tokenizer.ids_to_text(ids.tolist()).strip() if row else ""
                        out[mode].append(Hypothesis(score=0.0, y_sequence=ids, text=text))
        finally:
            self.train(training)
        for mode, source in sources.items():
            if mode != source:
                out[mode] = [dataclasses.replace(hyp, text=normalize(hyp.text)) for hyp in out[source]]
        out = {mode: out[mode] for mode in modes}
        if not return_hypotheses:
            return {mode: [hyp.text for hyp in hyps] for mode, hyps in out.items()}
        return out


def _train_manifests(train_ds) -> list[str]:
    """The JSON-lines manifests of ``train_ds`` that exist here (a comma-separated string or a list; tarred or
    lhotse inputs give none)."""
    if not train_ds:
        return []
    value = train_ds.get("manifest_filepath")
    if isinstance(value, str):
        value = value.split(",")
    return [str(p).strip() for p in as_paths(value) if Path(str(p).strip()).is_file()]
