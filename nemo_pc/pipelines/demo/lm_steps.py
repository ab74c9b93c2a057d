"""The demo's LM steps: the LM text from the source books without what dev, test and test_seen read, one token
n-gram LM per output mode that a system decodes, and each LM system decoded with beam search and its LMs, its weights
tuned on a ``dev`` subset. :class:`~nemo_pc.pipelines.demo.pipeline.Demo` runs them with its other steps."""

from __future__ import annotations

import json
from pathlib import Path

from nemo_pc.data.recipes.synth import SEEN_TEST_SPLIT
from nemo_pc.parts.manifest import iter_manifest, write_text_atomic
from nemo_pc.parts.modes import MODES
from nemo_pc.pipelines.demo.config import ASR_SYSTEMS, DECODER_CTC_SYSTEMS
from nemo_pc.pipelines.demo.layout import step_done as _done
from nemo_pc.pipelines.lm_build import LMJob, build_lms

LM_DEV = "dev_lm.json"
LM_FIELDS = {"normalized": "text_normalized", "punctuated": "text"}
"""The manifest field each mode's LM is trained on."""
"""The ``dev`` subset the LM weights are tuned on, beside ``manifests/dev.json``."""


class LmSteps:
    """The LM steps of :class:`~nemo_pc.pipelines.demo.pipeline.Demo`, which gives them ``cfg``, ``path``,
    ``manifest``, ``model_path``, ``dev_subset``, ``tokenizers``, ``tokenizer_kind``, ``transducer_on_aed``,
    ``decoder_ctc_on_aed``, ``_synth_sources`` and ``_write_predictions``."""

    def lm_dev(self) -> Path:
        """The ``dev`` the LM weights are tuned on (:meth:`dev_subset`, ``lm_dev_utterances``)."""
        return self.dev_subset(self.cfg.lm_dev_utterances, LM_DEV)

    def lm_systems(self) -> list[str]:
        """The systems also decoded with the LMs (those of ``lm_systems`` that are trained and decode by CTC or RNN-T
        search: not the AEDs nor the transducer heads on an AED, nor ``ctc_m2`` with its style tags). A decoder CTC
        head on the AED gets LMs over the Whisper tokens it writes (:meth:`lm_kind`)."""
        if not self.cfg.lm_order:
            return []
        return [
            name
            for name in self.cfg.lm_systems
            if name in self.cfg.systems
            and name != "ctc_m2"
            and ASR_SYSTEMS[name][0] != "aed"
            and not self.transducer_on_aed(name)
        ]

    def lm_kind(self, name: str) -> str:
        """Which LMs a system of :meth:`lm_systems` reads: those over its tokenizer's pieces (its
        :meth:`tokenizer_kind`), or, for a decoder CTC head on the AED, those over its own tokens (the system's
        name; :meth:`lm_tokenizer`)."""
        return name if self.decoder_ctc_on_aed(name) else self.tokenizer_kind(name)

    def lm_tokenizer(self, kind: str) -> Path:
        """The tokenizer folder the LMs of ``kind`` (:meth:`lm_kind`) are over: one of :meth:`tokenizers`, or a
        decoder CTC head's tokens, ``lm/<system>_tokens_<digest>/`` (the trained head writes it; the digest is of its
        token ids, so a head that writes other tokens gets its own folder and LMs)."""
        if kind not in DECODER_CTC_SYSTEMS:
            return self.tokenizers()[kind]
        folders = self.__dict__.setdefault("_head_token_folders", {})  # a model loads once per run
        if kind not in folders:
            folders[kind] = self._head_tokens(kind)
        return folders[kind]

    def _head_tokens(self, kind: str) -> Path:
        import hashlib

        from nemo_pc.data.tokenizers.token_encoder import HEAD_TOKENS_FILE
        from nemo_pc.pipelines.inference import load_asr_model

        model = load_asr_model(self.model_path(kind))
        ids = model.decoder_ctc_token_ids()
        digest = hashlib.sha256(json.dumps(ids).encode()).hexdigest()[:12]
        folder = self.path("lm", f"{kind}_tokens_{digest}")
        if not (folder / HEAD_TOKENS_FILE).is_file():
            model.write_decoder_ctc_tokens(folder)
        return folder

    def language_models(self) -> dict[str, dict[str, Path]]:
        """The LM text from the source books, and the file of one LM per output mode (NGPU-LM ``.nemo``) over the
        pieces of each tokenizer that a system of :meth:`lm_systems` writes with (:meth:`tokenizer_kind`), keyed by
        that kind and then the mode; each file is named for its tokenizer (:func:`lm_file`). The LMs are built
        together before the systems decode (:meth:`build_lms`; or by the first system that decodes with one,
        :meth:`built_lm`), only those a system reads, so a mode that no system decodes costs nothing: a CTC model
        whose normalized output is its punctuated output normalized needs no normalized LM.

        Every book chapter that an utterance of dev, test or test_seen (when the corpus has it) reads is left out
        whole, as the corpus's ``CHAPTERS.TXT`` names it, and so is any other sentence sharing 6 words with one of
        those utterances (:func:`nemo_pc.data.recipes.lm_text.write_lm_text`); ``lm/text.report.json`` counts both.
        """
        folder = self.lm_text().parent
        kinds = dict.fromkeys(self.lm_kind(name) for name in self.lm_systems())
        tokenizers = {kind: self.lm_tokenizer(kind) for kind in kinds}
        return {
            kind: {mode: lm_file(folder, mode, self.cfg.lm_order, tokenizers[kind]) for mode in MODES}
            for kind in kinds
        }

    def lm_text(self) -> Path:
        """``lm/text.json``, the LM text (see :meth:`language_models`), written unless it is there with its report;
        the RNN-Ts' predictors also learn it first (``rnnt_predictor_lm_steps``)."""
        from nemo_pc.data.recipes.lm_text import write_lm_text

        folder = self.path("lm")
        text = folder / "text.json"
        if not (text.is_file() and (folder / "text.report.json").is_file()):
            splits = ["dev", "test", *([SEEN_TEST_SPLIT] if self.manifest(SEEN_TEST_SPLIT).is_file() else [])]
            report = write_lm_text(
                list(self._synth_sources()),
                text,
                [self.manifest(split) for split in splits],
                progress=False,
                corpus=self.path("corpus"),
            )
            write_text_atomic(folder / "text.report.json", json.dumps(report.as_dict(), indent=2) + "\n")
        return text

    def lm_job(self, kind: str, mode: str, target: Path) -> LMJob:
        """The build of ``target``, the LM of ``mode`` over the pieces of the tokenizer ``kind``
        (:meth:`language_models`), from the LM text."""
        return LMJob(self.path("lm", "text.json"), self.lm_tokenizer(kind), target, self.cfg.lm_order, LM_FIELDS[mode])

    def built_lm(self, kind: str, mode: str, target: Path) -> Path:
        """``target`` (:meth:`lm_job`), built unless done."""
        if not _done(target):
            self.lm_job(kind, mode, target).run()
        return target

    def build_lms(self, lms: dict[str, dict[str, Path]]) -> list[Path]:
        """Every LM that a system of :meth:`lm_systems` still to decode reads (:func:`lm_modes` of its model), built
        side by side over ``num_jobs`` processes (:func:`nemo_pc.pipelines.lm_build.build_lms`): the estimate runs
        on one core, so on 2 cores two LMs build in about the time of one. An LM already built is kept."""
        from nemo_pc.pipelines.inference import load_asr_model

        needed: dict[Path, LMJob] = {}
        for name in self.lm_systems():
            if self.path("predictions", f"{name}_lm.json").is_file():  # decoded (transcribe_lm)
                continue
            kind = self.lm_kind(name)
            for mode in lm_modes(load_asr_model(self.model_path(name))):
                target = lms[kind][mode]
                if not _done(target):
                    needed[target] = self.lm_job(kind, mode, target)
        return build_lms(list(needed.values()), self.cfg.num_jobs)

    def transcribe_lm(self, name: str, lms: dict[str, dict[str, Path]]) -> Path:
        """Both outputs of ``name`` on the test split with beam search and each mode's LM (over its tokenizer's
        pieces; built here when no system built it before, :meth:`built_lm`) at its dev-tuned weight, as the
        prediction manifest of ``<name>_lm``; the weights and dev grids go to ``lm/<name>.json``."""
        target = self.path("predictions", f"{name}_lm.json")
        if target.is_file():
            return target
        from nemo_pc.pipelines.inference import load_asr_model
        from nemo_pc.pipelines.lm import transcribe_with_lms, tune_lm_weight

        model = load_asr_model(self.model_path(name))
        beam, batch = self.cfg.lm_beam_size, self.cfg.batch_size
        modes = lm_modes(model)
        derived = modes != MODES
        kind = self.lm_kind(name)
        lms = {mode: self.built_lm(kind, mode, lms[kind][mode]) for mode in modes}
        dev = self.lm_dev()
        choices = {
            mode: tune_lm_weight(model, mode, lms[mode], dev, self.cfg.lm_alphas, beam_size=beam, batch_size=batch)
            for mode in modes
        }
        outputs = transcribe_with_lms(
            model, self.manifest("test"), choices, beam_size=beam, batch_size=batch, modes=modes
        )
        summary = {
            "beam_size": beam,
            "dev_utterances": sum(1 for _ in iter_manifest(dev)),
            "modes": {mode: choice.as_dict() for mode, choice in choices.items()},
            "normalized_output": "the punctuated output, normalized" if derived else "its own decoding",
        }
        write_text_atomic(self.path("lm", f"{name}.json"), json.dumps(summary, indent=2) + "\n")
        return self._write_predictions(target, outputs["punctuated"], outputs.get("normalized"))


def lm_modes(model) -> tuple[str, ...]:
    """The output modes a model decodes with an LM: a CTC model whose normalized output is its punctuated output
    normalized (papers/004) decodes once, the punctuated mode."""
    return ("punctuated",) if getattr(model, "normalized_by_rules", False) else MODES


def lm_file(folder: Path, mode: str, order: int, tokenizer: Path) -> Path:
    """The demo's LM of ``mode`` over the pieces of the tokenizer folder ``tokenizer``, e.g.
    ``lm/normalized_order6_bpe_v128.nemo``: named for its tokenizer, so a run with another vocabulary builds its
    own."""
    return folder / f"{mode}_order{order}_{tokenizer.name.removeprefix('tokenizer_spe_')}.nemo"
