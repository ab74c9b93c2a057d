"""n-gram LM shallow fusion on the demo's P&C models (papers/002 §5.3), with NeMo's NGPU-LM fusion.

For each system: builds a token-level n-gram (``nemo-pc build-lm``, NGPU-LM ``.nemo``) from ``manifests/train.json``
or from ``--lm-text`` (``nemo-pc lm-text``) with the model's own tokenizer, tunes the LM weight on ``dev`` over a
small grid (ties go to the smaller weight), then decodes ``test`` in ``--mode`` with and without the LM
(``--strategy`` greedy or beam for both) and reports WER, WER-PC and PER (punctuated mode; tuned by WER-PC) or WER
(normalized mode; against ``text_normalized``) with nemo_pc's paired bootstrap and MAPSSWE tests (``nemo-pc
evaluate --compare``), and punctuation F1 beside them. ``--betas`` tunes CTC beam search's per-piece bonus
(``beam_beta``, NeMo's default 1.0) on dev together with the weight. ``--splits`` adds other held-out splits
(``real_test``: the demo folder's ``real_speech/``) under ``splits``. A model outside the folder's ``models/`` (a
benchmark's ``final.nemo``) is named with ``--model NAME=PATH``; a model over a Whisper token subset gets its LM
over that subset's ids. Work files (LM, prediction manifests) go to ``--work``; the JSON report to ``--json``.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/quality_lm_fusion.py --demo-dir demo_out \\
        --json benchmarks/results/lm_fusion.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

from quality_pc_stage import split_path
from suite import Stopwatch, results_path, write_results

DEFAULT_SYSTEMS = ("rnnt_conditioned", "ctc_inter")
DEFAULT_ALPHAS = (0.1, 0.2, 0.3, 0.5, 0.8)
TUNE_METRIC = "wer_pc"
REPORTED = ("wer", "wer_pc", "per")
F1 = "punct_micro_f1"


def transcribe_to_manifest(
    model, manifest: Path, target: Path, batch_size: int, mode: str = "punctuated"
) -> tuple[Path, float]:
    """The ``mode`` output of every line of ``manifest`` as ``pred_text`` of a copy of it, and the seconds."""
    from nemo_pc.parts.manifest import iter_manifest, write_manifest

    entries = [entry for _, entry in iter_manifest(manifest)]
    with Stopwatch() as watch:
        hyps = model.transcribe(
            [e["audio_filepath"] for e in entries], batch_size=batch_size, verbose=False, mode=mode
        )
    seconds = watch.seconds
    texts = [getattr(hyp, "text", hyp) for hyp in hyps]
    return write_manifest(
        target, [{**entry, "pred_text": text} for entry, text in zip(entries, texts, strict=True)]
    ), seconds


def metrics_of(report: dict, reported: tuple[str, ...] = REPORTED) -> dict:
    return {metric: report["metrics"][metric] for metric in reported}


MODE_SETTINGS = {
    # mode: (LM field, the metric the weight is tuned on, the metrics reported, evaluate's reference field)
    "punctuated": ("text", TUNE_METRIC, REPORTED, "text"),
    "normalized": ("text_normalized", "wer", ("wer",), "text_normalized"),
}


def run_system(name: str, args: argparse.Namespace) -> dict:
    from nemo_pc.data.tokenizers.token_encoder import model_token_encoder
    from nemo_pc.metrics.evaluate import EvalConfig, evaluate
    from nemo_pc.parts.lm_fusion import ngram_lm_decoding
    from nemo_pc.parts.ngram_lm import build_token_lm
    from nemo_pc.pipelines.inference import load_asr_model

    model_path = args.models.get(name) or args.demo_dir / "models" / f"{name}.nemo"
    if not model_path.is_file():
        return {"skipped": f"no model {model_path}"}
    work = args.work / name
    field_name, tune_metric, reported, reference = MODE_SETTINGS[args.mode]
    lm_source = args.lm_text or args.demo_dir / "manifests" / "train.json"
    model = load_asr_model(model_path)
    built = build_token_lm(
        lm_source,
        model_token_encoder(model, model_path),
        work / f"{args.mode}_order{args.order}.nemo",
        args.order,
        field_name=field_name,
        marks=args.marks,
        progress=False,
    )
    config = EvalConfig(progress=False, marks=args.marks, ref_field=reference)

    def key(alpha: float, beta: float | None) -> str:
        return f"{alpha:g}" if beta is None else f"{alpha:g}/beta{beta:g}"

    def decode(split: str, alpha: float, beta: float | None) -> tuple[Path, float]:
        target = work / f"{split}_{args.mode}_{args.strategy}_alpha{key(alpha, beta).replace('/', '_')}.json"
        with ngram_lm_decoding(model, args.mode, built.output, alpha, args.strategy, args.beam_size, beta):
            manifest = split_path(args.demo_dir, split)
            return transcribe_to_manifest(model, manifest, target, args.batch_size, args.mode)

    grid = {}
    settings = [(alpha, beta) for alpha in (0.0, *args.alphas) for beta in args.betas]
    for alpha, beta in settings:
        predictions, seconds = decode("dev", alpha, beta)
        row = {**metrics_of(evaluate(predictions, config), reported), "seconds": round(seconds, 2)}
        grid[key(alpha, beta)] = row

    def tuned(options: list[tuple[float, float | None]]) -> tuple[float, float | None]:
        # the lowest dev error; ties to the smaller LM weight, then the smaller bonus
        return min(options, key=lambda s: (grid[key(*s)][tune_metric], s[0], s[1] or 0.0))

    best_alpha, best_beta = tuned(settings)
    plain_beta = tuned([s for s in settings if s[0] == 0.0])[1]  # the beam without the LM at its own best bonus

    def scored(split: str) -> dict:
        plain, plain_seconds = decode(split, 0.0, plain_beta)
        same = (best_alpha, best_beta) == (0.0, plain_beta)
        fused, fused_seconds = (plain, plain_seconds) if same else decode(split, best_alpha, best_beta)
        report = evaluate(fused, config, compare=plain, num_resamples=args.resamples, seed=0)
        paired = report["compare"]["metrics"]
        row = {
            "no_lm": {metric: paired[metric]["b"] for metric in reported},
            "lm": {metric: paired[metric]["a"] for metric in reported},
            "paired": {metric: paired[metric] for metric in reported},
            "seconds": {"no_lm": round(plain_seconds, 2), "lm": round(fused_seconds, 2)},
            "num_utterances": report["num_utterances"],
        }
        if args.mode == "punctuated":  # punctuation F1 beside the error rates, unpaired
            row["no_lm"][F1] = evaluate(plain, config)["metrics"][F1]
            row["lm"][F1] = report["metrics"][F1]
        return row

    splits = {split: scored(split) for split in args.splits}
    return {
        "model": str(model_path),
        "lm": built.as_dict(),
        "lm_text": str(lm_source),
        "mode": args.mode,
        "tuned_on": f"dev {tune_metric}",
        "dev_grid": grid,
        "best_alpha": best_alpha,
        **({"best_beta": best_beta, "no_lm_beta": plain_beta} if args.betas != [None] else {}),
        "test": splits["test"],
        **({"splits": splits} if len(splits) > 1 else {}),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from nemo_pc.parts.ngram_lm import DEFAULT_ORDER
    from nemo_pc.parts.text import DEFAULT_MARKS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", type=Path, default=Path("demo_out"), help="a `make demo` output folder")
    parser.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS), help="models/<name>.nemo, comma-separated")
    parser.add_argument("--order", type=int, default=DEFAULT_ORDER, help="n-gram order")
    parser.add_argument("--alphas", default=",".join(map(str, DEFAULT_ALPHAS)), help="LM weights tried on dev")
    parser.add_argument("--strategy", choices=("greedy", "beam"), default="greedy", help="greedy_batch or beam")
    parser.add_argument("--beam-size", type=int, default=4, help="beam size of --strategy beam")
    parser.add_argument("--marks", default=DEFAULT_MARKS, help="mark set")
    parser.add_argument(
        "--mode",
        choices=tuple(MODE_SETTINGS),
        default="punctuated",
        help="the output mode fused and scored (normalized: an LM over text_normalized, tuned by WER)",
    )
    parser.add_argument(
        "--lm-text",
        type=Path,
        default=None,
        help="JSON lines the LM is built from (`nemo-pc lm-text`); default DEMO/manifests/train.json",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a system's .nemo outside DEMO/models (repeatable); NAME is then one of --systems",
    )
    parser.add_argument(
        "--splits", default="test", help="held-out splits scored, comma-separated: test first, then e.g. real_test"
    )
    parser.add_argument(
        "--betas",
        default="",
        help="CTC beam search's per-piece bonus (beam_beta) tried on dev with each LM weight, comma-separated "
        "(default: the model's decoding config, else NeMo's 1.0); the row without the LM takes its own best",
    )
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the paired test")
    parser.add_argument("--work", type=Path, default=None, help="ARPA and predictions (default DEMO/lm_fusion)")
    parser.add_argument("--json", type=Path, default=results_path(__file__))
    args = parser.parse_args(argv)
    args.alphas = tuple(float(a) for a in args.alphas.split(",") if a.strip())
    if not args.alphas or any(a <= 0 for a in args.alphas):
        parser.error("--alphas must be positive weights")
    args.work = args.work or args.demo_dir / "lm_fusion"
    try:
        args.betas = sorted({float(b) for b in args.betas.split(",") if b.strip()}) or [None]
    except ValueError:
        parser.error(f"--betas must be comma-separated numbers, got {args.betas!r}")
    if args.betas != [None] and args.strategy != "beam":
        parser.error("--betas needs --strategy beam (beam_beta is a setting of CTC beam search)")
    args.splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    if not args.splits or args.splits[0] != "test":
        parser.error(f"--splits must start with test, got {args.splits}")
    args.models = {}
    for item in args.model:
        name, sep, path = item.partition("=")
        if not (sep and name.strip() and path.strip()):
            parser.error(f"--model {item}: give NAME=PATH")
        args.models[name.strip()] = Path(path.strip())
    missing = [split for split in args.splits if not split_path(args.demo_dir, split).is_file()]
    if missing:
        parser.error(f"--splits: no manifest for {missing} in {args.demo_dir}")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    settings = {
        key: str(value) if isinstance(value, Path) else value for key, value in vars(args).items() if key != "models"
    }
    results = {"settings": settings, "systems": {}}
    for name in [s.strip() for s in args.systems.split(",") if s.strip()]:
        results["systems"][name] = run_system(name, args)
        print(f"{name}: {results['systems'][name].get('test', results['systems'][name])}", flush=True)
    write_results(args.json, results)
    print(f"report: {args.json}")
    return results


if __name__ == "__main__":
    main()
