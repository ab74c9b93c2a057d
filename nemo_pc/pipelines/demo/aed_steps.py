"""The demo's AED steps: each attention encoder-decoder is fine-tuned into ``models/<name>_finetuned.nemo``, then
interpolated with its zero-shot start (Whisper tiny.en's weights) at the weight that does best on ``dev`` and
``real_dev`` together (:func:`nemo_pc.pipelines.interpolate.sweep_interpolation`) into ``models/<name>.nemo``, which
every later step reads. :class:`~nemo_pc.pipelines.demo.pipeline.Demo` runs them with its other steps."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from nemo_pc.parts.manifest import write_text_atomic
from nemo_pc.pipelines.demo.config import ASR_SYSTEMS
from nemo_pc.pipelines.demo.layout import REAL_DEV, finetuned_path, interpolation_path
from nemo_pc.pipelines.demo.layout import step_done as _done
from nemo_pc.pipelines.interpolate import check_weights


class AedSteps:
    """The AED steps of :class:`~nemo_pc.pipelines.demo.pipeline.Demo`, which gives them ``cfg``, ``out``,
    ``manifest``, ``model_path``, ``real_splits``, ``training_order``, ``_timed`` and ``_train``."""

    def _check_aed_settings(self) -> None:
        """Raises ValueError on interpolation settings out of range (before any work)."""
        try:
            check_weights(self.cfg.aed_interpolation_weights)
        except ValueError as err:
            raise ValueError(f"aed_interpolation_weights: {err}") from err
        from nemo_pc.parts.configs import group_options

        recipes = group_options("aed", "finetune")
        if self.cfg.aed_finetune not in recipes:
            raise ValueError(f"aed_finetune must be one of {', '.join(recipes)}, got {self.cfg.aed_finetune!r}")
        if self.cfg.aed_curve_points < 1:
            raise ValueError(f"aed_curve_points must be 1 or more, got {self.cfg.aed_curve_points}")
        if self.cfg.aed_interpolation_dev_utterances < 1:
            count = self.cfg.aed_interpolation_dev_utterances
            raise ValueError(f"aed_interpolation_dev_utterances must be 1 or more, got {count}")

    def aed_systems(self) -> list[str]:
        """The AED systems of this run, in training order."""
        return [name for name in self.training_order() if ASR_SYSTEMS[name][0] == "aed"]

    def train_aed(self, name: str) -> Path:
        """The AED's fine-tune (``models/<name>_finetuned.nemo``) from Whisper tiny.en's encoder and decoder; nothing
        to do when ``models/<name>.nemo`` is done already (a folder of an older demo holds the fine-tune there)."""
        if _done(self.model_path(name)):
            return self.model_path(name)
        return self._train(
            name,
            "aed",
            self.cfg.aed_steps,
            None,
            target=finetuned_path(self.out, name),
            curve_points=self.cfg.aed_curve_points,
        )

    def interpolation_dev_sets(self) -> dict[str, Path]:
        """The dev sets the interpolation weight is chosen on: ``dev``, and ``real_dev`` with ``real_speech`` on."""
        names = ["dev", *(split for split in self.real_splits() if split == REAL_DEV)]
        return {split: self.manifest(split) for split in names}

    def interpolate_aeds(self) -> None:
        """:meth:`interpolate_aed` of every AED system, each a timed step."""
        for name in self.aed_systems():
            self._timed(f"interpolate {name}", lambda name=name: self.interpolate_aed(name))

    def interpolate_aed(self, name: str) -> Path:
        """``models/<name>.nemo``: the fine-tune at the weight of ``aed_interpolation_weights`` with the lowest mean
        N-output WER over :meth:`interpolation_dev_sets` (the table: ``models/<name>.interpolation.json``), or the
        fine-tune itself when the only weight is 1. Its stats are the fine-tune's, with ``interpolation_weight`` and
        ``interpolation_seconds`` added; nothing to do when they are there already."""
        target = self.model_path(name)
        if _done(target):
            return target
        finetuned = finetuned_path(self.out, name)
        table = interpolation_path(self.out, name)
        start = time.perf_counter()
        weights = set(self.cfg.aed_interpolation_weights)
        if weights == {1.0}:
            _link_or_copy(finetuned, target)
            table.unlink(missing_ok=True)  # a sweep of an earlier run with other weights
            weight = 1.0
        elif len(weights) == 1:  # one weight: nothing to choose, so no dev transcription
            from nemo_pc.pipelines.interpolate import interpolate_at

            (weight,) = weights
            interpolate_at(finetuned, target, weight)
            table.unlink(missing_ok=True)
        else:
            from nemo_pc.pipelines.interpolate import sweep_interpolation

            weight = sweep_interpolation(
                finetuned,
                self.interpolation_dev_sets(),
                target,
                weights=tuple(self.cfg.aed_interpolation_weights),
                max_utterances=self.cfg.aed_interpolation_dev_utterances,
                batch_size=self.cfg.batch_size,
                results=table,
            )["chosen"]
        stats = json.loads(finetuned.with_suffix(".json").read_text())
        stats.update(
            fine_tuned=finetuned.name,
            interpolation_weight=weight,
            interpolation_seconds=round(time.perf_counter() - start, 1),
        )
        write_text_atomic(target.with_suffix(".json"), json.dumps(stats, indent=2) + "\n")
        return target


def _link_or_copy(source: Path, target: Path) -> None:
    """``target`` becomes ``source``'s file: a hard link where the file system allows one, else a copy (atomic)."""
    partial = target.with_name(target.name + ".tmp")
    partial.unlink(missing_ok=True)
    try:
        os.link(source, partial)
    except OSError:
        shutil.copyfile(source, partial)
    partial.replace(target)
