"""Kill and resume: each data command is SIGKILLed at chosen file renames (nemo_pc.testing.faults), then rerun.

After the rerun the output folder holds exactly the bytes of an uninterrupted run: no half-written file is taken as
done, and the temporaries of the killed run are gone.
"""

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nemo_pc.parts.output_lock import LOCK_NAME, TEMPORARY
from nemo_pc.testing import PARAGRAPH, make_book

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs Debian espeak-ng and sox")


def _run(spec: str, command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "nemo_pc.testing.faults", spec, *command]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def kill_and_resume(tmp_path: Path, command: list[str], points, locked: bool = True, reuses: bool = True) -> list[str]:
    """Runs ``command`` (``{out}`` stands for its output folder) once whole, then, for each point, killed and rerun
    in a fresh folder; asserts equal bytes. ``points(renamed)`` picks fault specs from the whole run's renames.
    A command that holds no lock on its folder (``locked=False``) may leave the killed run's hidden temporaries; one
    that builds all or nothing (``reuses=False``) need not keep a killed run's finished files.

    Returns:
        The file names the whole run renamed into place, in order.
    """
    whole = tmp_path / "whole"
    done = _run(f"count:{tmp_path / 'renames.txt'}", [arg.format(out=whole) for arg in command], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    renamed = (tmp_path / "renames.txt").read_text().split()
    expected = _snapshot(whole)
    rewritten = []
    for k, spec in enumerate(points(renamed)):
        out = tmp_path / f"killed{k}"
        argv = [arg.format(out=out) for arg in command]
        killed = _run(spec, argv, tmp_path)
        assert killed.returncode == -signal.SIGKILL, f"{spec}: {killed.stderr[-2000:]}"
        resumed = _run(f"count:{tmp_path / 'resumed.txt'}", argv, tmp_path)
        assert resumed.returncode == 0, f"{spec}: {resumed.stderr[-2000:]}"
        assert not locked or "taking over the lock of pid" in resumed.stderr  # the killed run's, with a warning
        got = _snapshot(out)
        if not locked:
            got = {name: data for name, data in got.items() if not TEMPORARY.fullmatch(Path(name).name)}
        differ = sorted(name for name in expected.keys() | got.keys() if expected.get(name) != got.get(name))
        assert differ == [], f"{spec}: files that differ from the whole run: {differ}"
        rewritten.append(len((tmp_path / "resumed.txt").read_text().split()))
    if reuses:  # a late kill leaves finished work that the rerun keeps
        assert min(rewritten) < len(renamed)
    assert not list(whole.rglob(LOCK_NAME))
    return renamed


@needs_espeak
def test_synth_killed_anywhere_resumes_to_the_same_bytes(tmp_path):
    (tmp_path / "story.txt").write_text("\n\n".join([PARAGRAPH] * 60))
    command = [
        "nemo-pc",
        "synth",
        "{out}",
        "--source",
        f"text:{tmp_path / 'story.txt'}",
        "--tn",
        "none",
        "--hours",
        "0.01",
        "--engines",
        "espeak-ng",
        "--held-out-voices",
        "1",
        "--seen-test-share",
        "0",
        "--minutes-per-speaker",
        "0.2",
    ]

    def points(renamed):
        flac = [name.endswith(".flac") for name in renamed]
        first_flac = flac.index(True) + 1
        first_reference = next(k for k, name in enumerate(renamed) if name.endswith(".jsonl")) + 1
        mid_chapter = next(k for k in range(len(flac) - 1) if flac[k] and flac[k + 1]) + 1
        return [f"before:{first_flac}", f"after:{first_reference}", f"after:{mid_chapter}", f"before:{len(renamed)}"]

    renamed = kill_and_resume(tmp_path, command, points)
    assert sum(name.endswith(".flac") for name in renamed) >= 3


def test_librispeech_pc_killed_anywhere_resumes_to_the_same_bytes(tmp_path):
    from nemo_pc.data.recipes.synth import SynthConfig, synthesize_corpus

    corpus = tmp_path / "corpus"
    config = SynthConfig(hours=0.03, audio=False, tn="none", deviation_rate=0.05, seed=5, min_words=6)
    synthesize_corpus(corpus, [make_book(chapters=6)], config)
    command = [
        "nemo-pc",
        "librispeech-pc",
        str(corpus),
        "{out}",
        "--tn",
        "none",
        "--durations",
        str(corpus / "SYNTH.jsonl"),
    ]
    renamed = kill_and_resume(tmp_path, command, lambda r: ["before:1", "after:2", f"before:{len(r) - 1}"])
    assert len(renamed) >= 5


def test_formatter_data_killed_anywhere_resumes_to_the_same_bytes(tmp_path):
    command = [
        "nemo-pc",
        "formatter-data",
        "{out}",
        "--sources",
        "synthetic,numbers",
        "--tn",
        "none",
        "--synthetic",
        "60",
        "--numbers",
        "40",
        "--tokenizer-vocab",
        "300",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    renamed = kill_and_resume(tmp_path, command, lambda r: [f"after:{len(r) // 2}", f"before:{len(r)}"], reuses=False)
    assert renamed[-1] == "summary.json"  # written last: the sign that the folder is done


def test_build_lm_killed_while_writing_resumes_to_the_same_bytes(tmp_path):
    import sentencepiece

    from nemo_pc.parts.manifest import read_manifest
    from nemo_pc.testing.asr import write_pc_manifest

    manifest = write_pc_manifest(tmp_path / "data")
    (tmp_path / "text.txt").write_text("".join(entry["text"] + "\n" for entry in read_manifest(manifest)))
    sentencepiece.SentencePieceTrainer.train(
        input=str(tmp_path / "text.txt"),
        model_prefix=str(tmp_path / "sp"),
        vocab_size=40,
        model_type="bpe",
        minloglevel=2,
    )
    tokenizer = tmp_path / "sp.model"
    command = [
        "nemo-pc",
        "build-lm",
        str(manifest),
        str(tokenizer),
        "{out}/punct.arpa",
        "--order",
        "3",
        "--no-progress",
    ]
    renamed = kill_and_resume(tmp_path, command, lambda r: ["before:1"], locked=False, reuses=False)
    assert renamed == ["punct.arpa"]
