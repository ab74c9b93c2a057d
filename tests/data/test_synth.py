import shutil

import pytest
import soundfile

from nemo_pc.cli import main
from nemo_pc.data.books import read_chapters_txt
from nemo_pc.data.manifest import read_manifest
from nemo_pc.data.spoken import SpokenForm, book_words
from nemo_pc.data.synth import SynthConfig, cut_utterances, synthesize_corpus
from nemo_pc.data.voices import available_voices
from nemo_pc.parts.text import normalize
from nemo_pc.testing import make_book

TEXT_ONLY = SynthConfig(hours=0.03, audio=False, tn="none", deviation_rate=0.05, seed=1)


def _snapshot(root):
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "SYNTH_CONFIG.json")
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


def test_layout_and_transcripts(tmp_path):
    synthesize_corpus(tmp_path, [make_book(chapters=4)], TEXT_ONLY)
    chapters = read_chapters_txt(tmp_path / "CHAPTERS.TXT")
    reference = read_manifest(tmp_path / "SYNTH.jsonl")
    assert {info.subset for info in chapters.values()} == {"train", "dev", "test"}
    for info in chapters.values():
        trans = tmp_path / info.subset / str(info.reader_id) / str(info.chapter_id)
        assert (trans / f"{info.reader_id}-{info.chapter_id}.trans.txt").is_file()
    assert (tmp_path / "books" / "utf-8" / "30001").is_dir()
    for line in reference:
        trans = (
            tmp_path
            / line["split"]
            / line["speaker"]
            / line["chapter"]
            / f"{line['speaker']}-{line['chapter']}.trans.txt"
        )
        assert f"{line['utt_id']} {normalize(line['text']).upper()}\n" in trans.read_text()
    assert any(line["deviations"] for line in reference)
    assert any(not line["text"].rstrip().endswith((".", "?", '"')) for line in reference)


def test_same_seed_same_corpus_other_seed_other_corpus(tmp_path):
    books = [make_book(chapters=4)]
    synthesize_corpus(tmp_path / "a", books, TEXT_ONLY)
    synthesize_corpus(tmp_path / "b", books, TEXT_ONLY)
    synthesize_corpus(tmp_path / "c", books, SynthConfig(**{**TEXT_ONLY.__dict__, "seed": 2}))
    assert _snapshot(tmp_path / "a") == _snapshot(tmp_path / "b")
    assert _snapshot(tmp_path / "a") != _snapshot(tmp_path / "c")


def test_resume_rebuilds_only_missing_chapters_and_refuses_other_config(tmp_path):
    books = [make_book(chapters=4)]
    synthesize_corpus(tmp_path, books, TEXT_ONLY)
    before = _snapshot(tmp_path)
    trans = sorted(tmp_path.glob("train/*/*/*.trans.txt"))[0]
    trans.unlink()
    synthesize_corpus(tmp_path, books, TEXT_ONLY)
    assert _snapshot(tmp_path) == before
    with pytest.raises(ValueError, match="another config"):
        synthesize_corpus(tmp_path, books, SynthConfig(**{**TEXT_ONLY.__dict__, "seed": 9}))


def test_splits_never_share_a_voice(tmp_path):
    config = SynthConfig(**{**TEXT_ONLY.__dict__, "hours": 0.1})
    synthesize_corpus(tmp_path, [make_book(chapters=6)], config)
    voices: dict[str, set[str]] = {}
    for line in read_manifest(tmp_path / "SYNTH.jsonl"):
        voices.setdefault(line["split"], set()).add(line["voice"])
    splits = list(voices)
    assert len(splits) == 3
    for i, a in enumerate(splits):
        for b in splits[i + 1 :]:
            assert not voices[a] & voices[b]


def test_cuts_cover_the_chapter_and_some_end_mid_sentence():
    book = book_words(make_book().chapters[0].text, SpokenForm("none"))
    import random

    spans = cut_utterances(book, len(book), TEXT_ONLY, random.Random(0))
    assert spans[0][0] == 0 and spans[-1][1] == len(book)
    assert all(a[1] == b[0] for a, b in zip(spans[:-1], spans[1:], strict=True))
    assert any(not book.sentence_end[end - 1] for _, end in spans[:-1])


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs Debian espeak-ng and sox")
def test_espeak_audio_is_16khz_flac_matching_its_duration(tmp_path):
    config = SynthConfig(hours=0.004, splits={"train": 0.5, "test": 0.5}, engines=("espeak-ng",), tn="none", seed=3)
    synthesize_corpus(tmp_path, [make_book(chapters=2)], config)
    reference = read_manifest(tmp_path / "SYNTH.jsonl")
    assert 2 <= len(reference) <= 12
    for line in reference:
        flac = tmp_path / line["split"] / line["speaker"] / line["chapter"] / f"{line['utt_id']}.flac"
        info = soundfile.info(str(flac))
        assert info.samplerate == 16000 and info.channels == 1 and info.format == "FLAC"
        assert info.duration == pytest.approx(line["duration"], abs=1e-3)
        assert 0.15 * len(line["text"].split()) < info.duration < 1.5 * len(line["text"].split()) + 1
    assert sum(line["duration"] for line in reference) > 3


def test_voice_inventory_spans_engines():
    voices = available_voices()
    engines = {voice.engine for voice in voices}
    if shutil.which("espeak-ng"):
        assert "espeak-ng" in engines and len(voices) >= 24
    assert len({voice.key for voice in voices}) == len(voices)


def test_cli_synth_then_librispeech_pc(tmp_path, capsys):
    source = tmp_path / "story.txt"
    source.write_text("\n\n".join(chapter.text for chapter in make_book(chapters=3).chapters))
    corpus, out = tmp_path / "corpus", tmp_path / "out"
    assert (
        main(["synth", str(corpus), "--source", f"text:{source}", "--tn", "none", "--no-audio", "--hours", "0.02"])
        == 0
    )
    args = ["librispeech-pc", str(corpus), str(out), "--tn", "none", "--durations", str(corpus / "SYNTH.jsonl")]
    assert main([*args, "--marks", ".,?"]) == 0
    printed = capsys.readouterr().out
    assert "Retention (%)" in printed and "dev:" in printed
    entries = read_manifest(out / "dev.json")
    assert entries and all(entry["pc_source"] == "book" for entry in entries)
    assert all(set(entry["text"]) & set('!;:"') == set() for entry in entries)
