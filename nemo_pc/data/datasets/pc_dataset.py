"""Audio with both transcripts: the dataset of the joint punctuated + normalized ASR models.

Every item holds the audio, the token ids of ``text_normalized`` (mode 0, N), the token ids of the punctuated
``text`` (mode 1, P) and whether the P transcript may be trained on. P is unavailable where ``pc_source`` is
``"none"`` and, with ``pc_fraction`` < 1, on a fixed, seeded share of the other utterances (paper 000, Table III).

The data config follows NeMo's ``train_ds`` / ``validation_ds`` keys::

    manifest_filepath: train.json     # one manifest, or a list of them
    sample_rate: 16000
    batch_size: 8
    shuffle: true
    num_workers: 0
    pin_memory: false
    max_duration: null                # longer utterances are dropped and counted in the log
    min_duration: null
    pc_fraction: 1.0                  # share of utterances that keep their P labels
    pc_seed: 0
    marks: ".,?"                      # the mark set kept in the P text; those of ! ; : outside it fold into . . ,
    augmentor: null                   # NeMo's augmentor config, e.g. {speed: {prob: 0.5, sr: 16000, ...}}
    bucketing_window: 0               # >0: batches of similar durations, sorted within windows of this many
                                      # batches (less padding); with shuffle the batch order is still shuffled
                                      # every epoch, without it (validation) the batches come in a fixed order
    use_lhotse: false                 # true: NeMo's lhotse loader (shar, tarred audio, NeMo manifests) over
                                      # nemo_pc.data.datasets.pc_lhotse.LhotsePCDataset; see docs/scale.md
    tn: nemo                          # a line without text_normalized gets it from its text: NeMo TN (nemo) or
                                      # none, then normalize; cached by content (nemo_pc.data.normalized_text)

A model whose main head learns a mixed-style transcript (papers/001 §2.3) passes ``mixed_format``: the P tokens are
then those of ``compose_mixed(N, P, mixed_format)``, and batches keep the :class:`PCBatch` layout.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from nemo_pc.data.datasets.pc_batch import PCBatch, collate_pc_batch, pc_token_ids, prepare_pc_text
from nemo_pc.data.normalized_text import check_tn, iter_pc_manifest
from nemo_pc.parts.manifest import DropCounter, ManifestError, audio_path, require_text
from nemo_pc.parts.styles import check_format
from nemo_pc.parts.text import DEFAULT_MARKS, parse_marks

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class PCUtterance:
    """One checked manifest line."""

    audio_filepath: str
    duration: float
    offset: float
    text: str
    text_normalized: str
    p_available: bool
    where: str


def read_pc_manifest(
    manifest: str | Path,
    marks: str = DEFAULT_MARKS,
    pc_fraction: float = 1.0,
    pc_seed: int = 0,
    min_duration: float | None = None,
    max_duration: float | None = None,
    drops: DropCounter | None = None,
    tn: str = "nemo",
) -> list[PCUtterance]:
    """Reads and checks a manifest of the nemo_pc schema; a line without ``text_normalized`` gets it derived from its
    punctuated ``text`` (:func:`~nemo_pc.data.normalized_text.iter_pc_manifest`, with TN mode ``tn``).

    Raises:
        ManifestError: a line without ``audio_filepath``, ``duration``, or both ``text_normalized`` and ``text``, an
            empty transcript, an audio file that does not exist or an unknown ``pc_source`` (the message names the
            file and line).
        ValueError: ``pc_fraction`` outside [0, 1].
    """
    if not 0.0 <= pc_fraction <= 1.0:
        raise ValueError(f"pc_fraction must be in [0, 1], got {pc_fraction}")
    manifest = Path(manifest)
    items = []
    for number, entry in iter_pc_manifest(manifest, tn, drops=drops):
        where = f"{manifest}:{number}"
        item = check_pc_entry(entry, manifest, number, marks, pc_fraction, pc_seed)
        if (min_duration is not None and item.duration < min_duration) or (
            max_duration is not None and item.duration > max_duration
        ):
            if drops is not None:
                drops.add("duration outside [min_duration, max_duration]", where)
            continue
        items.append(item)
    return items


def check_pc_entry(
    entry: Mapping, manifest: Path, number: int, marks: str, pc_fraction: float, pc_seed: int
) -> PCUtterance:
    """One manifest line checked and prepared (see :func:`read_pc_manifest` for the errors)."""
    audio = audio_path(require_text(entry, "audio_filepath", manifest, number, allow_empty=False), manifest)
    if not audio.is_file():
        raise ManifestError(manifest, number, f"audio file not found: {audio}", "missing audio")
    duration = entry.get("duration")
    if not isinstance(duration, (int, float)) or isinstance(duration, bool) or duration <= 0:
        raise ManifestError(manifest, number, f"field 'duration' must be a positive number, got {duration!r}")
    key = str(entry.get("utt_id") or audio)
    punctuated, normalized, p_available = prepare_pc_text(entry, key, marks, pc_fraction, pc_seed, manifest, number)
    return PCUtterance(
        audio_filepath=str(audio),
        duration=float(duration),
        offset=float(entry.get("offset", 0.0) or 0.0),
        text=punctuated,
        text_normalized=normalized,
        p_available=p_available,
        where=f"{manifest}:{number}",
    )


class PCAudioTextDataset(torch.utils.data.Dataset):
    """Audio with normalized and punctuated token ids and a P-available flag; batches are :class:`PCBatch`.

    Args:
        manifests: one or more manifests of the nemo_pc schema.
        tokenizer: a NeMo tokenizer (``text_to_ids``), the model's cased, punctuated SentencePiece tokenizer.
        sample_rate: audio is resampled to this rate.
        marks, pc_fraction, pc_seed, min_duration, max_duration: see the module docstring.
        augmentor: a NeMo ``AudioAugmentor`` (``process_augmentations`` of an ``augmentor`` config) applied to
            every waveform it reads, e.g. speed perturbation; ``None`` reads the audio as it is.
        mixed_format: ``"m0"``, ``"m1"`` or ``"m2"``: the P tokens are those of the mixed-style transcript.
        tn: how a line without ``text_normalized`` gets it from ``text`` (``"nemo"`` or ``"none"``).
    """

    def __init__(
        self,
        manifests: str | Path | Sequence[str | Path],
        tokenizer,
        sample_rate: int = 16000,
        marks: str = DEFAULT_MARKS,
        pc_fraction: float = 1.0,
        pc_seed: int = 0,
        min_duration: float | None = None,
        max_duration: float | None = None,
        augmentor=None,
        mixed_format: str | None = None,
        tn: str = "nemo",
    ) -> None:
        from nemo.collections.asr.parts.preprocessing.features import WaveformFeaturizer

        super().__init__()
        paths = [manifests] if isinstance(manifests, (str, Path)) else list(manifests)
        self.drops = DropCounter()
        self.items: list[PCUtterance] = []
        for path in paths:
            self.items += read_pc_manifest(
                path, marks, pc_fraction, pc_seed, min_duration, max_duration, self.drops, tn
            )
        if self.drops.total:
            _LOG.warning("dropped %d utterances: %s", self.drops.total, self.drops.as_dict())
        if not self.items:
            raise ValueError(f"no utterance left in {', '.join(map(str, paths))} ({self.drops.as_dict()})")
        self.tokenizer = tokenizer
        self.mixed_format = None if mixed_format is None else check_format(mixed_format)
        self.featurizer = WaveformFeaturizer(sample_rate=sample_rate, augmentor=augmentor)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, list[int], list[int], bool, str]:
        item = self.items[index]
        try:
            audio = self.featurizer.process(item.audio_filepath, offset=item.offset, duration=item.duration)
        except Exception as err:  # soundfile, librosa and audioread raise many types
            path, line = item.where.rsplit(":", 1)
            raise ManifestError(
                path, int(line), f"cannot read audio {item.audio_filepath}: {err}", "bad audio"
            ) from err
        if audio.numel() == 0:
            path, line = item.where.rsplit(":", 1)
            raise ManifestError(path, int(line), f"audio {item.audio_filepath} is empty", "bad audio")
        tokens_n, tokens_p = pc_token_ids(self.tokenizer, item.text, item.text_normalized, self.mixed_format)
        return audio, tokens_n, tokens_p, item.p_available, item.where

    @staticmethod
    def collate_fn(samples: Sequence[tuple[torch.Tensor, list[int], list[int], bool, str]]) -> PCBatch:
        """Pads audio with zeros and tokens with 0; lengths say what is real."""
        audio_len = torch.tensor([len(sample[0]) for sample in samples], dtype=torch.long)
        audio = torch.zeros(len(samples), int(audio_len.max()))
        for row, sample in enumerate(samples):
            audio[row, : len(sample[0])] = sample[0]
        ids = tuple(sample[4] for sample in samples)
        return collate_pc_batch(audio, audio_len, [sample[1:4] for sample in samples], ids)


class DurationBucketSampler(torch.utils.data.DistributedSampler):
    """Batches of similar durations, to cut padding: every epoch the utterances are shuffled, sorted by duration
    within windows of ``window`` batches, cut into batches, and the batches are shuffled. With ``shuffle=False`` (a
    validation set) nothing is shuffled: the utterances in manifest order are sorted within the windows, and the
    batches keep that order every epoch.

    Under DDP (an initialized process group) each process takes every ``world_size``-th batch, and every process
    gets the same number of batches. It yields whole batches (lists of indices), so the DataLoader takes it as its
    ``sampler`` with ``batch_size=None`` over a :class:`BatchIndexedDataset`, as NeMo does with its semi-sorted
    batch sampler. It is a ``DistributedSampler`` so that Lightning, which sees one, does not try to inject its own
    (which fails on a batch sampler); its ``set_epoch`` reshuffles each epoch. ``DistributedSampler.__init__`` is not
    called: the process group is read when the batches are made, not when the sampler is built.
    """

    def __init__(
        self, durations: Sequence[float], batch_size: int, window: int, seed: int = 0, shuffle: bool = True
    ) -> None:
        if batch_size < 1 or window < 1:
            raise ValueError(f"batch_size and bucketing_window must be 1 or more, got {batch_size} and {window}")
        self.durations, self.batch_size, self.window, self.seed = list(durations), batch_size, window, seed
        self.shuffle = shuffle
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _batches(self) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        count = len(self.durations)
        order = torch.randperm(count, generator=generator).tolist() if self.shuffle else list(range(count))
        span = self.batch_size * self.window
        batches = []
        for start in range(0, len(order), span):
            window = sorted(order[start : start + span], key=self.durations.__getitem__)
            batches += [window[k : k + self.batch_size] for k in range(0, len(window), self.batch_size)]
        if self.shuffle:
            shuffled = torch.randperm(len(batches), generator=generator).tolist()
            batches = [batches[k] for k in shuffled]
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            world, rank = torch.distributed.get_world_size(), torch.distributed.get_rank()
            batches = batches[rank : len(batches) - len(batches) % world : world]
        return batches

    def __iter__(self):
        self.epoch_batches = self._batches()
        yield from self.epoch_batches
        self.epoch += 1

    def __len__(self) -> int:
        return len(self._batches())


def padding_share(durations: Sequence[float], batches: Sequence[Sequence[int]]) -> float:
    """The share of padded audio in ``batches`` (each batch is as long as its longest utterance)."""
    padded = sum(len(batch) * max(durations[i] for i in batch) for batch in batches)
    real = sum(durations[i] for batch in batches for i in batch)
    return 1.0 - real / padded if padded else 0.0


class BatchIndexedDataset(torch.utils.data.Dataset):
    """A map-style dataset indexed by a list of indices: ``wrapped[[i, j]] == [dataset[i], dataset[j]]``."""

    def __init__(self, dataset: torch.utils.data.Dataset) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, indices: Sequence[int]) -> list:
        return [self.dataset[index] for index in indices]


def pc_dataloader_from_config(
    config: Mapping, tokenizer, mixed_format: str | None = None, global_rank: int = 0, world_size: int = 1
) -> torch.utils.data.DataLoader:
    """A DataLoader of :class:`PCBatch` from a NeMo-style data config (see the module docstring).

    With ``use_lhotse: true`` it is NeMo's lhotse loader
    (:func:`nemo_pc.data.datasets.pc_lhotse.lhotse_pc_dataloader`),
    whose sampler shards by ``global_rank`` and ``world_size``; else a DataLoader over :class:`PCAudioTextDataset`,
    which under DDP gets Lightning's ``DistributedSampler`` (the ranks are read from the process group).
    """
    if config.get("use_lhotse"):
        from nemo_pc.data.datasets.pc_lhotse import lhotse_pc_dataloader

        return lhotse_pc_dataloader(config, tokenizer, mixed_format, global_rank, world_size)
    lhotse_only = [key for key in ("shar_path", "cuts_path", "tarred_audio_filepaths", "input_cfg") if config.get(key)]
    if lhotse_only:
        raise ValueError(f"data config: {', '.join(lhotse_only)} needs use_lhotse: true (NeMo's lhotse loader)")
    if not config.get("manifest_filepath"):
        raise ValueError("data config: 'manifest_filepath' is required")
    manifests = config["manifest_filepath"]
    if isinstance(manifests, str):
        manifests = [part for part in manifests.split(",") if part]
    dataset = PCAudioTextDataset(
        list(manifests),
        tokenizer,
        sample_rate=config.get("sample_rate", 16000),
        marks=parse_marks(config.get("marks", DEFAULT_MARKS), "data config: marks"),
        pc_fraction=float(config.get("pc_fraction", 1.0)),
        pc_seed=int(config.get("pc_seed", 0)),
        min_duration=config.get("min_duration"),
        max_duration=config.get("max_duration"),
        augmentor=_augmentor(config.get("augmentor")),
        mixed_format=mixed_format,
        tn=check_tn(config.get("tn", "nemo")),
    )
    workers = int(config.get("num_workers", 0) or 0)
    # kept across epochs: a new worker per epoch re-imports and re-reads its state (seconds per epoch on 2 cores)
    persistent = bool(config.get("persistent_workers", False)) and workers > 0
    window = int(config.get("bucketing_window", 0) or 0)
    if window:
        sampler = DurationBucketSampler(
            [item.duration for item in dataset.items],
            config.get("batch_size", 8),
            window,
            seed=int(config.get("pc_seed", 0)),
            shuffle=bool(config.get("shuffle", False)),
        )
        return torch.utils.data.DataLoader(
            BatchIndexedDataset(dataset),
            sampler=sampler,
            batch_size=None,
            collate_fn=dataset.collate_fn,
            num_workers=workers,
            persistent_workers=persistent,
            pin_memory=config.get("pin_memory", False),
        )
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=config.get("batch_size", 8),
        shuffle=config.get("shuffle", False),
        collate_fn=dataset.collate_fn,
        num_workers=workers,
        persistent_workers=persistent,
        pin_memory=config.get("pin_memory", False),
        drop_last=config.get("drop_last", False),
    )


def _augmentor(config):
    """NeMo's ``AudioAugmentor`` from an ``augmentor`` config (``None`` when there is none)."""
    if not config:
        return None
    from nemo.collections.asr.parts.preprocessing.perturb import process_augmentations

    return process_augmentations(config)
