import json
import shutil

import pytest

from nemo_pc.data.recipes.books import CorpusError
from nemo_pc.data.recipes.librispeech_pc import RestoreOptions, prepare_librispeech_pc, read_transcripts
from nemo_pc.data.recipes.synth import SynthConfig, synthesize_corpus
from nemo_pc.parts.manifest import read_manifest
from nemo_pc.parts.text import normalize
from nemo_pc.testing import PARAGRAPH, make_book, write_chapter

OPTIONS = RestoreOptions(tn="none")
EXTRA = " JULIE WAS GOING TO THE WRONG HOUSE. Then Kutúzov rode slowly along the front of the army."


@pytest.fixture(scope="module")
def text_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    config = SynthConfig(hours=0.04, audio=False, tn="none", deviation_rate=0.05, seed=5, min_words=6)
    synthesize_corpus(root, [make_book(chapters=6)], config)
    return root


def test_text_only_corpus_is_restored_exactly(text_corpus, tmp_path):
    paths = prepare_librispeech_pc(text_corpus, None, tmp_path, durations=text_corpus / "SYNTH.jsonl", options=OPTIONS)
    reference = {line["utt_id"]: line for line in read_manifest(text_corpus / "SYNTH.jsonl")}
    kept = [entry for path in paths.values() for entry in read_manifest(path)]
    drops = read_manifest(tmp_path / "drops.jsonl")
    assert len(kept) + len(drops) == len(reference)
    assert any(line["deviations"] for line in reference.values())
    assert all(entry["text"] == reference[entry["utt_id"]]["text"] for entry in kept)
    assert all(entry["pc_source"] == "book" and entry["text_normalized"] == normalize(entry["text"]) for entry in kept)
    assert all(drop["reason"] in ("short", "deviation") for drop in drops)
    rows = json.loads((tmp_path / "retention.json").read_text())
    assert {row["split"] for row in rows} == set(paths) and all(row["retention_pct"] > 80 for row in rows)


def test_the_seen_test_split_gets_a_manifest_and_its_own_drop_accounting(tmp_path):
    from nemo_pc.data.recipes.books import Book, Chapter
    from nemo_pc.data.recipes.synth import SEEN_TEST_SPLIT

    book = Book(30001, "A Long Book", [Chapter(f"Chapter {k + 1}", " ".join([PARAGRAPH] * 4)) for k in range(6)])
    config = SynthConfig(
        hours=0.02, audio=False, tn="none", deviation_rate=0.1, seed=6, min_words=6, seen_test_share=0.5
    )
    synthesize_corpus(tmp_path / "corpus", [book], config)
    paths = prepare_librispeech_pc(
        tmp_path / "corpus", None, tmp_path / "out", durations=tmp_path / "corpus" / "SYNTH.jsonl", options=OPTIONS
    )
    assert set(paths) == {"train", "dev", "test", SEEN_TEST_SPLIT}
    synth = read_manifest(tmp_path / "corpus" / "SYNTH.jsonl")
    reference = [line for line in synth if line["split"] == SEEN_TEST_SPLIT]
    kept = read_manifest(paths[SEEN_TEST_SPLIT])
    drops = [drop for drop in read_manifest(tmp_path / "out" / "drops.jsonl") if drop["split"] == SEEN_TEST_SPLIT]
    assert drops and len(kept) + len(drops) == len(reference)
    assert all(entry["split"] == SEEN_TEST_SPLIT and entry["pc_source"] == "book" for entry in kept)
    row = next(
        row for row in json.loads((tmp_path / "out" / "retention.json").read_text()) if row["split"] == SEEN_TEST_SPLIT
    )
    assert sum(row["dropped"].values()) == len(drops) and 0 < row["pc_hours"] < row["hours"]
    table = (tmp_path / "out" / "retention.txt").read_text().splitlines()
    assert any(line.startswith(SEEN_TEST_SPLIT) for line in table)


def _drop_corpus(root):
    utterances = [
        "in the beginning the old house stood alone upon the hill",
        "and nobody in the village would go near it",
        "why should we asked the miller's wife",
        "the well known answer was always the same fear",
        "but julie was braver than the rest",
        "she climbed the path at dawn opened the gate",
        "and walked into a kitchen where cats sat wild among the stones",
        "julie was going to the wrong house",
        "then kutuzov rode slowly along the front",
    ]
    ids = write_chapter(root, PARAGRAPH + EXTRA.replace("JULIE", "\n\nJULIE"), utterances)
    ids += write_chapter(
        root, PARAGRAPH, ["entirely other words about steam engines"], speaker=8, chapter=80, book_id=902
    )
    durations = dict.fromkeys(ids, 3.0)
    durations[ids[4]] = 0.6
    return ids, durations


def test_every_drop_reason_is_reported(tmp_path):
    ids, durations = _drop_corpus(tmp_path / "corpus")
    paths = prepare_librispeech_pc(tmp_path / "corpus", None, tmp_path / "out", durations=durations, options=OPTIONS)
    kept = {entry["utt_id"]: entry for entry in read_manifest(paths["test"])}
    reasons = {drop["utt_id"]: drop["reason"] for drop in read_manifest(tmp_path / "out" / "drops.jsonl")}
    assert reasons == {
        ids[4]: "short",
        ids[6]: "deviation",
        ids[7]: "all_upper",
        ids[8]: "unicode_mismatch",
        ids[9]: "not_in_book",
    }
    assert kept[ids[2]]["text"] == '"Why should we?" asked the miller\'s wife;'
    assert kept[ids[3]]["text"] == "the well-known answer was always the same: fear."
    table = (tmp_path / "out" / "retention.txt").read_text()
    for reason in ("short", "all_upper", "unicode_mismatch", "deviation", "not_in_book"):
        assert f"{reason}: 1" in table


def test_formatter_fallback_keeps_unrestored_lines_without_pc(tmp_path):
    ids, durations = _drop_corpus(tmp_path / "corpus")
    options = RestoreOptions(tn="none", fallback="formatter")
    paths = prepare_librispeech_pc(tmp_path / "corpus", None, tmp_path / "out", durations=durations, options=options)
    entries = {entry["utt_id"]: entry for entry in read_manifest(paths["test"])}
    assert set(entries) == set(ids)
    assert entries[ids[0]]["pc_source"] == "book" and entries[ids[8]]["pc_source"] == "none"
    assert entries[ids[9]]["pc_source"] == "none"
    assert entries[ids[9]]["text"] == entries[ids[9]]["text_normalized"] == "entirely other words about steam engines"
    assert all(drop["kept_as_pc_source_none"] for drop in read_manifest(tmp_path / "out" / "drops.jsonl"))


@pytest.mark.parametrize(
    ("marks", "separate", "mark_map", "expected"),
    [
        (".,?", False, "default", "Why should we? asked the miller's wife."),
        (".,?", True, "default", "Why should we ? asked the miller's wife ."),
        (".,?", False, "none", "Why should we? asked the miller's wife"),
        (".,?;", False, "default", "Why should we? asked the miller's wife;"),
        ("?;.", True, "default", "Why should we ? asked the miller's wife ;"),
    ],
)
def test_preprocessing_variants(tmp_path, marks, separate, mark_map, expected):
    ids = write_chapter(tmp_path / "corpus", PARAGRAPH, ["why should we asked the miller's wife"])
    options = RestoreOptions(tn="none", marks=marks, separate_marks=separate, mark_map=mark_map)
    paths = prepare_librispeech_pc(
        tmp_path / "corpus", None, tmp_path / "out", durations={ids[0]: 2.0}, options=options
    )
    assert read_manifest(paths["test"])[0]["text"] == expected


def test_second_run_reuses_results_and_resumes(tmp_path):
    ids, durations = _drop_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    first = prepare_librispeech_pc(tmp_path / "corpus", None, out, durations=durations, options=OPTIONS)
    results = sorted(out.glob(".work/*/test/*.jsonl"))
    assert len(results) == 2
    stamps = {path: path.stat().st_mtime_ns for path in results}
    manifest = first["test"].read_text()
    results[1].unlink()
    second = prepare_librispeech_pc(tmp_path / "corpus", None, out, durations=durations, options=OPTIONS)
    assert results[0].stat().st_mtime_ns == stamps[results[0]]
    assert results[1].is_file() and second["test"].read_text() == manifest


def test_ascii_book_layout_is_accepted(tmp_path):
    ids = write_chapter(tmp_path / "corpus", PARAGRAPH, ["but julie was braver than the rest"], book_id=901)
    utf8 = next((tmp_path / "corpus" / "books" / "utf-8" / "901").iterdir())
    ascii_dir = tmp_path / "corpus" / "books" / "ascii" / "901"
    ascii_dir.mkdir(parents=True)
    shutil.move(utf8, ascii_dir / "901.txt")
    paths = prepare_librispeech_pc(
        tmp_path / "corpus", None, tmp_path / "out", durations={ids[0]: 2.0}, options=OPTIONS
    )
    assert read_manifest(paths["test"])[0]["text"] == "But Julie was braver than the rest."


def test_bad_input_names_file_and_line(tmp_path):
    root = tmp_path / "corpus"
    write_chapter(root, PARAGRAPH, ["she climbed the path"])
    trans = root / "test" / "7" / "70" / "7-70.trans.txt"
    trans.write_text("7-70-0000 SHE CLIMBED\n7-70-0001\n")
    with pytest.raises(CorpusError, match=r"7-70\.trans\.txt:2: "):
        read_transcripts(trans)
    chapters = root / "CHAPTERS.TXT"
    chapters.write_text(chapters.read_text() + "71 | 7 | 1.0 | test\n")
    with pytest.raises(CorpusError, match=r"CHAPTERS\.TXT:5: expected 8"):
        prepare_librispeech_pc(root, None, tmp_path / "out", options=OPTIONS)
    chapters.write_text(chapters.read_text().replace("71 | 7 | 1.0 | test\n", ""))
    shutil.rmtree(root / "books")
    trans.write_text("7-70-0000 SHE CLIMBED\n")
    with pytest.raises(CorpusError, match=r"CHAPTERS\.TXT:4: book 900 of chapter 70 not found"):
        prepare_librispeech_pc(root, None, tmp_path / "out", options=OPTIONS)


def test_missing_audio_names_the_transcript_line(tmp_path):
    write_chapter(tmp_path / "corpus", PARAGRAPH, ["she climbed the path", "at dawn"])
    with pytest.raises(CorpusError, match=r"7-70\.trans\.txt:1: audio file .*7-70-0000\.flac is missing"):
        prepare_librispeech_pc(tmp_path / "corpus", None, tmp_path / "out", options=OPTIONS)


def test_an_edited_transcript_is_restored_again_and_the_rest_reused(tmp_path):
    ids, durations = _drop_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    first = prepare_librispeech_pc(tmp_path / "corpus", None, out, durations=durations, options=OPTIONS)
    assert "she climbed the path at dawn" in first["test"].read_text()
    results = {path.name.split(".")[0]: path for path in out.glob(".work/*/test/*.jsonl")}
    other_stamp = results["8-80"].stat().st_mtime_ns
    trans = tmp_path / "corpus" / "test" / "7" / "70" / "7-70.trans.txt"
    trans.write_text(trans.read_text().replace("SHE CLIMBED THE PATH", "SHE CLIMBED THE ROAD"))
    second = prepare_librispeech_pc(tmp_path / "corpus", None, out, durations=durations, options=OPTIONS)
    text = second["test"].read_text() + (out / "drops.jsonl").read_text()
    assert "she climbed the road at dawn" in text and "she climbed the path at dawn" not in text
    assert results["8-80"].stat().st_mtime_ns == other_stamp  # the untouched chapter was not redone
    assert len(list(out.glob(".work/*/test/7-70.*.jsonl"))) == 1  # the stale result is gone


def _flac(path, seconds=2.0):
    import numpy as np
    import soundfile

    rng = np.random.default_rng(0)
    soundfile.write(str(path), (0.1 * rng.standard_normal(int(16000 * seconds))).astype("float32"), 16000)


def test_broken_audio_is_dropped_with_its_reason(tmp_path):
    root = tmp_path / "corpus"
    ids = write_chapter(
        root,
        PARAGRAPH,
        ["in the beginning the old house", "stood alone upon the hill", "and nobody in the village would go near it"],
    )
    folder = root / "test" / "7" / "70"
    for utt_id in ids:
        _flac(folder / f"{utt_id}.flac")
    whole = (folder / f"{ids[1]}.flac").read_bytes()
    (folder / f"{ids[1]}.flac").write_bytes(whole[:100])  # cut short: the header still gives 2 s
    (folder / f"{ids[2]}.flac").write_bytes(b"")
    paths = prepare_librispeech_pc(root, None, tmp_path / "out", options=OPTIONS)
    assert [entry["utt_id"] for entry in read_manifest(paths["test"])] == [ids[0]]
    reasons = {drop["utt_id"]: drop["reason"] for drop in read_manifest(tmp_path / "out" / "drops.jsonl")}
    assert reasons == {ids[1]: "bad_audio", ids[2]: "bad_audio"}
    details = {drop["utt_id"]: drop["detail"] for drop in read_manifest(tmp_path / "out" / "drops.jsonl")}
    assert all(f"{utt_id}.flac" in details[utt_id] for utt_id in ids[1:])
    assert "bad_audio: 2" in (tmp_path / "out" / "retention.txt").read_text()


def test_a_transcript_listed_twice_is_an_error_and_paths_are_absolute(tmp_path, monkeypatch):
    root = tmp_path / "corpus"
    ids = write_chapter(root, PARAGRAPH, ["she climbed the path", "at dawn"])
    monkeypatch.chdir(tmp_path)
    paths = prepare_librispeech_pc("corpus", None, "out", durations=dict.fromkeys(ids, 2.0), options=OPTIONS)
    assert all(entry["audio_filepath"].startswith("/") for entry in read_manifest(paths["test"]))
    trans = root / "test" / "7" / "70" / "7-70.trans.txt"
    trans.write_text(trans.read_text() + trans.read_text().splitlines()[0] + "\n")
    with pytest.raises(CorpusError, match=r"7-70\.trans\.txt:3: utterance 7-70-0000 is listed twice"):
        prepare_librispeech_pc(
            "corpus",
            None,
            "out",
            durations=dict.fromkeys(ids, 2.0),
            options=RestoreOptions(tn="none", fallback="formatter"),
        )


def test_a_utf8_book_with_a_stray_byte_stays_utf8(tmp_path, capsys):
    from nemo_pc.data.recipes.books import read_book_text

    book = tmp_path / "b.txt"
    book.write_bytes("Kutúzov rode on.\nThe café was closed.\n".encode() + b"A stray \xff byte.\n")
    text = read_book_text(book)
    assert text.startswith("Kutúzov rode on.") and "\ufffd" in text
    assert "b.txt:3: 1 byte(s) that are not UTF-8" in capsys.readouterr().err
    latin = tmp_path / "l.txt"
    latin.write_bytes("Kutúzov rode on.".encode("latin-1"))
    assert read_book_text(latin) == "Kutúzov rode on."


def _chapter_results(folder, chapters: int, per_chapter: int = 20) -> list:
    """Chapter result files as ``restore_book`` writes them, in two splits, with kept and dropped lines."""
    from pathlib import Path

    from nemo_pc.data.recipes.librispeech_pc import ChapterTask
    from nemo_pc.parts.manifest import write_manifest

    tasks = []
    for c in range(chapters):
        split = "dev" if c % 4 == 0 else "train"
        records = []
        for u in range(per_chapter):
            utt_id = f"{c}-{c}-{u:04d}"
            reason = (None, None, "deviation", None, "short")[u % 5]
            detail = {"detail": "cut short"} if u % 7 == 6 else {}
            entry = {
                "audio_filepath": f"/corpus/{utt_id}.flac",
                "duration": 1.5 + u % 9,
                "text": f"Word {u}, ok.",
                "text_normalized": f"word {u} ok",
                "pc_source": "book",
                "utt_id": utt_id,
                "speaker": str(c),
                "chapter": str(c),
                "split": split,
            }
            records.append({"entry": entry, "reason": reason, "edits": u % 3, **detail})
        result = write_manifest(Path(folder) / split / f"{c}.jsonl", records)
        tasks.append(ChapterTask(split, Path(f"/corpus/{c}.trans.txt"), None, Path("book.txt"), result))
    return tasks


def _merged_in_memory(tasks, options) -> dict:
    """The merge as one list per output, built in memory: the reference the streamed merge must equal."""
    manifests, drops = {}, []
    for task in tasks:
        for record in read_manifest(task.result):
            entry, reason = record["entry"], record["reason"]
            if reason is None:
                manifests.setdefault(task.split, []).append(entry)
                continue
            kept = options.fallback == "formatter"
            drops.append(
                {
                    "utt_id": entry["utt_id"],
                    "split": task.split,
                    "reason": reason,
                    "edits": record["edits"],
                    "kept_as_pc_source_none": kept,
                    "text_normalized": entry["text_normalized"],
                    "restored": entry["text"],
                    "trans": str(task.trans),
                    **({"detail": record["detail"]} if "detail" in record else {}),
                }
            )
            if kept:
                manifests.setdefault(task.split, []).append(
                    {**entry, "text": entry["text_normalized"], "pc_source": "none"}
                )
    return {f"{split}.json": rows for split, rows in manifests.items()} | {"drops.jsonl": drops}


@pytest.mark.parametrize("fallback", ["drop", "formatter"])
def test_merge_streams_every_line_in_order_with_memory_flat_in_chapters(tmp_path, fallback):
    import tracemalloc

    from nemo_pc.data.recipes.librispeech_pc import merge_results

    options = RestoreOptions(tn="none", fallback=fallback)
    peaks = {}
    for chapters in (20, 160):
        tasks = _chapter_results(tmp_path / f"work{chapters}", chapters)
        out = tmp_path / f"out{chapters}"
        tracemalloc.start()
        paths = merge_results(tasks, out, options)
        peaks[chapters] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        expected = _merged_in_memory(tasks, options)
        assert {path.name for path in paths.values()} | {"drops.jsonl"} == set(expected)
        for name, rows in expected.items():
            assert read_manifest(out / name) == rows, name
        rows = {row["split"]: row for row in json.loads((out / "retention.json").read_text())}
        train_hours = sum(r["entry"]["duration"] for t in tasks if t.split == "train" for r in read_manifest(t.result))
        assert rows["train"]["hours"] == pytest.approx(train_hours / 3600, abs=1e-4)
        assert rows["train"]["dropped"] == {"deviation": chapters * 3 // 4 * 4, "short": chapters * 3 // 4 * 4}
    assert peaks[160] < 1.5 * peaks[20]  # 8x the lines, about the same peak: nothing grows with the chapters


def test_durations_in_any_order_give_the_same_build_and_reuse_its_results(text_corpus, tmp_path):
    import random

    out = tmp_path / "out"
    first = prepare_librispeech_pc(text_corpus, None, out, durations=text_corpus / "SYNTH.jsonl", options=OPTIONS)
    manifests = {split: path.read_text() for split, path in first.items()}
    results = {path: path.stat().st_mtime_ns for path in out.glob(".work/*/*/*.jsonl")}
    lines = (text_corpus / "SYNTH.jsonl").read_text().splitlines()
    wrong = json.dumps({**json.loads(lines[0]), "duration": 0.1})  # a later line wins over it
    shuffled = [wrong, *random.Random(0).sample(lines, len(lines))]
    (tmp_path / "shuffled.jsonl").write_text("\n".join(shuffled) + "\n")
    again = prepare_librispeech_pc(text_corpus, None, out, durations=tmp_path / "shuffled.jsonl", options=OPTIONS)
    assert {split: path.read_text() for split, path in again.items()} == manifests
    assert {path: path.stat().st_mtime_ns for path in out.glob(".work/*/*/*.jsonl")} == results  # same keys


def test_durations_cost_a_few_bytes_an_utterance_until_restored():
    import tracemalloc
    from pathlib import Path

    from nemo_pc.data.recipes.librispeech_pc import ChapterTask, _attach_durations

    chapters, per_chapter = 200, 100
    tasks = [
        ChapterTask("train", Path(f"/c/{c}/{c}/{c}-{c}.trans.txt"), None, Path("book.txt"), Path("r.jsonl"))
        for c in range(chapters)
    ]
    pairs = ((f"{c}-{c}-{u:04d}", 10.0 + u / 1000) for c in range(chapters) for u in range(per_chapter))
    tracemalloc.start()
    _attach_durations(tasks, pairs)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert held < 40 * chapters * per_chapter  # a dict of them would hold some 200 bytes an utterance
    assert peak < held + 200_000  # at most about one chapter held as a dict at a time
    assert json.loads(tasks[3].durations)["3-3-0007"] == 10.007


def test_the_scale_benchmark_counts_each_utterance_once(text_corpus, tmp_path):
    """benchmarks/speed_builder.py times the CLI build; kept and dropped utterances add up to the corpus."""
    from benchmark_loader import load_benchmark

    bench = load_benchmark("speed_builder")
    row = bench.run_builder(text_corpus, tmp_path / "out", num_jobs=1)
    manifests = [tmp_path / "out" / f"{split}.json" for split in ("train", "dev", "test")]
    assert row["kept_utterances"] == sum(len(read_manifest(path)) for path in manifests if path.is_file())
    assert row["dropped_utterances"] == len(read_manifest(tmp_path / "out" / "drops.jsonl"))
    assert row["kept_utterances"] + row["dropped_utterances"] == len(read_manifest(text_corpus / "SYNTH.jsonl"))
    assert row["seconds"] > 0 and row["peak_rss_mib"] > 0


def test_command_names_a_bad_mark_set_before_reading_the_corpus(tmp_path, capsys):
    from nemo_pc.cli import main

    assert main(["librispeech-pc", str(tmp_path / "missing"), str(tmp_path / "out"), "--marks", ".?!a"]) == 2
    assert capsys.readouterr().err.strip() == (
        "nemo-pc librispeech-pc: error: --marks: 'a' in '.?!a' is a letter or digit, not a mark"
    )
    with pytest.raises(ValueError, match="marks: '.' appears twice"):
        RestoreOptions(marks="..")
