"""The cased, punctuated SentencePiece tokenizer and ``nemo-pc build-tokenizer``."""

import json
from pathlib import Path

import pytest
import sentencepiece

from nemo_pc.cli import main
from nemo_pc.data.tokenizers.pc_tokenizer import build_tokenizer, tokenizer_dir_name, tokenizer_training_lines
from nemo_pc.parts.manifest import ManifestError
from nemo_pc.testing.asr import write_pc_manifest

TEXTS = [("Hello, world! Is it me?", "book"), ("We met Anna; she said: go.", "book"), ("no marks here", "none")]


@pytest.fixture
def manifest(tmp_path):
    return write_pc_manifest(tmp_path, TEXTS, duration=0.2)


def test_training_lines_are_punctuated_then_normalized_with_the_mark_map(manifest):
    assert tokenizer_training_lines([manifest]) == [
        "Hello, world. Is it me?",
        "hello world is it me",
        "We met Anna. she said, go.",
        "we met anna she said go",
        "no marks here",
        "no marks here",
    ]


def test_tokenizer_keeps_case_and_marks(manifest, tmp_path):
    folder = build_tokenizer([manifest], tmp_path / "tok", vocab_size=40)
    assert folder.name == tokenizer_dir_name(40) == "tokenizer_spe_bpe_v40"
    model = sentencepiece.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
    for text in ("Hello, world. Is it me?", "hello world is it me"):
        assert model.decode(model.encode(text)) == text
    assert (folder / "vocab.txt").is_file()


def test_command_builds_the_tokenizer(manifest, tmp_path, capsys):
    assert main(["build-tokenizer", str(manifest), "--output-dir", str(tmp_path / "out"), "--vocab-size", "40"]) == 0
    assert capsys.readouterr().out.strip().endswith("tokenizer_spe_bpe_v40")


def test_a_line_without_text_names_the_line(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"audio_filepath": "a.wav", "duration": 1.0, "transcript": "Hi."}) + "\n")
    with pytest.raises(ManifestError, match="missing field 'text'") as err:
        build_tokenizer([path], tmp_path / "tok", vocab_size=40)
    assert str(err.value).startswith(f"{path}:1:")
    assert main(["build-tokenizer", str(path), "--output-dir", str(tmp_path / "tok")]) == 2
    assert f"{path}:1:" in capsys.readouterr().err


def test_style_tags_stay_single_pieces(manifest, tmp_path, capsys):
    from nemo.collections.common.tokenizers import SentencePieceTokenizer

    from nemo_pc.parts.styles import STYLE_TAGS

    args = ["build-tokenizer", str(manifest), "--output-dir", str(tmp_path), "--vocab-size", "48", "--style-tags"]
    assert main(args) == 0
    folder = capsys.readouterr().out.strip()
    assert folder.endswith("tokenizer_spe_bpe_v48_styles")
    tokenizer = SentencePieceTokenizer(f"{folder}/tokenizer.model")
    for tag in STYLE_TAGS:
        assert [p for p in tokenizer.ids_to_tokens(tokenizer.text_to_ids(tag)) if p != "▁"] == [tag]


def test_bad_arguments_are_named(manifest, tmp_path):
    with pytest.raises(ValueError, match="tokenizer_type"):
        build_tokenizer([manifest], tmp_path, tokenizer_type="wordpiece")


def test_a_configured_mark_set_keeps_its_marks_and_folds_the_others(manifest, tmp_path, caplog):
    lines = tokenizer_training_lines([manifest], marks=".,?!;")
    assert lines[0] == "Hello, world! Is it me?" and lines[2] == "We met Anna; she said, go."
    with caplog.at_level("WARNING", logger="nemo_pc.data.tokenizers.pc_tokenizer"):
        folder = build_tokenizer([manifest], tmp_path / "tok", vocab_size=40, marks=".,?!;¿")
    model = sentencepiece.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
    for text in ("Hello, world! Is it me?", "We met Anna; she said, go."):
        assert model.decode(model.encode(text)) == text
    assert [record.getMessage() for record in caplog.records] == [
        f"{folder}: the training text holds none of the marks '¿'; the tokenizer cannot write them"
    ]


def test_command_names_a_bad_mark_set(manifest, tmp_path, capsys):
    args = ["build-tokenizer", str(manifest), "--output-dir", str(tmp_path / "tok"), "--marks", ".,x"]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == (
        "nemo-pc build-tokenizer: error: --marks: 'x' in '.,x' is a letter or digit, not a mark"
    )
    assert not (tmp_path / "tok").exists()


def test_a_build_stopped_while_writing_leaves_no_tokenizer_and_a_rebuild_replaces_the_folder_whole(
    manifest, tmp_path, monkeypatch
):
    from nemo.collections.common.tokenizers import sentencepiece_tokenizer

    real = sentencepiece_tokenizer.create_spt_model

    def stopped(*args, output_dir, **kwargs):
        (Path(output_dir) / "tokenizer.model").write_bytes(b"\n\x0bhalf a mod")  # what a kill mid-write leaves
        raise KeyboardInterrupt

    monkeypatch.setattr(sentencepiece_tokenizer, "create_spt_model", stopped)
    with pytest.raises(KeyboardInterrupt):
        build_tokenizer([manifest], tmp_path / "tok", vocab_size=40)
    assert list((tmp_path / "tok").iterdir()) == []  # nothing a rerun could take as done
    monkeypatch.setattr(sentencepiece_tokenizer, "create_spt_model", real)
    folder = build_tokenizer([manifest], tmp_path / "tok", vocab_size=40)
    (folder / "stale.txt").write_text("from an older build")
    folder = build_tokenizer([manifest], tmp_path / "tok", vocab_size=40)
    assert sorted(p.name for p in folder.iterdir()) == ["tokenizer.model", "tokenizer.vocab", "vocab.txt"]
    assert [p.name for p in (tmp_path / "tok").iterdir()] == [folder.name]
