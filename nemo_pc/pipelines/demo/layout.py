"""Names in a demo output folder, shared by the recipe, its report and the claims (the layout:
:mod:`nemo_pc.pipelines.demo.pipeline`)."""

from __future__ import annotations

from pathlib import Path


def predictions_path(demo_dir: str | Path, system: str) -> Path:
    """``demo_dir/predictions/<system>.json``."""
    return Path(demo_dir) / "predictions" / f"{system}.json"


def model_path(demo_dir: str | Path, name: str) -> Path:
    """``demo_dir/models/<name>.nemo``."""
    return Path(demo_dir) / "models" / f"{name}.nemo"


def split_system(system: str, split: str) -> str:
    """The name of a system's predictions and evaluation on a test split: ``<system>`` on ``test`` (held-out voices),
    ``<system>@<split>`` on another (``predictions/<system>@test_seen.json``, ``eval/<system>@test_seen.json``)."""
    return system if split == "test" else f"{system}@{split}"


def step_done(target: Path) -> bool:
    """A model or LM step is done when its file and, written after it, its stats (``<name>.json``) are both there:
    a run killed between the two redoes the step rather than leave REPORT.md without the stats."""
    return target.is_file() and target.with_suffix(".json").is_file()
