"""How many words of each evaluation split a head over Whisper's tokens can write at all.

A CTC head that writes only the tokens of its training transcripts (``decoder_ctc``'s ``vocab_from_train``,
``quality_cached_heads.py --head decoder``) cannot write a word that Whisper's tokenizer spells with any other
token. For each split of a demo folder (``dev``, ``test``, ``test_seen``; ``real_test`` where the folder has it) and
each mode (the normalized text, the punctuated text as the targets hold it), this counts the words whose tokens
are not all among the training transcripts' tokens (both modes), and not all among those together with the tokens of
``--vocab-text`` (the demo's LM text, ``lm/text.json``, which the transducer heads may write).

A word is spelled as Whisper's tokenizer spells it in its utterance: after a space, but for the first word (the
tokenizer splits a text into such words before it encodes them)::

    python benchmarks/data_token_coverage.py --model demo_out/models/aed_prompt_finetuned.nemo \\
        --demo-dir demo_out --vocab-text demo_out/lm/text.json --json benchmarks/results/token_coverage.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from suite import write_results

SPLITS = {
    "dev": "manifests/dev.json",
    "test": "manifests/test.json",
    "test_seen": "manifests/test_seen.json",
    "real_test": "real_speech/real_test.json",
}


def token_set(tokenizer, texts) -> set[int]:
    return {token for text in texts for token in tokenizer.text_to_ids(text)}


def uncovered_share(tokenizer, texts: list[str], allowed: set[int]) -> tuple[int, int]:
    """(words of ``texts`` whose tokens are not all in ``allowed``, words)."""
    missing = total = 0
    for text in texts:
        for position, word in enumerate(text.split()):
            total += 1
            spelled = tokenizer.text_to_ids(" " + word if position else word)
            missing += any(token not in allowed for token in spelled)
    return missing, total


def coverage(tokenizer, marks: str, demo: Path, vocab_text: Path | None) -> dict:
    from nemo_pc.parts.manifest import read_manifest
    from nemo_pc.parts.text import normalize, preprocess_punctuated

    def forms(text: str) -> dict[str, str]:
        return {"normalized": normalize(text), "punctuated": preprocess_punctuated(text, marks)}

    train = [form for row in read_manifest(demo / "manifests" / "train.json") for form in forms(row["text"]).values()]
    allowed = {"train": token_set(tokenizer, train)}
    if vocab_text is not None:
        extra = [form for row in read_manifest(vocab_text) for form in forms(row["text"]).values()]
        allowed["train_and_text"] = allowed["train"] | token_set(tokenizer, extra)
    out = {"tokens": {name: len(tokens) for name, tokens in allowed.items()}, "splits": {}}
    for split, relative in SPLITS.items():
        if not (demo / relative).is_file():
            continue
        rows = read_manifest(demo / relative)
        out["splits"][split] = {"utterances": len(rows)}
        for mode in ("normalized", "punctuated"):
            texts = [forms(row["text"])[mode] for row in rows]
            cell = {}
            for name, tokens in allowed.items():
                missing, total = uncovered_share(tokenizer, texts, tokens)
                cell |= {"words": total, f"outside_{name}": missing, f"outside_{name}_share": missing / max(total, 1)}
            out["splits"][split][mode] = cell
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the AED (.nemo) whose Whisper tokenizer spells the words")
    parser.add_argument("--demo-dir", required=True)
    parser.add_argument("--vocab-text", default=None, help="a JSON-lines text (`text` per line), e.g. lm/text.json")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    demo = Path(args.demo_dir)
    needed = [Path(args.model), demo / "manifests" / "train.json"]
    for path in needed + ([Path(args.vocab_text)] if args.vocab_text else []):
        if not path.is_file():
            parser.error(f"{path}: no such file")
    from nemo_pc.pipelines.inference import load_asr_model

    model = load_asr_model(args.model)
    marks = "".join(model.cfg.train_ds.get("marks", ".,?"))
    results = coverage(model.tokenizer, marks, demo, Path(args.vocab_text) if args.vocab_text else None)
    write_results(args.json, results, sys.argv if argv is None else ["data_token_coverage.py", *argv])
    print(json.dumps(results["splits"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
