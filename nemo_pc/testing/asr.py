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
        entries.append(
            {
                "audio_filepath": str(wav),
                "duration": duration,
                "text": text if source != "none" else normalized,
                "text_normalized": normalized,
                "pc_source": source,
                "utt_id": f"utt{index}",
            }
        )
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


def first_batch_features(model, manifest: str | Path, batch_size: int = 4):
    """The model's features and their lengths, as numpy arrays, of the first ``batch_size`` utterances of a P&C
    manifest, in its order: what an exported model's runner reads."""
    import torch

    from nemo_pc.data.datasets.pc_dataset import pc_dataloader_from_config

    loader = pc_dataloader_from_config({"manifest_filepath": str(manifest), "batch_size": batch_size}, model.tokenizer)
    batch = next(iter(loader))
    with torch.no_grad():
        features, lengths = model.preprocessor(input_signal=batch.audio, length=batch.audio_len)
    return features.numpy(), lengths.numpy()


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
    """The packaged RNN-T config of a variant (``variant=<decoders> predictor=<predictor> backbone=fastconformer``),
    shrunk to a 2-layer d=``hidden`` Conformer over 40 features at 4x with ``hidden``-wide predictor and joint, as a
    dict (the ``model`` section).

    Dropout, dither and SpecAugment are off, the loss is nemo_pc's scan loss and the optimizer Adam at a constant
    ``lr``, so that a few CPU steps on one batch lower the loss.
    """
    from omegaconf import OmegaConf

    from nemo_pc.pipelines.train import compose_config

    prednet = "model.decoder.head" if decoders == "dual" else "model.decoder"
    stateless = [f"{prednet}.normalization_mode=null"] if predictor == "stateless" else []
    manifests = {"train_ds": train_manifest, "validation_ds": validation_manifest}
    overrides = [
        f"variant={decoders}",
        f"predictor={predictor}",
        "backbone=fastconformer",
        f"model.pc.target={target}",
        f"model.tokenizer.dir={tokenizer_dir}",
        *_tiny_encoder(hidden),
        f"model.model_defaults.pred_hidden={hidden}",
        f"model.model_defaults.joint_hidden={hidden}",
        f"{prednet}.prednet.dropout=0.0",
        *stateless,
        "model.joint.jointnet.dropout=0.0",
        "model.spec_augment=null",
        "model.loss.loss_name=scan",
        "model.optim.name=adam",
        f"model.optim.lr={lr}",
        "model.optim.weight_decay=0.0",
        "~model.optim.sched",
        "model.log_prediction=false",
        f"model.train_ds.pc_fraction={pc_fraction}",
        *(
            f"model.{split}.{key}"
            for split, path in manifests.items()
            for key in (f"manifest_filepath={path or 'null'}", f"batch_size={batch_size}", "num_workers=0")
        ),
    ]
    return OmegaConf.to_container(compose_config("rnnt", overrides).model, resolve=True)


def _tiny_encoder(hidden: int) -> list[str]:
    """Overrides of the packaged FastConformer backbone: 2 layers of width ``hidden`` over 40 log-mel features at
    4x striding subsampling, layer norm in the convolution module, no dropout or dither."""
    return [
        "model.preprocessor.features=40",
        "model.preprocessor.dither=0.0",
        "model.encoder.n_layers=2",
        f"model.encoder.d_model={hidden}",
        "model.encoder.subsampling=striding",
        "model.encoder.subsampling_factor=4",
        f"model.encoder.subsampling_conv_channels={hidden}",
        "model.encoder.ff_expansion_factor=2",
        "model.encoder.n_heads=2",
        "model.encoder.conv_norm_type=layer_norm",
        "model.encoder.dropout=0.0",
        "model.encoder.dropout_pre_encoder=0.0",
        "model.encoder.dropout_att=0.0",
    ]


TINY_ENCODER_OVERRIDES = [
    "model.encoder.d_model=32",
    "model.encoder.n_heads=2",
    "model.encoder.n_layers=2",
    "model.encoder.subsampling_conv_channels=32",
    "model.encoder.ff_expansion_factor=2",
]
SCRIPT_VARIANTS = {
    "speech_to_text_rnnt_pc.py": ["variant=conditioned", "model.model_defaults.pred_hidden=32"],
    "speech_to_text_ctc_pc.py": ["variant=inter"],
}


def script_overrides(
    script: str, manifest: str | Path, tokenizer: str | Path, exp_dir: str | Path, name: str, *extra: str
) -> list[str]:
    """Hydra overrides that train a tiny model with one of the example training scripts for 2 steps on CPU, with
    ``exp_manager`` writing to ``exp_dir/name``; ``extra`` overrides come last."""
    return [
        *SCRIPT_VARIANTS[script],
        *TINY_ENCODER_OVERRIDES,
        f"model.tokenizer.dir={tokenizer}",
        f"model.train_ds.manifest_filepath={manifest}",
        f"model.validation_ds.manifest_filepath={manifest}",
        "trainer.max_steps=2",
        "trainer.max_epochs=-1",
        "trainer.val_check_interval=1.0",
        "trainer.accelerator=cpu",
        "trainer.enable_progress_bar=false",
        f"exp_manager.exp_dir={exp_dir}",
        f"name={name}",
        *extra,
    ]


RECIPE_VARIANTS = {
    "ctc": ["variant=inter"],
    "rnnt": [
        "variant=conditioned",
        "model.model_defaults.pred_hidden=32",
        "model.model_defaults.joint_hidden=32",
        "model.loss.loss_name=scan",
    ],
}
"""The variant and head sizes of :func:`tiny_recipe_overrides`, per family."""


def tiny_recipe_overrides(family: str, manifest: str | Path, tokenizer: str | Path, *extra: str) -> list[str]:
    """Hydra overrides that shrink the packaged CTC or RNN-T recipe (``family``: ``ctc`` or ``rnnt``) to a 2-layer
    d=32 encoder for :func:`nemo_pc.pipelines.train.train_model`: training on ``manifest`` in batches of 4 at a
    constant learning rate, no data workers, no validation set; ``extra`` overrides come last (e.g.
    ``model.validation_ds.manifest_filepath=[a.json,b.json]``)."""
    return [
        *RECIPE_VARIANTS[family],
        *TINY_ENCODER_OVERRIDES,
        f"model.tokenizer.dir={tokenizer}",
        f"model.train_ds.manifest_filepath={manifest}",
        "model.train_ds.batch_size=4",
        "model.train_ds.num_workers=0",
        "model.validation_ds.manifest_filepath=null",
        "model.validation_ds.batch_size=4",
        "model.validation_ds.num_workers=0",
        "~model.optim.sched",
        *extra,
    ]


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
        *variant,
        *TINY_ENCODER_OVERRIDES,
        "model.model_defaults.pred_hidden=32",
        "model.model_defaults.joint_hidden=32",
        f"model.tokenizer.dir={tokenizer_dir}",
        f"model.train_ds.manifest_filepath={manifest}",
        f"model.validation_ds.manifest_filepath={manifest}",
        "model.train_ds.num_workers=0",
        "model.validation_ds.num_workers=0",
        "model.loss.loss_name=scan",
        "model.spec_augment=null",
        "~model.optim.sched",
        "model.log_prediction=false",
        *extra,
    ]
    return compose_config("rnnt", overrides).model


def assert_head_decodes_under_bf16_autocast(model, blank_bias, manifest: str | Path) -> None:
    """What a bf16-mixed run's training-batch WER does to a head on the AED: the encoder's states come in bfloat16
    under autocast. With the head's blank made impossible (``blank_bias``, the blank output's bias, set to -50, so
    every step writes a token), two utterances transcribe in both modes, each to a text."""
    import torch

    with torch.no_grad():
        blank_bias.fill_(-50.0)
    paths = audio_paths(manifest)[:2]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = model.transcribe(paths, batch_size=2, mode="both", verbose=False)
    assert set(mixed) == {"normalized", "punctuated"}
    assert all(text for texts in mixed.values() for text in texts) and all(len(t) == 2 for t in mixed.values())
