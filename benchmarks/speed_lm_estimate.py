"""One demo LM estimated two ways and turned into NGPU-LM two ways, side by side in one run on the same core.

Estimation: the plain-dict Kneser-Ney of :mod:`nemo_pc.testing.kneser_ney` (one n-gram at a time, as the estimator
was first written) against :func:`nemo_pc.parts.ngram_lm.estimate` (NumPy), with the largest difference of any
``log10 p`` or back-off between them. Conversion: :func:`~nemo_pc.parts.ngram_lm.write_arpa` and NeMo's
``NGramGPULanguageModel.from_arpa`` against :func:`nemo_pc.parts.ngram_lm_nemo.suffix_tree`, and whether every
tensor of the two models is equal.

    python benchmarks/speed_lm_estimate.py --demo-dir demo_out --json benchmarks/results/speed_lm_estimate.json
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

from suite import Stopwatch, num, results_path, write_results

from nemo_pc.parts.manifest import DropCounter
from nemo_pc.parts.ngram_lm import estimate, load_sentencepiece, manifest_token_sentences, write_arpa
from nemo_pc.pipelines.demo.lm_steps import LM_FIELDS


def largest_difference(model, reference: dict) -> float:
    """The largest absolute difference of a log10 probability or back-off; inf where the n-grams differ."""
    worst, seen = 0.0, 0
    for n, level in enumerate(model.levels, start=1):
        rows = map(tuple, model.tokens(n).tolist())
        for gram, log_prob, log_backoff in zip(rows, level.log10_prob, level.log10_backoff, strict=True):
            expected = reference.get(gram)
            if expected is None or math.isnan(log_backoff) != (expected[1] is None):
                return math.inf
            worst = max(worst, abs(log_prob - expected[0]))
            if expected[1] is not None:
                worst = max(worst, abs(log_backoff - expected[1]))
            seen += 1
    return worst if seen == len(reference) else math.inf


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", type=Path, default=Path("demo_out"))
    parser.add_argument("--lm", default="normalized_order6_bpe_v128", help="the demo LM to estimate")
    parser.add_argument("--json", type=Path, default=results_path(__file__))
    args = parser.parse_args(argv)
    mode, order, tokenizer = (args.lm.split("_", 2) + ["", ""])[:3]
    text = args.demo_dir / "lm" / "text.json"
    tokenizer_dir = args.demo_dir / "tokenizers" / f"tokenizer_spe_{tokenizer}"
    if mode not in LM_FIELDS or not order.startswith("order") or not order[5:].isdigit() or not tokenizer:
        sys.exit(f"speed_lm_estimate: error: --lm {args.lm!r} is not an LM name like normalized_order6_bpe_v128")
    for path in (text, tokenizer_dir):
        if not path.exists():
            sys.exit(f"speed_lm_estimate: error: {path} does not exist (run the demo first)")
    import torch
    from nemo.collections.asr.parts.submodules.ngram_lm import NGramGPULanguageModel

    from nemo_pc.parts.ngram_lm_nemo import suffix_tree
    from nemo_pc.testing.kneser_ney import reference_model

    torch.set_num_threads(1)
    processor = load_sentencepiece(tokenizer_dir)
    vocab = processor.get_piece_size()
    sentences = list(manifest_token_sentences(text, processor, LM_FIELDS[mode], skipped=DropCounter()))
    seconds = {}
    with Stopwatch() as watch:
        reference, _ = reference_model(sentences, vocab, int(order[5:]))
    seconds["estimate, plain dicts"] = watch.seconds
    with Stopwatch() as watch:
        model = estimate(sentences, vocab, int(order[5:]))
    seconds["estimate, NumPy"] = watch.seconds
    difference = largest_difference(model, reference)
    del reference
    with tempfile.TemporaryDirectory() as tmp:
        arpa = Path(tmp) / "lm.arpa"
        with Stopwatch() as watch:
            with arpa.open("w", encoding="utf-8") as handle:
                write_arpa(model, handle)
            through_arpa = NGramGPULanguageModel.from_arpa(arpa, vocab_size=vocab).state_dict()
        seconds["NGPU-LM through ARPA text"] = watch.seconds
    with Stopwatch() as watch:
        direct = NGramGPULanguageModel.from_suffix_tree(suffix_tree(model)).state_dict()
    seconds["NGPU-LM from the arrays"] = watch.seconds
    same = through_arpa.keys() == direct.keys() and all(torch.equal(t, direct[k]) for k, t in through_arpa.items())
    before = seconds["estimate, plain dicts"] + seconds["NGPU-LM through ARPA text"]
    after = seconds["estimate, NumPy"] + seconds["NGPU-LM from the arrays"]
    results = {
        "demo_dir": str(args.demo_dir),
        "lm": args.lm,
        "sentences": len(sentences),
        "tokens": sum(map(len, sentences)),
        "ngram_counts": model.counts(),
        "threads": 1,
        "seconds": {label: round(value, 1) for label, value in seconds.items()},
        "largest_log10_difference": difference,
        "same_ngpu_lm": same,
        "speedup": round(before / after, 1),
    }
    write_results(args.json, results)
    for label, value in seconds.items():
        print(f"{label}: {num(value)} s", file=sys.stderr)
    print(f"speedup {results['speedup']}x; largest log10 difference {difference:.2e}; same NGPU-LM: {same}")


if __name__ == "__main__":
    main()
