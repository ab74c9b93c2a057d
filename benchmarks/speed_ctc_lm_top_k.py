"""What pruning each frame to its most likely tokens buys the decoder CTC head's LM fusion, side by side.

The decoder CTC head (``ctc_inter`` of the demo, ``--ctc-head aed_decoder``) writes 32k Whisper tokens. NeMo's
NGPU-LM scores the whole vocabulary from every hypothesis at every frame, and without Triton (on CPU) that is most
of the beam search's time. ``decoder_ctc.decoding.top_k`` has the search of a batch read only the tokens among the
``k`` most likely of one of its frames, and the LM score only those (``nemo_pc.parts.ngram_lm_subset``). This
decodes one manifest of a finished demo folder (default ``dev_lm``, the utterances the demo tunes LM weights on) in
each output mode the system decodes with an LM, at one LM weight and beam, once per ``--top-k`` (``none``: every
token, NeMo's search as it is) in one process: seconds, the mode's error rate (WER of the normalized output, WER-PC
of the punctuated one) and the share of utterances whose output equals the unpruned search's; greedy beside them.

    .venv/bin/python benchmarks/speed_ctc_lm_top_k.py --demo-dir demo_out --top-k none,8,16,32 --utterances 24 \\
        --json benchmarks/results/speed_ctc_lm_top_k.json
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from suite import num, pct, write_results


def head_lm(demo_dir: Path, system: str, mode: str) -> Path:
    """The folder's LM of ``mode`` over the head's tokens (``lm/<mode>_order<n>_<system>_tokens_<digest>.nemo``, or
    ``.arpa``)."""
    pattern = f"{mode}_order*_{system}_tokens_*"
    found = sorted(path for path in (demo_dir / "lm").glob(pattern) if path.suffix in (".nemo", ".arpa"))
    if len(found) != 1:
        raise ValueError(f"{demo_dir / 'lm'}: {len(found)} LMs of {mode} over {system}'s tokens, expected one")
    return found[0]


def decode(model, audio, mode: str, decoding: dict, batch_size: int) -> tuple[list[str], float]:
    from omegaconf import open_dict

    from nemo_pc.pipelines.lm import _decode

    before = model.cfg.decoder_ctc.get("decoding")
    with open_dict(model.cfg):
        model.cfg.decoder_ctc.decoding = decoding
    try:
        start = time.perf_counter()
        hyps = _decode(model, audio, mode, batch_size)
        return hyps, round(time.perf_counter() - start, 1)
    finally:
        with open_dict(model.cfg):
            model.cfg.decoder_ctc.decoding = before


def measure(args, top_ks: list[int | None]) -> dict:
    from nemo_pc.parts.manifest import spread_subset
    from nemo_pc.pipelines.demo.lm_steps import lm_modes
    from nemo_pc.pipelines.inference import load_asr_model
    from nemo_pc.pipelines.lm import _audio_and_refs, _marks, error_rate

    model = load_asr_model(args.demo_dir / "models" / f"{args.system}.nemo")
    if not getattr(model, "decoder_ctc_decodes", False):
        raise ValueError(f"{args.system}: not a model that transcribes with its decoder CTC head")
    manifest = args.demo_dir / "manifests" / f"{args.manifest}.json"
    audio, refs = _audio_and_refs(manifest)
    kept = spread_subset(range(len(refs)), args.utterances)
    texts = [[column[index] for index in kept] for column in audio.texts]
    audio = dataclasses.replace(audio, paths=[audio.paths[index] for index in kept], texts=texts)
    refs = texts[0]
    modes = []
    for mode in lm_modes(model):
        lm = head_lm(args.demo_dir, args.system, mode)
        model.cfg.pc.ngram_lm_mode = mode
        greedy, seconds = decode(model, audio, mode, {"strategy": "greedy"}, args.batch_size)
        rows = [{"top_k": "greedy", "seconds": seconds, "error_rate": error_rate(refs, greedy, mode, _marks(model))}]
        full = None
        for top_k in top_ks:
            decoding = {"strategy": "beam", "beam_size": args.beam, "ngram_lm_model": str(lm)}
            decoding |= {"ngram_lm_alpha": args.alpha, "top_k": top_k}
            hyps, seconds = decode(model, audio, mode, decoding, args.batch_size)
            full = hyps if top_k is None else full
            row = {"top_k": top_k, "seconds": seconds, "error_rate": error_rate(refs, hyps, mode, _marks(model))}
            if full is not None:
                row["same_as_full"] = round(sum(a == b for a, b in zip(hyps, full, strict=True)) / len(hyps), 4)
            rows.append(row)
            print(f"{mode} top_k {top_k}: {seconds:.1f} s, error {100 * row['error_rate']:.2f}%", file=sys.stderr)
        modes.append({"mode": mode, "lm": lm.name, "rows": rows})
    return {
        "demo_dir": str(args.demo_dir),
        "system": args.system,
        "manifest": args.manifest,
        "utterances": len(refs),
        "beam": args.beam,
        "alpha": args.alpha,
        "batch_size": args.batch_size,
        "modes": modes,
    }


def markdown(results: dict) -> str:
    lines = [
        f"`{results['system']}` of `{results['demo_dir']}` on `{results['manifest']}` ({results['utterances']} "
        f"utterances), beam {results['beam']} with each mode's LM at weight {results['alpha']:g}, batches of "
        f"{results['batch_size']}, one process; error rate: WER of the normalized output, WER-PC of the punctuated "
        "one:",
        "",
        "| mode | tokens per frame | seconds | speed-up | error rate | same as every token |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for mode in results["modes"]:
        full = next((row for row in mode["rows"] if row["top_k"] is None), None)
        for row in mode["rows"]:
            top_k = {None: "every token", "greedy": "greedy (no LM)"}.get(row["top_k"], row["top_k"])
            ratio = full["seconds"] / row["seconds"] if full and row["seconds"] else None
            same = row.get("same_as_full")
            lines.append(
                f"| {mode['mode']} | {top_k} | {num(row['seconds'], 1)} | {'' if ratio is None else f'{ratio:.1f}x'} "
                f"| {pct(row['error_rate'], 2)} | {'' if same is None else pct(same)} |"
            )
    return "\n".join(lines)


def parse_top_ks(text: str) -> list[int | None]:
    values = [part.strip() for part in text.split(",") if part.strip()]
    out = [None if value == "none" else int(value) for value in values]
    if not out or any(value is not None and value < 1 for value in out):
        raise ValueError
    return sorted(set(out), key=lambda value: -1 if value is None else value)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-dir", type=Path, required=True)
    parser.add_argument("--system", default="ctc_inter")
    parser.add_argument("--manifest", default="dev_lm", help="a manifest of the folder's manifests/ (no .json)")
    parser.add_argument("--top-k", default="none,8,16,32", help="comma-separated; none: every token")
    parser.add_argument("--beam", type=int, default=8)
    parser.add_argument("--alpha", type=float, default=0.4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--utterances", type=int, default=0, help="this many, spread over the manifest (0: all)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        top_ks = parse_top_ks(args.top_k)
    except ValueError:
        print(f"error: --top-k must be 'none' or integers of 1 or more, got {args.top_k!r}", file=sys.stderr)
        sys.exit(2)
    if args.beam < 1 or args.alpha < 0 or args.utterances < 0:
        print(
            f"error: --beam must be >= 1, --alpha >= 0 and --utterances >= 0, got {args.beam}, {args.alpha} and "
            f"{args.utterances}",
            file=sys.stderr,
        )
        sys.exit(2)
    try:
        results = measure(args, top_ks)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    print(markdown(results))
    if args.json:
        write_results(args.json, results, argv)


if __name__ == "__main__":
    main()
