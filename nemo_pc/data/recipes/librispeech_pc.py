"""LibriSpeech-PC manifests: punctuation and case restored from the books (papers/002 §4).

Works on real LibriSpeech with its ``original-books`` and on the synthetic corpus of :mod:`nemo_pc.data.recipes.synth`.
Drop rules, in the order papers/002 §4 lists them (the first that applies is reported):

=================== ====================================================================================
``bad_audio``        the audio file cannot be decoded to the length its header gives (not a paper rule)
``unicode_mismatch`` a book word matches its transcript word only after removing accents ("Kutúzov")
``deviation``        the transcript and its book span differ by more than ``max_deviation`` words
``short``            the utterance lasts less than ``min_duration`` seconds
``all_upper``        every letter of the restored text is upper case (an error in the book's text)
``not_in_book``      the utterance could not be located in its book
``inconsistent``     the restored text does not normalize back to the transcript
=================== ====================================================================================

Outputs in ``output_dir``: ``<split>.json`` manifests, ``drops.jsonl`` (every dropped line with its reason),
``retention.json`` and ``retention.txt`` (papers/002 Table 1 per split), and ``.work/`` with one result file per
chapter, so an interrupted run resumes and a finished one only re-reads what exists. A chapter's result is keyed
on what it depends on: the options, the bytes of its transcript and book, the size and modification time of each
of its audio files (or its durations), so an edited input is restored again and an unchanged one is not.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from itertools import groupby
from pathlib import Path
from typing import TextIO

from nemo_pc.data.audio import AudioError
from nemo_pc.data.recipes.books import ChapterInfo, CorpusError, find_book_file, read_book_text, read_chapters_txt
from nemo_pc.data.recipes.restore import BookIndex, Restoration, restore_chapter
from nemo_pc.data.recipes.spoken import SpokenForm, book_words
from nemo_pc.parts.manifest import (
    DropCounter,
    atomic_open,
    iter_manifest,
    write_manifest,
    write_text_atomic,
)
from nemo_pc.parts.output_lock import hold_output_folder
from nemo_pc.parts.text import DEFAULT_MARK_MAP, normalize, parse_marks, preprocess_punctuated

DROP_REASONS = ("bad_audio", "not_in_book", "unicode_mismatch", "deviation", "short", "all_upper", "inconsistent")
FALLBACKS = ("drop", "formatter")
_UTT_ID = re.compile(r"(\d+)-(\d+)-(\d+)")


@dataclass
class RestoreOptions:
    """How utterances are restored, checked and written.

    Attributes:
        fallback: ``"drop"`` removes utterances that cannot be restored; ``"formatter"`` keeps them with
            ``pc_source: none`` and ``text`` equal to ``text_normalized``, waiting for the text formatter to give
            them auto-punctuated text (P', papers/000 §III-B).
        marks: ``None`` keeps the book's punctuation; a mark set such as ``".,?"`` applies the preprocessing of
            papers/002 §5 (:func:`nemo_pc.parts.text.preprocess_punctuated`); checked by
            :func:`nemo_pc.parts.text.parse_marks`.
        mark_map: ``"default"`` first folds those of ``! ; :`` that are outside the set into it (papers/003
            appendix; a mark of the set is kept as written); ``"none"`` drops every mark outside the set.
        separate_marks: write "done ." instead of "done." (papers/002 §5, step 2).
        min_duration: the ``short`` threshold in seconds; max_deviation: the ``deviation`` threshold in words.
        tn: how book text becomes spoken form (:class:`nemo_pc.data.recipes.spoken.SpokenForm`).
    """

    fallback: str = "drop"
    marks: str | None = None
    mark_map: str = "default"
    separate_marks: bool = False
    min_duration: float = 1.0
    max_deviation: int = 2
    tn: str = "nemo"

    def __post_init__(self) -> None:
        if self.fallback not in FALLBACKS:
            raise ValueError(f"fallback must be one of {FALLBACKS}, got {self.fallback!r}")
        if self.mark_map not in ("default", "none"):
            raise ValueError(f"mark_map must be 'default' or 'none', got {self.mark_map!r}")
        if self.marks is not None:
            self.marks = parse_marks(self.marks, "marks")

    def fingerprint(self) -> str:
        state = asdict(self)
        kept = "".join(mark for mark in self.marks or "" if mark in DEFAULT_MARK_MAP)
        if kept and self.mark_map == "default":
            # results of the rule that folded every mark of the map, even one inside the set, are not reused
            state["kept_as_written"] = kept
        return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:12]


@dataclass
class ChapterTask:
    """One ``*.trans.txt`` file with everything needed to restore it.

    ``durations`` (for corpora without audio) is the chapter's ``utt_id -> seconds`` as JSON with sorted keys: text
    costs a few bytes an utterance until the chapter is restored, where a dict would cost some 200.
    """

    split: str
    trans: Path
    info: ChapterInfo
    book: Path
    result: Path
    durations: str | None = field(default=None, repr=False)


def read_transcripts(path: Path) -> list[tuple[str, str]]:
    """``(utt_id, transcript)`` pairs of a ``*.trans.txt`` file; a malformed line raises :class:`CorpusError`."""
    chapter = path.name.removesuffix(".trans.txt")
    pairs = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise CorpusError(path, number, "not UTF-8") from None
        if not line.strip():
            continue
        utt_id, _, transcript = line.strip().partition(" ")
        if not _UTT_ID.fullmatch(utt_id) or not utt_id.startswith(chapter + "-"):
            raise CorpusError(path, number, f"expected '<speaker>-<chapter>-<utt> TRANSCRIPT', got {line!r}")
        if not transcript.strip():
            raise CorpusError(path, number, f"utterance {utt_id} has an empty transcript")
        if utt_id in seen:
            raise CorpusError(path, number, f"utterance {utt_id} is listed twice (first on line {seen[utt_id]})")
        seen[utt_id] = number
        pairs.append((utt_id, transcript))
    return pairs


def find_tasks(corpus_dir: Path, books_dir: Path, work: Path, splits: list[str] | None) -> list[ChapterTask]:
    """Every chapter of every split folder, with its book; a chapter without metadata or book is an error."""
    chapters_txt = corpus_dir / "CHAPTERS.TXT"
    if not chapters_txt.is_file():
        raise FileNotFoundError(f"{chapters_txt} not found: corpus_dir must be LibriSpeech's root folder")
    infos = read_chapters_txt(chapters_txt)
    lines = _chapter_lines(chapters_txt)
    found = splits or sorted(p.name for p in corpus_dir.iterdir() if p.is_dir() and any(p.glob("*/*/*.trans.txt")))
    tasks = []
    for split in found:
        for trans in sorted((corpus_dir / split).glob("*/*/*.trans.txt")):
            chapter = int(trans.parent.name)
            if chapter not in infos:
                raise CorpusError(trans, 1, f"chapter {chapter} is not listed in {chapters_txt}")
            book = find_book_file(books_dir, infos[chapter].book_id)
            if book is None:
                message = f"book {infos[chapter].book_id} of chapter {chapter} not found under {books_dir}"
                raise CorpusError(chapters_txt, lines[chapter], message)
            result = work / split / f"{trans.parent.parent.name}-{chapter}.jsonl"
            tasks.append(ChapterTask(split, trans, infos[chapter], book, result))
    return tasks


def _file_digest(path: Path, known: dict[Path, str]) -> str:
    if path not in known:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        known[path] = digest.hexdigest()
    return known[path]


def key_results(tasks: list[ChapterTask]) -> None:
    """Names each chapter's result file by a hash of everything its restoration reads (in place)."""
    books: dict[Path, str] = {}
    for task in tasks:
        digest = hashlib.sha256()
        digest.update(_file_digest(task.trans, {}).encode())
        digest.update(_file_digest(task.book, books).encode())
        digest.update(json.dumps(asdict(task.info), sort_keys=True, default=str).encode())
        if task.durations is not None:
            digest.update(task.durations.encode())
        else:
            for audio in sorted(task.trans.parent.glob("*.flac")):
                stat = audio.stat()
                digest.update(f"{audio.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
        stem = task.result.name.removesuffix(".jsonl").split(".")[0]
        task.result = task.result.with_name(f"{stem}.{digest.hexdigest()[:16]}.jsonl")


def _prune_results(tasks: list[ChapterTask]) -> None:
    """Removes result files of earlier inputs (a chapter keeps only the result of its current content).

    Each result folder is listed once: a listing per chapter costs chapters x chapters name matches (a third of a
    rerun's time over 688 chapters, growing with the square of their number).
    """
    current = {task.result for task in tasks}
    stems: dict[Path, set[str]] = defaultdict(set)
    for task in tasks:
        stems[task.result.parent].add(task.result.name.split(".")[0])
    for folder, chapters in stems.items():
        if not folder.is_dir():
            continue
        for old in folder.glob("*.*.jsonl"):  # <stem>.<key>.jsonl
            if old.name.split(".")[0] in chapters and old not in current:
                old.unlink(missing_ok=True)


def _chapter_lines(path: Path) -> dict[int, int]:
    lines = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        head = line.split("|", 1)[0].strip()
        if head.isdigit():
            lines[int(head)] = number
    return lines


def restore_book(tasks: list[ChapterTask], options: RestoreOptions, spoken: SpokenForm) -> int:
    """Restores all chapters of one book (the book is read and indexed once) and writes their result files."""
    index = BookIndex(book_words(read_book_text(tasks[0].book), spoken))
    for task in tasks:
        durations = None if task.durations is None else json.loads(task.durations)
        pairs = read_transcripts(task.trans)
        normalized = [normalize(transcript) for _, transcript in pairs]
        restorations = restore_chapter(index, [text.split() for text in normalized])
        records = []
        for number, ((utt_id, _), text_normalized, restored) in enumerate(
            zip(pairs, normalized, restorations, strict=True), start=1
        ):
            duration, audio, bad_audio = _duration(task, durations, utt_id, number)
            reason = "bad_audio" if bad_audio else drop_reason(restored, duration, options)
            entry = {
                "audio_filepath": str(audio),
                "duration": round(duration, 3),
                "text": restored.text,
                "text_normalized": text_normalized,
                "pc_source": "book",
                "utt_id": utt_id,
                "speaker": utt_id.split("-")[0],
                "chapter": str(task.info.chapter_id),
                "split": task.split,
            }
            if reason is None:
                entry["text"] = _preprocess(restored.text, options)
            record = {"entry": entry, "reason": reason, "edits": restored.edits}
            if bad_audio:
                record["detail"] = bad_audio  # what decoding found, kept in drops.jsonl
            records.append(record)
        write_manifest(task.result, records)
    return len(tasks)


def _duration(
    task: ChapterTask, durations: dict[str, float] | None, utt_id: str, line: int
) -> tuple[float, Path, str | None]:
    """Seconds of an utterance (from ``durations`` when given, else its audio file), its audio path, and why its audio
    is unusable (``None`` when it is fine)."""
    audio = task.trans.parent / f"{utt_id}.flac"
    if durations is not None:
        if utt_id not in durations:
            raise CorpusError(task.trans, line, f"no duration for {utt_id} in the durations file")
        return durations[utt_id], audio, None
    if not audio.is_file():
        raise CorpusError(task.trans, line, f"audio file {audio} is missing")
    try:
        return audio_duration(audio), audio, None
    except AudioError as err:
        return 0.0, audio, str(err)


def audio_duration(path: Path, tail_frames: int = 4096) -> float:
    """Seconds of audio in ``path``, checked by decoding its last frames: a file cut short (whose header still
    gives the full length) or one that is not audio raises :class:`AudioError`."""
    import soundfile

    try:
        with soundfile.SoundFile(str(path)) as handle:
            frames, rate = handle.frames, handle.samplerate
            if frames <= 0:
                raise AudioError(f"{path}: no audio frames")
            tail = min(frames, tail_frames)
            handle.seek(frames - tail)
            decoded = len(handle.read(tail))
    except (RuntimeError, OSError, soundfile.SoundFileError) as err:  # libsndfile's errors derive from these
        raise AudioError(f"{path}: cannot decode: {err}") from None
    if decoded != tail:
        raise AudioError(f"{path}: the header gives {frames} frames but decoding ends {tail - decoded} frames early")
    return frames / rate


def drop_reason(restored: Restoration, duration: float, options: RestoreOptions) -> str | None:
    """The first drop rule of papers/002 §4 that an utterance breaks, or ``None`` when it is kept."""
    if restored.text is None:
        return "not_in_book"
    if restored.unicode_mismatch:
        return "unicode_mismatch"
    if restored.edits > options.max_deviation:
        return "deviation"
    if duration < options.min_duration:
        return "short"
    letters = [ch for ch in restored.text if ch.isalpha()]
    if len(letters) > 1 and all(ch.isupper() for ch in letters):
        return "all_upper"
    if not restored.consistent:
        return "inconsistent"
    return None


def _preprocess(text: str, options: RestoreOptions) -> str:
    if options.marks is None:
        return text
    mark_map = None if options.mark_map == "default" else {}
    return preprocess_punctuated(text, options.marks, mark_map=mark_map, separate_marks=options.separate_marks)


def _restore_worker(arguments: tuple) -> int:
    return restore_book(*arguments)


def iter_durations(path: str | Path) -> Iterator[tuple[str, float]]:
    """``(utt_id, duration)`` of each line of a JSON-lines file with those two fields (e.g. a synthetic corpus's
    SYNTH.jsonl)."""
    for number, entry in iter_manifest(path):
        if "utt_id" not in entry or not isinstance(entry.get("duration"), int | float):
            raise CorpusError(path, number, "expected fields 'utt_id' and a numeric 'duration'")
        yield str(entry["utt_id"]), float(entry["duration"])


def read_durations(path: str | Path) -> dict[str, float]:
    """``utt_id -> duration`` from a JSON-lines file (see :func:`iter_durations`); a later line wins."""
    return dict(iter_durations(path))


def prepare_librispeech_pc(
    corpus_dir: str | Path,
    books_dir: str | Path | None,
    output_dir: str | Path,
    num_jobs: int = 1,
    splits: list[str] | None = None,
    options: RestoreOptions | None = None,
    durations: str | Path | Mapping[str, float] | None = None,
    cache_dir: str | Path | None = None,
) -> dict[str, Path]:
    """Builds LibriSpeech-PC manifests from a LibriSpeech-layout corpus and its books.

    Args:
        corpus_dir: LibriSpeech's root folder (``CHAPTERS.TXT`` and one folder per split).
        books_dir: the books in either layout of ``original-books``; default ``corpus_dir/books``.
        output_dir: where manifests and reports go.
        num_jobs: worker processes (one book at a time each).
        splits: split folders to use; default every folder with transcripts.
        options: restoration options (:class:`RestoreOptions`).
        durations: ``utt_id -> seconds`` or a JSON-lines file of them, for corpora without audio; by default
            durations come from the flac headers.
        cache_dir: TN cache (see :class:`nemo_pc.data.recipes.spoken.SpokenForm`).

    Returns:
        ``split -> manifest path``. Calling it again reuses every finished chapter.
    """
    from tqdm import tqdm

    # absolute, so that the manifests' audio paths do not depend on the folder the build ran in
    corpus_dir, output_dir = Path(corpus_dir).resolve(), Path(output_dir)
    with hold_output_folder(output_dir):
        books_dir = Path(books_dir) if books_dir else corpus_dir / "books"
        options = options or RestoreOptions()
        work = output_dir / ".work" / options.fingerprint()
        tasks = find_tasks(corpus_dir, books_dir, work, splits)
        if durations is not None:
            pairs = iter_durations(durations) if isinstance(durations, str | Path) else durations.items()
            _attach_durations(tasks, pairs)
        key_results(tasks)
        _prune_results(tasks)
        todo = [task for task in tasks if not task.result.is_file()]
        groups: dict[Path, list[ChapterTask]] = defaultdict(list)
        for task in todo:
            groups[task.book].append(task)
        spoken = SpokenForm(options.tn, cache_dir)
        jobs = [(group, options, spoken) for group in groups.values()]
        with tqdm(total=len(todo), unit="chapter", desc="librispeech-pc") as progress:
            for done in _map(jobs, num_jobs, spoken):
                progress.update(done)
        return merge_results(tasks, output_dir, options)


def _attach_durations(tasks: list[ChapterTask], durations: Iterable[tuple[str, float]]) -> None:
    """Gives each task its chapter's durations (as JSON, see :class:`ChapterTask`); a later pair wins.

    A run of pairs of one chapter is held as a dict only until the next chapter starts (a durations file lists a
    chapter's utterances together); a chapter that comes back is merged into its earlier text.
    """
    by_chapter: dict[str, str] = {}
    for chapter, pairs in groupby(durations, key=lambda pair: pair[0].rsplit("-", 1)[0]):
        seconds = dict(pairs)
        if chapter in by_chapter:
            seconds = json.loads(by_chapter[chapter]) | seconds
        by_chapter[chapter] = json.dumps(seconds, sort_keys=True)
    for task in tasks:
        task.durations = by_chapter.get(task.trans.name.removesuffix(".trans.txt"), "{}")


def _map(jobs: list[tuple], num_jobs: int, spoken: SpokenForm):
    if num_jobs <= 1 or len(jobs) <= 1:
        yield from map(_restore_worker, jobs)
        return
    import multiprocessing

    if spoken.tn == "nemo":
        spoken.warm_up()
    with multiprocessing.get_context("spawn").Pool(num_jobs) as pool:
        yield from pool.imap_unordered(_restore_worker, jobs)


def merge_results(tasks: list[ChapterTask], output_dir: Path, options: RestoreOptions) -> dict[str, Path]:
    """Joins the chapter results into one manifest per split, the drop report and the retention table.

    The lines are streamed from the chapter results to the outputs (each written atomically), so memory does not
    grow with the number of utterances; a split without a kept utterance gets no manifest.
    """
    counters: dict[str, DropCounter] = defaultdict(DropCounter)
    hours: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    paths: dict[str, Path] = {}
    with ExitStack() as stack:
        manifests: dict[str, TextIO] = {}
        drops = stack.enter_context(atomic_open(output_dir / "drops.jsonl"))

        def keep(split: str, entry: dict) -> None:
            if split not in manifests:
                paths[split] = output_dir / f"{split}.json"
                manifests[split] = stack.enter_context(atomic_open(paths[split]))
            manifests[split].write(json.dumps(entry, ensure_ascii=False) + "\n")

        for task in tasks:
            for _, record in iter_manifest(task.result):
                entry, reason = record["entry"], record["reason"]
                hours[task.split][0] += entry["duration"] / 3600
                if reason is None:
                    keep(task.split, entry)
                    hours[task.split][1] += entry["duration"] / 3600
                    continue
                counters[task.split].add(reason, entry["utt_id"])
                kept = options.fallback == "formatter"
                drop = {
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
                drops.write(json.dumps(drop, ensure_ascii=False) + "\n")
                if kept:
                    keep(task.split, {**entry, "text": entry["text_normalized"], "pc_source": "none"})
                    hours[task.split][2] += entry["duration"] / 3600
    table = retention_rows(hours, counters)
    write_text_atomic(output_dir / "retention.json", json.dumps(table, indent=2) + "\n")
    write_text_atomic(output_dir / "retention.txt", format_retention(table) + "\n")
    return dict(sorted(paths.items()))


def retention_rows(hours: dict[str, list[float]], counters: dict[str, DropCounter]) -> list[dict]:
    """Per split: hours before and after restoration and the retention rate, as papers/002 Table 1."""
    rows = []
    for split in sorted(hours):
        total, restored, fallback = hours[split]
        rows.append(
            {
                "split": split,
                "hours": round(total, 4),
                "pc_hours": round(restored, 4),
                "retention_pct": round(100 * restored / total, 2) if total else 0.0,
                "fallback_hours": round(fallback, 4),
                "dropped": counters[split].as_dict()["by_reason"],
            }
        )
    return rows


def format_retention(rows: list[dict]) -> str:
    """The retention table as aligned text, one line per split and the drop counts by reason."""
    header = f"{'Subset':<18}{'Original (h)':>14}{'PC (h)':>10}{'Retention (%)':>15}  Dropped by reason"
    lines = [header, "-" * len(header)]
    for row in rows:
        reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(row["dropped"].items())) or "none"
        lines.append(
            f"{row['split']:<18}{row['hours']:>14.3f}{row['pc_hours']:>10.3f}{row['retention_pct']:>15.2f}  {reasons}"
        )
    return "\n".join(lines)
