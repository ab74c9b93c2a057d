"""Span rewriter accuracy on gold spans: the share of rewriter pairs it writes exactly right.

The pairs are ``<split>_rewriter.json`` of ``nemo-pc formatter-data`` (spans from the alignment of written and
spoken forms, so the tagger plays no part). Pairs whose written form holds a digit are also counted apart.

    .venv/bin/python benchmarks/quality_rewriter_pairs.py --rewriter SpanRewriter.nemo \
        --pairs formatter_data/test_rewriter.json
"""

from __future__ import annotations

import argparse

from suite import write_results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rewriter", required=True, help="SpanRewriterModel .nemo")
    parser.add_argument("--pairs", required=True, help="a <split>_rewriter.json of nemo-pc formatter-data")
    parser.add_argument("--show", type=int, default=10, help="wrong rewrites to print")
    parser.add_argument("--json", default=None)
    return parser.parse_args(argv)


def score(targets: list[str], outputs: list[str]) -> dict:
    """Exactly right rewrites, all and those with digits in the target."""
    digits = [k for k, target in enumerate(targets) if any(ch.isdigit() for ch in target)]
    right = [output == target for output, target in zip(outputs, targets, strict=True)]
    return {
        "pairs": len(targets),
        "exact": sum(right),
        "digit_pairs": len(digits),
        "digit_exact": sum(right[k] for k in digits),
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from nemo_pc.data.datasets.formatter_datasets import PairDataset
    from nemo_pc.models.rewriter import SpanRewriterModel

    pairs = PairDataset(args.pairs).pairs  # a missing or empty input/target names the file and line
    model = SpanRewriterModel.restore_from(args.rewriter, map_location="cpu")
    outputs = model.rewrite([source for source, _ in pairs])
    result = score([target for _, target in pairs], outputs)
    print(
        f"exactly right: {result['exact']}/{result['pairs']} ({result['exact'] / max(result['pairs'], 1):.1%}); "
        f"with digits: {result['digit_exact']}/{result['digit_pairs']} "
        f"({result['digit_exact'] / max(result['digit_pairs'], 1):.1%})"
    )
    wrong = [(source, out, target) for (source, target), out in zip(pairs, outputs, strict=True) if out != target]
    for source, output, target in wrong[: args.show]:
        print(f"  {source!r} -> {output!r} (want {target!r})")
    if args.json:
        write_results(args.json, {**result, "wrong": wrong})


if __name__ == "__main__":
    main()
