"""Tiny fixtures for the punctuated CTC model: distinct synthetic audio, a tokenizer with style tags, a config.

Everything is built in code under a temporary directory: a few seconds of tones per utterance, a SentencePiece
model trained on a handful of sentences, and a 4-layer d=32 Conformer, so that a CPU memorizes a batch in
seconds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nemo_pc.parts.text import normalize

SAMPLE_RATE = 16000

UTTERANCES = (
    ("Yes, it is.", "book"),
    ("Is it? No.", "book"),
)
"""Punctuated transcripts of the memorized batch, with their ``pc_source``."""


def write_tones(path: Path, seed: int, seconds: float = 1.6) -> Path:
    """A wav of a few seeded tone bursts: different seeds give clearly different audio."""
    import soundfile

    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    audio = np.zeros_like(t)
    bursts = 6
    for k in range(bursts):
        start, end = k * seconds / bursts, (k + 1) * seconds / bursts
        window = (t >= start) & (t < end)
        freq = rng.uniform(200, 3000)
        audio[window] = 0.3 * np.sin(2 * np.pi * freq * t[window])
    audio += 0.01 * rng.standard_normal(t.shape)
    soundfile.write(path, audio.astype(np.float32), SAMPLE_RATE)
    return path


def write_manifest(directory: Path, utterances: Sequence[tuple[str, str]] = UTTERANCES) -> Path:
    """Writes one wav per utterance and a manifest of the nemo_pc schema; returns the manifest path."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest = directory / "memorized.json"
    with manifest.open("w") as handle:
        for k, (text, pc_source) in enumerate(utterances):
            wav = write_tones(directory / f"utt{k}.wav", seed=k)
            normalized = normalize(text)
            entry = {
                "audio_filepath": str(wav),
                "duration": 1.6,
                "text": text if pc_source != "none" else normalized,
                "text_normalized": normalized,
                "pc_source": pc_source,
                "utt_id": f"utt{k}",
            }
            handle.write(json.dumps(entry) + "\n")
    return manifest


def train_tokenizer(directory: Path, manifest: Path, vocab_size: int = 48) -> Path:
    """The shared cased, punctuated tokenizer with the style tags, trained on one manifest."""
    from nemo_pc.data.datasets.style_dataset import build_style_tokenizer

    return build_style_tokenizer([manifest], directory, vocab_size=vocab_size)


def tiny_config(tokenizer_dir: Path, manifest: Path | None = None, pc: dict | None = None, layers: int = 4) -> dict:
    """The config of a tiny :class:`~nemo_pc.models.ctc_pc.EncDecCTCPCBPEModel` (d=32 Conformer)."""
    data = {"manifest_filepath": str(manifest) if manifest else None, "batch_size": 2, "shuffle": False}
    return {
        "sample_rate": SAMPLE_RATE,
        "tokenizer": {"dir": str(tokenizer_dir), "type": "bpe"},
        "preprocessor": {
            "_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
            "sample_rate": SAMPLE_RATE,
            "features": 40,
            "dither": 0.0,
            "pad_to": 0,
            "normalize": "per_feature",
        },
        "encoder": {
            "_target_": "nemo.collections.asr.modules.ConformerEncoder",
            "feat_in": 40,
            "n_layers": layers,
            "d_model": 32,
            "n_heads": 2,
            "subsampling_factor": 4,
            "subsampling_conv_channels": 16,
            "ff_expansion_factor": 2,
            "conv_kernel_size": 9,
            "dropout": 0.0,
            "dropout_pre_encoder": 0.0,
            "dropout_emb": 0.0,
            "dropout_att": 0.0,
        },
        "decoder": {"_target_": "nemo.collections.asr.modules.ConvASRDecoder", "feat_in": 32, "num_classes": -1},
        "train_ds": dict(data, shuffle=True),
        "validation_ds": dict(data),
        "optim": {"name": "adam", "lr": 3e-3},
        "pc": pc or {},
    }


def memorize(model, steps: int = 120, lr: float = 3e-3, bf16: bool = False) -> list[float]:
    """Trains a P&C CTC model on its first training batch for ``steps`` Adam steps, on the model's device (bf16
    autocast when asked), and returns each step's loss; the model is left in eval mode."""
    import torch

    device = next(model.parameters()).device
    batch = next(iter(model._train_dl))
    batch = type(batch)(*(item.to(device) if torch.is_tensor(item) else item for item in batch))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss, _ = model.compute_losses(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses
