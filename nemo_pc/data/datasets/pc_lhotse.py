"""P&C batches through NeMo's lhotse dataloading: lhotse shar, NeMo tarred audio and NeMo manifests.

:class:`LhotsePCDataset` maps a lhotse ``CutSet`` (one batch chosen by lhotse's sampler) to the same
:class:`~nemo_pc.data.datasets.pc_batch.PCBatch` as the map-style
:class:`~nemo_pc.data.datasets.pc_dataset.PCAudioTextDataset`,
and :func:`lhotse_pc_dataloader` builds NeMo's lhotse loader around it from a data config with
``use_lhotse: true``. NeMo's readers put a manifest's ``text`` into the cut's supervision and every other field
into ``cut.custom`` (``text_normalized``, ``pc_source``, ``utt_id``); ``nemo-pc export-shar`` writes shar cuts the
same way. The data keys are NeMo's (``manifest_filepath``, ``tarred_audio_filepaths``, ``shar_path``,
``cuts_path``, ``input_cfg``, ``batch_size``, ``batch_duration``, ``use_bucketing``, ``num_buckets``,
``bucket_duration_bins``, ``max_duration``, ``min_duration``, ``shuffle``, ``seed``, ``shard_seed``,
``force_finite``, ...); ``marks``, ``pc_fraction``, ``pc_seed`` and ``tn`` are read here. A manifest with lines
without ``text_normalized`` is read through its derived copy
(:func:`~nemo_pc.data.normalized_text.derived_manifest_paths`). See docs/scale.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from nemo_pc.data.datasets.pc_batch import PCBatch, collate_pc_batch, pc_token_ids, prepare_pc_text
from nemo_pc.data.normalized_text import check_tn, derived_manifest_paths
from nemo_pc.parts.manifest import ManifestError
from nemo_pc.parts.styles import check_format
from nemo_pc.parts.text import DEFAULT_MARKS, parse_marks

MAP_STYLE_KEYS = ("bucketing_window", "augmentor")
"""Keys of the map-style loader that NeMo's lhotse loader has other keys for: set, they are an error."""


class LhotsePCDataset(torch.utils.data.Dataset):
    """A lhotse dataset: a ``CutSet`` to a :class:`~nemo_pc.data.datasets.pc_batch.PCBatch` (audio, N and P token ids
    and
    the P-available mask), with the texts prepared as the map-style dataset prepares them.

    The ``pc_fraction`` key of an utterance is its ``utt_id``, else its audio file path (as in the map-style
    dataset), else its cut id (for NeMo tarred audio the tar member name); a manifest and its shar or tarred copy
    with ``utt_id`` select the same utterances.

    Args:
        tokenizer: a NeMo tokenizer (``text_to_ids``), the model's cased, punctuated SentencePiece tokenizer.
        marks: the mark set kept in the P text.
        pc_fraction: share of utterances that keep their P labels.
        pc_seed: seed of that choice.
        mixed_format: ``"m0"``, ``"m1"`` or ``"m2"``: the P tokens are those of the mixed-style transcript.

    Raises (when a batch is made):
        ManifestError: a cut without ``text_normalized``, with an empty one or with an unknown ``pc_source``; the
            message names the cut (a ``ValueError``: nothing is dropped silently).
    """

    def __init__(
        self,
        tokenizer,
        marks: str = DEFAULT_MARKS,
        pc_fraction: float = 1.0,
        pc_seed: int = 0,
        mixed_format: str | None = None,
    ) -> None:
        from lhotse.dataset import AudioSamples

        super().__init__()
        if not 0.0 <= pc_fraction <= 1.0:
            raise ValueError(f"pc_fraction must be in [0, 1], got {pc_fraction}")
        self.tokenizer = tokenizer
        self.marks, self.pc_fraction, self.pc_seed = marks, pc_fraction, pc_seed
        self.mixed_format = None if mixed_format is None else check_format(mixed_format)
        self.load_audio = AudioSamples(fault_tolerant=False)

    def __getitem__(self, cuts) -> PCBatch:
        targets = [self.targets(cut) for cut in cuts]  # bad text fails before any audio is read
        try:
            audio, audio_len = self.load_audio(cuts)
        except Exception as err:  # soundfile, audioread and lhotse raise many types
            _raise_for_bad_audio(cuts, err)
        return collate_pc_batch(audio, audio_len, targets, [str(cut.id) for cut in cuts])

    def targets(self, cut) -> tuple[list[int], list[int], bool]:
        """``(tokens_n, tokens_p, p_available)`` of one cut."""
        fields = dict(cut.custom or {})
        texts = [supervision.text for supervision in cut.supervisions if supervision.text]
        if texts:
            fields["text"] = " ".join(texts)
        punctuated, normalized, p_available = prepare_pc_text(
            fields, _key(cut), self.marks, self.pc_fraction, self.pc_seed, _where(cut), None
        )
        tokens_n, tokens_p = pc_token_ids(self.tokenizer, punctuated, normalized, self.mixed_format)
        return tokens_n, tokens_p, p_available


ITERABLE_KEYS = ("shar_path", "tarred_audio_filepaths")
"""Data keys of NeMo's iterable sources: every rank reads all of it in its own order, nothing is split by rank."""


def _check_rank_split(config: Mapping, world_size: int) -> None:
    """Refuses a shuffled map-style source (a plain manifest or ``cuts_path``) under DDP with ``shard_seed: trng``.

    There the sampler splits the data by rank: each rank shuffles the whole list and takes every ``world_size``-th
    batch. With ``trng`` (NeMo's default) every rank shuffles with its own random seed, so the ranks' shares overlap
    and some utterances are seen by no rank in an epoch; an integer ``shard_seed`` (or ``randomized``) shuffles
    alike on every rank.
    """
    if world_size <= 1 or not config.get("shuffle") or config.get("input_cfg"):
        return
    if any(config.get(key) for key in ITERABLE_KEYS) or config.get("force_iterable_dataset"):
        return
    if config.get("shard_seed", "trng") == "trng":
        raise ValueError(
            f"data config: with a plain manifest on {world_size} processes, shuffle and shard_seed 'trng' give every "
            "rank its own order, so the ranks' shares overlap: set an integer shard_seed (e.g. shard_seed: 1)"
        )


def _key(cut) -> str:
    utt_id = (cut.custom or {}).get("utt_id")
    if utt_id:
        return str(utt_id)
    recording = getattr(cut, "recording", None)  # a MixedCut has none
    if recording is not None and recording.sources and recording.sources[0].type == "file":
        return str(recording.sources[0].source)
    return cut.id


def _raise_for_bad_audio(cuts, err: Exception) -> None:
    """Raises a :class:`ManifestError` naming the first cut of ``cuts`` whose audio cannot be read."""
    for cut in cuts:
        try:
            cut.load_audio()
        except Exception as cut_err:
            reason = " ".join(str(cut_err).split())
            raise ManifestError(_where(cut), None, f"cannot read audio: {reason}", "bad audio") from cut_err
    raise err


def _where(cut) -> str:
    origin = next((cut.custom[k] for k in ("manifest_origin", "shard_origin") if k in (cut.custom or {})), None)
    return f"{origin}: cut {cut.id}" if origin else f"cut {cut.id}"


def lhotse_pc_dataloader(
    config: Mapping, tokenizer, mixed_format: str | None = None, global_rank: int = 0, world_size: int = 1
) -> torch.utils.data.DataLoader:
    """NeMo's lhotse DataLoader of :class:`LhotsePCDataset` batches from a NeMo data config.

    The loader has no length (shar and tarred data repeat without end): train with ``trainer.max_steps``, an int
    ``trainer.limit_train_batches`` and ``trainer.use_distributed_sampler=false``, as NeMo's lhotse recipes do.

    Raises:
        ValueError: ``bucketing_window`` or ``augmentor`` set (NeMo's ``use_bucketing`` and its augmentation keys
            do their work here), ``concatenate_samples`` set, or a bad ``pc_fraction``.
    """
    from nemo.collections.common.data.lhotse import get_lhotse_dataloader_from_config
    from omegaconf import DictConfig, OmegaConf

    if isinstance(config, DictConfig):
        config = OmegaConf.to_container(config, resolve=True)
    config = dict(config)
    for key in MAP_STYLE_KEYS:
        if config.pop(key, None):
            raise ValueError(
                f"data config: {key!r} is a key of the map-style loader; with use_lhotse use NeMo's keys "
                "(use_bucketing, num_buckets, batch_duration; perturb_speed, noise_path)"
            )
    if config.get("concatenate_samples"):
        raise ValueError(
            "data config: concatenate_samples is not supported: the fields of one utterance would label several"
        )
    _check_rank_split(config, world_size)
    tn = check_tn(config.pop("tn", "nemo"))
    if config.get("manifest_filepath"):
        tarred = bool(config.get("tarred_audio_filepaths"))  # its audio_filepath values are tar member names
        config["manifest_filepath"] = derived_manifest_paths(config["manifest_filepath"], tn, anchor_audio=not tarred)
    dataset = LhotsePCDataset(
        tokenizer,
        marks=parse_marks(config.pop("marks", DEFAULT_MARKS), "data config: marks"),
        pc_fraction=float(config.pop("pc_fraction", 1.0)),
        pc_seed=int(config.pop("pc_seed", 0)),
        mixed_format=mixed_format,
    )
    # no tokenizer: NeMo would pre-tokenize the raw ``text``, and the targets are made by the dataset
    return get_lhotse_dataloader_from_config(
        config, global_rank=global_rank, world_size=world_size, dataset=dataset, tokenizer=None
    )
