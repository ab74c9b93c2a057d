"""Text-formatter fixtures: hand-written (written, spoken) pairs, a WordPiece vocabulary and tiny model configs.

Everything is built in code so that tests need no TN grammars, no text corpus and no pretrained weights.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from nemo_pc.formatter.labels import span_input
from nemo_pc.parts.text import normalize

WRITTEN_SPOKEN = [
    ("On March 15th, 2024, the CEO spoke.", "on march fifteenth twenty twenty four the ceo spoke"),
    ("Revenue reached $12.3 million.", "revenue reached twelve point three million dollars"),
    ("Did you buy an iPhone at McDonald's?", "did you buy an iphone at mcdonald's"),
    ("Call 1-800-772-1213 today.", "call one eight hundred seven seven two one two one three today"),
    ("I met Sarah in Paris, and we talked.", "i met sarah in paris and we talked"),
    ("Is NASA open on Monday?", "is nasa open on monday"),
]
"""Written texts and their spoken forms, as NeMo TN would give them (lower case, numbers spelled out)."""

BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

TINY_REWRITER_OVERRIDES = [
    "model.bart.d_model=32",
    "model.bart.encoder_layers=1",
    "model.bart.decoder_layers=1",
    "model.bart.encoder_ffn_dim=64",
    "model.bart.decoder_ffn_dim=64",
    "model.bart.encoder_attention_heads=2",
    "model.bart.decoder_attention_heads=2",
]
"""Hydra overrides that make ``configs/formatter/rewriter.yaml`` a one-layer, d=32 BART for tests."""


def write_wordpiece_vocab(path: str | Path, texts: Iterable[str]) -> Path:
    """A WordPiece ``vocab.txt``: BERT's special tokens, every normalized word of ``texts``, and single letters
    and digits (also as ``##`` continuations) so that unseen words still split into known pieces."""
    entries = dict.fromkeys(BERT_SPECIALS)
    for text in texts:
        entries.update(dict.fromkeys(normalize(text).split()))
    chars = "abcdefghijklmnopqrstuvwxyz0123456789'"
    entries.update(dict.fromkeys(chars))
    entries.update(dict.fromkeys(f"##{ch}" for ch in chars))
    path = Path(path)
    path.write_text("\n".join(entries) + "\n", encoding="utf-8")
    return path


def write_jsonl(path: str | Path, entries: Iterable[Mapping]) -> Path:
    """Writes JSON lines (tests only; library code writes through :mod:`nemo_pc.parts.manifest`)."""
    path = Path(path)
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")
    return path


def tiny_tagger_config(vocab_file: str | Path, train_manifest: str | Path | None = None, **overrides) -> dict:
    """A 2-layer d=32 BERT tagger config (no pretrained weights)."""
    cfg = {
        "tasks": ["punct", "case", "itn"],
        "max_length": 64,
        "encoder": {
            "pretrained": None,
            "config": {
                "hidden_size": 32,
                "num_hidden_layers": 2,
                "num_attention_heads": 2,
                "intermediate_size": 64,
                "max_position_embeddings": 128,
                "vocab_size": 16,
            },
        },
        "tokenizer": {"vocab_file": str(vocab_file), "do_lower_case": True},
        "optim": {"name": "adamw", "lr": 3e-3, "weight_decay": 0.0},
    }
    if train_manifest is not None:
        cfg["train_ds"] = {"manifest_filepath": str(train_manifest), "batch_size": 8, "shuffle": True}
    cfg.update(overrides)
    return cfg


def tiny_rewriter_config(tokenizer_file: str | Path, train_manifest: str | Path | None = None, **overrides) -> dict:
    """A 1+1-layer d=64 BART rewriter config."""
    cfg = {
        "tokenizer": {"tokenizer_file": str(tokenizer_file)},
        "bart": {
            "d_model": 64,
            "encoder_layers": 1,
            "decoder_layers": 1,
            "encoder_attention_heads": 2,
            "decoder_attention_heads": 2,
            "encoder_ffn_dim": 128,
            "decoder_ffn_dim": 128,
            "max_position_embeddings": 128,
            "dropout": 0.0,
        },
        "max_source_length": 64,
        "max_target_length": 32,
        "optim": {"name": "adamw", "lr": 3e-3, "weight_decay": 0.0},
    }
    if train_manifest is not None:
        cfg["train_ds"] = {"manifest_filepath": str(train_manifest), "batch_size": 8, "shuffle": True}
    cfg.update(overrides)
    return cfg


def train_tiny_formatter(folder: str | Path, pairs=WRITTEN_SPOKEN, steps: int = 200, context: int = 2):
    """A tiny tagger and rewriter that have memorized ``pairs`` (about 10 s on two CPU cores).

    Tiny models gain nothing from intra-op threads, and on a busy two-core machine the threads only contend, so this
    sets torch to one thread for the rest of the process.

    Returns:
        ``(tagger, rewriter)``, both in eval mode.
    """
    import torch

    from nemo_pc.data.tokenizers.rewriter import train_rewriter_tokenizer
    from nemo_pc.formatter.labels import derive_labels
    from nemo_pc.models.rewriter import SpanRewriterModel
    from nemo_pc.models.tagger import PCTaggerModel
    from nemo_pc.testing.training import fit_steps

    folder = Path(folder)
    labeled = [derive_labels(written, spoken) for written, spoken in pairs]
    vocab = write_wordpiece_vocab(folder / "vocab.txt", [spoken for _, spoken in pairs])
    tagger_data = write_jsonl(folder / "tagger.json", [item.to_dict() for item in labeled])
    span_pairs = [
        {"input": span_input(item.words, start, end, context), "target": text}
        for item in labeled
        for start, end, text in item.spans
    ]
    rewriter_data = write_jsonl(folder / "rewriter.json", span_pairs)
    texts = [p["input"] for p in span_pairs] + [p["target"] for p in span_pairs]
    tokenizer = train_rewriter_tokenizer(texts, folder / "tokenizer.json", vocab_size=300)
    tagger = PCTaggerModel(tiny_tagger_config(vocab, tagger_data))
    rewriter = SpanRewriterModel(tiny_rewriter_config(tokenizer, rewriter_data))
    torch.set_num_threads(1)
    fit_steps(tagger, steps, gradient_clip_val=None)
    fit_steps(rewriter, steps, gradient_clip_val=None)
    return tagger, rewriter
