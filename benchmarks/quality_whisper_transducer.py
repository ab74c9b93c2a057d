"""A transducer whose prediction network is the AED's Whisper decoder, on cached outputs of the AED's frozen encoder.

The transducer issue's open question: the RNN-Ts' greedy words stay 25 points behind the AED that shares their
encoder, and what the AED has that they lack is a decoder that knows the language. Here the RNN-T's prediction network
is that decoder: the fine-tuned AED's Whisper decoder reads the mode prompt (``<|startoftranscript|> <mode>``, the
AED's own) and the pieces written so far, over Whisper's own tokens, so one network is conditioned on the mode as
papers/000's conditioned predictor is. Two ways to feed it:

- ``lm`` (a transducer in the strict sense): the prediction network sees the labels alone; its cross-attention reads
  one zero frame, so it adds a constant;
- ``xattn``: the prediction network's cross-attention reads the encoder's frames, as the AED's does; the network
  then sees the audio, and the transducer adds alignment to an AED.

The joint: ``tanh(W_f f_t + W_g g_u)``, an output row per token started from Whisper's (tied) embedding, a blank row,
and the decoder's own next-token logits of ``g_u`` added (``--lm-scale``; 0 drops them), so that greedy decoding reads
the language the decoder knows. Whisper has 50k tokens; the output layer keeps those that the training transcripts
use (both modes), and each step's loss runs over a sample of them (the batch's targets, the most frequent
``--frequent`` and ``--random`` more), so that the (B, T, U, V) lattice of NeMo's RNN-T loss fits 2 cores. Greedy
decoding reads every kept token.

This benchmark measured the idea on cached encoder outputs; the NeMo model that the demo trains is the AED's transducer
head (``model.transducer``, :mod:`nemo_pc.modules.aed_transducer`), the same network trained through the AED recipe.

The encoder is the AED's as fine-tuned, frozen; its frames are cached once (:mod:`quality_cached_heads`) and
``--stack`` of them joined for the joint. Scored every ``--every`` steps on the demo's dev subset (N-WER) and at the
end on ``test`` (N-WER, PER, punctuation F1) and ``real_test`` (N-WER), greedy, one utterance at a time.

    .venv/bin/python benchmarks/quality_whisper_transducer.py --model demo_out/models/aed_prompt_finetuned.nemo \\
        --demo-dir demo_out --variant lm --steps 1000 --json benchmarks/results/whisper_transducer_lm.json
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch
from quality_cached_heads import demo_rows, encode, pad_batch, score_split
from suite import write_results
from torch import nn

from nemo_pc.losses.rnnt_scan import rnnt_loss_scan
from nemo_pc.parts.manifest import read_manifest
from nemo_pc.parts.text import normalize, preprocess_punctuated

MODES = ("normalized", "punctuated")
VARIANTS = ("lm", "xattn")


def kept_tokens(target_lists: list[list[int]]) -> tuple[list[int], list[int]]:
    """The sorted tokens the lists use, and the same tokens by falling count (ties by id)."""
    counts = Counter(token for ids in target_lists for token in ids)
    return sorted(counts), [token for token, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def sample_vocabulary(batch_targets: list[list[int]], frequent: list[int], extra: int, size: int,
                      rng: random.Random) -> list[int]:  # fmt: skip
    """Indices into the kept vocabulary (``size`` of them in all) for one step: every target of the batch, then the
    ``frequent`` ones, then ``extra`` drawn at random from the rest; sorted, no repeats."""
    chosen = {token for ids in batch_targets for token in ids} | set(frequent)
    rest = [token for token in range(size) if token not in chosen]
    chosen |= set(rng.sample(rest, min(extra, len(rest))))
    return sorted(chosen)


def remap(ids: list[int], positions: dict[int, int]) -> list[int]:
    """``ids`` as positions in a step's sampled vocabulary."""
    return [positions[token] for token in ids]


class WhisperTransducer(nn.Module):
    """The AED's decoder as the prediction network of a transducer over the kept Whisper tokens (module docstring).

    Args:
        aed: the loaded AED (its ``transf_decoder``, ``log_softmax`` and ``encoder_decoder_proj`` are copied).
        kept: Whisper ids of the output vocabulary, the blank after them.
        frame_dim: the encoder's frame width; the joint reads ``stack`` frames joined.
        variant: one of :data:`VARIANTS`.
        lm_scale: the weight of the decoder's own logits in the joint's token logits.
    """

    def __init__(self, aed, kept: list[int], frame_dim: int, stack: int, variant: str, lm_scale: float) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        self.variant, self.stack = variant, stack
        self.decoder = copy.deepcopy(aed.transf_decoder)
        self.cross_proj = copy.deepcopy(aed.encoder_decoder_proj)
        out = aed.log_softmax.mlp.layer0
        index = torch.tensor(kept)
        self.register_buffer("kept", index)
        self.register_buffer("lm_weight", out.weight.detach()[index].clone())
        self.register_buffer("lm_bias", out.bias.detach()[index].clone())
        width = out.weight.shape[1]  # the joint's width is the decoder's, so its token rows start as Whisper's
        self.enc = nn.Linear(frame_dim * stack, width)
        self.pred = nn.Linear(width, width)
        self.token_out = nn.Parameter(out.weight.detach()[index].clone())
        self.token_bias = nn.Parameter(torch.zeros(len(kept)))
        self.blank_out = nn.Linear(width, 1)
        self.lm_scale = lm_scale

    def frames(self, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, T, D)`` encoder frames as ``(B, ceil(T / stack), stack * D)`` joint inputs and their lengths."""
        steps = -(-x.shape[1] // self.stack)
        padded = torch.zeros(x.shape[0], steps * self.stack, x.shape[2], dtype=x.dtype)
        padded[:, : x.shape[1]] = x
        return self.enc(padded.reshape(x.shape[0], steps, -1)), -(-lengths // self.stack)

    def predict(
        self, prefix: torch.Tensor, prefix_mask: torch.Tensor, x: torch.Tensor, lengths: torch.Tensor, mems=None
    ) -> torch.Tensor:
        """The decoder's state after each prefix token, ``(B, L, width)``; with ``mems`` (the decoder's cached states
        of all but the last prefix token, as :func:`greedy` keeps them) the cached states with the last one's added,
        ``(B, layers + 2, L, width)``."""
        if self.variant == "xattn":
            memory = self.cross_proj(x)
            memory_mask = (torch.arange(x.shape[1])[None] < lengths[:, None]).to(memory.dtype)
        else:
            memory = torch.zeros(x.shape[0], 1, self.lm_weight.shape[1])
            memory_mask = torch.ones(x.shape[0], 1)
        return self.decoder(
            input_ids=prefix,
            decoder_mask=prefix_mask.to(memory.dtype),
            encoder_embeddings=memory,
            encoder_mask=memory_mask,
            decoder_mems=mems,
        )

    def joint(self, f: torch.Tensor, g: torch.Tensor, vocab: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(B, T, U, V + 1)`` of ``f`` ``(B, T, H)`` and ``g`` ``(B, U, width)`` over ``vocab`` (indices
        into the kept tokens; all of them when None), the blank last."""
        token_out = self.token_out if vocab is None else self.token_out[vocab]
        token_bias = self.token_bias if vocab is None else self.token_bias[vocab]
        z = torch.tanh(f[:, :, None] + self.pred(g)[:, None])
        logits = [z @ token_out.T + token_bias]
        if self.lm_scale:
            lm_weight = self.lm_weight if vocab is None else self.lm_weight[vocab]
            lm_bias = self.lm_bias if vocab is None else self.lm_bias[vocab]
            logits[0] = logits[0] + self.lm_scale * (g @ lm_weight.T + lm_bias)[:, None]
        return torch.cat([logits[0], self.blank_out(z)], dim=-1)


def prompt(aed, mode: int) -> list[int]:
    return aed.mode_prompt(mode, 1, torch.device("cpu"))[0].tolist()


def train(model: WhisperTransducer, feats: list, targets: dict, prompts: dict, frequent: list[int], args,
          on_point=None) -> list[dict]:  # fmt: skip
    """AdamW (the decoder at ``--decoder-lr``, the rest at ``--lr``; cosine decay, 5% warm-up) on the RNN-T loss
    (:func:`~nemo_pc.losses.rnnt_scan.rnnt_loss_scan`, exact, one vectorized step per frame) over batches of
    neighbours in length, each row in one mode drawn at random."""
    rng = random.Random(args.seed)
    decoder_params = list(model.decoder.parameters()) + list(model.cross_proj.parameters())
    ids = {id(p) for p in decoder_params}
    rest = [p for p in model.parameters() if id(p) not in ids]
    optimizer = torch.optim.AdamW(
        [{"params": decoder_params, "lr": args.decoder_lr}, {"params": rest, "lr": args.lr}], weight_decay=0.01
    )
    warmup = max(1, args.steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + torch.cos(torch.tensor(torch.pi * s / args.steps)).item()),
    )
    order = sorted(range(len(feats)), key=lambda i: feats[i].shape[0])
    losses, size = [], len(model.kept)
    model.train()
    for step in range(1, args.steps + 1):
        start = rng.randrange(0, max(1, len(order) - args.batch_size + 1))
        index = order[start : start + args.batch_size]
        modes = [rng.randrange(len(MODES)) for _ in index]
        rows = [targets[MODES[m]][i] for m, i in zip(modes, index, strict=True)]
        vocab = sample_vocabulary(rows, frequent, args.random, size, rng)
        positions = {token: k for k, token in enumerate(vocab)}
        x, lengths = pad_batch([feats[i] for i in index])
        f, f_len = model.frames(x, lengths)
        prefix_rows = [prompts[m] + [int(model.kept[t]) for t in row] for m, row in zip(modes, rows, strict=True)]
        prefix, prefix_len = pad_batch([torch.tensor(r, dtype=torch.float32)[:, None] for r in prefix_rows])
        prefix = prefix[..., 0].long()
        mask = torch.arange(prefix.shape[1])[None] < prefix_len[:, None]
        g_all = model.predict(prefix, mask, x, lengths)
        start_at = len(prompts[0]) - 1  # the state after the mode token predicts the first piece
        g = g_all[:, start_at:]
        logits = model.joint(f, g, torch.tensor(vocab))
        y, y_len = pad_batch([torch.tensor(remap(r, positions), dtype=torch.float32)[:, None] for r in rows])
        loss = rnnt_loss_scan(logits, y[..., 0].long(), f_len, y_len, blank=len(vocab)).mean()
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 50 == 0:
            losses.append({"step": step, "loss": round(float(loss.detach()), 4), "vocab": len(vocab)})
            print(json.dumps(losses[-1]), file=sys.stderr)
        if on_point is not None and ((args.every and step % args.every == 0) or step == args.steps):
            on_point(step)
            model.train()
    return losses


@torch.no_grad()
def greedy(model: WhisperTransducer, x: torch.Tensor, prompt_ids: list[int], max_symbols: int = 5) -> list[int]:
    """Greedy transducer decoding of one utterance's frames ``(T, D)``: Whisper ids, at most ``max_symbols`` per
    joint frame and two per joint frame in all. The decoder's states are cached (NeMo's ``decoder_mems``), so each
    written token costs one decoder step."""
    from nemo.core.classes.common import typecheck

    x, lengths = x[None].float(), torch.tensor([x.shape[0]])
    f, f_len = model.frames(x, lengths)
    prefix, out = list(prompt_ids), []
    blank, max_tokens = len(model.kept), 2 * int(f_len[0])
    model.decoder.return_mems = True
    with typecheck.disable_checks():  # the cached states carry the decoder's output type, not its input's
        try:
            ids = torch.tensor([prefix])
            mems = model.predict(ids, torch.ones_like(ids, dtype=torch.bool), x, lengths)
            for t in range(int(f_len[0])):
                for _ in range(max_symbols):
                    best = int(model.joint(f[:, t : t + 1], mems[:, -1, -1:])[0, 0, 0].argmax())
                    if best == blank or len(out) >= max_tokens:
                        break
                    out.append(int(model.kept[best]))
                    prefix.append(out[-1])
                    ids = torch.tensor([prefix])
                    mems = model.predict(ids, torch.ones_like(ids, dtype=torch.bool), x, lengths, mems)
        finally:
            model.decoder.return_mems = False
    return out


def transcribe(model: WhisperTransducer, feats: list, aed, modes: tuple[str, ...] = MODES) -> dict[str, list[str]]:
    """Greedy text of each utterance in each of ``modes`` (the normalized one normalized as the metrics read it)."""
    model.eval()
    out = {}
    for mode in modes:
        ids = prompt(aed, MODES.index(mode))
        out[mode] = [aed.tokenizer.ids_to_text(greedy(model, x, ids)).strip() for x in feats]
    if "normalized" in out:
        out["normalized"] = [normalize(text) for text in out["normalized"]]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the demo's fine-tuned AED (models/aed_prompt_finetuned.nemo)")
    parser.add_argument("--demo-dir", required=True, help="its demo folder (manifests, real_speech)")
    parser.add_argument("--variant", choices=VARIANTS, default="lm")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--decoder-lr", type=float, default=1e-4)
    parser.add_argument("--lm-scale", type=float, default=1.0)
    parser.add_argument("--stack", type=int, default=2)
    parser.add_argument("--frequent", type=int, default=512)
    parser.add_argument("--random", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--limit", type=int, default=0, help="score this many test utterances (0: all)")
    parser.add_argument(
        "--vocab-text",
        help="a JSON-lines text (the demo's lm/text.json: the books without the chapters of dev and test) whose "
        "tokens, in both modes, join the kept vocabulary",
    )
    parser.add_argument("--save", help="write the trained transducer's state dict here")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)

    from nemo_pc.pipelines.inference import load_asr_model

    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    aed = load_asr_model(args.model).eval()
    demo = Path(args.demo_dir)
    rows = demo_rows(demo)
    if args.limit:
        rows["test"] = rows["test"][: args.limit]
    start = time.perf_counter()
    feats = {split: encode(aed, split_rows, 1)[0] for split, split_rows in rows.items()}
    encode_seconds = time.perf_counter() - start
    marks = "".join(aed.cfg.train_ds.get("marks", ".,?"))
    texts = {
        "normalized": [normalize(row["text"]) for row in rows["train"]],
        "punctuated": [preprocess_punctuated(row["text"], marks) for row in rows["train"]],
    }
    whisper_ids = {mode: [aed.tokenizer.text_to_ids(text) for text in texts[mode]] for mode in MODES}
    extra = []
    if args.vocab_text:
        lines = read_manifest(args.vocab_text)
        extra = [aed.tokenizer.text_to_ids(normalize(line["text"])) for line in lines]
        extra += [aed.tokenizer.text_to_ids(preprocess_punctuated(line["text"], marks)) for line in lines]
    kept = kept_tokens(whisper_ids["normalized"] + whisper_ids["punctuated"] + extra)[0]
    by_count = kept_tokens(whisper_ids["normalized"] + whisper_ids["punctuated"])[1]
    position = {token: k for k, token in enumerate(kept)}
    targets = {mode: [remap(ids, position) for ids in whisper_ids[mode]] for mode in MODES}
    frequent = [position[token] for token in by_count[: args.frequent]]
    test_ids = [aed.tokenizer.text_to_ids(normalize(row["text"])) for row in rows["test"]]
    coverage = sum(t in position for ids in test_ids for t in ids) / max(1, sum(map(len, test_ids)))
    print(json.dumps({"kept_tokens": len(kept), "test_token_coverage": round(coverage, 4)}), file=sys.stderr)

    model = WhisperTransducer(aed, kept, feats["train"][0].shape[1], args.stack, args.variant, args.lm_scale)
    prompts = {k: prompt(aed, k) for k in range(len(MODES))}
    curve, clock = [], {"train": 0.0, "since": time.perf_counter()}

    def on_point(step: int) -> None:
        clock["train"] += time.perf_counter() - clock["since"]
        import jiwer

        hyps = transcribe(model, feats["dev"], aed, ("normalized",))["normalized"]
        refs = [normalize(row["text"]) for row in rows["dev"]]
        curve.append(
            {"step": step, "train_minutes": round(clock["train"] / 60, 2), "dev_n_wer": jiwer.wer(refs, hyps)}
        )
        print(json.dumps(curve[-1]), file=sys.stderr)
        clock["since"] = time.perf_counter()

    losses = train(model, feats["train"], targets, prompts, frequent, args, on_point=on_point)
    if args.save:
        torch.save({"state_dict": model.state_dict(), "kept": kept, "settings": vars(args)}, args.save)
    scores, started = {}, time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for split in ("test", "real_test"):
            outputs = transcribe(model, feats[split], aed)
            scores[split] = score_split(split, rows[split], outputs["punctuated"], outputs["normalized"], Path(tmp))
    results = {
        "settings": vars(args) | {"parameters": sum(p.numel() for p in model.parameters()), "kept_tokens": len(kept)},
        "test_token_coverage": coverage,
        "encode_minutes": round(encode_seconds / 60, 2),
        "score_minutes": round((time.perf_counter() - started) / 60, 2),
        "utterances": {split: len(split_rows) for split, split_rows in rows.items()},
        "curve": curve,
        "losses": losses,
        "scores": scores,
    }
    write_results(args.json, results, sys.argv if argv is None else ["quality_whisper_transducer.py", *argv])
    print(json.dumps(scores), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
