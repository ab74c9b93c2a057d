"""The demo's text-formatter steps: its data (every source, fragments of the dev lengths, no evaluated document), the
tagger, the span rewriter and the full seq2seq baseline, then the cascade, the hybrid and ``lm_cascade`` over the ASR
systems' outputs. :class:`~nemo_pc.pipelines.demo.pipeline.Demo` runs them with its other steps."""

from __future__ import annotations

import json
from pathlib import Path

from nemo_pc.data.recipes.synth import SEEN_TEST_SPLIT
from nemo_pc.parts.manifest import iter_manifest, write_text_atomic
from nemo_pc.parts.text import normalize
from nemo_pc.pipelines.demo.layout import step_done as _done
from nemo_pc.pipelines.demo.report import LM_CASCADE


class FormatterSteps:
    """The formatter steps of :class:`~nemo_pc.pipelines.demo.pipeline.Demo`, which gives them ``cfg``, ``path``,
    ``manifest``, ``model_path`` and ``_write_predictions``."""

    def formatter_data_config(self, sources: tuple[str, ...] | None = None):
        """The demo's :class:`~nemo_pc.formatter.build.FormatterDataConfig` (``sources``: other text sources, e.g.
        all but a left-out one); every document that the ASR dev and test splits read is left out of it. Its
        ASR-like fragments take the lengths of the dev split's transcripts (``formatter_fragments.json``)."""
        from nemo_pc.formatter.build import FormatterDataConfig

        fragments = self._fragment_lengths() if self.cfg.formatter_asr_like else None
        return FormatterDataConfig(
            sources=tuple(self.cfg.formatter_sources if sources is None else sources),
            max_documents=self.cfg.formatter_documents,
            synthetic=self.cfg.formatter_synthetic,
            numbers=self.cfg.formatter_numbers,
            example_words=48,
            tn=self.cfg.formatter_tn,
            seed=self.cfg.seed,
            exclude_manifests=tuple(
                str(self.manifest(split))
                for split in ("dev", "test", SEEN_TEST_SPLIT)
                if self.manifest(split).is_file()
            ),
            asr_like=self.cfg.formatter_asr_like if fragments else 0.0,
            asr_confusions=fragments,
        )

    def _fragment_lengths(self) -> str:
        from nemo_pc.formatter.asr_noise import manifest_fragment_stats

        dev = self.manifest("dev")
        if not dev.is_file():
            raise FileNotFoundError(
                f"formatter_asr_like={self.cfg.formatter_asr_like} takes its fragment lengths from {dev}, which is "
                "not there yet: run the corpus step first, or set formatter_asr_like=0"
            )
        return str(manifest_fragment_stats(dev, self.path("formatter_fragments.json")))

    def formatter_overrides(self, name: str, data_dir: Path) -> list[str]:
        """The Hydra overrides of one formatter model (``tagger``, ``rewriter`` or ``seq2seq``) trained on
        ``data_dir``."""
        variant = {"tagger": [f"model.optim.lr={self.cfg.tagger_lr}"], "seq2seq": self._seq2seq_init()}.get(name, [])
        return [*variant, f"data_dir={data_dir}", *self.cfg.extra.get(name, [])]

    def _seq2seq_init(self) -> list[str]:
        # papers/003 starts both BARTs from bart-base; with none offline the full seq2seq starts from the trained span
        # rewriter (same tokenizer and layers; its shorter position table is left out) at half its learning rate.
        # From random weights it stayed at CER 73% after 2,000 steps: it had not learned to copy its input.
        return [
            "task=full",
            "model.optim.lr=5e-4",
            f"+init_from_nemo_model.span.path={self.model_path('rewriter')}",
            "+init_from_nemo_model.span.exclude=[embed_positions]",
        ]

    def formatter(self) -> tuple[Path, Path]:
        """Formatter data, then the tagger and the span rewriter (or the ones in ``formatter_dir``)."""
        from nemo_pc.pipelines.train import train_model

        if self.cfg.formatter_dir:
            found = Path(self.cfg.formatter_dir)
            return found / "tagger.nemo", found / "rewriter.nemo"
        tagger, rewriter = self.model_path("tagger"), self.model_path("rewriter")
        if _done(tagger) and _done(rewriter) and (_done(self.model_path("seq2seq")) or not self.cfg.seq2seq_steps):
            return tagger, rewriter
        from nemo_pc.formatter.build import build_formatter_data

        data = self.path("formatter_data")
        build_formatter_data(data, self.formatter_data_config(), num_jobs=self.cfg.num_jobs)
        jobs = [("tagger", "tagger", self.cfg.tagger_steps), ("rewriter", "rewriter", self.cfg.rewriter_steps)]
        if self.cfg.seq2seq_steps:
            jobs.append(("seq2seq", "rewriter", self.cfg.seq2seq_steps))
        for name, family, steps in jobs:
            target = self.model_path(name)
            if not _done(target):
                overrides = self.formatter_overrides(name, data)
                stats = train_model(family, overrides, target, steps, seed=self.cfg.seed, log_dir=self.path("logs"))
                write_text_atomic(target.with_suffix(".json"), json.dumps(stats, indent=2) + "\n")
        return tagger, rewriter

    def cascade_and_hybrid(self, source: str, tagger: Path, rewriter: Path) -> tuple[Path, Path]:
        """Cascade: ``source``'s normalized output through the formatter. Hybrid: its punctuated output with the
        formatter's ITN spans only (papers/003 with an E2E P&C model)."""
        cascade, hybrid = self.path("predictions", "cascade.json"), self.path("predictions", "hybrid.json")
        if cascade.is_file() and hybrid.is_file():
            return cascade, hybrid
        from nemo_pc.formatter.pipeline import TextFormatter

        # the library's default span ITN (nemo_pc.formatter.hybrid.DEFAULT_SPAN_ITN), as `nemo-pc format` runs it
        formatter = TextFormatter.from_files(tagger, rewriter)
        entries = [entry for _, entry in iter_manifest(self.path("predictions", f"{source}.json"))]
        normalized = [entry["pred_text_normalized"] for entry in entries]
        punctuated = [entry["pred_text"] for entry in entries]
        self._write_predictions(cascade, formatter.format(normalized), normalized)
        self._write_predictions(hybrid, formatter.itn_only(punctuated), [normalize(t) for t in punctuated])
        return cascade, hybrid

    def lm_cascade(self, source: str, tagger: Path, rewriter: Path) -> Path:
        """The cascade on ``source``'s LM-decoded normalized output (``<source>_lm``): the same formatter reading
        fewer wrong words, beside ``<source>_lm`` as the cascade is beside ``source``."""
        target = self.path("predictions", f"{LM_CASCADE}.json")
        if target.is_file():
            return target
        from nemo_pc.formatter.pipeline import TextFormatter

        formatter = TextFormatter.from_files(tagger, rewriter)
        entries = iter_manifest(self.path("predictions", f"{source}_lm.json"))
        normalized = [entry["pred_text_normalized"] for _, entry in entries]
        return self._write_predictions(target, formatter.format(normalized), normalized)
