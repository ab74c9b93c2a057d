"""How fast the default systems learn the marks: dev PER, punctuation F1 and N-WER over CPU minutes, per recipe.

Each variant trains one of the demo's systems (``ctc_inter``, ``rnnt_conditioned``, ``rnnt_dual``) on the corpus of
an existing demo folder. The model is saved every ``--every`` optimizer steps; afterwards every snapshot transcribes
the dev split (voices that no training utterance uses; every ``--dev-stride``-th line) in both modes and is scored
with ``nemo-pc evaluate``. Minutes are training minutes only (snapshots and validation left out), plus the minutes of
the model a variant starts from (the demo's base encoder, or another variant's model).

    .venv/bin/python benchmarks/quality_pc_stage.py --demo-dir demo_out --variants ctc_direct,ctc_direct_enc1e-3 \
        --steps 1000 --every 200 --jobs 2 --json benchmarks/results/pc_stage_ctc.json

Variants (name: how the system starts and trains):
    demo_<system>       the demo folder's own model of that system, scored as it is (one point)
    whisper_tiny_en     the anchor: Whisper tiny.en zero-shot on the same dev utterances (one point, 0 minutes)
    ctc_base            ``ctc_inter`` as the demo trained it before: the demo folder's normalized base encoder
                        (``models/base.nemo``) and ``asr_steps`` of P&C CTC under the config's Noam schedule, which
                        leaves the pretrained encoder nearly fixed (rate ~3e-6)
    ctc_direct          ``ctc_inter`` from Whisper tiny.en's encoder with the P&C objective from the first step:
                        cosine schedule, peak 2e-3 on the heads and 3e-4 on the encoder, 100 warm-up steps, no
                        SpecAugment, speed perturbation on 80% of the utterances, batches of 8
    ctc_direct_enc1e-3  ``ctc_direct`` with the encoder at 1e-3
    rnnt_cond_base      ``rnnt_conditioned`` as the demo trained it before (base encoder, half the steps frozen)
    rnnt_cond_direct    ``rnnt_conditioned`` from Whisper tiny.en's encoder, nothing frozen, encoder at 3e-4
    rnnt_cond_ctc       ``rnnt_conditioned`` from ``ctc_direct``'s encoder (a P&C encoder), the demo's fine-tune
    rnnt_dual_ctc       ``rnnt_dual`` from ``ctc_direct``'s encoder, the demo's fine-tune
    ctc_aed             the demo's ``ctc_inter`` recipe (``ctc_direct``'s) from the fine-tuned AED's encoder
                        (``--aed-model``, e.g. the demo's ``models/aed_prompt_finetuned.nemo``): the same Whisper
                        encoder after the AED's steps on the corpus; its minutes count the AED's training minutes
                        (its stats file's ``train_seconds``)
    ctc_aed_frozen      ``ctc_aed`` with the encoder frozen for the first half of the steps (the heads learn first)
    ctc_aed_lower2      ``ctc_aed`` with the front end and the lower 2 of the 4 encoder blocks frozen throughout
                        (``model.encoder.frozen_layers=2``): cheaper steps, and less of the AED's encoder moved
    ctc_aed_v512        ``ctc_aed`` over a 512-piece SentencePiece vocabulary (``_v1024``: 1,024 pieces), built
                        from the demo folder's train split as the demo builds its own
    rnnt_cond_aed_v512  ``rnnt_conditioned`` from ``ctc_aed_v512``'s encoder with the same vocabulary (``_v1024``;
                        ``rnnt_dual_aed_v512``, ``rnnt_dual_aed_v1024``: ``rnnt_dual``)
    ctc_aed_v512_lower2 ``ctc_aed_lower2`` over the 512-piece vocabulary (``rnnt_cond_aed_v512_lower2``,
                        ``rnnt_dual_aed_v512_lower2``: the RNN-Ts from its encoder)
    ctc_aed_v512_enc1e-4
                        ``ctc_aed_v512`` with the encoder at 1e-4 (a third of the demo's rate); ``_frozen_enc1e-4``:
                        also frozen for the first half of the steps; ``rnnt_dual_aed_v512_enc1e-4``: ``rnnt_dual``
                        over 128 pieces from its encoder, as the demo chains them
    ctc_aed_v512_head   ``ctc_aed_v512`` with every encoder block frozen and an MLP head: 4 frames stacked,
                        projected to 384 with a GELU (``out_activation``), then the linear CTC heads, all at 2e-3 (the
                        heads of ``quality_cached_heads.py`` inside the model; ``rnnt_cond_aed_v512_head``,
                        ``rnnt_dual_aed_v512_head``: the RNN-Ts on the same frozen encoder)
    ctc_aed_v512_distill
                        ``ctc_aed_v512`` trained on the labelled train split and, beside it, the demo's ``aed_prompt``
                        outputs in both modes on copies of the train audio at speeds 0.9 and 1.1
                        (:mod:`nemo_pc.pipelines.distill`, written once under ``WORK/distill/``); its minutes add the
                        teacher's transcription minutes. ``_distill1``: the teacher's outputs on the audio as it is
    ctc_aed_v512_stack2_real
                        ``ctc_aed_v512_stack2`` (the demo's ``ctc_inter``) with real speech among its training lines:
                        ``--real-pool`` (``benchmarks/data_real_pool.py``: untranscribed recordings, a teacher's text)
                        and the folder's ``real_dev`` with its own transcripts, each line 20 times
    ctc_aed_v512_stack2_more
                        ``ctc_aed_v512_stack2`` with more synthetic hours among its training lines: ``--more-train``
                        (``benchmarks/data_more_hours.py``: a larger corpus's lines that share no voice, chapter or
                        text with the folder's held-out sets), each line once
    ctc_aed_heads       the ``ctc_inter`` model of an AED trained with the punctuated CTC heads on its encoder
                        (``--aed-model``, e.g. the demo's ``models/aed_prompt_heads.nemo``; ``nemo-pc aed-ctc-heads``):
                        scored as written, no CTC step; its minutes are the AED's
    ctc_aed_heads_ft    ``ctc_aed_heads`` with its heads trained on at 2e-3 on the frozen encoder (every weight loaded
                        from the written model): the heads learned beside the raw encoder, the EMA recipe saves the
                        averaged one
    rnnt_cond_demo_stack2
                        ``rnnt_conditioned`` as the demo trains it (from the demo folder's ``ctc_inter``, the demo's
                        fine-tune), its joint on 40 ms frames: two encoder frames stacked by a projection that starts
                        as their mean (``model.encoder.stack=2 model.encoder.stack_init=mean``);
                        ``rnnt_dual_demo_stack2``: ``rnnt_dual``; both with the joint's dropout of 0.1; ``_nodrop``:
                        none (the demo's recipe since); ``rnnt_cond_demo_20ms``: the demo's recipe before (20 ms
                        frames, dropout 0.1)
    ctc_aed_whisper_stack2
                        ``ctc_aed_v512_stack2`` over Whisper's tokens: the Whisper subset of the tokens the folder's
                        train split uses in both modes (``model.tokenizer.type=whisper``, written once under the
                        variant's folder), each head's rows started from the AED's output rows
                        (``+init_token_rows``); ``_random``: the same tokens from random rows
    ctc_aed_whisper_head
                        ``ctc_aed_v512_head`` over Whisper's tokens, the rows from the AED's (as
                        ``ctc_aed_whisper_stack2``); ``_norm``: a layer norm after the projection's GELU
                        (``out_activation=gelu_norm``), the heads of ``quality_cached_heads.py --whisper-tokens init``
                        inside the model; ``_norm_random``: the same from random rows; ``_norm_top1``: the top block
                        of 4 trains too, the encoder's part at 1e-3
    ctc_aed_whisper_attn1
                        ``ctc_aed_whisper_head_norm`` on 40 ms frames (2 stacked) with a new Transformer block after
                        the projection (``model.encoder.top_layers=1``, dropout 0.1, then a layer norm): a head with
                        context of its own on the frozen encoder, for the marks; ``_s4_attn1``: one block on the MLP
                        head's 80 ms frames; ``_s4_attn1_5e-4``, ``_s4_attn2_5e-4``,
                        ``_s4_attn4_5e-4``: one, two and four blocks there, the projection and the blocks at 5e-4;
                        ``_s4_attn2_5e-4_mix``: two, reading the lower blocks too (``model.encoder.layer_mix=true``, a
                        weight per block; ``_mixc``: ``channel``, a weight per block and channel)
    ctc_aed_v512_stack2 ``ctc_aed_v512`` (the demo's ``ctc_inter``) with its heads on 40 ms frames (``STACK2``)
                        (``_v1024_stack2``, ``_v2048_stack2``: over 1,024 and 2,048 pieces; ``_stack2_ema``: with
                        NeMo's EMA callback at decay 0.995)
    rnnt_cond_ctc40     ``rnnt_conditioned`` with the demo's recipe (40 ms, no joint dropout, the demo's fine-tune)
                        from ``ctc_aed_v512_stack2``'s encoder, its stacking projection loaded as trained;
                        ``rnnt_dual_ctc40``: ``rnnt_dual``; ``_v1024``: from ``ctc_aed_v1024_stack2``'s encoder
    rnnt_cond_aed       ``rnnt_conditioned`` from ``ctc_aed``'s encoder, the demo's fine-tune
    rnnt_dual_aed       ``rnnt_dual`` from ``ctc_aed``'s encoder, the demo's fine-tune
    rnnt_cond_aed_top2  the demo's RNN-T recipe: the AED's encoder, its front end and lower 2 blocks frozen
                        (``rnnt_dual_aed_top2``: ``rnnt_dual``); ``_ema``: NeMo's EMA callback at decay 0.995, the
                        snapshots and the saved model averaged; ``_hybrid``: a CTC head on the normalized mode
                        (``aux_ctc=normalized``); ``_sa``: SpecAugment; ``_fa``: its frequency masks alone;
                        ``_v256``: 256 pieces; ``_2000``: 2,000 steps
    head_cond           the demo's ``rnnt_conditioned``: a transducer head on the demo folder's AED fine-tune
                        (``rnnt_predictor=aed_decoder``; ``head_dual``: ``rnnt_dual``); ``_emb``: the copies'
                        embeddings frozen (``transducer.freeze_embedding``); ``_emb_top2``: and their lower 2 blocks
                        (``transducer.frozen_layers=2``); ``_666``: 666 steps
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from suite import variant_rounds, write_results

from nemo_pc.parts.manifest import iter_manifest, read_manifest, write_manifest, write_text_atomic
from nemo_pc.pipelines.demo import config as demo_settings
from nemo_pc.pipelines.demo import pipeline

DIRECT_CTC = [
    "model.spec_augment=null",
    "model.optim.lr=0.002",
    "model.optim.sched.name=CosineAnnealing",
    "model.optim.sched.warmup_steps=100",
    "~model.optim.sched.d_model",
    "model.train_ds.batch_size=8",
]
SPEED = {"speed_perturb": 0.8}
FROZEN_MLP = [
    "model.encoder.frozen_layers=-1",
    "model.encoder.stack=4",
    "model.encoder.feat_out=384",
    "model.encoder.out_activation=gelu",
    "model.encoder.dropout=0.0",
    "++model.optim_param_groups.encoder.lr=0.002",
]
EMBEDDING_FROZEN = "model.transducer.freeze_embedding=true"
STACK1 = ["model.encoder.stack=1", "model.encoder.stack_init=random"]
STACK2 = ["model.encoder.stack=2", "model.encoder.stack_init=mean"]
JOINT_DROPOUT = "model.joint.jointnet.dropout=0.1"
NO_DROP = "model.joint.jointnet.dropout=0.0"
# RNN-Ts on the AED's encoder, no freeze_updates: every block frozen (the projection at the heads' rate, a GELU after),
# or the top ``blocks`` training at the encoder's fine-tune rate
AED_FROZEN_RNNT = [
    "model.encoder.frozen_layers=-1",
    *STACK2,
    "model.encoder.feat_out=384",
    "model.encoder.out_activation=gelu",
    "model.encoder.dropout=0.0",
    NO_DROP,
    "++model.optim_param_groups.encoder.lr=0.002",
    "model.freeze_updates.enabled=false",
]


def aed_top_rnnt(blocks: int) -> list[str]:
    return [
        f"model.encoder.frozen_layers={4 - blocks}",
        *STACK2,
        "model.encoder.dropout=0.0",
        NO_DROP,
        "++model.optim_param_groups.encoder.lr=0.0003",
        "model.freeze_updates.enabled=false",
    ]


# NeMo's EMA callback: the saved model (and every snapshot) is the exponential moving average of the weights
EMA = [
    "++exp_manager.ema.enable=true",
    "++exp_manager.ema.decay=0.995",
    "++exp_manager.ema.validate_original_weights=false",
]


def attn_head(stack: int, blocks: int, lr: float = 0.002, mix: str = "") -> list[str]:
    """The frozen encoder's normed MLP output step on ``stack`` frames, then ``blocks`` new Transformer blocks, both
    at ``lr`` (the encoder's parameter group; the CTC heads keep the model's 2e-3); ``mix``: the lower blocks' outputs
    added by learned weights (``layer_mix``: ``scalar`` or ``channel``)."""
    return [
        *([f"model.encoder.layer_mix={mix}"] if mix else []),
        "model.encoder.frozen_layers=-1",
        f"model.encoder.stack={stack}",
        "model.encoder.feat_out=384",
        "model.encoder.out_activation=gelu_norm",
        "model.encoder.dropout=0.0",
        f"model.encoder.top_layers={blocks}",
        f"++model.optim_param_groups.encoder.lr={lr:g}",
    ]


def spec_augment(time_masks: int) -> list[str]:
    """The RNN-T config's SpecAugment (2 frequency masks of up to 20 mel bins, time masks of up to 5%), back on."""
    return [
        "model.spec_augment={_target_:nemo.collections.asr.modules.SpectrogramAugmentation,"
        f"freq_masks:2,freq_width:20,time_masks:{time_masks},time_width:0.05}}"
    ]


SPEC_AUG = spec_augment(2)
FREQ_AUG = spec_augment(0)
CTC40_RNNT = {"vocab_size": 512, "rnnt_vocab_size": 128, "overrides": [*STACK2, NO_DROP]}
CTC40_RNNT_V1024 = CTC40_RNNT | {"vocab_size": 1024}
VARIANTS: dict[str, dict] = {
    "ctc_base": {"system": "ctc_inter", "start": "base", "steps": 200},
    "ctc_direct": {"system": "ctc_inter", "start": None, "overrides": DIRECT_CTC, **SPEED},
    "ctc_direct_enc1e-3": {
        "system": "ctc_inter",
        "start": None,
        "overrides": [*DIRECT_CTC, "++model.optim_param_groups.encoder.lr=0.001"],
        **SPEED,
    },
    "rnnt_cond_base": {"system": "rnnt_conditioned", "start": "base"},
    # the demo folder's own models, scored as they are (trained by the recipe before this benchmark)
    "demo_ctc_inter": {"system": "ctc_inter", "start": "base", "existing": True},
    "demo_rnnt_conditioned": {"system": "rnnt_conditioned", "start": "base", "existing": True},
    "demo_rnnt_dual": {"system": "rnnt_dual", "start": "base", "existing": True},
    # the anchor: Whisper tiny.en zero-shot on the same dev utterances (``pip install 'nemo_pc[anchor]'``)
    "whisper_tiny_en": {"system": "whisper_tiny_en", "start": None, "anchor": True},
    "rnnt_cond_direct": {
        "system": "rnnt_conditioned",
        "start": None,
        "overrides": ["model.spec_augment=null", "model.optim.lr=0.003", "model.train_ds.batch_size=8"],
        **SPEED,
    },
    "rnnt_cond_ctc": {"system": "rnnt_conditioned", "start": "ctc_direct"},
    # the transducer and CTC heads from the AED's fine-tuned encoder
    # (the demo's ctc_inter recipe now is ctc_direct's: demo.asr_overrides adds PC_FROM_START and the speed
    # perturbation without a base encoder)
    "ctc_aed": {"system": "ctc_inter", "start": "aed"},
    "ctc_aed_frozen": {"system": "ctc_inter", "start": "aed", "freeze_encoder": 0.5},
    "ctc_aed_lower2": {"system": "ctc_inter", "start": "aed", "overrides": ["model.encoder.frozen_layers=2"]},
    # a larger SentencePiece vocabulary (the demo folder's tokenizer is built beside its own, from its train split)
    "ctc_aed_v512": {"system": "ctc_inter", "start": "aed", "vocab_size": 512},
    "ctc_aed_v1024": {"system": "ctc_inter", "start": "aed", "vocab_size": 1024},
    "ctc_aed_v512_lower2": {
        "system": "ctc_inter",
        "start": "aed",
        "vocab_size": 512,
        "overrides": ["model.encoder.frozen_layers=2"],
    },
    "rnnt_cond_aed_v512_lower2": {"system": "rnnt_conditioned", "start": "ctc_aed_v512_lower2", "vocab_size": 512},
    # the encoder kept nearer the AED's: a third of the demo's encoder rate, and with the heads trained alone first
    "ctc_aed_v512_enc1e-4": {
        "system": "ctc_inter",
        "start": "aed",
        "vocab_size": 512,
        "overrides": ["++model.optim_param_groups.encoder.lr=0.0001"],
    },
    # the RNN-T from it over 128 pieces, as the demo chains them (``rnnt_vocab_size``)
    "rnnt_dual_aed_v512_enc1e-4": {
        "system": "rnnt_dual",
        "start": "ctc_aed_v512_enc1e-4",
        "vocab_size": 512,
        "rnnt_vocab_size": 128,
    },
    "ctc_aed_v512_frozen_enc1e-4": {
        "system": "ctc_inter",
        "start": "aed",
        "vocab_size": 512,
        "freeze_encoder": 0.5,
        "overrides": ["++model.optim_param_groups.encoder.lr=0.0001"],
    },
    # the heads on the frozen AED encoder of quality_cached_heads.py, inside the model: every block frozen, 4 frames
    # stacked and projected with a GELU after (an MLP with the linear heads), at the heads' rate
    "ctc_aed_v512_head": {"system": "ctc_inter", "start": "aed", "vocab_size": 512, "overrides": FROZEN_MLP},
    "rnnt_cond_aed_v512_head": {
        "system": "rnnt_conditioned",
        "start": "ctc_aed_v512_head",
        "vocab_size": 512,
        "overrides": FROZEN_MLP,
    },
    "rnnt_dual_aed_v512_head": {
        "system": "rnnt_dual",
        "start": "ctc_aed_v512_head",
        "vocab_size": 512,
        "overrides": FROZEN_MLP,
    },
    "rnnt_dual_aed_v512_lower2": {"system": "rnnt_dual", "start": "ctc_aed_v512_lower2", "vocab_size": 512},
    "rnnt_cond_aed_v512": {"system": "rnnt_conditioned", "start": "ctc_aed_v512", "vocab_size": 512},
    "rnnt_dual_aed_v512": {"system": "rnnt_dual", "start": "ctc_aed_v512", "vocab_size": 512},
    "rnnt_cond_aed_v1024": {"system": "rnnt_conditioned", "start": "ctc_aed_v1024", "vocab_size": 1024},
    "rnnt_dual_aed_v1024": {"system": "rnnt_dual", "start": "ctc_aed_v1024", "vocab_size": 1024},
    # distillation from the AED: its two outputs on (speed-perturbed copies of) the train audio as extra targets
    "ctc_aed_v512_distill": {"system": "ctc_inter", "start": "aed", "vocab_size": 512, "distill": (0.9, 1.1)},
    "ctc_aed_v512_distill1": {"system": "ctc_inter", "start": "aed", "vocab_size": 512, "distill": (1.0,)},
    # one encoder, several heads: the CTC model of an AED trained with the punctuated CTC heads (AED_CTC_HEADS)
    "ctc_aed_heads": {"system": "ctc_inter", "start": "aed", "vocab_size": 512, "heads": True, "steps": 0},
    "ctc_aed_heads_ft": {
        "system": "ctc_inter",
        "start": "aed",
        "vocab_size": 512,
        "heads": True,
        "overrides": ["model.encoder.frozen_layers=-1", "model.encoder.dropout=0.0"],
    },
    # the demo's RNN-Ts from the demo folder's own ``ctc_inter`` (``start: demo``), their joint on 40 ms frames: the
    # encoder's output projection stacks two 20 ms frames and starts as their mean (``stack_init: mean``); the joint's
    # dropout set explicitly, as the demo's recipe since 40 ms frames has none (RNNT_PRETRAINED_JOINT)
    "rnnt_cond_demo_20ms": {"system": "rnnt_conditioned", "start": "demo", "overrides": [*STACK1, JOINT_DROPOUT]},
    "rnnt_cond_demo_stack2": {"system": "rnnt_conditioned", "start": "demo", "overrides": [*STACK2, JOINT_DROPOUT]},
    "rnnt_dual_demo_stack2": {"system": "rnnt_dual", "start": "demo", "overrides": [*STACK2, JOINT_DROPOUT]},
    "rnnt_cond_demo_stack2_nodrop": {
        "system": "rnnt_conditioned",
        "start": "demo",
        "overrides": [*STACK2, "model.joint.jointnet.dropout=0.0"],
    },
    "rnnt_dual_demo_stack2_nodrop": {
        "system": "rnnt_dual",
        "start": "demo",
        "overrides": [*STACK2, "model.joint.jointnet.dropout=0.0"],
    },
    # the demo's ctc_inter (``ctc_aed_v512``) with its heads on 40 ms frames, the projection started as the mean
    "ctc_aed_v512_stack2": {"system": "ctc_inter", "start": "aed", "vocab_size": 512, "overrides": STACK2},
    # the same with real speech among the training lines: ``--real-pool`` (benchmarks/data_real_pool.py, a teacher's
    # transcripts) and the demo folder's ``real_dev`` (its own), each line 20 times (``real_speech_train``)
    "ctc_aed_v512_stack2_real": {
        "system": "ctc_inter",
        "start": "aed",
        "vocab_size": 512,
        "overrides": STACK2,
        "real_speech": 20,
    },
    # the same with more synthetic hours among the training lines: ``--more-train`` (benchmarks/data_more_hours.py's
    # extra_train.json, a larger corpus's lines that share no voice, chapter or text with the held-out sets)
    "ctc_aed_v512_stack2_more": {
        "system": "ctc_inter",
        "start": "aed",
        "vocab_size": 512,
        "overrides": STACK2,
        "more_train": True,
    },
    "ctc_aed_v512_stack2_ema": {
        "system": "ctc_inter",
        "start": "aed",
        "vocab_size": 512,
        "overrides": [*STACK2, *EMA],
    },
    # the same over Whisper's tokens, the heads' rows from the AED's or random (``whisper_token_overrides``)
    "ctc_aed_whisper_stack2": {"system": "ctc_inter", "start": "aed", "whisper_tokens": "init", "overrides": STACK2},
    "ctc_aed_whisper_stack2_random": {
        "system": "ctc_inter",
        "start": "aed",
        "whisper_tokens": "random",
        "overrides": STACK2,
    },
    "ctc_aed_whisper_head": {"system": "ctc_inter", "start": "aed", "whisper_tokens": "init", "overrides": FROZEN_MLP},
    "ctc_aed_whisper_head_norm": {
        "system": "ctc_inter",
        "start": "aed",
        "whisper_tokens": "init",
        "overrides": [*FROZEN_MLP[:3], "model.encoder.out_activation=gelu_norm", *FROZEN_MLP[4:]],
    },
    "ctc_aed_whisper_head_norm_random": {
        "system": "ctc_inter",
        "start": "aed",
        "whisper_tokens": "random",
        "overrides": [*FROZEN_MLP[:3], "model.encoder.out_activation=gelu_norm", *FROZEN_MLP[4:]],
    },
    "ctc_aed_whisper_head_norm_top1": {
        "system": "ctc_inter",
        "start": "aed",
        "whisper_tokens": "init",
        "overrides": [
            "model.encoder.frozen_layers=3",
            *FROZEN_MLP[1:3],
            "model.encoder.out_activation=gelu_norm",
            FROZEN_MLP[4],
            "++model.optim_param_groups.encoder.lr=0.001",
        ],
    },
    # a head with context on the frozen encoder: new Transformer blocks after the normed projection
    "ctc_aed_whisper_attn1": {
        "system": "ctc_inter",
        "start": "aed",
        "whisper_tokens": "init",
        "overrides": attn_head(2, 1),
    },
    "ctc_aed_whisper_s4_attn1_5e-4": {
        "system": "ctc_inter",
        "start": "aed",
        "whisper_tokens": "init",
        "overrides": attn_head(4, 1, 5e-4),
    },
    "ctc_aed_whisper_s4_attn2_5e-4": {
        "system": "ctc_inter",
        "start": "aed",
        "whisper_tokens": "init",
        "overrides": attn_head(4, 2, 5e-4),
    },
    "ctc_aed_whisper_s4_attn4_5e-4": {
        "system": "ctc_inter",
        "start": "aed",
        "whisper_tokens": "init",
        "overrides": attn_head(4, 4, 5e-4),
    },
    "ctc_aed_whisper_s4_attn2_5e-4_mix": {
        "system": "ctc_inter",
        "start": "aed",
        "whisper_tokens": "init",
        "overrides": attn_head(4, 2, 5e-4, mix="true"),
    },
    "ctc_aed_whisper_s4_attn2_5e-4_mixc": {
        "system": "ctc_inter",
        "start": "aed",
        "whisper_tokens": "init",
        "overrides": attn_head(4, 2, 5e-4, mix="channel"),
    },
    # the same frozen-encoder heads over the demo's 512 pieces, whose spelling an n-gram LM corrects more
    "ctc_aed_v512_head_norm": {
        "system": "ctc_inter",
        "start": "aed",
        "vocab_size": 512,
        "overrides": [*FROZEN_MLP[:3], "model.encoder.out_activation=gelu_norm", *FROZEN_MLP[4:]],
    },
    "ctc_aed_v512_s4_attn2_5e-4_mix": {
        "system": "ctc_inter",
        "start": "aed",
        "vocab_size": 512,
        "overrides": attn_head(4, 2, 5e-4, mix="true"),
    },
    "ctc_aed_whisper_s4_attn1": {
        "system": "ctc_inter",
        "start": "aed",
        "whisper_tokens": "init",
        "overrides": attn_head(4, 1),
    },
    "ctc_aed_v1024_stack2": {"system": "ctc_inter", "start": "aed", "vocab_size": 1024, "overrides": STACK2},
    "ctc_aed_v2048_stack2": {"system": "ctc_inter", "start": "aed", "vocab_size": 2048, "overrides": STACK2},
    # the demo's RNN-T recipe from the 40 ms CTC model: the stacking projection loads with the rest of its encoder
    # (the CTC model's 512 pieces for its tokenizers, the demo's 128 for the RNN-T's own)
    "rnnt_cond_ctc40": {"system": "rnnt_conditioned", "start": "ctc_aed_v512_stack2", **CTC40_RNNT},
    "rnnt_dual_ctc40": {"system": "rnnt_dual", "start": "ctc_aed_v512_stack2", **CTC40_RNNT},
    "rnnt_cond_ctc40_v1024": {"system": "rnnt_conditioned", "start": "ctc_aed_v1024_stack2", **CTC40_RNNT_V1024},
    "rnnt_dual_ctc40_v1024": {"system": "rnnt_dual", "start": "ctc_aed_v1024_stack2", **CTC40_RNNT_V1024},
    # the demo's RNN-T recipe from the demo folder's `ctc_punctuated` (a claims folder: C4's baseline, the same
    # recipe as `ctc_inter` without the intermediate normalized head) instead of its `ctc_inter`
    "rnnt_cond_ctc_punct": {
        "system": "rnnt_conditioned",
        "start": "demo",
        "init": "ctc_punctuated",
        "overrides": [*STACK2, NO_DROP],
    },
    "rnnt_dual_ctc_punct": {
        "system": "rnnt_dual",
        "start": "demo",
        "init": "ctc_punctuated",
        "overrides": [*STACK2, NO_DROP],
    },
    # the demo's RNN-T recipe with the predictor first trained on the demo folder's LM text (lm/text.json: the
    # source books without the chapters of dev and test) as a next-piece LM of each mode, for this many steps
    "rnnt_cond_demo_lm": {
        "system": "rnnt_conditioned",
        "start": "demo",
        "overrides": [*STACK2, NO_DROP],
        "predictor_lm": 2000,
    },
    "rnnt_dual_demo_lm": {
        "system": "rnnt_dual",
        "start": "demo",
        "overrides": [*STACK2, NO_DROP],
        "predictor_lm": 2000,
    },
    # the same with a predictor of 320 (the config's 144), with and without the text steps, and with twice the steps
    "rnnt_cond_demo_lm_p320": {
        "system": "rnnt_conditioned",
        "start": "demo",
        "overrides": [*STACK2, NO_DROP, "model.model_defaults.pred_hidden=320"],
        "predictor_lm": 2000,
    },
    "rnnt_dual_demo_lm_p320": {
        "system": "rnnt_dual",
        "start": "demo",
        "overrides": [*STACK2, NO_DROP, "model.model_defaults.pred_hidden=320"],
        "predictor_lm": 2000,
    },
    "rnnt_dual_demo_p320": {
        "system": "rnnt_dual",
        "start": "demo",
        "overrides": [*STACK2, NO_DROP, "model.model_defaults.pred_hidden=320"],
    },
    # the demo's RNN-T recipe with a narrower joint (64 wide, the config's 144): a cheaper joint and loss
    "rnnt_cond_demo_jh64": {
        "system": "rnnt_conditioned",
        "start": "demo",
        "overrides": [*STACK2, NO_DROP, "model.model_defaults.joint_hidden=64"],
    },
    "rnnt_dual_demo_jh64": {
        "system": "rnnt_dual",
        "start": "demo",
        "overrides": [*STACK2, NO_DROP, "model.model_defaults.joint_hidden=64"],
    },
    # the RNN-T on the AED's encoder kept frozen for the whole run (the cheap steps of the frozen half, all along),
    # as the CTC heads on the frozen encoder above: only the stacking projection (GELU after), predictor and joint
    "rnnt_dual_aed_frozen": {
        "system": "rnnt_dual",
        "start": "aed",
        "overrides": AED_FROZEN_RNNT,
    },
    "rnnt_cond_aed_frozen": {
        "system": "rnnt_conditioned",
        "start": "aed",
        "overrides": AED_FROZEN_RNNT,
    },
    # the same with the top block of 4 training at the encoder's fine-tune rate (3e-4), for the marks
    "rnnt_dual_aed_top1": {
        "system": "rnnt_dual",
        "start": "aed",
        "overrides": aed_top_rnnt(1),
    },
    "rnnt_cond_aed_top1": {
        "system": "rnnt_conditioned",
        "start": "aed",
        "overrides": aed_top_rnnt(1),
    },
    # the top 2 blocks of 4 training
    "rnnt_dual_aed_top2": {
        "system": "rnnt_dual",
        "start": "aed",
        "overrides": aed_top_rnnt(2),
    },
    "rnnt_cond_aed_top2": {
        "system": "rnnt_conditioned",
        "start": "aed",
        "overrides": aed_top_rnnt(2),
    },
    # the conditioned RNN-T with the top 3 blocks training (front end and block 1 frozen), and the demo's top-2
    # recipe on speed-perturbed audio (80% of the utterances at 0.9-1.1, as the CTC systems read it)
    "rnnt_cond_aed_top3": {
        "system": "rnnt_conditioned",
        "start": "aed",
        "overrides": aed_top_rnnt(3),
    },
    "rnnt_cond_aed_top2_sp": {
        "system": "rnnt_conditioned",
        "start": "aed",
        "overrides": aed_top_rnnt(2),
        **SPEED,
    },
    # the demo's top-2 recipe with its weights averaged (EMA, decay 0.995), and with a CTC head on the normalized
    # mode beside the transducer (hybrid RNNT-CTC, ``aux_ctc=normalized``, weight 0.3)
    "rnnt_cond_aed_top2_ema": {"system": "rnnt_conditioned", "start": "aed", "overrides": [*aed_top_rnnt(2), *EMA]},
    "rnnt_dual_aed_top2_ema": {"system": "rnnt_dual", "start": "aed", "overrides": [*aed_top_rnnt(2), *EMA]},
    "rnnt_dual_aed_top2_hybrid": {
        "system": "rnnt_dual",
        "start": "aed",
        "overrides": [*aed_top_rnnt(2), "aux_ctc=normalized"],
    },
    # the demo's top-2 recipe with the RNN-T config's SpecAugment (2 frequency masks of up to 20 mel bins, 2 time masks
    # of up to 5%), which the fine-tune's overrides turn off
    "rnnt_cond_aed_top2_sa": {
        "system": "rnnt_conditioned",
        "start": "aed",
        "overrides": [*aed_top_rnnt(2), *SPEC_AUG],
    },
    "rnnt_dual_aed_top2_sa": {"system": "rnnt_dual", "start": "aed", "overrides": [*aed_top_rnnt(2), *SPEC_AUG]},
    # the same with the frequency masks alone (no time mask hides a pause before a mark)
    "rnnt_cond_aed_top2_fa": {
        "system": "rnnt_conditioned",
        "start": "aed",
        "overrides": [*aed_top_rnnt(2), *FREQ_AUG],
    },
    "rnnt_dual_aed_top2_fa": {"system": "rnnt_dual", "start": "aed", "overrides": [*aed_top_rnnt(2), *FREQ_AUG]},
    # the same over 256 pieces (the demo's 128 spell a word in about 4)
    "rnnt_cond_aed_top2_v256": {
        "system": "rnnt_conditioned",
        "start": "aed",
        "rnnt_vocab_size": 256,
        "overrides": aed_top_rnnt(2),
    },
    "rnnt_dual_aed_top2_v256": {
        "system": "rnnt_dual",
        "start": "aed",
        "rnnt_vocab_size": 256,
        "overrides": aed_top_rnnt(2),
    },
    # the demo's top-2 recipe for twice its steps (its cosine schedule over 2,000): where the words go with more steps
    "rnnt_cond_aed_top2_2000": {
        "system": "rnnt_conditioned",
        "start": "aed",
        "steps": 2000,
        "overrides": aed_top_rnnt(2),
    },
    "rnnt_dual_aed_top2_2000": {"system": "rnnt_dual", "start": "aed", "steps": 2000, "overrides": aed_top_rnnt(2)},
    # the demo's top-2 recipe with one mode per utterance and step (model.pc.sample_modes): half the joint's rows
    "rnnt_cond_aed_top2_one": {
        "system": "rnnt_conditioned",
        "start": "aed",
        "overrides": [*aed_top_rnnt(2), "model.pc.sample_modes=true"],
    },
    "rnnt_dual_aed_top2_one": {
        "system": "rnnt_dual",
        "start": "aed",
        "overrides": [*aed_top_rnnt(2), "model.pc.sample_modes=true"],
    },
    # the same in the minutes of the demo's 1,000 steps with both modes (one-mode steps are 1.25x faster)
    "rnnt_cond_aed_top2_one1250": {
        "system": "rnnt_conditioned",
        "start": "aed",
        "steps": 1250,
        "overrides": [*aed_top_rnnt(2), "model.pc.sample_modes=true"],
    },
    "rnnt_dual_aed_top2_one1250": {
        "system": "rnnt_dual",
        "start": "aed",
        "steps": 1250,
        "overrides": [*aed_top_rnnt(2), "model.pc.sample_modes=true"],
    },
    "rnnt_dual_demo_lm4000": {
        "system": "rnnt_dual",
        "start": "demo",
        "overrides": [*STACK2, NO_DROP],
        "predictor_lm": 4000,
    },
    # the demo's RNN-Ts as transducer heads on the AED's fine-tune: as they are, with the copies' embeddings frozen
    # (the token rows are 40% of the trainable weights), and with their lower 2 blocks frozen too
    **{
        f"head_{short}{suffix}": {"system": system, "start": "head", "overrides": overrides, **more}
        for short, system in (("cond", "rnnt_conditioned"), ("dual", "rnnt_dual"))
        for suffix, overrides, more in (
            ("", [], {}),
            ("_emb", [EMBEDDING_FROZEN], {}),
            ("_emb_top2", [EMBEDDING_FROZEN, "model.transducer.frozen_layers=2"], {}),
            ("_emb_666", [EMBEDDING_FROZEN], {"steps": 666}),
        )
    },
    "rnnt_cond_aed": {"system": "rnnt_conditioned", "start": "ctc_aed"},
    "rnnt_dual_aed": {"system": "rnnt_dual", "start": "ctc_aed"},
    "rnnt_dual_ctc": {"system": "rnnt_dual", "start": "ctc_direct"},
}
METRICS = ("per", "punct_micro_f1", "wer_normalized", "wer_pc")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ema_weights(trainer):
    """A context in which the model holds its averaged weights when the training has NeMo's EMA callback
    (``exp_manager.ema.enable``; the weights ``nemo_pc.pipelines.train`` saves), else the weights as they are."""
    from contextlib import nullcontext

    from nemo.collections.common.callbacks.ema import EMA

    ema = next((c for c in trainer.callbacks if isinstance(c, EMA)), None)
    if ema is None or not ema._ema_initialized(trainer):
        return nullcontext()
    return ema.save_ema_model(trainer)


def snapshot_callback(folder: Path, every: int):
    """A Lightning callback that saves the model every ``every`` optimizer steps as ``step<N>.nemo`` and records the
    training seconds up to each (``train_seconds.json``); the saving and validation time is not counted."""
    from lightning.pytorch.callbacks import Callback

    class Snapshots(Callback):
        def __init__(self) -> None:
            self.seconds = 0.0
            self.at: dict[int, float] = {}
            self._start = None

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            self._start = time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            self.seconds += time.perf_counter() - self._start
            step = trainer.global_step
            if step % every == 0 and step not in self.at:
                self.at[step] = round(self.seconds, 1)
                with ema_weights(trainer):
                    pl_module.save_to(str(folder / f"step{step}.nemo"))
                write_text_atomic(folder / "train_seconds.json", json.dumps(self.at) + "\n")

    return Snapshots()


def dev_subset(demo_dir: Path, folder: Path, stride: int) -> Path:
    """Every ``stride``-th line of the demo's dev manifest."""
    entries = [entry for line, entry in iter_manifest(demo_dir / "manifests" / "dev.json") if (line - 1) % stride == 0]
    return write_manifest(folder / "dev_subset.json", entries)


def score(model, manifest: Path, target: Path, batch_size: int = 16) -> dict:
    """Both outputs of a snapshot (a ``.nemo`` path or a loaded model) on ``manifest``, written to ``target`` and
    scored: the report's PER, F1, WER-PC and the normalized WER."""
    from nemo_pc.pipelines.inference import load_asr_model, transcribe_both

    model = load_asr_model(model) if isinstance(model, (str, Path)) else model
    outputs = transcribe_both(model, manifest, batch_size=batch_size, progress=False)
    rows = [
        {**entry, "pred_text": outputs["punctuated"][k], "pred_text_normalized": outputs["normalized"][k]}
        for k, (_, entry) in enumerate(iter_manifest(manifest))
    ]
    write_manifest(target, rows)
    return _scores(target)


def _scores(predictions: Path) -> dict:
    from nemo_pc.metrics.evaluate import EvalConfig, evaluate

    written = evaluate(predictions, EvalConfig(progress=False))["metrics"]
    normalized = evaluate(predictions, EvalConfig(pred_field="pred_text_normalized", progress=False))["metrics"]
    return {
        "per": written["per"],
        "punct_micro_f1": written["punct_micro_f1"],
        "wer_pc": written["wer_pc"],
        "wer_normalized": normalized["wer"],
    }


def split_path(demo_dir: Path, split: str) -> Path:
    """Where a demo folder keeps the manifest of ``split``: ``manifests/<split>.json``, or ``real_speech/<split>.json``
    for the real recordings (``real_dev``, ``real_test``)."""
    return demo_dir / ("real_speech" if split.startswith("real_") else "manifests") / f"{split}.json"


def split_manifest(demo_dir: Path, split: str) -> Path:
    """:func:`split_path`, which must exist."""
    path = split_path(demo_dir, split)
    if not path.is_file():
        raise SystemExit(f"--final-splits: {path} does not exist")
    return path


def score_final(model_path: Path, demo_dir: Path, folder: Path, splits: list[str]) -> dict:
    """The final model on each held-out split: PER, F1, WER-PC and N-WER; a real recorded set adds the N-WER's
    bootstrap interval (clips resampled, seed 0), since most of its clips carry no marks."""
    from nemo_pc.pipelines.demo.scoring import score_real_speech

    out = {}
    for split in splits:
        target = folder / f"{split}_final.json"
        out[split] = score(model_path, split_manifest(demo_dir, split), target)
        if split.startswith("real_"):
            out[split]["wer_normalized_ci95"] = score_real_speech(target, seed=0)["normalized_output"]["ci95"]
    return out


def score_anchor(variant: str, demo_dir: Path, folder: Path, stride: int) -> dict:
    """Whisper tiny.en zero-shot on the dev subset: one point at 0 training minutes."""
    from nemo_pc.pipelines.anchor import transcribe_whisper

    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "dev_final.json"
    transcribe_whisper(dev_subset(demo_dir, folder, stride), target, threads=1, progress=False)
    point = {"step": 0, "minutes": 0.0, **_scores(target)}
    return {
        "variant": variant,
        "system": variant,
        "start": "zero-shot",
        "steps": 0,
        "stopped_at_step": None,
        "start_minutes": None,
        "overrides": None,
        "curve": [point],
    }


def score_existing(variant: str, system: str, demo_dir: Path, folder: Path, stride: int) -> dict:
    """The row of a model of the demo folder as it is: one point, its minutes and those of the base it started
    from."""
    folder.mkdir(parents=True, exist_ok=True)
    model = demo_dir / "models" / f"{system}.nemo"
    stats = json.loads(model.with_suffix(".json").read_text())
    minutes = stats["seconds"] / 60
    if stats.get("init_from"):
        minutes += (
            json.loads((demo_dir / "models" / stats["init_from"]).with_suffix(".json").read_text())["seconds"] / 60
        )
    metrics = score(model, dev_subset(demo_dir, folder, stride), folder / "dev_final.json")
    return {
        "variant": variant,
        "system": system,
        "start": stats.get("init_from"),
        "steps": stats["steps"],
        "stopped_at_step": None,
        "start_minutes": None,
        "overrides": None,
        "curve": [{"step": stats["steps"], "minutes": round(minutes, 2), **metrics}],
    }


def aed_start(aed_model: Path | None) -> tuple[Path, float]:
    """The fine-tuned AED whose encoder starts a variant, and its training minutes (0 when its stats file is
    missing)."""
    if aed_model is None or not aed_model.is_file():
        raise SystemExit(f"a variant that starts from the AED needs --aed-model (a .nemo file), got {aed_model}")
    stats = aed_model.with_suffix(".json")
    if not stats.is_file():
        return aed_model, 0.0
    record = json.loads(stats.read_text())
    return aed_model, record.get("train_seconds", record.get("seconds", 0.0)) / 60


def whisper_token_overrides(overrides: list[str], rows: str, demo_dir: Path, folder: Path, aed_model: Path | None):
    """A variant's overrides over Whisper's tokens: its tokenizer the Whisper subset of the demo folder's train
    split in both modes (written once, ``folder/tokenizer_whisper``); ``rows`` ``init``: the heads' rows start as
    the AED's output rows (``+init_token_rows``), ``random``: as NeMo starts them."""
    from nemo_pc.data.tokenizers.pc_tokenizer import tokenizer_training_lines
    from nemo_pc.data.tokenizers.whisper_subset import KEPT_FILE, build_whisper_subset

    subset = folder / "tokenizer_whisper"
    if not (subset / KEPT_FILE).is_file():
        build_whisper_subset(tokenizer_training_lines([demo_dir / "manifests" / "train.json"]), subset)
    out = [o for o in overrides if not o.startswith("model.tokenizer.dir=")]
    out += [f"model.tokenizer.dir={subset.resolve()}", "model.tokenizer.type=whisper"]
    if rows == "init":
        out.append(f"+init_token_rows={aed_start(aed_model)[0].resolve()}")
    return out


def heads_model(aed_model: Path | None, folder: Path) -> tuple[Path, float]:
    """The ``ctc_inter`` model of an AED's CTC heads (written once under ``folder``) and the AED's minutes."""
    from nemo_pc.models.aed_ctc_export import export_aed_ctc_heads

    aed, minutes = aed_start(aed_model)
    target = folder / "heads.nemo"
    if not target.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        export_aed_ctc_heads(aed, target)
    return target, minutes


def score_heads(
    variant: str, aed_model: Path | None, demo_dir: Path, folder: Path, stride: int, final_splits: tuple[str, ...]
) -> dict:
    """The row of an AED's CTC model as written: one point at the AED's minutes, no CTC step."""
    model, minutes = heads_model(aed_model, folder)
    metrics = score(model, dev_subset(demo_dir, folder, stride), folder / "dev_final.json")
    return {
        "final": score_final(model, demo_dir, folder, list(final_splits)),
        "variant": variant,
        "system": VARIANTS[variant]["system"],
        "start": "aed",
        "steps": 0,
        "stopped_at_step": None,
        "start_minutes": round(minutes, 2),
        "overrides": None,
        "curve": [{"step": 0, "minutes": round(minutes, 2), **metrics}],
    }


TEACHER = "aed_prompt"


def distilled_train(demo_dir: Path, work: Path, speeds: tuple[float, ...]) -> tuple[list[Path], dict]:
    """The train manifests of a distillation variant: the demo's labelled train split and the teacher's outputs on
    copies of its audio at ``speeds`` (written once under ``work/distill/``, reused while the teacher and the split
    are unchanged), and the distillation's record (:class:`~nemo_pc.pipelines.distill.DistillRecord`: lines, drops,
    the minutes the teacher's transcription took) with ``agreement``: the teacher's outputs scored against the labels
    they replace (PER, punctuation F1, WER-PC, N-WER)."""
    from dataclasses import asdict

    from nemo_pc.pipelines.distill import distill

    train = demo_dir / "manifests" / "train.json"
    tag = "_".join(f"{speed:g}" for speed in speeds)
    out = work / "distill" / f"train_{TEACHER}_sp{tag}.json"
    record = asdict(distill(demo_dir / "models" / f"{TEACHER}.nemo", train, out, speeds=speeds, log=_stderr))
    if out.is_file():
        scored = [
            {
                "utt_id": row.get("utt_id", row["audio_filepath"]),
                "text": row["text_reference"],
                "text_normalized": row["text_normalized_reference"],
                "pred_text": row["text"],
                "pred_text_normalized": row["text_normalized"],
            }
            for _, row in iter_manifest(out)
        ]
        record["agreement"] = _scores(write_manifest(out.with_suffix(".agreement.json"), scored))
    return [train, out], record


def real_speech_train(demo_dir: Path, work: Path, pool: Path | None, repeat: int) -> Path:
    """A training manifest of a ``real_speech`` variant: the demo's train split, then ``repeat`` copies of every line
    of ``pool`` and of the folder's ``real_speech/real_dev.json`` (each copy's ``utt_id`` ends in ``-r<k>``: the
    loaders want them unique), written under ``work/real_speech/``."""
    if pool is None or not pool.is_file():
        raise SystemExit(f"error: --real-pool {pool}: no such manifest (benchmarks/data_real_pool.py writes it)")
    real_dev = demo_dir / "real_speech" / "real_dev.json"
    if not real_dev.is_file():
        raise SystemExit(f"error: {real_dev}: the demo folder has no real_dev set")
    lines = read_manifest(demo_dir / "manifests" / "train.json")
    for source in (pool, real_dev):
        for k in range(repeat):
            lines += [
                {**row, "utt_id": f"{row.get('utt_id', row['audio_filepath'])}-r{k}"} for row in read_manifest(source)
            ]
    return write_manifest(work / "real_speech" / f"train_real_x{repeat}.json", lines)


def more_train(demo_dir: Path, work: Path, extra: Path | None) -> Path:
    """A training manifest of a ``more_train`` variant: the demo's train split, then every line of ``extra``
    (benchmarks/data_more_hours.py's ``extra_train.json``), written under ``work/more_train/``."""
    if extra is None or not extra.is_file():
        raise SystemExit(f"error: --more-train {extra}: no such manifest (benchmarks/data_more_hours.py writes it)")
    lines = read_manifest(demo_dir / "manifests" / "train.json") + read_manifest(extra)
    return write_manifest(work / "more_train" / f"train_plus_{extra.stem}.json", lines)


def variant_demo(spec: dict, config: dict, folder: Path, steps: int):
    """The :class:`~nemo_pc.pipelines.demo.pipeline.Demo` whose ``asr_overrides`` give a variant its recipe: the demo
    folder's settings (``config``), the variant's vocabulary, start and overrides."""
    demo_cfg = demo_settings.DemoConfig(
        out_dir=str(folder),
        vocab_size=spec.get("vocab_size", config["vocab_size"]),
        # an RNN-T variant's own pieces: ``rnnt_vocab_size``, else the variant's ``vocab_size``, else the folder's
        rnnt_vocab_size=spec.get(
            "rnnt_vocab_size", spec.get("vocab_size", config.get("rnnt_vocab_size", config["vocab_size"]))
        ),
        backbone=config["backbone"],
        base_steps=config["base_steps"] if spec["start"] == "base" else 0,
        num_jobs=1,
        rnnt_steps=steps,
        ctc_stack=1,  # the CTC variants as measured: 20 ms heads unless a variant stacks them (``STACK2``)
        # the RNN-T variants as measured: RNN-T models, not transducer heads on the AED (but the ``head`` ones)
        rnnt_predictor="aed_decoder" if spec["start"] == "head" else "lstm",
        ctc_head="encoder",  # the CTC variants as measured: CTC models (the decoder CTC head has its own benchmarks)
        **({"rnnt_init": config["rnnt_init"]} if spec["start"] == "head" else {}),
        extra={spec["system"]: list(spec.get("overrides", []))},
    )
    return pipeline.Demo(demo_cfg, log=_stderr)


def folder_demo(config: dict, demo_dir: Path):
    """The :class:`~nemo_pc.pipelines.demo.pipeline.Demo` of the demo folder itself, with its settings
    (``config.json``): for the steps a variant reads from the folder as the demo would write them."""
    import dataclasses

    fields = {field.name for field in dataclasses.fields(demo_settings.DemoConfig)}
    settings = {
        key: tuple(value) if isinstance(value, list) else value for key, value in config.items() if key in fields
    }
    settings.setdefault("ctc_head", "encoder")  # a folder written before ctc_head existed: its CTC systems are models
    return pipeline.Demo(demo_settings.DemoConfig(**{**settings, "out_dir": str(demo_dir)}), log=_stderr)


def demo_start(spec: dict, config: dict, demo_dir: Path) -> tuple[Path, float]:
    """The ``.nemo`` of the demo folder that a ``start: demo`` variant starts from, ``init`` (e.g. a claims folder's
    ``ctc_punctuated``) or else the folder's ``rnnt_init`` (``ctc_inter``, or an AED's fine-tune), and its training
    minutes, which count in the variant's; a folder without it stops the run with its name."""
    init = spec.get("init", config["rnnt_init"])
    if demo_settings.ASR_SYSTEMS.get(init, ("",))[0] == "aed":
        return aed_start(demo_dir / "models" / f"{init}_finetuned.nemo")
    init_from = demo_dir / "models" / f"{init}.nemo"
    if not init_from.is_file():
        raise SystemExit(f"error: {init_from}: the demo folder has no such model to start from")
    return init_from, json.loads(init_from.with_suffix(".json").read_text())["seconds"] / 60


def run_one(
    variant: str,
    demo_dir: Path,
    work: Path,
    steps: int,
    every: int,
    stride: int,
    train: bool = True,
    aed_model: Path | None = None,
    final_splits: tuple[str, ...] = (),
    real_pool: Path | None = None,
    more_train_manifest: Path | None = None,
) -> dict:
    """Trains one variant in this process, scores its snapshots and returns its row; ``train=False`` scores the
    snapshots of a run that was stopped (the row then says at which step). ``final_splits``: the held-out splits
    the last model is also scored on (the row's ``final``)."""
    from nemo_pc.pipelines.train import train_model

    spec = VARIANTS[variant]
    steps = spec.get("steps", steps)
    folder = work / variant
    if spec.get("heads") and not steps:
        return score_heads(variant, aed_model, demo_dir, folder, stride, final_splits)
    if spec.get("existing"):
        row = score_existing(variant, spec["system"], demo_dir, folder, stride)
        model = demo_dir / "models" / f"{spec['system']}.nemo"
        return row | {"final": score_final(model, demo_dir, folder, list(final_splits))}
    if spec.get("anchor"):
        return score_anchor(variant, demo_dir, folder, stride)
    folder.mkdir(parents=True, exist_ok=True)
    # a transducer head reads the AED's fine-tune (models/) and the LM text's tokens (lm/) from the demo folder
    for name in ("manifests", "tokenizers", *(("models", "lm") if spec["start"] == "head" else ())):
        link = folder / name
        if not link.exists():
            link.symlink_to((demo_dir / name).resolve())
    config = json.loads((demo_dir / "config.json").read_text())
    demo = variant_demo(spec, config, folder, steps)
    overrides = demo.asr_overrides(spec["system"])
    if spec.get("speed_perturb"):
        overrides.append(demo_settings.speed_perturb_override(spec["speed_perturb"]))
    if spec.get("whisper_tokens"):
        overrides = whisper_token_overrides(overrides, spec["whisper_tokens"], demo_dir, folder, aed_model)
    start_minutes, init_from = 0.0, None
    if spec["start"] == "base":
        init_from = demo_dir / "models" / "base.nemo"
        start_minutes = json.loads(init_from.with_suffix(".json").read_text())["seconds"] / 60
    elif spec["start"] == "demo":  # the demo's fine-tune from a model of the demo folder
        init_from, start_minutes = demo_start(spec, config, demo_dir)
    elif spec["start"] == "head":  # the demo's own start: NeMo's init_from_nemo_model in the overrides
        _, start_minutes = demo_start(spec, config, demo_dir)
        folder_demo(config, demo_dir).lm_text()  # the LM text whose tokens the head may write, as the demo writes it
        if not demo.transducer_on_aed(spec["system"]):
            raise SystemExit(f"error: {variant}: the demo folder's rnnt_init {config['rnnt_init']!r} is not an AED")
    elif spec["start"] == "aed" and spec.get("heads"):  # every weight from the AED's CTC model
        written, start_minutes = heads_model(aed_model, folder)
        overrides.append(f"+init_from_nemo_model.heads.path={written}")
    elif spec["start"] == "aed":
        init_from, start_minutes = aed_start(aed_model)
        if spec.get("freeze_encoder"):
            frozen = int(steps * spec["freeze_encoder"])
            overrides += ["model.freeze_updates.enabled=true", f"model.freeze_updates.modules.encoder={frozen}"]
    elif spec["start"] is not None:  # another variant's model
        row = json.loads((work / spec["start"] / "row.json").read_text())
        init_from = work / spec["start"] / "final.nemo"
        start_minutes = row["curve"][-1]["minutes"]
        overrides += demo_settings.RNNT_FINETUNE_OVERRIDES + [
            "model.train_ds.batch_size=8",
            "model.freeze_updates.enabled=true",
            f"model.freeze_updates.modules.encoder={steps // 2}",
        ]
    if spec.get("predictor_lm"):
        text = demo_dir / "lm" / "text.json"
        if not text.is_file():
            raise SystemExit(f"error: {text}: the demo folder has no LM text for the predictor")
        overrides += [f"model.predictor_lm.text={text.resolve()}", f"model.predictor_lm.steps={spec['predictor_lm']}"]
    distilled = None
    if spec.get("distill"):
        manifests, distilled = distilled_train(demo_dir, work, spec["distill"])
        overrides = [o for o in overrides if not o.startswith("model.train_ds.manifest_filepath=")]
        overrides.append(f"model.train_ds.manifest_filepath=[{','.join(map(str, manifests))}]")
        start_minutes += distilled["minutes"]
    if spec.get("more_train"):
        manifest = more_train(demo_dir, work, more_train_manifest)
        overrides = [o for o in overrides if not o.startswith("model.train_ds.manifest_filepath=")]
        overrides.append(f"model.train_ds.manifest_filepath={manifest}")
    if spec.get("real_speech"):
        manifest = real_speech_train(demo_dir, work, real_pool, spec["real_speech"])
        overrides = [o for o in overrides if not o.startswith("model.train_ds.manifest_filepath=")]
        overrides.append(f"model.train_ds.manifest_filepath={manifest}")
    snapshots = folder / "snapshots"
    snapshots.mkdir(exist_ok=True)
    final = folder / "final.nemo"
    if not final.is_file() and train:
        stats = train_model(
            demo.training_family(spec["system"]),
            overrides,
            final,
            steps,
            log_dir=folder / "logs",
            init_from=init_from,
            callbacks=[snapshot_callback(snapshots, every)],
        )
        write_text_atomic(folder / "stats.json", json.dumps(stats) + "\n")
    seconds = json.loads((snapshots / "train_seconds.json").read_text())
    stats_file = folder / "stats.json"
    predictor_lm = json.loads(stats_file.read_text()).get("predictor_lm") if stats_file.is_file() else None
    if predictor_lm:  # the predictor's text-only steps ran before the first speech step: their minutes count
        start_minutes += predictor_lm["seconds"] / 60
    manifest = dev_subset(demo_dir, folder, stride)
    curve = []
    for step in sorted(int(s) for s in seconds):
        _stderr(f"{variant}: scoring step {step}")
        metrics = score(snapshots / f"step{step}.nemo", manifest, folder / f"dev_step{step}.json")
        curve.append({"step": step, "minutes": round(start_minutes + seconds[str(step)] / 60, 2), **metrics})
    stopped = None if final.is_file() else curve[-1]["step"]
    last = snapshots / f"step{curve[-1]['step']}.nemo"
    return {
        "final": score_final(last, demo_dir, folder, list(final_splits)),
        "variant": variant,
        "system": spec["system"],
        "start": spec.get("init", spec["start"]),
        "steps": steps,
        "stopped_at_step": stopped,
        "start_minutes": round(start_minutes, 2),
        "overrides": overrides,
        "curve": curve,
        **({"distill": distilled} if distilled else {}),
        **({"predictor_lm": {k: v for k, v in predictor_lm.items() if k != "loss"}} if predictor_lm else {}),
    }


def table(rows: list[dict]) -> list[str]:
    lines = [
        "| variant | starts from | step | minutes | dev PER | punct F1 | N-WER | WER-PC |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        for point in row["curve"]:
            lines.append(
                f"| {row['variant']} | {row['start'] or 'Whisper'} | {point['step']} | {point['minutes']:.1f} | "
                f"{100 * point['per']:.1f} | {100 * point['punct_micro_f1']:.1f} | "
                f"{100 * point['wer_normalized']:.1f} | {100 * point['wer_pc']:.1f} |"
            )
    return lines


def final_table(rows: list[dict]) -> list[str]:
    """The last model of each row on the held-out splits (``--final-splits``)."""
    lines = [
        "| variant | split | minutes | PER | punct F1 | N-WER | N-WER 95% CI |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        for split, m in (row.get("final") or {}).items():
            ci = m.get("wer_normalized_ci95")
            interval = f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else ""
            lines.append(
                f"| {row['variant']} | {split} | {row['curve'][-1]['minutes']:.1f} | {100 * m['per']:.1f} | "
                f"{100 * m['punct_micro_f1']:.1f} | {100 * m['wer_normalized']:.1f} | {interval} |"
            )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", default="demo_out", help="a finished demo folder (manifests, tokenizers, base)")
    parser.add_argument("--work-dir", default=None, help="where the variants train (default: DEMO_DIR/.pc_stage)")
    parser.add_argument("--variants", default="ctc_direct,ctc_direct_enc1e-3")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--every", type=int, default=200, help="snapshot every this many steps")
    parser.add_argument("--dev-stride", type=int, default=2, help="score every N-th dev utterance")
    parser.add_argument("--jobs", type=int, default=2, help="variants trained at once (one thread each)")
    parser.add_argument("--threads", type=int, default=None, help="threads per variant (default: cores / jobs)")
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--stopped", action="store_true", help="train nothing: score the snapshots that stopped runs left"
    )
    parser.add_argument(
        "--aed-model", default=None, help="the fine-tuned AED .nemo that the *_aed variants start from"
    )
    parser.add_argument(
        "--final-splits",
        default="",
        help="comma-separated held-out splits the last model is scored on: test, test_seen, real_dev, real_test",
    )
    parser.add_argument(
        "--real-pool",
        default=None,
        help="the real-speech pool (benchmarks/data_real_pool.py's pool.json) that the *_real variants train on",
    )
    parser.add_argument(
        "--more-train",
        default=None,
        help="more synthetic training lines (benchmarks/data_more_hours.py's extra_train.json) for *_more variants",
    )
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    demo_dir = Path(args.demo_dir)
    work = Path(args.work_dir) if args.work_dir else demo_dir / ".pc_stage"
    final_splits = tuple(split for split in args.final_splits.split(",") if split)
    if args.one:
        aed = Path(args.aed_model) if args.aed_model else None
        row = run_one(
            args.one,
            demo_dir,
            work,
            args.steps,
            args.every,
            args.dev_stride,
            train=not args.stopped,
            aed_model=aed,
            final_splits=final_splits,
            real_pool=Path(args.real_pool) if args.real_pool else None,
            more_train_manifest=Path(args.more_train) if args.more_train else None,
        )
        write_text_atomic(work / args.one / "row.json", json.dumps(row) + "\n")
        return
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {unknown}; choose from {sorted(VARIANTS)}")
    if args.steps < 2 or args.every < 1 or args.jobs < 1:
        parser.error("--steps must be 2 or more, --every and --jobs 1 or more")
    if not (demo_dir / "manifests" / "dev.json").is_file() or not (demo_dir / "config.json").is_file():
        parser.error(f"{demo_dir}: no manifests/dev.json or config.json (run examples/demo_pc.py first)")
    threads = args.threads or max(1, (os.cpu_count() or 1) // args.jobs)
    arguments = [
        "--demo-dir",
        str(demo_dir),
        "--work-dir",
        str(work),
        "--steps",
        str(args.steps),
        "--every",
        str(args.every),
        "--dev-stride",
        str(args.dev_stride),
        *(["--stopped"] if args.stopped else []),
        *(["--aed-model", args.aed_model] if args.aed_model else []),
        *(["--final-splits", args.final_splits] if final_splits else []),
        *(["--real-pool", args.real_pool] if args.real_pool else []),
        *(["--more-train", args.more_train] if args.more_train else []),
    ]
    rows = []
    for round_, row in variant_rounds(__file__, variants, work, arguments, args.jobs, threads, resume=True):
        row["round"] = round_
        row["threads"] = threads
        rows.append(row)
    print("\n".join(table(rows)))
    if final_splits:
        print("\n".join(["", *final_table(rows)]))
    if args.json:
        write_results(args.json, {"demo_dir": str(demo_dir), "dev_stride": args.dev_stride, "rows": rows})


if __name__ == "__main__":
    main()
