"""Text-only pretraining of a P&C RNN-T's prediction network as a language model of each output mode.

A transducer's predictor is the part of the model that knows which piece tends to follow which: on a few hours of
speech it learns little of that, while the same corpus's books hold far more text than its audio. Before the RNN-T
trains on speech, :func:`pretrain_predictor` trains its predictor (every variant: one conditioned predictor, one
predictor per mode, one shared) to predict the next piece of each mode's text, through a linear output per mode that
is dropped afterwards; the joint then learns to read a predictor that already carries the text's statistics.

The text is a JSON-lines file of the manifest schema without audio (``text`` and ``text_normalized`` per line, as
the demo's ``lm/text.json``): each line gives both modes' targets as the training data prepares them
(:func:`nemo_pc.data.datasets.pc_batch.prepare_pc_text`, the model's marks and tokenizer).

Config (``model.predictor_lm``, read by :meth:`EncDecRNNTPCBPEModel.pretrain_predictor_lm`):
    text: the JSON-lines file (``null``: no pretraining).
    steps: optimizer steps (AdamW, 5% warm-up, cosine decay), each on one mode, the modes in turn.
    batch_size, lr: lines per step and the peak rate.
    max_tokens: pieces kept from the start of a long line.
    max_lines: read at most this many lines (``null``: all).
    seed: the seed of the batches' order.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from nemo_pc.data.datasets.pc_batch import pc_token_ids, prepare_pc_text
from nemo_pc.modules.dual import per_mode
from nemo_pc.parts.manifest import ManifestError

DEFAULTS = {"text": None, "steps": 0, "batch_size": 64, "lr": 2e-3, "max_tokens": 96, "max_lines": None, "seed": 0}


def read_lm_text(
    path: str | Path, tokenizer, marks: str, max_lines: int | None = None, max_tokens: int = 96
) -> tuple[dict[int, list[list[int]]], dict]:
    """Both modes' piece ids of every line of ``path``, keyed by mode id (0 normalized, 1 punctuated), and the
    counts: lines read and lines dropped by reason (a line with no word in ``text_normalized``).

    Raises:
        FileNotFoundError: no such file.
        ManifestError: a line that is not a JSON object, or without ``text_normalized`` (naming the file and line).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"predictor_lm.text: no such file: {path}")
    tokens: dict[int, list[list[int]]] = {0: [], 1: []}
    dropped: dict[str, int] = {}
    read = 0
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if max_lines is not None and read >= max_lines:
                break
            if not line.strip():
                continue
            try:
                fields = json.loads(line)
            except json.JSONDecodeError as error:
                raise ManifestError(path, number, f"not a JSON line ({error.msg})") from None
            if not isinstance(fields, Mapping):
                raise ManifestError(path, number, "not a JSON object")
            read += 1
            try:
                punctuated, normalized, _ = prepare_pc_text(fields, str(number), marks, 1.0, 0, path, number)
            except ManifestError as error:
                if error.kind != "empty text":
                    raise
                dropped["empty text"] = dropped.get("empty text", 0) + 1
                continue
            ids_n, ids_p = pc_token_ids(tokenizer, punctuated, normalized)
            tokens[0].append(ids_n[:max_tokens])
            tokens[1].append(ids_p[:max_tokens])
    return tokens, {"lines": read, "dropped": dropped}


def _batch(lines: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(ids) for ids in lines], dtype=torch.long)
    padded = torch.zeros(len(lines), int(lengths.max()), dtype=torch.long)
    for row, ids in enumerate(lines):
        padded[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return padded, lengths


def pretrain_predictor(
    model,
    tokens: dict[int, list[list[int]]],
    steps: int,
    batch_size: int = 64,
    lr: float = 2e-3,
    seed: int = 0,
    modes: tuple[int, ...] = (0, 1),
    progress=None,
) -> dict:
    """Trains ``model.decoder`` (any P&C RNN-T predictor) as a next-piece LM of each mode in ``modes`` for
    ``steps`` steps; a linear output per mode reads the predictor's output and is dropped afterwards. The model's
    other weights are not touched, and its train/eval state is kept.

    Returns:
        ``{"steps", "seconds", "loss": [{"step", "mode", "loss"}, ...] (every 50 steps and the last),
        "first_loss", "last_loss"}`` (mean cross-entropy per piece, nats).
    """
    modes = tuple(mode for mode in modes if tokens.get(mode))
    if not modes:
        raise ValueError("predictor_lm: no text for any trained mode")
    decoder = model.decoder
    predictor = per_mode(decoder)
    device = next(decoder.parameters()).device
    with torch.no_grad():  # the predictor's output width, whatever its kind (LSTM, stateless)
        probe = torch.zeros(1, 1, dtype=torch.long, device=device)
        hidden = predictor(targets=probe, target_length=torch.ones(1, dtype=torch.long), modes=modes[0])[0].shape[1]
    vocab = int(decoder.vocab_size)
    heads = nn.ModuleDict({str(mode): nn.Linear(hidden, vocab) for mode in modes}).to(device)
    params = [p for p in decoder.parameters() if p.requires_grad] + list(heads.parameters())
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 20)

    def rate(step: int) -> float:
        return min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(step, steps) / steps))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    rng, curve, was_training = random.Random(seed), [], decoder.training
    decoder.train()
    start = time.perf_counter()
    for step in range(1, steps + 1):
        mode = modes[(step - 1) % len(modes)]
        lines = rng.sample(tokens[mode], min(batch_size, len(tokens[mode])))
        y, lengths = _batch(lines)
        y, lengths = y.to(device), lengths.to(device)
        g = predictor(targets=y, target_length=lengths, modes=mode)[0]  # (B, D, U + 1): the start, then each piece
        logits = heads[str(mode)](g.transpose(1, 2)[:, : y.shape[1]])
        mask = torch.arange(y.shape[1], device=device)[None] < lengths[:, None]
        loss = nn.functional.cross_entropy(logits[mask], y[mask])
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        if step % 50 == 0 or step == steps or step <= len(modes):
            curve.append({"step": step, "mode": mode, "loss": round(float(loss.detach()), 4)})
        if progress is not None:
            progress(step)
    decoder.train(was_training)
    return {
        "steps": steps,
        "seconds": round(time.perf_counter() - start, 1),
        "loss": curve,
        "first_loss": curve[0]["loss"],
        "last_loss": curve[-1]["loss"],
    }
