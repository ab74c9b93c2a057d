"""Tiny ASR fixtures built in code: audio, nemo_pc manifests, a tokenizer and small model configs.

Every utterance's audio is a distinct sequence of tones, so that a tiny model can memorize a handful of them on CPU
in seconds. The configs are NeMo model configs as dicts, small enough for unit tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nemo_pc.parts.manifest import write_manifest
from nemo_pc.parts.text import normalize

SAMPLE_RATE = 16000

UTTERANCES = (
    ("Yes, go home.", "book"),
    ("Who is there?", "book"),
    ("No. Stay, Anna.", "book"),
    ("the dog ran", "none"),
)
"""Punctuated texts and their ``pc_source``; the last has no P transcript."""


PUNCTUATED_TEXTS = ("Yes, go home.", "Who is there?", "Stay, Anna.", "the dog ran")
"""Punctuated texts that NeMo TN leaves as they are (no digit, symbol or abbreviation such as "No.")."""


def tone_audio(index: int, duration: float = 1.0, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """A float32 waveform of four tones whose pitches depend on ``index``, with a little seeded noise."""
    rng = np.random.default_rng(index)
    samples = int(duration * sample_rate)
    time = np.arange(samples) / sample_rate
    pitches = 200.0 + 150.0 * ((np.arange(4) * 3 + index * 5) % 11)
    segment = np.minimum(np.arange(samples) * 4 // samples, 3)
    audio = 0.3 * np.sin(2 * np.pi * pitches[segment] * time) + 0.01 * rng.standard_normal(samples)
    return audio.astype(np.float32)


def write_wav(path: str | Path, audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> Path:
    """Writes a 16-bit PCM wav."""
    import soundfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), audio, sample_rate, subtype="PCM_16")
    return path


def write_pc_manifest(
    folder: str | Path,
    utterances: Sequence[tuple[str, str]] = UTTERANCES,
    name: str = "utterances.json",
    duration: float = 1.0,
) -> Path:
    """Writes one tone wav per utterance and a manifest of the nemo_pc schema; returns the manifest path.

    ``text`` is the punctuated text where ``pc_source`` is not ``none``, else the normalized text.
    """
    folder = Path(folder)
    entries = []
    for index, (text, source) in enumerate(utterances):
        wav = write_wav(folder / "wav" / f"utt{index}.wav", tone_audio(index, duration))
        normalized = normalize(text)
        entries.append({
            "audio_filepath": str(wav), "duration": duration, "text": text if source != "none" else normalized,
            "text_normalized": normalized, "pc_source": source, "utt_id": f"utt{index}",
        })  # fmt: skip
    return write_manifest(folder / name, entries)


def write_punctuated_manifest(
    folder: str | Path,
    texts: Sequence[str] = PUNCTUATED_TEXTS,
    name: str = "punctuated.json",
    duration: float = 1.0,
) -> Path:
    """Writes one tone wav per text and a manifest as NeMo's P&C models train on: ``audio_filepath`` (relative to the
    manifest), ``duration`` and punctuated, cased ``text`` only; returns the manifest path."""
    folder = Path(folder)
    entries = []
    for index, text in enumerate(texts):
        write_wav(folder / "wav" / f"utt{index}.wav", tone_audio(index, duration))
        entries.append({"audio_filepath": f"wav/utt{index}.wav", "duration": duration, "text": text})
    return write_manifest(folder / name, entries)


def write_nemo_tarred(manifest: str | Path, folder: str | Path) -> tuple[Path, Path]:
    """A one-shard NeMo tarred copy of a manifest, as NeMo's ``convert_to_tarred_audio_dataset.py`` writes it: a
    tar of the audio files (member names are the file names) and a manifest whose ``audio_filepath`` is the member
    name, with ``shard_id`` 0 and every other field kept. Returns ``(audio_0.tar, tarred_audio_manifest.json)``."""
    import tarfile

    from nemo_pc.parts.manifest import read_manifest

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    with tarfile.open(folder / "audio_0.tar", "w") as tar:
        for entry in read_manifest(manifest):
            audio = Path(entry["audio_filepath"])
            tar.add(audio, arcname=audio.name)
            entries.append({**entry, "audio_filepath": audio.name, "shard_id": 0})
    return folder / "audio_0.tar", write_manifest(folder / "tarred_audio_manifest.json", entries)


def train_tokenizer(manifest: str | Path, folder: str | Path, vocab_size: int = 40, style_tags: bool = False) -> Path:
    """Trains the cased, punctuated BPE tokenizer on a manifest; returns its folder.

    ``style_tags`` adds the style tags of the mixed-style CTC and AED variants
    (:func:`nemo_pc.data.datasets.style_dataset.build_style_tokenizer`).
    """
    if style_tags:
        from nemo_pc.data.datasets.style_dataset import build_style_tokenizer

        return build_style_tokenizer([manifest], folder, vocab_size=vocab_size)
    from nemo_pc.data.tokenizers.pc_tokenizer import build_tokenizer

    return build_tokenizer([manifest], folder, vocab_size=vocab_size)


def audio_paths(manifest: str | Path) -> list[str]:
    """The ``audio_filepath`` of every entry of a manifest written by :func:`write_pc_manifest`, in order."""
    from nemo_pc.parts.manifest import read_manifest

    return [entry["audio_filepath"] for entry in read_manifest(manifest)]


def _predictor(kind: str, pred_hidden: int, conditioned: bool) -> dict:
    if kind == "lstm":
        target = (
            "nemo_pc.modules.ModeConditionedRNNTDecoder" if conditioned else "nemo.collections.asr.modules.RNNTDecoder"
        )
        config = {"_target_": target, "prednet": {"pred_hidden": pred_hidden, "pred_rnn_layers": 1}}
    elif kind == "stateless":
        target = (
            "nemo_pc.modules.ModeConditionedStatelessDecoder"
            if conditioned
            else "nemo.collections.asr.modules.StatelessTransducerDecoder"
        )
        config = {"_target_": target, "prednet": {"pred_hidden": pred_hidden}, "context_size": 2}
    else:
        raise ValueError(f"predictor must be 'lstm' or 'stateless', got {kind!r}")
    if conditioned:
        config["mode_dim"] = 12
    return config


def tiny_model_config(
    tokenizer_dir: str | Path,
    decoders: str = "conditioned",
    predictor: str = "lstm",
    target: str = "punctuated",
    train_manifest: str | Path | None = None,
    validation_manifest: str | Path | None = None,
    batch_size: int = 4,
    lr: float = 0.003,
    hidden: int = 64,
    pc_fraction: float = 1.0,
) -> dict:
    """A 2-layer d=64 Conformer RNN-T P&C model config of the given variant, as a dict."""
    joint = {
        "_target_": "nemo.collections.asr.modules.RNNTJoint",
        "jointnet": {"joint_hidden": hidden, "activation": "relu", "dropout": 0.0},
        "log_softmax": None,
        "preserve_memory": False,
        "fuse_loss_wer": False,
    }
    decoder = _predictor(predictor, hidden, conditioned=decoders == "conditioned")
    if decoders == "dual":
        decoder = {
            "_target_": "nemo_pc.modules.DualRNNTDecoder",
            "head_target": decoder.pop("_target_"),
            "head": decoder,
        }
        joint = {
            "_target_": "nemo_pc.modules.DualRNNTJoint",
            "jointnet": joint.pop("jointnet"),
            "head_target": joint.pop("_target_"),
            "head": joint,
        }
    data = {"sample_rate": SAMPLE_RATE, "batch_size": batch_size, "num_workers": 0}
    return {
        "sample_rate": SAMPLE_RATE,
        "pc": {"decoders": decoders, "target": target, "alpha": 0.5, "default_mode": "punctuated"},
        "tokenizer": {"dir": str(tokenizer_dir), "type": "bpe"},
        "model_defaults": {"enc_hidden": hidden, "pred_hidden": hidden},
        "train_ds": {**data, "manifest_filepath": str(train_manifest) if train_manifest else None,
                     "shuffle": True, "pc_fraction": pc_fraction},
        "validation_ds": {**data, "manifest_filepath": str(validation_manifest) if validation_manifest else None,
                          "shuffle": False},
        "preprocessor": {
            "_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
            "sample_rate": SAMPLE_RATE, "normalize": "per_feature", "window_size": 0.025, "window_stride": 0.01,
            "features": 40, "n_fft": 512, "dither": 0.0, "pad_to": 0,
        },
        "encoder": {
            "_target_": "nemo.collections.asr.modules.ConformerEncoder",
            "feat_in": 40, "n_layers": 2, "d_model": hidden, "subsampling": "striding", "subsampling_factor": 4,
            "subsampling_conv_channels": hidden, "ff_expansion_factor": 2, "self_attention_model": "rel_pos",
            "n_heads": 2, "conv_kernel_size": 9, "conv_norm_type": "layer_norm", "dropout": 0.0,
            "dropout_pre_encoder": 0.0, "dropout_emb": 0.0, "dropout_att": 0.0,
        },
        "decoder": decoder,
        "joint": joint,
        "decoding": {"strategy": "greedy_batch", "greedy": {"max_symbols": 10}},
        "loss": {"loss_name": "scan"},
        "optim": {"name": "adam", "lr": lr, "betas": [0.9, 0.98], "weight_decay": 0.0},
        "log_prediction": False,
    }  # fmt: skip


TINY_ENCODER_OVERRIDES = [
    "model.encoder.d_model=32", "model.encoder.n_heads=2", "model.encoder.n_layers=2",
    "model.encoder.subsampling_conv_channels=32", "model.encoder.ff_expansion_factor=2",
]  # fmt: skip
SCRIPT_VARIANTS = {
    "speech_to_text_rnnt_pc.py": ["variant=conditioned", "model.model_defaults.pred_hidden=32"],
    "speech_to_text_ctc_pc.py": ["variant=inter"],
}


def script_overrides(script: str, manifest: str | Path, tokenizer: str | Path, exp_dir: str | Path, name: str,
                     *extra: str) -> list[str]:  # fmt: skip
    """Hydra overrides that train a tiny model with one of the example training scripts for 2 steps on CPU, with
    ``exp_manager`` writing to ``exp_dir/name``; ``extra`` overrides come last."""
    return [
        *SCRIPT_VARIANTS[script], *TINY_ENCODER_OVERRIDES, f"model.tokenizer.dir={tokenizer}",
        f"model.train_ds.manifest_filepath={manifest}", f"model.validation_ds.manifest_filepath={manifest}",
        "trainer.max_steps=2", "trainer.max_epochs=-1", "trainer.val_check_interval=1.0", "trainer.accelerator=cpu",
        "trainer.enable_progress_bar=false", f"exp_manager.exp_dir={exp_dir}", f"name={name}", *extra,
    ]  # fmt: skip


STREAMING_VARIANT = ["encoder=streaming", "variant=conditioned", "predictor=stateless"]


def tiny_streaming_config(tokenizer_dir: str | Path, manifest: str | Path, *extra: str, encoder: str = "streaming"):
    """The packaged RNN-T config with the cache-aware streaming encoder and the conditioned stateless predictor
    (``encoder=streaming variant=conditioned predictor=stateless``), shrunk to a 2-layer d=32 encoder; ``model``
    section.

    SpecAugment is off and the learning rate constant, so that a few steps on one batch lower the loss. ``encoder``
    picks another encoder variant (``streaming_4x``).
    """
    from nemo_pc.pipelines.train import compose_config

    variant = [f"encoder={encoder}", *STREAMING_VARIANT[1:]]
    overrides = [
        *variant, *TINY_ENCODER_OVERRIDES, "model.model_defaults.pred_hidden=32",
        "model.model_defaults.joint_hidden=32", f"model.tokenizer.dir={tokenizer_dir}",
        f"model.train_ds.manifest_filepath={manifest}", f"model.validation_ds.manifest_filepath={manifest}",
        "model.train_ds.num_workers=0", "model.validation_ds.num_workers=0", "model.loss.loss_name=scan",
        "model.spec_augment=null", "~model.optim.sched", "model.log_prediction=false", *extra,
    ]  # fmt: skip
    return compose_config("rnnt", overrides).model
