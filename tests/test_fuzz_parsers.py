"""Fuzz suite: 10,000 generated inputs per parser, each either parsed or refused with the parser's own error that
names the file and line; no other exception may escape.

Inputs are valid examples mutated at the byte level (bytes inserted, deleted, swapped or replaced, lines
duplicated or cut, stray UTF-8 or Latin-1 bytes, NUL, very long tokens), from one seeded generator, so a failure
reproduces from its case number.
"""

from __future__ import annotations

import io
import json
import random

import pytest

from nemo_pc.cli.format import read_lines
from nemo_pc.data.recipes.books import CorpusError, read_chapters_txt
from nemo_pc.data.recipes.librispeech_pc import read_transcripts
from nemo_pc.parts.manifest import ManifestError, iter_manifest
from nemo_pc.parts.styles import MIXED_FORMATS, compose_mixed, parse_mixed

CASES = 10_000
NASTY = [
    b"\x00",
    b"\xff",
    b"\xc3",
    b"\xe9",
    "é".encode(),
    "\u2028".encode(),
    b"\r",
    b"\n",
    b"|",
    b" ",
    b"{",
    b"}",
    b'"',
    b"\\",
    b"-",
    b"<",
    b">",
    b"9" * 40,
    "ü".encode("latin-1"),
    b"\t",
]


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One to four random edits of ``data``."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(6)
        at = rng.randint(0, len(data))
        if kind == 0:
            data[at:at] = rng.choice(NASTY)
        elif kind == 1 and data:
            del data[at : at + rng.randint(1, 8)]
        elif kind == 2 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif kind == 3:
            lines = bytes(data).split(b"\n")
            k = rng.randrange(len(lines))
            lines.insert(k, lines[k])
            data = bytearray(b"\n".join(lines))
        elif kind == 4:
            data = data[: rng.randint(0, len(data))]
        else:
            data[at:at] = bytes(rng.randrange(32, 127) for _ in range(rng.randint(1, 12)))
    return bytes(data)


def _cases(valid: bytes, seed: int):
    rng = random.Random(seed)
    for case in range(CASES):
        yield case, mutate(rng, valid)


TRANS = b"7-70-0000 SHE CLIMBED THE PATH\n7-70-0001 AT DAWN OPENED THE GATE\n7-70-0002 AND WALKED IN\n"
CHAPTERS = (
    b"; ID | READER | MINUTES | SUBSET | PROJ. | BOOK ID | CH. TITLE | PROJECT TITLE\n"
    b"70 | 7 | 1.5 | test | 1 | 900 | Chapter 1 | A Book\n"
    b"80 | 8 | 2.0 | train | 2 | 901 | Chapter 2 | Another Book\n"
)
MANIFEST = b"".join(
    json.dumps(
        {"audio_filepath": f"a{k}.wav", "duration": 1.5, "text": "Hi, there.", "pred_text": "hi there"}
    ).encode()
    + b"\n"
    for k in range(3)
)


def _transcripts_ok(pairs) -> bool:
    return all(utt.startswith("7-70-") and text.strip() for utt, text in pairs) and len(dict(pairs)) == len(pairs)


@pytest.mark.parametrize(
    ("name", "reader", "valid", "seed", "parsed_ok"),
    [
        ("7-70.trans.txt", read_transcripts, TRANS, 1, _transcripts_ok),
        (
            "CHAPTERS.TXT",
            read_chapters_txt,
            CHAPTERS,
            2,
            lambda chapters: all(isinstance(info.book_id, int) for info in chapters.values()),
        ),
    ],
)
def test_corpus_text_readers(tmp_path, name, reader, valid, seed, parsed_ok):
    path = tmp_path / name
    for case, data in _cases(valid, seed):
        path.write_bytes(data)
        try:
            parsed = reader(path)
        except CorpusError as err:
            assert str(err).startswith(f"{path}:{err.line}: "), case
            continue
        assert parsed_ok(parsed), case


def test_manifest_reader(tmp_path):
    path = tmp_path / "m.json"
    for case, data in _cases(MANIFEST, 3):
        path.write_bytes(data)
        errors = []
        entries = list(iter_manifest(path, on_error=errors.append))
        assert all(isinstance(entry, dict) for _, entry in entries), case
        assert all(isinstance(err, ManifestError) and str(err).startswith(f"{path}:{err.line}: ") for err in errors)


@pytest.mark.parametrize("fmt", MIXED_FORMATS)
def test_mixed_style_parser(fmt):
    valid = compose_mixed("hello world it is twenty twenty four", "Hello, world! It is 2024.", fmt).encode()
    for case, data in _cases(valid, 4 + MIXED_FORMATS.index(fmt)):
        normalized, punctuated = parse_mixed(data.decode("utf-8", errors="replace"), fmt)
        assert isinstance(normalized, str) and isinstance(punctuated, str), case
        assert "  " not in normalized and "  " not in punctuated, case


def test_formatter_input_reader():
    valid = b"hello world\nit is twenty twenty four\n\nthe end\n"
    for case, data in _cases(valid, 8):
        try:
            lines = read_lines(io.BytesIO(data), "in.txt")
        except ValueError as err:
            assert str(err).startswith("in.txt:"), case
            continue
        assert "".join(lines).encode() == data, case
