"""The tiny punctuated CTC model: the utterances it memorizes and its config.

The audio, manifest and tokenizer come from :mod:`nemo_pc.testing.asr` (:func:`memorized_corpus` calls them with
the CTC model's settings: the tokenizer carries the style tags); the model is a 4-layer d=32 Conformer, so that a
CPU memorizes a batch in seconds (:func:`nemo_pc.testing.training.fit_steps`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nemo_pc.testing.asr import SAMPLE_RATE, train_tokenizer, write_pc_manifest

UTTERANCES = (
    ("Yes, it is.", "book"),
    ("Is it? No.", "book"),
)
"""Punctuated transcripts of the memorized batch, with their ``pc_source``."""

DURATION = 1.6
"""Seconds of audio per memorized utterance."""

VOCAB_SIZE = 48
"""The size of the tokenizer with the style tags."""


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


def memorized_corpus(folder: str | Path, utterances: Sequence[tuple[str, str]] = UTTERANCES) -> tuple[Path, Path]:
    """The memorized batch under ``folder``: a manifest of ``utterances`` (``DURATION`` seconds each) and the
    tokenizer with the style tags trained on it; returns ``(manifest, tokenizer)``."""
    folder = Path(folder)
    manifest = write_pc_manifest(folder / "audio", utterances, duration=DURATION)
    return manifest, train_tokenizer(manifest, folder / "tokenizer", vocab_size=VOCAB_SIZE, style_tags=True)
