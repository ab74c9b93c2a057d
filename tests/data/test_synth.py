import json
import shutil
from dataclasses import replace

import pytest
import soundfile

from nemo_pc.cli import main
from nemo_pc.data.recipes.books import read_chapters_txt
from nemo_pc.data.recipes.spoken import SpokenForm, book_words
from nemo_pc.data.recipes.synth import SEEN_TEST_SPLIT, SynthConfig, cut_utterances, plan, synthesize_corpus
from nemo_pc.data.recipes.voices import available_voices
from nemo_pc.parts.manifest import read_manifest
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
    voices.pop(SEEN_TEST_SPLIT, None)  # training voices by design
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


def _long_book(chapters: int):
    from nemo_pc.data.recipes.books import Book, Chapter
    from nemo_pc.testing.corpus import PARAGRAPH

    return Book(
        30001, "A Long Book", [Chapter(f"Chapter {k + 1}", " ".join([PARAGRAPH] * 12)) for k in range(chapters)]
    )


def test_default_hour_has_many_training_voices_and_held_out_voices_of_trained_engines():
    from nemo_pc.data.recipes.synth import PERSONS

    voices = available_voices()
    engines = {voice.engine for voice in voices}
    if engines != {"espeak-ng", "flite", "festival"}:
        pytest.skip("needs the Debian voices of apt-packages.txt")
    jobs = plan([_long_book(40)], SynthConfig(hours=1.0), voices)
    jobs = [job for job in jobs if job.split != SEEN_TEST_SPLIT]  # training speakers by design
    by_split: dict[str, set] = {}
    minutes: dict[int, float] = {}
    for job in jobs:
        by_split.setdefault(job.split, set()).add(job.speaker.voice)
        minutes[job.speaker.speaker_id] = minutes.get(job.speaker.speaker_id, 0) + job.max_words / 2.6 / 60
    train_engines = {voice.engine for voice in by_split["train"]}
    assert len(by_split["train"]) >= 40 and train_engines == engines
    for split in ("dev", "test"):
        assert len(by_split[split]) >= 6
        assert {voice.engine for voice in by_split[split]} <= train_engines
    keys = {split: {voice.key for voice in voices} for split, voices in by_split.items()}
    assert not (keys["train"] & keys["dev"] or keys["train"] & keys["test"] or keys["dev"] & keys["test"])
    person_split = {}
    for split, names in keys.items():
        for key in names:
            person = PERSONS.get(key, key)
            assert person_split.setdefault(person, split) == split, f"{person} reads in two splits"
    assert max(minutes.values()) <= 0.6 * 1.1, "a speaker reads about minutes_per_speaker, not a chapter"


def test_a_chapter_is_read_on_by_the_next_speaker():
    config = SynthConfig(hours=0.05, minutes_per_speaker=0.2, held_out_voices=2, audio=False)
    jobs = plan([_long_book(6)], config, available_voices())
    readers: dict[tuple, set] = {}
    for job in jobs:
        readers.setdefault((job.book_id, job.chapter_title, job.split), set()).add(job.speaker.speaker_id)
    assert max(len(speakers) for speakers in readers.values()) >= 2
    assert len({job.chapter for job in jobs}) == len(jobs), "every reading has its own chapter id"


def _plan_rows(jobs):
    return [
        (job.split, job.speaker, job.chapter, job.book_id, job.chapter_title, job.text, job.max_words) for job in jobs
    ]


@pytest.mark.parametrize("seed", [0, 3])
def test_seen_test_split_reads_training_speakers_on_chapters_train_never_reads(seed):
    books = [_long_book(30), make_book(book_id=30002, chapters=6)]
    voices = available_voices()
    config = SynthConfig(hours=0.3, seed=seed, seen_test_share=0.1, audio=False)
    jobs = plan(books, config, voices)
    others = [job for job in jobs if job.split != SEEN_TEST_SPLIT]
    assert _plan_rows(others) == _plan_rows(
        plan(books, SynthConfig(**{**config.__dict__, "seen_test_share": 0}), voices)
    ), "train/dev/test must not depend on the share"
    seen = [job for job in jobs if job.split == SEEN_TEST_SPLIT]
    train = {job.speaker.speaker_id: job.speaker for job in others if job.split == "train"}
    assert sum(job.max_words for job in seen) == round(0.3 * 0.1 * 3600 * 2.6)
    speakers = {job.speaker for job in seen}
    assert len(speakers) >= 3 and len({speaker.voice.key for speaker in speakers}) >= 3
    assert {speaker.voice.engine for speaker in speakers} == {speaker.voice.engine for speaker in train.values()}
    for speaker in speakers:  # a training speaker (voice, pitch, formant, tilt) under its own id
        assert speaker.speaker_id not in {job.speaker.speaker_id for job in others}
        assert train[speaker.same_as] == replace(speaker, speaker_id=speaker.same_as, same_as=None)
    read = {(job.book_id, job.chapter_title) for job in others}
    assert {(job.book_id, job.chapter_title) for job in seen}.isdisjoint(read)
    assert len({job.chapter for job in jobs}) == len(jobs)


def test_a_larger_corpus_of_the_same_seed_trains_on_none_of_the_seen_test_chapters():
    books, voices = [_long_book(30)], available_voices()
    small = plan(books, SynthConfig(hours=0.1, seen_test_share=0.2), voices)
    large = plan(books, SynthConfig(hours=0.6), voices)
    seen = {(job.book_id, job.chapter_title) for job in small if job.split == SEEN_TEST_SPLIT}
    assert seen and seen.isdisjoint((job.book_id, job.chapter_title) for job in large if job.split == "train")


def test_seen_test_split_is_added_to_an_existing_corpus_and_rebuilt_for_another_share(tmp_path):
    books = [_long_book(6)]
    config = SynthConfig(**{**TEXT_ONLY.__dict__, "seen_test_share": 0.0})
    synthesize_corpus(tmp_path / "plain", books, config)
    synthesize_corpus(tmp_path / "c", books, config)
    stamp = tmp_path / "c" / "SYNTH_CONFIG.json"  # as written before the split existed
    written = json.loads(stamp.read_text())
    del written["config"]["seen_test_share"]
    stamp.write_text(json.dumps(written))
    held_out = _snapshot(tmp_path / "c")
    for share in (0.3, 0.1):
        synthesize_corpus(tmp_path / "c", books, SynthConfig(**{**config.__dict__, "seen_test_share": share}))
        chapters = read_chapters_txt(tmp_path / "c" / "CHAPTERS.TXT")
        seen = {str(c.chapter_id) for c in chapters.values() if c.subset == SEEN_TEST_SPLIT}
        assert seen and {p.name for p in (tmp_path / "c" / SEEN_TEST_SPLIT).glob("*/*")} == seen
        lines = read_manifest(tmp_path / "c" / "SYNTH.jsonl")
        words = sum(len(line["text_book"].split()) for line in lines if line["split"] == SEEN_TEST_SPLIT)
        assert words == pytest.approx(0.03 * share * 3600 * 2.6, rel=0.1)
        after = _snapshot(tmp_path / "c")
        kept = [name for name in held_out if "/" in name]  # the split folders, synth/<split>/ and books/
        assert kept and all(after[name] == held_out[name] for name in kept)
        assert all(name in held_out for name in after if "/" in name and SEEN_TEST_SPLIT not in name)
    assert "like speaker" in (tmp_path / "c" / "SPEAKERS.TXT").read_text()
    stamps = [json.loads((tmp_path / name / "SYNTH_CONFIG.json").read_text()) for name in ("plain", "c")]
    assert stamps[0]["fingerprint"] == stamps[1]["fingerprint"]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"seen_test_share": -0.1}, "seen_test_share must be from 0 to 1"),
        ({"seen_test_share": float("nan")}, "seen_test_share must be from 0 to 1"),
        ({"splits": {"train": 0.9, "test_seen": 0.1}}, "split 'test_seen' is made by seen_test_share"),
    ],
)
def test_seen_test_share_out_of_range_or_a_clashing_split_is_refused(setting, message):
    with pytest.raises(ValueError, match=message):
        SynthConfig(**setting)
    if "splits" in setting:
        SynthConfig(**setting, seen_test_share=0)


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs Debian espeak-ng and sox")
def test_same_seed_gives_bit_identical_audio(tmp_path):
    config = SynthConfig(hours=0.003, splits={"train": 0.5, "test": 0.5}, engines=("espeak-ng",), tn="none", seed=5)
    books = [make_book(chapters=2)]
    synthesize_corpus(tmp_path / "a", books, config)
    synthesize_corpus(tmp_path / "b", books, config)
    first, second = _snapshot(tmp_path / "a"), _snapshot(tmp_path / "b")
    assert any(name.endswith(".flac") for name in first)
    assert first.keys() == second.keys()
    assert [name for name in first if first[name] != second[name]] == []


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs Debian espeak-ng and sox")
def test_formant_and_tilt_change_the_sound_but_not_the_length(tmp_path):
    import numpy

    from nemo_pc.data.recipes.voices import Voice, synthesize

    voice = Voice("espeak-ng", "en-us+m1", "M")
    plain = synthesize(voice, "The lamp is on the table.", tmp_path / "a.flac")
    shifted = synthesize(voice, "The lamp is on the table.", tmp_path / "b.flac", formant=1.08, tilt_db=-6.0)
    a, _ = soundfile.read(str(plain))
    b, _ = soundfile.read(str(shifted))
    assert abs(len(a) - len(b)) / len(a) < 0.05
    spectrum = [numpy.abs(numpy.fft.rfft(x[:16000])) for x in (a, b)]
    high = [float(s[len(s) // 2 :].sum() / s.sum()) for s in spectrum]  # energy share above 4 kHz
    assert high[1] < high[0]


@pytest.mark.parametrize(
    "argument", [["--minutes-per-speaker", "0"], ["--held-out-voices", "0"], ["--formant", "1.2,0.9"]]
)
def test_cli_refuses_bad_speaker_knobs_by_name(tmp_path, capsys, argument):
    assert main(["synth", str(tmp_path / "c"), "--no-audio", *argument]) == 2
    message = capsys.readouterr().err
    assert argument[0].lstrip("-").replace("-", "_") in message
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        (["--hours", "-1"], "hours must be a number above 0"),
        (["--hours", "0"], "hours must be a number above 0"),
        (["--hours", "nan"], "hours must be a number above 0"),
        (["--engines", "bogus"], "engines must be some of"),
        (["--tempo", "0,0"], "tempo must be LOW,HIGH"),
        (["--tempo", "2,1"], "tempo must be LOW,HIGH"),
        (["--deviation-rate", "5"], "deviation_rate must be from 0 to 1"),
        (["--num-jobs", "-3"], "--num-jobs must be 1 or more"),
        (["--splits", "train=0.5,dev=-0.1"], "split share of 'dev' must be above 0"),
        (["--splits", "train=0.5,../x=0.5"], "split name '../x' must be a plain folder name"),
        (["--source", "bogus"], "unknown text source 'bogus'"),
        (["--seen-test-share", "2"], "seen_test_share must be from 0 to 1"),
    ],
)
def test_cli_refuses_bad_arguments_in_one_line_before_any_work(tmp_path, capsys, argument, message):
    assert main(["synth", str(tmp_path / "c"), "--no-audio", *argument]) == 2
    err = capsys.readouterr().err
    assert "nemo-pc synth: error: " in err and message in err and "Traceback" not in err
    assert not (tmp_path / "c").exists()


def test_cli_refuses_a_split_named_twice_and_an_unwritable_root(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["synth", str(tmp_path / "c"), "--splits", "train=0.5,train=0.5"])
    assert exit_info.value.code == 2 and "split train named twice" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["synth", str(blocker / "c"), "--no-audio"]) == 2
    assert "cannot write here" in capsys.readouterr().err
