"""How much cleaned text each extra formatter source yields: documents, sentences, words, the share of sentences
with a digit (numbers are what ITN learns from), and what the parsers and the cleaning dropped, by reason.

The sources are read as the data build reads them (``nemo_pc.formatter.sources.load_documents``, then
``nemo_pc.formatter.build.document_sentences``); no TN runs. A source whose package is not installed can be read
from an unpacked copy with ``--handbook-dir`` / ``--pydoc-dir`` (``apt-get download PACKAGE && dpkg-deb -x``).

    .venv/bin/python benchmarks/data_formatter_sources.py --json benchmarks/results/formatter_sources.json
"""

from __future__ import annotations

import argparse

from suite import write_results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", default="handbook,pydoc,dialogue", help="comma-separated source names")
    parser.add_argument("--handbook-dir", default=None, help="the handbook's HTML folder (default: installed)")
    parser.add_argument(
        "--pydoc-dir", default=None, help="the Python documentation's HTML folder (default: installed)"
    )
    parser.add_argument("--cache-dir", default=None, help="where the dialogue wheel is cached (default: nemo_pc's)")
    parser.add_argument("--json", default=None)
    return parser.parse_args(argv)


def source_stats(sentences: dict[str, list[str]], drops: dict) -> dict:
    """Counts of one source's cleaned sentences (``{doc_id: sentences}``) and its drops."""
    every = [s for kept in sentences.values() for s in kept]
    with_digits = sum(any(ch.isdigit() for ch in s) for s in every)
    return {
        "documents": len(sentences),
        "documents_with_sentences": sum(bool(kept) for kept in sentences.values()),
        "sentences": len(every),
        "words": sum(len(s.split()) for s in every),
        "sentences_with_digits": with_digits,
        "digit_share": with_digits / len(every) if every else None,
        "drops": drops,
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from nemo_pc.data.recipes.spoken import default_cache_dir
    from nemo_pc.formatter import sources
    from nemo_pc.formatter.build import document_sentences
    from nemo_pc.parts.manifest import DropCounter

    for name, folder in (("HANDBOOK_DIR", args.handbook_dir), ("PYDOC_DIR", args.pydoc_dir)):
        if folder:
            setattr(sources, name, type(sources.HANDBOOK_DIR)(folder))
    cache_dir = args.cache_dir or default_cache_dir()
    results = {"sources": {}}
    for source in [s for s in args.sources.split(",") if s]:
        drops = DropCounter()
        docs = sources.load_documents([source], cache_dir)
        sentences = {doc.doc_id: document_sentences(doc, drops) for doc in docs}
        results["sources"][source] = stats = source_stats(sentences, drops.as_dict())
        print(
            f"{source}: {stats['documents']} documents, {stats['sentences']} sentences, {stats['words']} words, "
            f"{stats['digit_share']:.1%} with digits, {drops.total} dropped"
        )
    if args.json:
        write_results(args.json, results)


if __name__ == "__main__":
    main()
