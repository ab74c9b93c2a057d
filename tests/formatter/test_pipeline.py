import io
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_pc.cli import main
from nemo_pc.formatter.pipeline import TextFormatter, chunk_windows
from nemo_pc.parts.manifest import read_manifest, write_manifest
from nemo_pc.parts.text import fold_case, normalize, words
from nemo_pc.testing.text import WRITTEN_SPOKEN

NEURAL = ["--span-itn", "neural", "--no-detect-spans"]
"""The pure neural path: the memorized outputs below are the tiny models' own (the default hybrid needs WFST
grammars; tests/formatter/test_hybrid.py covers it)."""
PURE_NEURAL = {"span_itn": "neural", "detect_spans": False}
"""The same path in Python."""


@pytest.fixture(scope="module")
def formatter(tiny_formatter):
    return TextFormatter(*tiny_formatter, **PURE_NEURAL)


@pytest.fixture(scope="module")
def nemo_files(tiny_formatter, tmp_path_factory):
    folder = tmp_path_factory.mktemp("nemo_files")
    tagger, rewriter = tiny_formatter
    tagger.save_to(str(folder / "tagger.nemo"))
    rewriter.save_to(str(folder / "rewriter.nemo"))
    return folder / "tagger.nemo", folder / "rewriter.nemo"


def _outside_spans_in_order(labeled, output: str) -> bool:
    inside = {i for start, end, _ in labeled.spans for i in range(start, end)}
    kept = [fold_case(w) for i, w in enumerate(labeled.words) if i not in inside]
    remaining = iter(fold_case(w) for w in words(output))
    return all(any(word == out for out in remaining) for word in kept)


def test_memorized_spoken_inputs_give_their_written_forms(formatter):
    spoken = [s for _, s in WRITTEN_SPOKEN]
    assert formatter.format(spoken) == [w for w, _ in WRITTEN_SPOKEN]


def test_without_rewriter_spans_keep_their_spoken_words(tiny_formatter):
    tagger, _ = tiny_formatter
    assert TextFormatter(tagger, **PURE_NEURAL).format(["revenue reached twelve point three million dollars"]) == [
        "Revenue reached twelve point three million dollars."
    ]


def test_hallucinated_rewrites_fall_back_to_the_spoken_words(tiny_formatter):
    class Babbler:
        def rewrite_scored(self, inputs, batch_size):
            return [("x" * 500, 1.0) for _ in inputs]

    tagger, _ = tiny_formatter
    out = TextFormatter(tagger, Babbler(), **PURE_NEURAL).format(["did you buy an iphone at mcdonald's"])
    assert out == ["Did you buy an iphone at mcdonald's?"]


@given(st.integers(0, 400), st.integers(1, 40), st.integers(0, 39))
def test_chunk_windows_tile_the_text(num_words, size, overlap):
    if overlap >= size:
        with pytest.raises(ValueError):
            chunk_windows(num_words, size, overlap)
        return
    windows = chunk_windows(num_words, size, overlap)
    owned = [i for _, _, a, b in windows for i in range(a, b)]
    assert owned == list(range(num_words))
    assert all(start <= a <= b <= end and end - start <= size for start, end, a, b in windows)


@settings(max_examples=25)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=4))
def test_arbitrary_unicode_never_crashes_and_keeps_words_outside_spans(formatter, texts):
    labeled = formatter.annotate(texts)
    outputs = [item.reference() for item in labeled]
    assert len(outputs) == len(texts)
    for text, item, output in zip(texts, labeled, outputs, strict=True):
        assert item.words == normalize(text).split()
        assert _outside_spans_in_order(item, output)


def test_empty_and_blank_texts(formatter):
    assert formatter.format(["", "   ", "\n"]) == ["", "", ""]
    assert formatter.format([]) == []


def test_100k_word_text_with_small_windows(formatter):
    sentence = " ".join(s for _, s in WRITTEN_SPOKEN)
    text = " ".join([sentence] * (100_000 // len(sentence.split()) + 1))
    item = TextFormatter(
        formatter.tagger, formatter.rewriter, chunk_words=256, chunk_overlap=32, batch_size=64, **PURE_NEURAL
    ).annotate([text])[0]
    assert len(item.words) >= 100_000 and len(item.punct) == len(item.case) == len(item.itn) == len(item.words)
    assert _outside_spans_in_order(item, item.reference())


def test_prediction_manifest_gets_its_field_formatted(formatter, tmp_path):
    entries = [
        {"audio_filepath": f"{k}.wav", "duration": 1.0, "text": w, "pred_text": s}
        for k, (w, s) in enumerate(WRITTEN_SPOKEN)
    ]
    source = write_manifest(tmp_path / "pred.json", entries)
    formatter.format_manifest(source, tmp_path / "out.json", field="pred_text", output_field="pred_text_pc")
    out = read_manifest(tmp_path / "out.json")
    assert [e["pred_text_pc"] for e in out] == [w for w, _ in WRITTEN_SPOKEN]
    assert [e["pred_text"] for e in out] == [s for _, s in WRITTEN_SPOKEN]


def test_auto_punctuation_of_a_training_manifest_marks_the_source(formatter, tmp_path):
    spoken = WRITTEN_SPOKEN[4][1]
    entries = [
        {"audio_filepath": "a.wav", "duration": 1.0, "text": spoken, "text_normalized": spoken, "pc_source": "none"},
        {
            "audio_filepath": "b.wav",
            "duration": 1.0,
            "text": "Kept, as written.",
            "text_normalized": "kept as written",
            "pc_source": "book",
        },
        {"audio_filepath": "c.wav", "duration": 1.0, "text": WRITTEN_SPOKEN[5][1]},
    ]
    source = write_manifest(tmp_path / "train.json", entries)
    formatter.auto_punctuate_manifest(source, tmp_path / "train_p.json")
    out = read_manifest(tmp_path / "train_p.json")
    assert out[0]["text"] == WRITTEN_SPOKEN[4][0] and out[0]["pc_source"] == "formatter"
    assert out[1] == entries[1]
    assert out[2]["text"] == WRITTEN_SPOKEN[5][0] and out[2]["text_normalized"] == WRITTEN_SPOKEN[5][1]
    assert out[2]["pc_source"] == "formatter"


def test_cli_formats_files_stdin_and_manifests(nemo_files, tmp_path, monkeypatch, capsys):
    tagger, rewriter = nemo_files
    source = tmp_path / "in.txt"
    source.write_text("".join(s + "\n" for _, s in WRITTEN_SPOKEN[:3]))
    target = tmp_path / "out.txt"
    assert (
        main(
            [
                "format",
                "--tagger",
                str(tagger),
                "--rewriter",
                str(rewriter),
                *NEURAL,
                "--input",
                str(source),
                "--output",
                str(target),
            ]
        )
        == 0
    )
    assert target.read_text().splitlines() == [w for w, _ in WRITTEN_SPOKEN[:3]]
    monkeypatch.setattr("sys.stdin", io.StringIO(WRITTEN_SPOKEN[1][1] + "\n"))
    assert main(["format", "--tagger", str(tagger), "--rewriter", str(rewriter), *NEURAL]) == 0
    assert capsys.readouterr().out == WRITTEN_SPOKEN[1][0] + "\n"
    manifest = tmp_path / "pred.json"
    entry = {"audio_filepath": "x.wav", "duration": 1, "pred_text": WRITTEN_SPOKEN[3][1]}
    manifest.write_text(json.dumps(entry) + "\n")
    assert (
        main(
            [
                "format",
                "--tagger",
                str(tagger),
                "--rewriter",
                str(rewriter),
                *NEURAL,
                "--manifest",
                str(manifest),
                "--output",
                str(tmp_path / "o.json"),
            ]
        )
        == 0
    )
    assert read_manifest(tmp_path / "o.json")[0]["pred_text"] == WRITTEN_SPOKEN[3][0]
    assert main(["format", "--tagger", str(tagger), "--manifest", str(manifest)]) == 2


def test_itn_only_rewrites_spans_and_keeps_the_asr_case_and_marks(formatter):
    # an E2E P&C hypothesis: its own (here unusual) case and marks must survive outside the ITN spans
    texts = [
        "On march fifteenth twenty twenty four, the ceo SPOKE?",
        "Revenue reached twelve point three million dollars.",
    ]
    out = formatter.itn_only(texts)
    assert out[0].startswith("On march ") and out[0].endswith(", the ceo SPOKE?")
    assert "15th" in out[0] and "2024" in out[0] and "fifteenth" not in out[0]
    assert out[1].startswith("Revenue reached ") and out[1].endswith(".") and "twelve" not in out[1]
    assert formatter.itn_only([""]) == [""]


def test_cli_checks_arguments_and_input_before_loading_models(nemo_files, tmp_path, capsys):
    tagger, rewriter = nemo_files
    good = ["format", "--tagger", str(tagger), "--rewriter", str(rewriter)]
    text = tmp_path / "in.txt"
    text.write_bytes(b"one two\ncaf\xe9 three\n")
    not_nemo = tmp_path / "model.ckpt"
    not_nemo.write_text("x")
    broken = tmp_path / "broken.nemo"
    broken.write_bytes(b"not a tar")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"one\n\x89PNG\r\n\x1a\n\x00\xff\xfe\n")
    cases = [
        (["format", "--tagger", str(tmp_path / "missing.nemo")], "--tagger .*missing.nemo: no such file"),
        (["format", "--tagger", str(not_nemo)], "model.ckpt: expected a .nemo file"),
        (["format", "--tagger", str(broken)], "broken.nemo: not a NeMo checkpoint"),
        (["format", "--tagger", str(rewriter)], "holds a nemo_pc.models.rewriter.SpanRewriterModel, not a PCTagger"),
        ([*good, "--chunk-words", "0"], "--chunk-words must be 1 or more"),
        ([*good, "--chunk-overlap", "128"], "--chunk-overlap must be from 0"),
        ([*good, "--itn-threshold", "1.5"], "--itn-threshold must be from 0 to 1"),
        ([*good, "--input", str(text)], "in.txt:2: not UTF-8"),
        ([*good, "--input", str(binary)], "binary.txt:2: not UTF-8"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert re.search(f"nemo-pc format: error: .*{message}", err), err
        assert "Traceback" not in err


def test_piped_output_has_one_line_per_input_line(nemo_files, tmp_path):
    import subprocess
    import sys

    tagger, rewriter = nemo_files
    lines = [s for _, s in WRITTEN_SPOKEN[:4]]
    done = subprocess.run(
        [sys.executable, "-m", "nemo_pc.cli", "format", "--tagger", str(tagger), "--rewriter", str(rewriter), *NEURAL],
        input="".join(s + "\n" for s in lines),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [w for w, _ in WRITTEN_SPOKEN[:4]]
    assert "restored" in done.stderr.lower()  # NeMo's log is there, on stderr
