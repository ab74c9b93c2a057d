"""Names in a demo output folder, shared by the recipe, its report and the claims (the layout:
:mod:`nemo_pc.pipelines.demo.pipeline`)."""

from __future__ import annotations

from pathlib import Path

from nemo_pc.data.recipes.real_speech import SPLITS as REAL_SPLITS

REAL_SPEECH_DIR = "real_speech"
"""The folder of the real recorded sets (``nemo-pc real-speech``'s outputs: :data:`REAL_SPLITS` and the wavs)."""
REAL_DEV, REAL_TEST = REAL_SPLITS
"""``real_test`` is scored in REPORT.md and the README; ``real_dev`` is for choosing settings on real speech."""


def manifest_path(demo_dir: str | Path, split: str) -> Path:
    """A split's manifest: ``demo_dir/real_speech/<split>.json`` for ``real_dev`` and ``real_test``,
    ``demo_dir/manifests/<split>.json`` for the synthetic splits."""
    return Path(demo_dir) / (REAL_SPEECH_DIR if split in REAL_SPLITS else "manifests") / f"{split}.json"


def predictions_path(demo_dir: str | Path, system: str) -> Path:
    """``demo_dir/predictions/<system>.json``."""
    return Path(demo_dir) / "predictions" / f"{system}.json"


def model_path(demo_dir: str | Path, name: str) -> Path:
    """``demo_dir/models/<name>.nemo``."""
    return Path(demo_dir) / "models" / f"{name}.nemo"


FINETUNED = "_finetuned"
"""An AED's fine-tune is ``models/<name>_finetuned.nemo``; ``models/<name>.nemo`` is that fine-tune interpolated with
its zero-shot start (:func:`nemo_pc.pipelines.interpolate.sweep_interpolation`)."""
INTERPOLATION = ".interpolation"
"""The interpolation sweep's table of an AED: ``models/<name>.interpolation.json``."""


def finetuned_path(demo_dir: str | Path, name: str) -> Path:
    """``demo_dir/models/<name>_finetuned.nemo``: an AED's fine-tune before the interpolation."""
    return model_path(demo_dir, name + FINETUNED)


def interpolation_path(demo_dir: str | Path, name: str) -> Path:
    """``demo_dir/models/<name>.interpolation.json``: an AED's interpolation sweep, each weight on each dev set."""
    return Path(demo_dir) / "models" / f"{name}{INTERPOLATION}.json"


def model_stats(demo_dir: str | Path) -> list[Path]:
    """The stats of the models in ``demo_dir/models/`` (``<name>.json``: steps, seconds, parameters, curve), sorted;
    an AED's fine-tune (whose stats ``<name>.json`` repeats, with the sweep's) and the sweep tables left out."""
    paths = sorted((Path(demo_dir) / "models").glob("*.json"))
    return [path for path in paths if not path.stem.endswith((FINETUNED, INTERPOLATION))]


def split_system(system: str, split: str) -> str:
    """The name of a system's predictions and evaluation on a test split: ``<system>`` on ``test`` (held-out voices),
    ``<system>@<split>`` on another (``predictions/<system>@test_seen.json``, ``eval/<system>@test_seen.json``)."""
    return system if split == "test" else f"{system}@{split}"


def system_split(name: str) -> tuple[str, str]:
    """The system and the test split of a name that :func:`split_system` made: ``("rnnt_dual", "real_test")`` for
    ``rnnt_dual@real_test``, ``("rnnt_dual", "test")`` for ``rnnt_dual``."""
    system, _, split = name.partition("@")
    return system, split or "test"


def step_done(target: Path) -> bool:
    """A model or LM step is done when its file and, written after it, its stats (``<name>.json``) are both there:
    a run killed between the two redoes the step rather than leave REPORT.md without the stats."""
    return target.is_file() and target.with_suffix(".json").is_file()
