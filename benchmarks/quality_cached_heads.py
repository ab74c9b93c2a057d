"""CTC heads on cached outputs of the fine-tuned AED's frozen encoder: what a step costs and what the heads learn.

The transducer issue's "cheaper steps": the AED's encoder (Whisper tiny.en's, after the AED's fine-tune on the
corpus) runs once over the training, dev and test audio, and its outputs are kept in memory; a small head then trains
on them with CTC, one output per mode (normalized and punctuated pieces of the demo's 128-piece tokenizer), so a step
costs the head alone. ``--stack`` frames are stacked into one (50 frames/s from Whisper's encoder is more than the
pieces need), then a projection, ``--layers`` transformer layers and the two CTC outputs. The head is scored every
``--every`` steps on the demo's dev subset (N-WER) and at the end on ``test`` (N-WER, PER, punctuation F1 by
``nemo-pc evaluate``) and ``real_test`` (N-WER). Minutes: encoding and head training, apart.

``--whisper-tokens init`` gives the heads a pretrained text side, as the transducer heads have one: their pieces are
Whisper's own tokens (the AED's tokenizer), those that the training targets use, and each output row starts as the
AED's output row of its token (Whisper's token embedding); ``random`` is the same vocabulary from random rows.

``--head decoder`` makes the head the AED's decoder itself, read without its causal mask (:class:`DecoderHead`): a CTC
head whose blocks, cross-attention and token rows start as the AED's, over Whisper's tokens.

``--pieces-from MODEL.nemo`` gives the heads a CTC model's SentencePiece pieces instead (the demo's ``ctc_inter``'s
512), the decoder head's rows started from the AED's rows of each piece's Whisper tokens; ``--lm`` then decodes the
punctuated output by beam search with an n-gram LM over those pieces too, its weight (``--lm-alphas``) tuned on the
full ``dev`` by WER-PC. ``--save`` keeps the trained head, ``--load`` scores a kept one without training.

``--extra-train MANIFEST:REPEAT`` adds more training lines, each REPEAT times: e.g. the real recordings of
``benchmarks/data_real_pool.py`` with a teacher's transcripts, or ``real_dev`` with its own, to measure what real
speech in the heads' training gives on ``real_test``.

    .venv/bin/python benchmarks/quality_cached_heads.py --model demo_out/models/aed_prompt.nemo --demo-dir demo_out \\
        --steps 3000 --layers 1 --json benchmarks/results/cached_heads.json
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from suite import write_results
from torch import nn

from nemo_pc.data.tokenizers.extension import WORD_START
from nemo_pc.modules.aed_decoder_ctc import greedy_ctc
from nemo_pc.modules.aed_transducer import sample_vocabulary
from nemo_pc.parts.manifest import read_manifest, write_manifest
from nemo_pc.parts.text import normalize, preprocess_punctuated

MODES = ("normalized", "punctuated")


def stack_frames(frames: torch.Tensor, k: int) -> torch.Tensor:
    """``(T, D)`` frames as ``(ceil(T / k), k * D)``: each ``k`` frames side by side, the last group zero-padded."""
    steps = -(-frames.shape[0] // k)
    padded = torch.zeros(steps * k, frames.shape[1], dtype=frames.dtype)
    padded[: frames.shape[0]] = frames
    return padded.reshape(steps, k * frames.shape[1])


class CachedHeads(nn.Module):
    """Projection, ``layers`` transformer layers and one CTC output per mode over stacked encoder frames."""

    def __init__(
        self, in_dim: int, vocab_size: int, hidden: int = 384, layers: int = 1, heads: int = 4, norm: bool = False
    ):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Dropout(0.1))
        self.norm = nn.LayerNorm(hidden) if norm else nn.Identity()  # the scale of the rows of a decoder's output
        layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, 0.1, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False) if layers else None
        self.out = nn.ModuleDict({mode: nn.Linear(hidden, vocab_size + 1) for mode in MODES})  # + blank, the last

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> dict[str, torch.Tensor]:
        """Log-probabilities ``(B, T, V + 1)`` per mode."""
        h = self.proj(x)
        if self.body is not None:
            h = self.body(h, src_key_padding_mask=torch.arange(x.shape[1])[None] >= lengths[:, None])
        h = self.norm(h)
        return {mode: head(h).log_softmax(-1) for mode, head in self.out.items()}

    def init_rows(self, rows: torch.Tensor) -> None:
        """Each output's token rows start as ``rows`` ``(V, hidden)``, the blank row and the biases at zero."""
        with torch.no_grad():
            for head in self.out.values():
                head.weight.zero_()
                head.weight[: rows.shape[0]] = rows
                head.bias.zero_()


class DecoderHead(nn.Module):
    """The AED's decoder as a non-autoregressive CTC head (``--head decoder``), the modules of the model's
    ``decoder_ctc`` head (:mod:`nemo_pc.modules.aed_decoder_ctc`) over cached frames.

    Each group of ``stack`` encoder frames becomes one query of the AED's decoder blocks (a projection started as the
    mean of the group, scaled to the size of the decoder's token embeddings, plus the decoder's learned position
    embedding), after the mode prompt's tokens (``<|startoftranscript|>`` and the mode's token): one network reads
    both modes, as the conditioned predictor does. Self-attention sees every position (no causal mask), the
    cross-attention reads the encoder's frames as the AED's does, and each query's output is a CTC distribution over
    the kept Whisper tokens (rows started as the AED's output rows) and a blank. The decoder keeps what it learned of
    words and audio from Whisper's training; the head's outputs stay independent given the audio, as CTC's are.

    ``inter_block``: one pass instead of one per mode, after the punctuated prompt: the normalized CTC reads the
    output of that block and the punctuated CTC the last block's (papers/004's intermediate normalized CTC, inside the
    decoder).

    ``condition_blocks`` (with ``inter_block``): self-conditioned CTC. A normalized CTC reads each of these blocks'
    output (and ``inter_block``'s), and its distribution, as the expected output row (the token rows and a blank row
    of its own, times a learned scale), is added to the queries' states before the next block, so that the blocks
    above read the words written below. The normalized loss is the mean over these CTCs; the scored normalized output
    stays ``inter_block``'s.
    """

    def __init__(self, aed, rows: torch.Tensor, frame_dim: int, stack: int, prompts: dict[str, list[int]],
                 inter_block: int | None = None, condition_blocks: Sequence[int] = (),
                 negatives: int | None = None, kept_targets: int | None = None):  # fmt: skip
        super().__init__()
        from nemo_pc.modules.aed_decoder_ctc import DecoderCTCHead

        self.stack, self.frame_dim, self.inter_block = stack, frame_dim, inter_block
        self.condition_blocks = sorted({*condition_blocks, inter_block}) if condition_blocks else []
        self.decoder = copy.deepcopy(aed.transf_decoder)
        self.decoder._decoder.diagonal = None  # every position sees every other
        self.decoder._embedding.token_embedding.requires_grad_(False)  # it embeds the two prompt tokens alone
        self.cross_proj = copy.deepcopy(aed.encoder_decoder_proj)
        out = aed.log_softmax.mlp.layer0
        self.head = DecoderCTCHead(frame_dim, out.weight.shape[1], rows.shape[0], stack)
        embedding = self.decoder._embedding.token_embedding.weight.detach()
        self.head.start_from(embedding, rows)
        for mode, ids in prompts.items():
            self.register_buffer(f"prompt_{mode}", torch.tensor(ids))
        self.blank = rows.shape[0]
        self.negatives, self.kept_targets = negatives, kept_targets
        self.register_buffer("frequent_rows", torch.zeros(0, dtype=torch.long), persistent=False)
        self.register_buffer("target_rows", torch.zeros(self.blank, dtype=torch.bool))
        if self.condition_blocks:
            self.blank_in = nn.Parameter(torch.zeros(out.weight.shape[1]))
            self.condition_scale = nn.Parameter(torch.tensor(1.0))

    def set_target_rows(self, targets: Sequence[Sequence[int]]) -> None:
        """The rows the training targets use (with ``negatives``, every step's loss reads them), and the same rows by
        falling count (``kept_targets`` reads the first of them)."""
        self.target_rows.zero_()
        flat = torch.tensor([token for row in targets for token in row], dtype=torch.long)
        if len(flat):
            self.target_rows[flat] = True
            counts = torch.bincount(flat, minlength=self.blank)
            self.frequent_rows = torch.argsort(-counts, stable=True)[: int((counts > 0).sum())]

    def step_vocab(self, generator: torch.Generator, batch: Sequence[Sequence[int]] = ()) -> torch.Tensor | None:
        """The rows one training step's loss reads, sorted: None (all of them) without ``negatives``; else the rows
        of every training target (or, with ``kept_targets`` K, those of the ``batch``'s targets and the K most
        frequent ones) and ``negatives`` others drawn at random from the rest."""
        if self.negatives is None:
            return None
        if self.kept_targets is None:
            targets, frequent = [torch.nonzero(self.target_rows).squeeze(1).tolist()], torch.zeros(0, dtype=torch.long)
        else:
            targets, frequent = batch, self.frequent_rows[: self.kept_targets]
        return sample_vocabulary(targets, frequent, torch.arange(self.blank), self.negatives, generator)

    def soft_rows(self, log_probs: torch.Tensor, vocab: torch.Tensor) -> torch.Tensor:
        """``(B, T, width)``: each query's expected output row under its CTC distribution ``log_probs``."""
        probs = log_probs.exp()
        soft = probs[..., :-1] @ self.head.token_out[vocab] + probs[..., -1:] * self.blank_in
        return soft * self.condition_scale

    def param_groups(self, lr: float, decoder_lr: float, rows_lr: float | None = None) -> list[dict]:
        """The copied decoder and cross-projection at ``decoder_lr``, the new parts at ``lr``, the token rows and
        their biases at ``rows_lr`` (None: ``lr``; 0: frozen at the AED's, so that a token no training target uses
        keeps the AED's row instead of being pushed down as a negative alone)."""
        pretrained = [p for p in [*self.decoder.parameters(), *self.cross_proj.parameters()] if p.requires_grad]
        rows = [self.head.token_out, self.head.token_bias]
        if rows_lr == 0:
            for row in rows:
                row.requires_grad_(False)
        ids = {id(p) for p in [*pretrained, *rows]}
        groups = [
            {"params": pretrained, "lr": decoder_lr},
            {"params": [p for p in self.parameters() if p.requires_grad and id(p) not in ids], "lr": lr},
        ]
        if rows_lr != 0:
            groups.append({"params": rows, "lr": lr if rows_lr is None else rows_lr})
        return groups

    def forward(
        self, x: torch.Tensor, lengths: torch.Tensor, vocab: torch.Tensor | None = None
    ) -> dict[str, torch.Tensor]:
        """Log-probabilities ``(B, T, V + 1)`` per mode over ``x``, stacked frames ``(B, T, stack * D)``: over the
        rows ``vocab`` (default all) and the blank, last."""
        from nemo_pc.modules.aed_decoder_ctc import decoder_ctc_hidden

        batch, steps = x.shape[:2]
        frames = x.reshape(batch, steps * self.stack, self.frame_dim)
        memory = self.cross_proj(frames)
        memory_mask = (frames.abs().sum(-1) > 0).to(memory.dtype)  # a frame of zeros is padding
        queries, _ = self.head.queries(frames, lengths * self.stack)
        vocab = torch.arange(self.blank, device=x.device) if vocab is None else vocab
        if self.inter_block is not None:
            prompt = self.prompt_punctuated[None].expand(batch, -1)
            last_block = len(self.decoder._decoder.layers)
            normalized = {}

            def condition(block: int, hidden: torch.Tensor) -> torch.Tensor | None:
                normalized[block] = self.head.log_probs(hidden, vocab)
                return self.soft_rows(normalized[block], vocab) if block in self.condition_blocks else None

            blocks = sorted({*self.condition_blocks, self.inter_block, last_block})
            *_, last = decoder_ctc_hidden(
                self.decoder, prompt, queries, lengths, memory, memory_mask, blocks=blocks, condition=condition
            )
            punctuated = self.head.log_probs(last, vocab)
            out = {"normalized": normalized.get(self.inter_block, punctuated), "punctuated": punctuated}
            out |= {f"normalized@{block}": normalized[block] for block in normalized if block != self.inter_block}
            return out
        out = {}
        for mode in MODES:
            prompt = getattr(self, f"prompt_{mode}")[None].expand(batch, -1)
            (hidden,) = decoder_ctc_hidden(self.decoder, prompt, queries, lengths, memory, memory_mask)
            out[mode] = self.head.log_probs(hidden, vocab)
        return out


class KeptTokens:
    """The AED's tokenizer over the tokens that ``texts`` use alone, renumbered ``0..V-1`` in the order of their
    Whisper ids (so a CTC output stays small); ``kept`` holds those Whisper ids."""

    def __init__(self, tokenizer, texts: list[str]):
        self.tokenizer = tokenizer
        self.kept = sorted({token for text in texts for token in tokenizer.text_to_ids(text)})
        self.index = {token: k for k, token in enumerate(self.kept)}
        self.vocab_size = len(self.kept)

    def text_to_ids(self, text: str) -> list[int]:
        return [self.index[token] for token in self.tokenizer.text_to_ids(text)]

    def ids_to_text(self, ids: list[int]) -> str:
        return self.tokenizer.ids_to_text([self.kept[k] for k in ids])


def piece_rows(aed, tokenizer) -> torch.Tensor:
    """A start for each output row of a head over ``tokenizer``'s pieces (a SentencePiece model's, ``--pieces-from``):
    the mean of the AED's output rows of the Whisper tokens that spell the piece (``▁`` read as a space), or the mean
    of all its rows for a piece Whisper's tokenizer gives nothing for."""
    out = aed.log_softmax.mlp.layer0.weight.detach()
    rows = []
    for index in range(tokenizer.vocab_size):
        piece = tokenizer.ids_to_tokens([index])[0].replace(WORD_START, " ")
        ids = aed.tokenizer.text_to_ids(piece) if piece.strip() else []
        rows.append(out[torch.tensor(ids)].mean(0) if ids else out.mean(0))
    return torch.stack(rows)


def pad_batch(items: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([item.shape[0] for item in items])
    x = torch.zeros(len(items), int(lengths.max()), items[0].shape[1])
    for k, item in enumerate(items):
        x[k, : item.shape[0]] = item.float()
    return x, lengths


greedy_ids = greedy_ctc  # greedy CTC of the model's decoder head: best piece per frame, repeats merged, blanks dropped


def mask_time(x: torch.Tensor, lengths: torch.Tensor, masks: int, width: int, rng: random.Random) -> torch.Tensor:
    """``x`` ``(B, T, F)`` with ``masks`` spans of up to ``width`` steps of each row set to zero (SpecAugment's time
    masks on the cached frames; a zero frame is padding to the decoder head's cross-attention), each span shorter
    than its row so that something stays seen."""
    x = x.clone()
    for row, length in enumerate(lengths.tolist()):
        for _ in range(masks):
            span = rng.randint(0, min(width, length - 1))
            start = rng.randint(0, length - span)
            x[row, start : start + span] = 0.0
    return x


def train_heads(heads: CachedHeads, feats: list, targets: dict, steps: int, batch_size: int, lr: float,
                seed: int = 0, every: int = 0, on_point=None, decoder_lr: float = 1e-4, rows_lr: float | None = None,
                time_masks: int = 0, time_mask_width: int = 0) -> list[dict]:  # fmt: skip
    """AdamW on the sum of both modes' CTC losses over random batches of ``feats`` (cosine decay, 5% warm-up),
    with ``time_masks`` spans of up to ``time_mask_width`` steps of each utterance masked (:func:`mask_time`);
    ``on_point(step)`` after every ``every`` steps and at the end. Returns the loss every 100 steps."""
    rng, mask_rng = random.Random(seed), random.Random(seed + 1)  # the batches as without masks
    groups = heads.param_groups(lr, decoder_lr, rows_lr) if hasattr(heads, "param_groups") else heads.parameters()
    optimizer = torch.optim.AdamW(groups, lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + torch.cos(torch.tensor(torch.pi * s / steps)).item()),
    )
    blank = heads.blank if hasattr(heads, "blank") else heads.out[MODES[0]].out_features - 1
    losses, draws = [], torch.Generator().manual_seed(seed + 2)
    if hasattr(heads, "set_target_rows"):
        heads.set_target_rows([row for mode in MODES for row in targets[mode]])
    heads.train()
    for step in range(1, steps + 1):
        index = rng.sample(range(len(feats)), min(batch_size, len(feats)))
        x, lengths = pad_batch([feats[i] for i in index])
        if time_masks and time_mask_width:
            x = mask_time(x, lengths, time_masks, time_mask_width, mask_rng)
        batch = [targets[mode][i] for mode in MODES for i in index]
        vocab = heads.step_vocab(draws, batch) if hasattr(heads, "step_vocab") else None
        position, step_blank = None, blank
        if vocab is not None:  # the targets as positions among the rows this step reads; the blank after them
            position = torch.full((blank,), -1, dtype=torch.long)
            position[vocab] = torch.arange(len(vocab))
            step_blank = len(vocab)
        outputs = heads(x, lengths) if vocab is None else heads(x, lengths, vocab)
        losses_of = {mode: [] for mode in MODES}  # a mode's CTCs: its output, and intermediate ones ("mode@block")
        for key, log_probs in outputs.items():
            mode = key.split("@")[0]
            labels = torch.cat([torch.tensor(targets[mode][i], dtype=torch.long) for i in index])
            losses_of[mode].append(
                nn.functional.ctc_loss(
                    log_probs.transpose(0, 1),
                    labels if position is None else position[labels],
                    lengths,
                    torch.tensor([len(targets[mode][i]) for i in index]),
                    blank=step_blank,
                    zero_infinity=True,
                )
            )
        loss = sum(sum(terms) / len(terms) for terms in losses_of.values())
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(heads.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 100 == 0:
            losses.append({"step": step, "loss": round(float(loss.detach()), 4)})
        if on_point is not None and ((every and step % every == 0) or step == steps):
            on_point(step)
            heads.train()
    return losses


def transcribe(heads: CachedHeads, feats: list, detokenize, batch_size: int = 32) -> dict[str, list[str]]:
    heads.eval()
    out = {mode: [] for mode in MODES}
    with torch.no_grad():
        for start in range(0, len(feats), batch_size):
            x, lengths = pad_batch(feats[start : start + batch_size])
            for mode, log_probs in heads(x, lengths).items():
                if mode not in out:  # an intermediate CTC ("normalized@2") is trained, not scored
                    continue
                out[mode].extend(detokenize(ids) for ids in greedy_ids(log_probs, lengths))
    out["normalized"] = [normalize(text) for text in out["normalized"]]
    return out


def log_probs_of(heads, feats: list, mode: str, batch_size: int = 32):
    """The head's ``mode`` log-probabilities, batch by batch: ``(log_probs (B, T, V + 1), lengths)`` pairs."""
    heads.eval()
    with torch.no_grad():
        for start in range(0, len(feats), batch_size):
            x, lengths = pad_batch(feats[start : start + batch_size])
            yield heads(x, lengths)[mode], lengths


def lm_decode(heads, feats: list, decoding) -> list[str]:
    """The punctuated output of every utterance through NeMo's CTC ``decoding`` (a ``CTCBPEDecoding``: beam search,
    with or without an n-gram LM)."""
    texts = []
    for log_probs, lengths in log_probs_of(heads, feats, "punctuated", batch_size=16):
        hyps = decoding.ctc_decoder_predictions_tensor(log_probs, decoder_lengths=lengths)
        texts.extend(getattr(hyp, "text", hyp) for hyp in (hyps[0] if isinstance(hyps, tuple) else hyps))
    return texts


def lm_scores(heads, feats: dict, rows: dict, pieces_model, args, tmp: Path) -> dict:
    """Beam search of ``--beam-size`` over the punctuated output with the n-gram LM ``--lm`` (over the pieces of
    ``pieces_model``, whose decoding config it starts from; NeMo's per-piece bonus of 1.0) at each weight of
    ``--lm-alphas``, the weight with the lowest WER-PC on the full ``dev`` chosen, then ``test`` and ``real_test`` at
    it; the normalized output is the punctuated one normalized by the text rules, as the demo's ``ctc_inter_lm``
    writes it."""
    from nemo.collections.asr.parts.submodules.ctc_decoding import CTCBPEDecoding

    from nemo_pc.parts.lm_fusion import fusion_decoding_cfg

    def decoded(split: str, alpha: float) -> tuple[list[str], list[str]]:
        cfg = fusion_decoding_cfg(pieces_model.cfg.decoding, False, "beam", args.lm, alpha, args.beam_size, 1.0)
        texts = lm_decode(heads, feats[split], CTCBPEDecoding(cfg, tokenizer=pieces_model.tokenizer))
        return texts, [normalize(text) for text in texts]

    from nemo_pc.pipelines.demo.scoring import score_predictions

    dev = {}
    for alpha in args.lm_alphas:
        texts, normalized = decoded("dev_full", alpha)
        predictions = [
            {**row, "pred_text": text, "pred_text_normalized": plain}
            for row, text, plain in zip(rows["dev_full"], texts, normalized, strict=True)
        ]
        dev[alpha] = score_predictions(write_manifest(tmp / f"dev_lm_{alpha}.json", predictions))["metrics"]["wer_pc"]
        print(json.dumps({"lm_alpha": alpha, "dev_wer_pc": dev[alpha]}), file=sys.stderr)
    alpha = min(args.lm_alphas, key=lambda a: (dev[a], a))
    scores = {split: score_split(split, rows[split], *decoded(split, alpha), tmp) for split in ("test", "real_test")}
    return {"alpha": alpha, "dev_wer_pc": {str(a): v for a, v in dev.items()}, "scores": scores}


def encode(
    model, rows: list[dict], stack: int, batch_size: int = 16, layer: int = 0
) -> tuple[list[torch.Tensor], list[str]]:
    """The frozen encoder's output per utterance, ``(T, D)`` float16 after :func:`stack_frames`, and the greedy
    normalized text of the AED's own CTC head (``aux_ctc``, trained with the AED) on the same frames. ``layer`` > 0
    keeps the output of that encoder block instead (before the final layer norm)."""
    import soundfile

    taps: list = []
    hook = model.encoder.layers[layer - 1].register_forward_hook(lambda m, i, o: taps.append(o)) if layer else None

    order = sorted(range(len(rows)), key=lambda i: float(rows[i]["duration"]))
    out: list = [None] * len(rows)
    aux: list = [""] * len(rows)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            index = order[start : start + batch_size]
            audio = [torch.from_numpy(soundfile.read(rows[i]["audio_filepath"], dtype="float32")[0]) for i in index]
            signal, lengths = pad_batch([a[:, None] for a in audio])
            encoded, encoded_len = model.encode(signal[..., 0], lengths)
            frames = taps.pop() if hook is not None else encoded.transpose(1, 2)
            for k, i in enumerate(index):
                out[i] = stack_frames(frames[k, : encoded_len[k]].contiguous(), stack).to(torch.float16)
            if model.ctc_decoder is not None:
                ids = greedy_ids(model.ctc_decoder(encoder_output=encoded), encoded_len)
                for k, i in enumerate(index):
                    aux[i] = normalize(model.ctc_tokenizer.ids_to_text(ids[k]))
    if hook is not None:
        hook.remove()
    return out, aux


def head_tokenizer(model, vocab_size: int, train_manifest: Path, work: Path):
    """The AED's ``aux_ctc`` tokenizer (``vocab_size`` 0), or a cased, punctuated SentencePiece of ``vocab_size``
    pieces trained here on the training manifest, as the demo trains its own."""
    if not vocab_size:
        return model.ctc_tokenizer
    from nemo.collections.common.tokenizers.sentencepiece_tokenizer import SentencePieceTokenizer

    from nemo_pc.data.tokenizers.pc_tokenizer import build_tokenizer

    marks = "".join(model.cfg.train_ds.get("marks", ".,?"))
    folder = build_tokenizer([train_manifest], work, vocab_size=vocab_size, marks=marks)
    return SentencePieceTokenizer(model_path=str(folder / "tokenizer.model"))


def demo_rows(demo: Path) -> dict[str, list[dict]]:
    """The demo folder's training split, its dev subset (``dev_curve``), ``test`` and ``real_test``, by name."""
    splits = {
        "train": demo / "manifests" / "train.json",
        "dev": demo / "manifests" / "dev_curve.json",
        "test": demo / "manifests" / "test.json",
        "real_test": demo / "real_speech" / "real_test.json",
    }
    return {split: read_manifest(path) for split, path in splits.items()}


def split_extra_train(value: str) -> tuple[str, int]:
    """``MANIFEST[:REPEAT]`` as ``(MANIFEST, REPEAT)``; REPEAT is 1 where no ``:<digits>`` ends the value."""
    path, _, repeat = value.rpartition(":")
    return (path, int(repeat)) if path and repeat.isdigit() else (value, 1)


def extra_train(value: str) -> str:
    """An ``--extra-train`` value as given, once its manifest is a file and its REPEAT (after the last ``:``, if
    any) a whole number of 1 or more.

    Raises:
        argparse.ArgumentTypeError: the message names what is wrong.
    """
    path, repeat = split_extra_train(value)
    if not Path(path).is_file():
        raise argparse.ArgumentTypeError(f"{path}: no such manifest")
    if repeat < 1:
        raise argparse.ArgumentTypeError(f"{value}: REPEAT must be 1 or more")
    return value


def training_rows(demo: Path, extra: list[str]) -> dict[str, list[dict]]:
    """:func:`demo_rows`, the lines of each ``MANIFEST[:REPEAT]`` of ``extra`` added to ``train`` REPEAT times
    (default once)."""
    rows = demo_rows(demo)
    for item in extra:
        path, repeat = split_extra_train(item)
        rows["train"] += read_manifest(path) * repeat
    return rows


def score_split(split: str, rows: list[dict], punctuated: list[str], normalized: list[str], tmp: Path,
                words_only: bool = False) -> dict:  # fmt: skip
    """``test``: N-WER, PER and punctuation F1 (N-WER alone with ``words_only``); ``real_test``: the N-WER and its
    bootstrap interval (its few clips with marks are too few for PER)."""
    from nemo_pc.pipelines.demo.scoring import score_predictions, score_real_speech

    predictions = [
        {**row, "pred_text": punctuated[k], "pred_text_normalized": normalized[k]} for k, row in enumerate(rows)
    ]
    path = write_manifest(tmp / f"{split}.json", predictions)
    if split != "test":
        report = score_real_speech(path, seed=0)
        return {key: report["normalized_output"][key] for key in ("wer", "ci95")}
    report = score_predictions(path)
    scores = {"n_wer": report["normalized_output"]["wer"]}
    if not words_only:
        scores |= {"per": report["metrics"]["per"], "punct_f1": report["metrics"]["punct_micro_f1"]}
    return scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", required=True, help="the demo's AED (models/aed_prompt.nemo), or 'whisper': Whisper tiny.en's own"
    )
    parser.add_argument("--layer", type=int, default=0, help="read the output of this encoder block (0: the top)")
    parser.add_argument("--demo-dir", required=True, help="its demo folder (manifests, real_speech)")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--stack", type=int, default=2)
    parser.add_argument(
        "--vocab-size", type=int, default=0, help="pieces of the heads' tokenizer; 0: the AED's aux_ctc tokenizer"
    )
    parser.add_argument(
        "--whisper-tokens",
        choices=("init", "random"),
        default=None,
        help="pieces: the AED's Whisper tokens that the targets use, the rows started from its output rows (init) or "
        "from random weights (random); overrides --vocab-size",
    )
    parser.add_argument(
        "--vocab-text",
        default=None,
        help="with --whisper-tokens: a JSON-lines text (`text` per line, e.g. the demo's lm/text.json) whose tokens "
        "in both modes the heads may write too, as the transducer heads' vocab_text",
    )
    parser.add_argument(
        "--extra-train",
        action="append",
        default=[],
        type=extra_train,
        metavar="MANIFEST[:REPEAT]",
        help="more training lines (audio_filepath, text), e.g. a teacher's transcripts of other audio; each line "
        "REPEAT times (default 1); repeatable",
    )
    parser.add_argument(
        "--head",
        choices=("mlp", "decoder"),
        default="mlp",
        help="mlp: a projection, --layers new transformer layers and a CTC output per mode; decoder: the AED's "
        "decoder as a non-autoregressive CTC head over Whisper's tokens (DecoderHead; implies --whisper-tokens init)",
    )
    parser.add_argument(
        "--decoder-lr", type=float, default=1e-4, help="with --head decoder: the copied decoder's learning rate"
    )
    parser.add_argument(
        "--rows-lr",
        type=float,
        default=None,
        help="with --head decoder: the token rows' and biases' learning rate (default --lr; 0: frozen at the AED's)",
    )
    parser.add_argument(
        "--negatives",
        type=int,
        default=None,
        help="with --head decoder: each step's loss reads the rows the training targets use and this many others "
        "drawn at random from those the head may write (default: every row)",
    )
    parser.add_argument(
        "--kept-targets",
        type=int,
        default=None,
        help="with --negatives: a step's loss reads the rows of its batch's targets and this many of the most "
        "frequent training-target rows, instead of every training-target row (a cheaper step)",
    )
    parser.add_argument(
        "--inter-block",
        type=int,
        default=None,
        help="with --head decoder: one pass, the normalized CTC on this decoder block's output and the punctuated on "
        "the last block's (papers/004's intermediate CTC); default: a pass per mode, after its prompt",
    )
    parser.add_argument(
        "--condition-blocks",
        type=lambda v: [int(b) for b in v.split(",")],
        default=[],
        help="with --inter-block: self-conditioned CTC, a normalized CTC on each of these blocks (and the "
        "--inter-block) whose expected output row is added to the states the next block reads, e.g. 2,3",
    )
    parser.add_argument(
        "--pieces-from",
        default=None,
        help="a CTC model (.nemo, e.g. the demo's models/ctc_inter.nemo) whose SentencePiece pieces the heads write "
        "instead; with --head decoder each row starts as the mean of the AED's rows of the piece's Whisper tokens",
    )
    parser.add_argument(
        "--lm",
        default=None,
        help="with --pieces-from: an n-gram LM over its pieces (the demo's lm/punctuated_order6_bpe_v512.nemo) that "
        "beam search fuses into the punctuated output, its weight tuned on the full dev by WER-PC",
    )
    parser.add_argument("--lm-alphas", type=lambda v: [float(a) for a in v.split(",")], default=[0.2, 0.4, 0.8])
    parser.add_argument("--beam-size", type=int, default=8)
    parser.add_argument(
        "--time-masks",
        type=int,
        default=0,
        help="time masks per training utterance on its cached frames (SpecAugment's, a step being --stack frames)",
    )
    parser.add_argument("--time-mask-width", type=int, default=5, help="the widest time mask, in steps")
    parser.add_argument("--save", default=None, help="write the trained head's state dict here (torch.save)")
    parser.add_argument(
        "--load", default=None, help="a head --save wrote (the same settings): scored as it is, no steps trained"
    )
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    if args.condition_blocks and (args.head != "decoder" or args.inter_block is None):
        parser.error("--condition-blocks needs --head decoder and --inter-block")
    if args.condition_blocks and not all(1 <= b <= args.inter_block for b in args.condition_blocks):
        parser.error(f"--condition-blocks {args.condition_blocks}: each in [1, --inter-block {args.inter_block}]")
    if args.rows_lr is not None and (args.head != "decoder" or args.rows_lr < 0):
        parser.error(f"--rows-lr {args.rows_lr}: needs --head decoder and a value >= 0")
    if args.negatives is not None and (args.head != "decoder" or args.negatives < 0):
        parser.error(f"--negatives {args.negatives}: needs --head decoder and a value >= 0")
    if args.kept_targets is not None and (args.negatives is None or args.kept_targets < 0):
        parser.error(f"--kept-targets {args.kept_targets}: needs --negatives and a value >= 0")
    if args.time_masks < 0 or args.time_mask_width < 0:
        parser.error(f"--time-masks and --time-mask-width must be >= 0, got {args.time_masks}, {args.time_mask_width}")
    if args.lm and not args.pieces_from:
        parser.error("--lm needs --pieces-from: the LM is over that model's pieces")
    if args.pieces_from and (args.whisper_tokens or args.vocab_size):
        parser.error("--pieces-from gives the heads their pieces: leave out --whisper-tokens and --vocab-size")
    if args.lm and (not args.lm_alphas or min(args.lm_alphas) < 0 or args.beam_size < 1):
        parser.error(
            f"--lm-alphas must be weights >= 0 and --beam-size >= 1, got {args.lm_alphas} and {args.beam_size}"
        )
    for flag, path in (("--pieces-from", args.pieces_from), ("--lm", args.lm), ("--load", args.load)):
        if path and not Path(path).is_file():
            parser.error(f"{flag} {path}: no such file")
    if args.pieces_from:
        args.whisper_tokens = None
    elif args.head == "decoder":
        args.whisper_tokens = "init"

    from nemo_pc.pipelines.inference import load_asr_model

    torch.manual_seed(0)
    if args.model == "whisper":
        from quality_aed_step0 import zero_shot_aed  # the AED as make demo builds it before training

        model = zero_shot_aed()
    else:
        model = load_asr_model(args.model).eval()
    demo, work = Path(args.demo_dir), tempfile.TemporaryDirectory()
    rows = training_rows(demo, args.extra_train)
    if args.lm:
        rows["dev_full"] = read_manifest(demo / "manifests" / "dev.json")
    pieces_model = load_asr_model(args.pieces_from).eval() if args.pieces_from else None
    marks = "".join(model.cfg.train_ds.get("marks", ".,?"))
    if args.whisper_tokens:
        extra = read_manifest(args.vocab_text) if args.vocab_text else []
        texts = [
            text
            for row in [*rows["train"], *extra]
            for text in (normalize(row["text"]), preprocess_punctuated(row["text"], marks))
        ]
        tokenizer = KeptTokens(model.tokenizer, texts)
    elif pieces_model is not None:
        tokenizer = pieces_model.tokenizer
    else:
        tokenizer = head_tokenizer(model, args.vocab_size, demo / "manifests" / "train.json", Path(work.name))
    start = time.perf_counter()
    encoded = {split: encode(model, split_rows, args.stack, layer=args.layer) for split, split_rows in rows.items()}
    encode_seconds = time.perf_counter() - start
    feats = {split: pair[0] for split, pair in encoded.items()}
    targets = {
        "normalized": [tokenizer.text_to_ids(normalize(row["text"])) for row in rows["train"]],
        "punctuated": [tokenizer.text_to_ids(preprocess_punctuated(row["text"], marks)) for row in rows["train"]],
    }
    if args.head == "decoder":
        prompts = {mode: model.mode_prompt(mode, 1, torch.device("cpu"))[0].tolist() for mode in MODES}
        frame_dim = feats["train"][0].shape[1] // args.stack
        out_rows = model.log_softmax.mlp.layer0.weight.detach()
        rows_start = (
            piece_rows(model, tokenizer) if pieces_model is not None else out_rows[torch.tensor(tokenizer.kept)]
        )
        heads = DecoderHead(
            model,
            rows_start,
            frame_dim,
            args.stack,
            prompts,
            args.inter_block,
            args.condition_blocks,
            args.negatives,
            args.kept_targets,
        )
    else:
        heads = CachedHeads(
            feats["train"][0].shape[1], tokenizer.vocab_size, layers=args.layers, norm=bool(args.whisper_tokens)
        )
    if args.whisper_tokens == "init" and args.head == "mlp":
        heads.init_rows(model.log_softmax.mlp.layer0.weight.detach()[torch.tensor(tokenizer.kept)])
    detokenize, curve, clock = tokenizer.ids_to_text, [], {"train": 0.0, "since": time.perf_counter()}

    def on_point(step: int) -> None:
        clock["train"] += time.perf_counter() - clock["since"]
        hyps = transcribe(heads, feats["dev"], detokenize)["normalized"]
        refs = [normalize(row["text"]) for row in rows["dev"]]
        import jiwer

        curve.append(
            {"step": step, "train_minutes": round(clock["train"] / 60, 2), "dev_n_wer": jiwer.wer(refs, hyps)}
        )
        print(json.dumps(curve[-1]), file=sys.stderr)
        clock["since"] = time.perf_counter()

    if args.load:
        heads.load_state_dict(torch.load(args.load))
        losses = []
        on_point(args.steps)  # the loaded head, after the steps it was trained for
    else:
        losses = train_heads(heads, feats["train"], targets, args.steps, args.batch_size, args.lr, every=args.every,
                             on_point=on_point, decoder_lr=args.decoder_lr, rows_lr=args.rows_lr,
                             time_masks=args.time_masks, time_mask_width=args.time_mask_width)  # fmt: skip
    if args.save:
        torch.save(heads.state_dict(), args.save)
    scores, aux_scores, greedy_punctuated = {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for split in ("test", "real_test"):
            outputs = transcribe(heads, feats[split], detokenize)
            scores[split] = score_split(split, rows[split], outputs["punctuated"], outputs["normalized"], Path(tmp))
            if args.lm:  # the greedy row to set beside the LM's, whose normalized output is the punctuated one's
                from_punctuated = [normalize(text) for text in outputs["punctuated"]]
                greedy_punctuated[split] = score_split(
                    split, rows[split], outputs["punctuated"], from_punctuated, Path(tmp)
                )
            if model.ctc_decoder is not None:  # the AED's own CTC head writes normalized text alone: N-WER only
                aux = encoded[split][1]
                aux_scores[split] = score_split(split, rows[split], aux, aux, Path(tmp), words_only=True)
        lm = lm_scores(heads, feats, rows, pieces_model, args, Path(tmp)) if args.lm else None
    results = {
        "settings": vars(args)
        | {
            "parameters": sum(p.numel() for p in heads.parameters()),
            "trainable_parameters": sum(p.numel() for p in heads.parameters() if p.requires_grad),
            "pieces": tokenizer.vocab_size,
        },
        "encode_minutes": round(encode_seconds / 60, 2),
        "utterances": {split: len(split_rows) for split, split_rows in rows.items()},
        "curve": curve,
        "losses": losses,
        "scores": scores,
        "aed_aux_ctc": aux_scores,
    }
    if lm is not None:
        results["lm"] = lm | {"greedy_normalized_from_punctuated": greedy_punctuated}
    write_results(args.json, results, sys.argv if argv is None else ["quality_cached_heads.py", *argv])
    print(json.dumps({"heads": scores, "aed_aux_ctc": aux_scores, "lm": lm}), file=sys.stderr)
    work.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
