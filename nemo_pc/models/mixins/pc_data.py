"""One data setup for both P&C ASR families: training, validation and test batches are P&C batches.

NeMo's ``setup_training_data`` (and its validation and test twins) call ``_setup_dataloader_from_config``, which
NeMo's ``transcribe`` also calls, with a ``use_lhotse`` config, to read audio alone. :class:`PCDataMixin` therefore
overrides the three ``setup_*_data`` methods to build
:func:`~nemo_pc.data.datasets.pc_dataset.pc_dataloader_from_config`
loaders and leaves ``_setup_dataloader_from_config`` to NeMo, so that transcription keeps NeMo's audio loader.
"""

from __future__ import annotations

from collections.abc import Mapping

from nemo.utils import logging
from omegaconf import DictConfig, OmegaConf
from torch.utils.data import DataLoader

from nemo_pc.data.datasets.pc_dataset import pc_dataloader_from_config

DATA_SOURCE_KEYS = ("manifest_filepath", "shar_path", "cuts_path", "input_cfg")
"""A data config with none of these keys set has no data (NeMo's lhotse loader reads any of them)."""


class PCDataMixin:
    """``setup_training_data`` / ``setup_validation_data`` / ``setup_test_data`` of the P&C ASR models.

    Every ``train_ds`` / ``validation_ds`` / ``test_ds`` config goes to
    :func:`~nemo_pc.data.datasets.pc_dataset.pc_dataloader_from_config` with the model's ``global_rank`` and
    ``world_size``
    (``use_lhotse: true`` selects NeMo's lhotse loader). Validation and test configs with ``use_lhotse`` read
    their data once (``force_finite: true`` unless the config sets it): shar and tarred data repeat without end
    otherwise. Hooks: :meth:`pc_data_defaults` and :meth:`pc_mixed_format`.
    """

    def setup_training_data(self, train_data_config: DictConfig | dict) -> None:
        """Training data: :class:`~nemo_pc.data.datasets.pc_batch.PCBatch` batches."""
        self._train_dl = self._setup_pc_dataloader("train", train_data_config, shuffle=True)

    def setup_validation_data(self, val_data_config: DictConfig | dict) -> None:
        self._validation_dl = self._setup_pc_dataloader("validation", val_data_config, shuffle=False)

    def setup_test_data(self, test_data_config: DictConfig | dict) -> None:
        self._test_dl = self._setup_pc_dataloader("test", test_data_config, shuffle=False)

    def pc_data_defaults(self, name: str) -> dict:
        """Data keys the ``name`` (``train``, ``validation`` or ``test``) data config may leave out (e.g.
        ``sample_rate``, ``marks``); none by default."""
        return {}

    def pc_mixed_format(self) -> str | None:
        """The mixed-style format of the P targets, or ``None`` for plain punctuated targets."""
        return None

    def _setup_pc_dataloader(self, name: str, config: DictConfig | dict, shuffle: bool) -> DataLoader | None:
        if "shuffle" not in config:
            config["shuffle"] = shuffle
        self._update_dataset_config(dataset_name=name, config=config)
        if not any(config.get(key) for key in DATA_SOURCE_KEYS):
            logging.info(f"no data in the {name} data config ({', '.join(DATA_SOURCE_KEYS)}): no data loader")
            return None
        loader_config = {**self.pc_data_defaults(name), **_as_dict(config)}
        if loader_config.get("use_lhotse") and name != "train":
            loader_config.setdefault("force_finite", True)
        return pc_dataloader_from_config(
            loader_config, self.tokenizer, self.pc_mixed_format(), self.global_rank, self.world_size
        )


def _as_dict(config: DictConfig | Mapping) -> dict:
    return OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else dict(config)
