"""The demo's ASR overrides: what each CTC, RNN-T and AED system adds to its family's Hydra config (tokenizer, data,
batches, backbone, its start and fine-tune). :class:`~nemo_pc.pipelines.demo.pipeline.Demo` trains with them."""

from __future__ import annotations

from pathlib import Path

from nemo_pc.pipelines.demo.config import (
    AED_OVERRIDES,
    ASR_SYSTEMS,
    BASE_OVERRIDES,
    BASE_SYSTEM,
    DECODER_CTC_SYSTEMS,
    HEAD_TRAIN_LOADER,
    HEAD_VALIDATION_BATCH_SIZE,
    PC_FROM_START,
    PRETRAINED_ENCODER,
    RNNT_FINETUNE_OVERRIDES,
    RNNT_FROM_AED,
    RNNT_PRETRAINED_JOINT,
    RNNT_VALIDATION,
    SMALL_ENCODER,
    TRANSDUCER_SYSTEMS,
    speed_perturb_override,
)
from nemo_pc.pipelines.demo.layout import finetuned_path


class AsrOverrides:
    """The ASR override steps of :class:`~nemo_pc.pipelines.demo.pipeline.Demo`, which gives them ``cfg``, ``out``,
    ``manifest``, ``model_path``, ``path``, ``tokenizers``, ``curve_dev`` and ``validation_override``."""

    def tokenizer_kind(self, name: str) -> str:
        """Which of :meth:`tokenizers` a CTC or RNN-T system (or the base) writes with."""
        if name == "ctc_m2":
            return "styles"
        return "rnnt" if name != BASE_SYSTEM and ASR_SYSTEMS[name][0] == "rnnt" else "plain"

    def asr_overrides(self, name: str) -> list[str]:
        if name == BASE_SYSTEM:
            family, variant = "ctc", BASE_OVERRIDES
        else:
            family, variant = ASR_SYSTEMS[name]
        if family == "aed":
            return self._aed_overrides(name, variant)
        if self.transducer_on_aed(name):
            return self._transducer_overrides(name)
        if self.decoder_ctc_on_aed(name):
            return self._decoder_ctc_overrides(name)
        tokenizer = self.tokenizers()[self.tokenizer_kind(name)]
        layers = self.cfg.rnnt_layers if family == "rnnt" else self.cfg.ctc_layers
        workers = max(0, self.cfg.num_jobs - 1)
        half = max(1, layers // 2)  # the papers' branch point: layer l/2 of l (1-based)
        depth = {
            "ctc_style_layers": [f"model.pc.style_layers.branch_layer={half}"],
            "ctc_style_embedding": [f"model.pc.style_embedding.layers=[{min(half + 1, layers)}]"],
        }.get(name, [])
        return [
            *variant,
            f"model.tokenizer.dir={tokenizer}",
            f"model.train_ds.manifest_filepath={self.manifest('train')}",
            self.validation_override(self.curve_dev()),
            f"model.train_ds.batch_size={self.cfg.batch_size}",
            f"model.train_ds.max_duration={self.cfg.max_duration}",
            f"model.train_ds.num_workers={workers}",
            f"model.train_ds.bucketing_window={self.cfg.bucketing_window}",
            f"trainer.precision={self.cfg.precision}",
            f"model.validation_ds.num_workers={workers}",
            *self._backbone(name, layers),
            *depth,
            *(self._base_data() if name == BASE_SYSTEM else []),
            *self._pc_from_start(family, name),
            *self._rnnt_finetune(family, name),
            *self._rnnt_joint(family),
            *(self._predictor_lm() if family == "rnnt" and name != BASE_SYSTEM else []),
            *self._ctc_frames(family, name),
            *(RNNT_VALIDATION if family == "rnnt" else []),
            *self.cfg.extra.get(name, []),
        ]

    def transducer_on_aed(self, name: str) -> bool:
        """Whether ``name`` is an RNN-T trained as a transducer head on the ``rnnt_init`` AED (``rnnt_predictor``
        ``aed_decoder`` and the RNN-Ts starting from an AED)."""
        return (
            name in TRANSDUCER_SYSTEMS
            and self.cfg.rnnt_predictor == "aed_decoder"
            and self.rnnt_start() is not None
            and self.rnnt_from_aed()
        )

    def decoder_ctc_on_aed(self, name: str) -> bool:
        """Whether ``name`` is a CTC system trained as the ``ctc_init`` AED's decoder read as a CTC head (``ctc_head``
        ``aed_decoder``, :data:`DECODER_CTC_SYSTEMS`, and the CTC systems starting from an AED)."""
        return name in DECODER_CTC_SYSTEMS and self.cfg.ctc_head == "aed_decoder" and bool(self._ctc_init())

    def head_on_aed(self, name: str) -> bool:
        """Whether ``name`` is a head trained on an AED (a transducer or decoder CTC head): it writes Whisper's tokens
        and trains through the AED's recipe."""
        return self.transducer_on_aed(name) or self.decoder_ctc_on_aed(name)

    def training_family(self, name: str) -> str:
        """The config family ``name`` trains with: a head on the AED trains through the AED's recipe."""
        return "aed" if self.head_on_aed(name) else ASR_SYSTEMS[name][0]

    def _transducer_overrides(self, name: str) -> list[str]:
        """A transducer head's overrides: the ``rnnt_init`` AED's recipe (its variant, tokenizer, data), the system's
        ``transducer`` keys (:data:`TRANSDUCER_SYSTEMS`), the AED's fine-tune as the start (NeMo's
        ``init_from_nemo_model``), the LM text's tokens among those it may write, and ``rnnt_batch_size``."""
        return [
            *self._head_overrides(self.rnnt_init(), self.cfg.rnnt_batch_size),
            *TRANSDUCER_SYSTEMS[name],
            f"+init_from_nemo_model={self.rnnt_start()}",
            f"model.transducer.vocab_text={self.path('lm', 'text.json')}",  # written first (Demo.train_asr)
            *self._decode_lm_scale(),
            *self.cfg.extra.get(name, []),
        ]

    def _decoder_ctc_overrides(self, name: str) -> list[str]:
        """A decoder CTC head's overrides: the ``ctc_init`` AED's recipe, the system's ``decoder_ctc`` keys
        (:data:`DECODER_CTC_SYSTEMS`), the AED's fine-tune as the start, the LM text's tokens among those it may
        write, batches of ``batch_size``, and ``precision`` (bf16 autocast: its steps 1.6 times faster than float32's
        in the demo, docs/pc_stage.md; the transducer heads gained no minutes in bfloat16 and stay float32)."""
        return [
            *self._head_overrides(self._ctc_init(), self.cfg.batch_size, self.cfg.precision),
            *DECODER_CTC_SYSTEMS[name],
            f"+init_from_nemo_model={self.ctc_start()}",
            f"model.decoder_ctc.vocab_text={self.path('lm', 'text.json')}",  # written first (Demo.train_asr)
            *self.cfg.extra.get(name, []),
        ]

    def _head_overrides(self, init: str, batch_size: int, precision: str = "32") -> list[str]:
        """What every head on the AED ``init`` shares: the AED's recipe (its variant, tokenizer, data), training
        batches of similar durations read in the training process (:data:`HEAD_TRAIN_LOADER`), ``precision``
        (float32 unless given), and validations that compute WERs without a loss."""
        variant = ASR_SYSTEMS[init][1]
        return [
            *variant,
            *AED_OVERRIDES,
            *HEAD_TRAIN_LOADER,  # batches of similar durations, read in the training process
            f"model.train_ds.bucketing_window={self.cfg.bucketing_window}",
            f"model.aux_ctc.tokenizer.dir={self.tokenizers()[self.aed_ctc_tokenizer_kind(variant)]}",
            f"model.train_ds.manifest_filepath={self.manifest('train')}",
            self.validation_override(self.curve_dev()),
            f"model.train_ds.batch_size={batch_size}",
            f"model.train_ds.max_duration={self.cfg.max_duration}",
            f"trainer.precision={precision}",
            "model.compute_eval_loss=false",  # the learning curves read the WERs only (RNNT_VALIDATION)
            f"model.validation_ds.batch_size={HEAD_VALIDATION_BATCH_SIZE}",
            *([] if self.cfg.backbone == "whisper_tiny" else [f"backbone={self.cfg.backbone}", *SMALL_ENCODER]),
        ]

    def _decode_lm_scale(self) -> list[str]:
        """``rnnt_head_decode_lm_scale`` as the head's ``transducer.decode_lm_scale`` (none: the trained weight)."""
        scale = self.cfg.rnnt_head_decode_lm_scale
        return [] if scale is None else [f"model.transducer.decode_lm_scale={float(scale)}"]

    @staticmethod
    def aed_ctc_tokenizer_kind(variant: list[str]) -> str:
        """Which of :meth:`tokenizers` an AED's CTC heads write with: the CTC systems' (``plain``) for the punctuated
        CTC model's heads (:data:`~nemo_pc.pipelines.demo.config.AED_CTC_HEADS`), else ``aed_ctc``."""
        return "plain" if "model.aux_ctc.target=punctuated" in variant else "aed_ctc"

    def _aed_overrides(self, name: str, variant: list[str]) -> list[str]:
        """An AED's overrides: its CTC head's vocabulary is the ``aed_ctc_vocab_size`` tokenizer (its decoder writes
        Whisper's), or the CTC systems' for the punctuated CTC model's heads."""
        workers = max(0, self.cfg.num_jobs - 1)
        backbone = [] if self.cfg.backbone == "whisper_tiny" else [f"backbone={self.cfg.backbone}", *SMALL_ENCODER]
        return [
            *variant,
            *AED_OVERRIDES,
            f"finetune={self.cfg.aed_finetune}",
            f"model.aux_ctc.tokenizer.dir={self.tokenizers()[self.aed_ctc_tokenizer_kind(variant)]}",
            f"model.train_ds.manifest_filepath={self.manifest('train')}",
            self.validation_override(self.curve_dev()),
            f"model.train_ds.batch_size={self.cfg.aed_batch_size}",
            f"model.train_ds.max_duration={self.cfg.max_duration}",
            f"model.train_ds.num_workers={workers}",
            f"model.validation_ds.num_workers={workers}",
            "trainer.precision=32",  # float32: bf16 autocast was measured for the CTC and RNN-T runs only
            *backbone,
            *self.cfg.extra.get(name, []),
        ]

    def _backbone(self, name: str, layers: int) -> list[str]:
        """The features and encoder: the small FastConformer from random weights, or a pretrained backbone of the
        ``backbone`` config group (e.g. ``whisper_tiny``) at its own size, which learns slower than the new heads.
        The fine-tunes keep that rate too, as in the default run (docs/training_speed.md)."""
        if self.cfg.backbone == "fastconformer":
            return [f"model.encoder.n_layers={layers}", *SMALL_ENCODER]
        return [f"backbone={self.cfg.backbone}", *PRETRAINED_ENCODER]

    def _base_data(self) -> list[str]:
        overrides = [f"model.train_ds.batch_size={self.cfg.base_batch_size}"]
        if self.cfg.base_speed_perturb > 0:
            overrides.append(speed_perturb_override(self.cfg.base_speed_perturb))
        return overrides

    def _pc_from_start(self, family: str, name: str) -> list[str]:
        """A CTC system trained without a base encoder: :data:`PC_FROM_START`, its batches, and the encoder's rate
        when it starts from the AED (``ctc_init_encoder_lr``)."""
        if family != "ctc" or name == BASE_SYSTEM or self.cfg.base_steps:
            return []
        overrides = [*PC_FROM_START, f"model.train_ds.batch_size={self.cfg.ctc_batch_size}"]
        if self._ctc_init():  # the rate of the AED's fine-tuned encoder (ctc_init_encoder_lr)
            overrides.append(f"++model.optim_param_groups.encoder.lr={self.cfg.ctc_init_encoder_lr:g}")
        if self.cfg.ctc_speed_perturb > 0:
            overrides.append(speed_perturb_override(self.cfg.ctc_speed_perturb))
        return overrides

    def ctc_start(self) -> Path | None:
        """The ``.nemo`` whose encoder starts every CTC system: the base encoder, else ``ctc_init``'s fine-tuned AED
        (on the pretrained backbone, where the two encoders have one shape), else none."""
        if self.cfg.base_steps:
            return self.model_path(BASE_SYSTEM)
        return finetuned_path(self.out, self.cfg.ctc_init) if self._ctc_init() else None

    def _ctc_init(self) -> str:
        """``ctc_init`` where it applies: no base encoder, and the pretrained backbone."""
        applies = not self.cfg.base_steps and self.cfg.backbone != "fastconformer"
        return self.cfg.ctc_init if applies else ""

    def rnnt_start(self) -> Path | None:
        """The ``.nemo`` whose encoder starts every RNN-T: the base encoder, else :meth:`rnnt_init`'s (an AED's
        fine-tune or a CTC system's model), else none."""
        if self.cfg.base_steps:
            return self.model_path(BASE_SYSTEM)
        if self.rnnt_from_aed():
            return finetuned_path(self.out, self.rnnt_init())
        return self.model_path(self.rnnt_init()) if self.rnnt_init() else None

    def rnnt_init(self) -> str:
        """``rnnt_init`` where it applies: no base encoder, and an AED only on the pretrained backbone (the AED's
        Whisper encoder is not the FastConformer's size)."""
        init = self.cfg.rnnt_init
        if not init or self.cfg.base_steps:
            return ""
        aed = ASR_SYSTEMS.get(init, ("",))[0] == "aed"
        return "" if aed and self.cfg.backbone == "fastconformer" else init

    def rnnt_from_aed(self) -> bool:
        """Whether the RNN-Ts start from an AED's fine-tuned encoder (:meth:`rnnt_init` an AED)."""
        return ASR_SYSTEMS.get(self.rnnt_init(), ("",))[0] == "aed"

    def _rnnt_finetune(self, family: str, name: str) -> list[str]:
        # A transducer's random predictor and joint would erase a trained encoder: fine-tuned end to end, the
        # conditioned RNN-T stayed at the blank stage for 300 steps (docs/rnnt_pc.md). From the base or a CTC system's
        # encoder, NeMo's dynamic freezing keeps the encoder fixed for the first half of the run; from an AED's, the
        # lower rnnt_init_frozen_layers blocks stay frozen throughout and the top ones train without dropout
        # (docs/pc_stage.md, "The RNN-T on the AED's frozen encoder"). CTC heads start well without either.
        if family != "rnnt" or name == BASE_SYSTEM or self.rnnt_start() is None:
            return []
        common = [*RNNT_FINETUNE_OVERRIDES, f"model.train_ds.batch_size={self.cfg.rnnt_batch_size}"]
        if self.rnnt_from_aed():
            return [*common, f"model.encoder.frozen_layers={self.cfg.rnnt_init_frozen_layers}", *RNNT_FROM_AED]
        return [
            *common,
            "model.freeze_updates.enabled=true",
            f"model.freeze_updates.modules.encoder={self.cfg.rnnt_steps // 2}",
        ]

    def _predictor_lm(self) -> list[str]:
        """The predictor's text-only steps on the LM text (``rnnt_predictor_lm_steps``), written first if needed."""
        if not self.cfg.rnnt_predictor_lm_steps:
            return []
        text = self.lm_text()
        return [f"model.predictor_lm.text={text}", f"model.predictor_lm.steps={self.cfg.rnnt_predictor_lm_steps}"]

    def _rnnt_joint(self, family: str) -> list[str]:
        """An RNN-T's joint on a pretrained backbone: 40 ms frames (``rnnt_stack``: stacked encoder frames whose
        projection starts as their mean, so the encoder of ``rnnt_init`` loads unchanged and the joint reads its
        features; a CTC system's trained projection loads over it) and no dropout in the joint
        (:data:`RNNT_PRETRAINED_JOINT`)."""
        if family != "rnnt" or self.cfg.backbone == "fastconformer":
            return []
        return [*_stacked(self.cfg.rnnt_stack), *RNNT_PRETRAINED_JOINT]

    def _ctc_frames(self, family: str, name: str) -> list[str]:
        """A CTC system's heads on a pretrained backbone: ``ctc_stack`` encoder frames stacked into one by a
        projection that starts as their mean, so the AED's fine-tuned encoder loads unchanged; an RNN-T started from
        it at the same ``rnnt_stack`` loads the projection as trained."""
        if family != "ctc" or name == BASE_SYSTEM or self.cfg.backbone == "fastconformer":
            return []
        return _stacked(self.cfg.ctc_stack)


def _stacked(stack: int) -> list[str]:
    """``stack`` encoder frames into one, by a projection that starts as their mean; none for 1."""
    return [f"model.encoder.stack={stack}", "model.encoder.stack_init=mean"] if stack > 1 else []
