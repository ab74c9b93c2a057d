"""The packaged Hydra recipes (``nemo_pc/configs``) and the one function that composes them, for every layer.

A recipe is a family's primary config plus Hydra overrides, as on the command line of the example scripts:
``compose_config("rnnt", ["variant=dual", "predictor=stateless", "backbone=whisper_tiny", "model.pc.alpha=0.3"])``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omegaconf import DictConfig

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
"""The packaged Hydra configs (``rnnt/rnnt_pc.yaml``, ``ctc/ctc_pc.yaml``, ``common/asr.yaml``, ...)."""

RECIPES = {
    # family: (config folder, primary config)
    "rnnt": ("rnnt", "rnnt_pc"),
    "ctc": ("ctc", "ctc_pc"),
    "aed": ("aed", "aed_pc"),
    "tagger": ("formatter", "tagger"),
    "rewriter": ("formatter", "rewriter"),
}


def compose_config(family: str, overrides: Sequence[str] = ()) -> DictConfig:
    """The packaged Hydra config of a model family (a key of :data:`RECIPES`) with ``overrides``.

    Args:
        family: ``rnnt``, ``ctc``, ``aed``, ``tagger`` or ``rewriter``.
        overrides: Hydra overrides: group choices (``variant=dual``, ``predictor=stateless``,
            ``backbone=whisper_tiny``) and keys (``model.pc.alpha=0.3``, ``~model.spec_augment``).

    Raises:
        ValueError: an unknown family.
        FileNotFoundError: the packaged configs are missing.
    """
    from hydra import compose, initialize_config_dir

    if family not in RECIPES:
        raise ValueError(f"unknown model family {family!r}; expected one of {sorted(RECIPES)}")
    folder, name = RECIPES[family]
    config_dir = CONFIG_DIR / folder
    if not config_dir.is_dir():
        raise FileNotFoundError(f"{config_dir}: the packaged configs are missing (a broken nemo_pc install)")
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name=name, overrides=list(overrides))


def group_options(family: str, group: str) -> list[str]:
    """The options of a config group of a family's recipe, e.g. ``group_options("rnnt", "predictor")``."""
    folder, _ = RECIPES[family]
    return sorted(path.stem for path in (CONFIG_DIR / folder / group).glob("*.yaml"))


def backbone_layers(family: str, backbone: str) -> int | None:
    """The encoder depth (``model.encoder.n_layers``) that a family's ``backbone`` option sets, read from its YAML
    without composing the recipe; ``None`` when the option leaves it to the family's config."""
    from omegaconf import OmegaConf

    folder, _ = RECIPES[family]
    path = CONFIG_DIR / folder / "backbone" / f"{backbone}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such backbone option of the {family} recipe")
    layers = OmegaConf.select(OmegaConf.load(path), "model.encoder.n_layers")
    return layers if isinstance(layers, int) else None
