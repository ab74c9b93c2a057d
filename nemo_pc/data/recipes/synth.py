"""A synthetic corpus in LibriSpeech's layout, read from book text by offline TTS voices.

Layout under ``root``::

    <split>/<speaker>/<chapter>/<speaker>-<chapter>-<utt>.flac    16 kHz mono flac
    <split>/<speaker>/<chapter>/<speaker>-<chapter>.trans.txt     "UTT-ID TRANSCRIPT" in upper case
    CHAPTERS.TXT, SPEAKERS.TXT, BOOKS.TXT                         LibriSpeech's metadata files
    books/utf-8/<book_id>/<name>.txt.utf-8                        the written books
    synth/<split>/<speaker>-<chapter>.jsonl                       what each utterance really says (reference)
    SYNTH.jsonl                                                   all reference lines; SYNTH_CONFIG.json

Each voice is a speaker, and no voice reads in two splits; the extra split ``test_seen`` (``seen_test_share``) is
the exception: training speakers read chapters there that no other split reads. Utterances are cut from the spoken
form of a chapter (:func:`nemo_pc.data.recipes.spoken.book_words`), sometimes at a sentence end and sometimes
mid-sentence.
With ``deviation_rate`` a reader now and then skips, repeats or substitutes a plain lower-case word; the transcript
and the reference record what was read, while the book keeps the original. The reference ``text`` is the read
words with the case and punctuation of the book, the target of a LibriSpeech-PC restoration.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from nemo_pc.data.recipes.books import Book, Chapter, ChapterInfo, write_book, write_chapters_txt
from nemo_pc.data.recipes.spoken import BookWords, SpokenForm, book_words, render
from nemo_pc.data.recipes.voices import ENGINES, Voice, available_voices, synthesize
from nemo_pc.parts.manifest import atomic_open, read_manifest, write_manifest, write_text_atomic
from nemo_pc.parts.output_lock import hold_output_folder
from nemo_pc.parts.text import normalize

SUBSTITUTES = ("a", "the", "and", "this", "that", "his", "her", "in", "on", "to", "of", "was", "is")
"""Words a reader says instead of the written one in a substitution."""

SEEN_TEST_SPLIT = "test_seen"
"""The split of training speakers reading chapters that no other split reads (``SynthConfig.seen_test_share``)."""


@dataclass
class SynthConfig:
    """Everything that decides the corpus; the same config and seed give the same corpus.

    Attributes:
        hours: total audio to plan (estimated from ``words_per_second`` before synthesis).
        splits: split name -> share of the hours. No voice reads in two splits.
        seed: the random seed.
        deviation_rate: chance per eligible word that the reader skips, repeats or substitutes it.
        min_words, max_words: utterance length in words.
        sentence_cut: chance that an utterance ends at a sentence end rather than mid-sentence.
        tempo: (low, high) sox tempo factor per utterance.
        pitch: (low, high) pitch shift in cents per speaker.
        formant: (low, high) sox ``speed`` factor per speaker (tempo-compensated): scales pitch and formants
            together, like a longer or shorter vocal tract.
        tilt: (low, high) treble gain in dB per speaker above 3 kHz (a brighter or duller microphone).
        minutes_per_speaker: how long one speaker reads (a stretch of a chapter, as LibriSpeech readers do). A
            book chapter is continued by the next speaker of the same split; each reading is its own chapter id.
        held_out_voices: voices of each held-out (non-train) split, drawn from the engines that train keeps too.
        engine_shares: share of the training speakers per engine (the rest of the engines share equally). The
            many espeak-ng voices give training many distinct voices; flite and festival have few, so their
            training voices come back as new speakers with other pitch, formant and tilt.
        engines: TTS engines whose voices may be used.
        audio: ``False`` writes transcripts, references and estimated durations without audio.
        tn: ``"nemo"`` (spoken form from NeMo TN) or ``"none"`` (text without digits or abbreviations).
        words_per_second: speaking rate used for planning and for the durations of ``audio=False`` corpora.
        seen_test_share: share of ``hours`` planned on top of them as the split ``test_seen`` (0: none): training
            speakers (same voice, pitch, formant and tilt, new speaker ids) read chapters that no other split reads.
            It is planned after the other splits from its own random stream, so they stay the same at any share.
    """

    hours: float = 0.2
    splits: dict[str, float] = field(default_factory=lambda: {"train": 0.8, "dev": 0.1, "test": 0.1})
    seed: int = 0
    deviation_rate: float = 0.01
    min_words: int = 4
    max_words: int = 30
    sentence_cut: float = 0.6
    tempo: tuple[float, float] = (0.9, 1.15)
    pitch: tuple[float, float] = (-200.0, 200.0)
    formant: tuple[float, float] = (0.92, 1.08)
    tilt: tuple[float, float] = (-6.0, 3.0)
    minutes_per_speaker: float = 0.6
    held_out_voices: int = 6
    engine_shares: dict[str, float] = field(default_factory=lambda: {"espeak-ng": 0.6})
    engines: tuple[str, ...] = ENGINES
    audio: bool = True
    tn: str = "nemo"
    words_per_second: float = 2.6
    seen_test_share: float = 0.05

    def __post_init__(self) -> None:
        import math
        import re

        if not (math.isfinite(self.hours) and self.hours > 0):
            raise ValueError(f"hours must be a number above 0, got {self.hours}")
        if not self.splits:
            raise ValueError("splits must name at least one split")
        for name, share in self.splits.items():
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name) or name in (".", ".."):
                raise ValueError(f"split name {name!r} must be a plain folder name (letters, digits, '_', '-', '.')")
            if not (math.isfinite(share) and share > 0):
                raise ValueError(f"split share of {name!r} must be above 0, got {share}")
        if not 0 <= self.deviation_rate <= 1:
            raise ValueError(f"deviation_rate must be from 0 to 1, got {self.deviation_rate}")
        unknown = [engine for engine in self.engines if engine not in ENGINES]
        if unknown or not self.engines:
            raise ValueError(f"engines must be some of {', '.join(ENGINES)}, got {', '.join(self.engines) or 'none'}")
        if not 1 <= self.min_words <= self.max_words:
            raise ValueError(f"need 1 <= min_words <= max_words, got {self.min_words}, {self.max_words}")
        if not self.minutes_per_speaker > 0:
            raise ValueError(f"minutes_per_speaker must be above 0, got {self.minutes_per_speaker}")
        if self.held_out_voices < 1:
            raise ValueError(f"held_out_voices must be 1 or more, got {self.held_out_voices}")
        if not (math.isfinite(self.seen_test_share) and 0 <= self.seen_test_share <= 1):
            raise ValueError(f"seen_test_share must be from 0 to 1, got {self.seen_test_share}")
        if self.seen_test_share and SEEN_TEST_SPLIT in self.splits:
            raise ValueError(f"split {SEEN_TEST_SPLIT!r} is made by seen_test_share; set it to 0 to name that split")
        for name in ("tempo", "formant"):
            low, high = getattr(self, name)
            if not 0.5 <= low <= high <= 2.0:
                raise ValueError(f"{name} must be LOW,HIGH with 0.5 <= LOW <= HIGH <= 2, got {low},{high}")
        for name, limit in (("pitch", 1200.0), ("tilt", 24.0)):
            low, high = getattr(self, name)
            if not -limit <= low <= high <= limit:
                bounds = f"-{limit:g} <= LOW <= HIGH <= {limit:g}"
                raise ValueError(f"{name} must be LOW,HIGH with {bounds}, got {low},{high}")


@dataclass(frozen=True)
class Speaker:
    """A reader: a voice with its own pitch shift (cents), formant factor and treble tilt (dB); ``same_as`` is the
    training speaker whose settings a ``test_seen`` speaker reads with."""

    speaker_id: int
    voice: Voice
    pitch: float
    formant: float
    tilt: float
    same_as: int | None = None

    def describe(self) -> str:
        settings = f"pitch {self.pitch:+.0f}c, formant {self.formant:.3f}, tilt {self.tilt:+.1f} dB"
        return f"{self.voice.key} ({settings})" + (f" like speaker {self.same_as}" if self.same_as else "")


@dataclass
class ChapterJob:
    """One reading: a speaker reads ``text`` (a stretch of a book chapter) into a split as chapter ``chapter``."""

    split: str
    speaker: Speaker
    chapter: int
    book_id: int
    book_title: str
    chapter_title: str
    text: str
    max_words: int


def plan(books: list[Book], config: SynthConfig, voices: list[Voice]) -> list[ChapterJob]:
    """Assigns voices to splits, speakers to voices and chapter stretches to speakers.

    Each speaker reads about ``minutes_per_speaker``; a chapter is read on by the next speaker of the same split
    until it ends. Held-out splits are filled first, so a small corpus still has every split. ``test_seen``
    (:func:`plan_seen_test`) comes last and changes nothing before it.
    """
    rng = random.Random(f"plan:{config.seed}")
    pools = split_voices(voices, config, rng)
    chapters = [(book, chapter) for book in books for chapter in book.chapters if chapter.text.strip()]
    rng.shuffle(chapters)
    per_speaker = max(config.max_words, round(config.minutes_per_speaker * 60 * config.words_per_second))
    jobs: list[ChapterJob] = []
    next_speaker = 100
    for split, share in sorted(config.splits.items(), key=lambda item: item[0].startswith("train")):
        budget = round(config.hours * share * 3600 * config.words_per_second)
        count = max(1, min(max(len(pools[split]), -(-budget // per_speaker)), budget // config.max_words))
        order = _speaker_voices(pools[split], count, config if split.startswith("train") else None, rng)
        reading = _Reading(chapters)
        for k, voice in enumerate(order):
            speaker = Speaker(
                next_speaker,
                voice,
                round(rng.uniform(*config.pitch), 1),
                round(rng.uniform(*config.formant), 3),
                round(rng.uniform(*config.tilt), 1),
            )
            next_speaker += 1
            reading.read(split, speaker, budget // count + (1 if k < budget % count else 0), jobs, config.min_words)
    if config.seen_test_share:
        # the chapters no split has started, front first: those a larger corpus of the same seed reads last
        jobs += plan_seen_test(chapters[::-1], jobs, config, per_speaker)
    return jobs


@dataclass
class _Reading:
    """Chapters read one after another by the speakers of a split; ``chapters`` is taken from its end."""

    chapters: list[tuple[Book, Chapter]]
    book: Book | None = None
    chapter: Chapter | None = None
    words: list[str] = field(default_factory=list)

    def read(self, split: str, speaker: Speaker, share_words: int, jobs: list[ChapterJob], min_words: int) -> None:
        """Appends the jobs of ``speaker`` reading on for ``share_words`` words (fewer when the chapters run out);
        a chapter rest shorter than ``min_words`` is skipped."""
        while share_words > 0:
            if not self.words:
                if not self.chapters:
                    return
                self.book, self.chapter = self.chapters.pop()
                self.words = self.chapter.text.split()
            take = min(share_words, len(self.words))
            jobs.append(
                ChapterJob(
                    split,
                    speaker,
                    10000 + len(jobs),
                    self.book.book_id,
                    self.book.title,
                    self.chapter.title,
                    " ".join(self.words[:take]),
                    take,
                )
            )
            self.words, share_words = self.words[take:], share_words - take
            if len(self.words) < min_words:
                self.words = []


def plan_seen_test(
    unread: list[tuple[Book, Chapter]], jobs: list[ChapterJob], config: SynthConfig, per_speaker: int
) -> list[ChapterJob]:
    """The :data:`SEEN_TEST_SPLIT` readings: training speakers of every training engine, under new speaker ids,
    read ``seen_test_share`` of the hours from ``unread`` (taken from its end), chapters no split of ``jobs`` reads.

    Its own random stream (``plan-seen:<seed>``) picks the speakers; none is planned when training has no speaker or
    the share is shorter than ``min_words``. Chapter ids go on after those of ``jobs``.
    """
    train = {job.speaker.speaker_id: job.speaker for job in jobs if job.split.startswith("train")}
    budget = round(config.hours * config.seen_test_share * 3600 * config.words_per_second)
    if not train or budget < config.min_words:
        return []
    rng = random.Random(f"plan-seen:{config.seed}")
    engines = {speaker.voice.engine for speaker in train.values()}
    count = max(1, min(max(len(engines), -(-budget // per_speaker)), budget // config.max_words))
    first_id = max(job.speaker.speaker_id for job in jobs) + 1
    planned = list(jobs)
    reading = _Reading(list(unread))
    for k, source in enumerate(_seen_speakers(list(train.values()), count, rng)):
        speaker = replace(source, speaker_id=first_id + k, same_as=source.speaker_id)
        share_words = budget // count + (1 if k < budget % count else 0)
        reading.read(SEEN_TEST_SPLIT, speaker, share_words, planned, config.min_words)
    return planned[len(jobs) :]


def _seen_speakers(train: list[Speaker], count: int, rng: random.Random) -> list[Speaker]:
    """``count`` training speakers: one of each engine first, then engines in their share of ``train``; within an
    engine, speakers of voices not yet picked first."""
    by_engine: dict[str, list[Speaker]] = {}
    for speaker in train:
        by_engine.setdefault(speaker.voice.engine, []).append(speaker)
    engines = sorted(by_engine)
    for engine in engines:
        rng.shuffle(by_engine[engine])
        repeats: Counter = Counter()
        ranked = []
        for speaker in by_engine[engine]:
            ranked.append((repeats[speaker.voice.key], speaker))
            repeats[speaker.voice.key] += 1
        by_engine[engine] = [speaker for _, speaker in sorted(ranked, key=lambda pair: pair[0])]
    taken = dict.fromkeys(engines, 0)
    order = []
    for k in range(count):
        engine = max(engines, key=lambda e: (taken[e] == 0, len(by_engine[e]) / len(train) * (k + 1) - taken[e]))
        order.append(by_engine[engine][taken[engine] % len(by_engine[engine])])
        taken[engine] += 1
    rng.shuffle(order)
    return order


def _speaker_voices(pool: list[Voice], count: int, config: SynthConfig | None, rng: random.Random) -> list[Voice]:
    """The voice of each of ``count`` speakers: every voice of ``pool`` in turn or, for training (``config``
    given), engines in ``engine_shares`` proportion and each engine's voices in turn."""
    if config is None:
        return [pool[k % len(pool)] for k in range(count)]
    by_engine: dict[str, list[Voice]] = {}
    for voice in pool:
        by_engine.setdefault(voice.engine, []).append(voice)
    named = {e: s for e, s in config.engine_shares.items() if e in by_engine}
    rest = [e for e in by_engine if e not in named]
    left = max(0.0, 1.0 - sum(named.values()))
    shares = {**named, **{e: left / len(rest) for e in rest}} if rest else named
    total = sum(shares.values()) or 1.0
    taken = dict.fromkeys(by_engine, 0)
    order = []
    for k in range(count):
        # the engine furthest below its share so far (deterministic largest-deficit rounding)
        engine = max(
            by_engine, key=lambda e: (shares.get(e, 0) / total * (k + 1) - taken[e], -sorted(by_engine).index(e))
        )
        voices = by_engine[engine]
        order.append(voices[taken[engine] % len(voices)])
        taken[engine] += 1
    rng.shuffle(order)
    return order


PERSONS = {
    "flite:kal16": "kal",
    "festival:kal_diphone": "kal",
    "flite:slt": "slt",
    "festival:cmu_us_slt_arctic_hts": "slt",
}
"""Voices of different engines built from one person's recordings: they always go to the same split."""


def split_voices(voices: list[Voice], config: SynthConfig, rng: random.Random) -> dict[str, list[Voice]]:
    """Disjoint voice pools: each held-out split gets ``held_out_voices`` voices (fewer when there are few), taken
    engine by engine so that it has every engine it can while train keeps at least one voice of each engine;
    train gets the rest. Voices of one person (:data:`PERSONS`) stay together."""
    splits = list(config.splits)
    if len(voices) < len(splits):
        raise ValueError(f"{len(voices)} voices cannot give {len(splits)} splits disjoint speakers")
    groups: dict[str, list[Voice]] = {}
    for voice in sorted(voices, key=lambda v: v.key):
        groups.setdefault(PERSONS.get(voice.key, voice.key), []).append(voice)
    people = list(groups.values())
    rng.shuffle(people)
    held_out = [s for s in splits if not s.startswith("train")] or splits[1:]
    train = [s for s in splits if s not in held_out]
    want = max(1, min(config.held_out_voices, len(voices) // (len(held_out) + 1)))
    pools: dict[str, list[Voice]] = {split: [] for split in splits}

    for split in held_out:
        while len(pools[split]) < want:
            have = {v.engine for v in pools[split]}
            candidates = [
                group for group in people if len(pools[split]) + len(group) <= want and _keeps_engines(people, group)
            ]
            if not candidates:
                break
            # first one voice of each engine, never a second voice of an engine the split has (single-voice people
            # first, so that train keeps more of the scarce engines), then voices of the engine with most voices left
            fresh = [group for group in candidates if all(v.engine not in have for v in group)]
            left = Counter(v.engine for group in people for v in group)
            if fresh:
                choice = min(fresh, key=len)
            else:
                choice = max(candidates, key=lambda group: (left[group[0].engine], -len(group)))
            people.remove(choice)
            pools[split] += choice
    rest = [v for group in people for v in group]
    for k, split in enumerate(train):
        pools[split] = rest[k :: len(train)]
    return pools


def _keeps_engines(people: list[list[Voice]], group: list[Voice]) -> bool:
    """Whether the voices left after taking ``group`` still have every engine that ``group`` has."""
    left = {v.engine for other in people if other is not group for v in other}
    return all(v.engine in left for v in group)


def cut_utterances(book: BookWords, limit: int, config: SynthConfig, rng: random.Random) -> list[tuple[int, int]]:
    """Word ranges of consecutive utterances; some end at a sentence end, the others anywhere between words."""
    limit = min(limit, len(book))
    spans = []
    start = 0
    while start < limit:
        end = min(limit, start + rng.randint(config.min_words, config.max_words))
        if rng.random() < config.sentence_cut:
            ends = [i + 1 for i in range(start + config.min_words - 1, end) if book.sentence_end[i]]
            end = ends[-1] if ends else end
        while end < limit and not book.space[end - 1]:
            end += 1
        spans.append((start, end))
        start = end
    return spans


def read_with_deviations(book: BookWords, start: int, end: int, rate: float, rng: random.Random) -> tuple[list, list]:
    """The pieces a reader says for words ``start:end``, and the deviations as ``[op, word index, word]`` lists.

    Only plain lower-case words without marks, inside the utterance, are skipped, repeated or substituted.
    """
    pieces, deviations = [], []
    for i in range(start, end):
        piece = book.piece(i)
        plain = start < i < end - 1 and book.surface[i].islower() and not (book.before[i] or book.after[i])
        if not (plain and book.space[i] and rng.random() < rate):
            pieces.append(piece)
            continue
        op = rng.choice(("skip", "repeat", "substitute"))
        if op == "repeat":
            pieces += [piece, list(piece)]
        elif op == "substitute":
            piece[1] = rng.choice([w for w in SUBSTITUTES if w != book.keys[i]])
            pieces.append(piece)
        deviations.append([op, i, book.surface[i]])
    return pieces, deviations


def synth_chapter(root: Path, job: ChapterJob, config: SynthConfig, spoken: SpokenForm) -> list[dict]:
    """Synthesizes one chapter (skipping utterances whose flac exists) and writes its transcripts last.

    Returns:
        The chapter's reference lines.
    """
    spk = job.speaker
    reference = root / "synth" / job.split / f"{spk.speaker_id}-{job.chapter}.jsonl"
    trans = root / job.split / str(spk.speaker_id) / str(job.chapter) / f"{spk.speaker_id}-{job.chapter}.trans.txt"
    if reference.is_file() and trans.is_file():
        return read_manifest(reference)
    rng = random.Random(f"chapter:{config.seed}:{job.chapter}")
    book = book_words(job.text, spoken)
    lines = []
    for k, (start, end) in enumerate(cut_utterances(book, job.max_words, config, rng)):
        pieces, deviations = read_with_deviations(book, start, end, config.deviation_rate, rng)
        tempo = rng.uniform(*config.tempo)
        utt_id = f"{spk.speaker_id}-{job.chapter}-{k:04d}"
        text = render(pieces)
        flac = trans.parent / f"{utt_id}.flac"
        if config.audio:
            if not flac.is_file():
                synthesize(
                    spk.voice, text, flac, tempo=tempo, pitch_cents=spk.pitch, formant=spk.formant, tilt_db=spk.tilt
                )
            duration = _flac_duration(flac)
        else:
            duration = len(pieces) / config.words_per_second / tempo + 0.3
        lines.append(
            {
                "utt_id": utt_id,
                "split": job.split,
                "speaker": str(spk.speaker_id),
                "chapter": str(job.chapter),
                "book_id": job.book_id,
                "voice": spk.voice.key,
                "engine": spk.voice.engine,
                "duration": round(duration, 3),
                "text": text,
                "text_book": book.text(start, end),
                "deviations": deviations,
                "tempo": round(tempo, 3),
                "pitch_cents": spk.pitch,
                "formant": spk.formant,
                "tilt_db": spk.tilt,
            }
        )
    write_manifest(reference, lines)
    with atomic_open(trans) as handle:
        handle.writelines(f"{line['utt_id']} {normalize(line['text']).upper()}\n" for line in lines)
    return lines


def _flac_duration(path: Path) -> float:
    import soundfile

    return soundfile.info(str(path)).duration


def _worker(arguments: tuple) -> list[dict]:
    return synth_chapter(*arguments)


def config_fingerprint(config: SynthConfig, books: list[Book]) -> str:
    """A hash of the config and the book texts, stored with the corpus so a resumed run cannot mix two corpora.

    ``seen_test_share`` is left out: it changes only ``test_seen``, which :func:`synthesize_corpus` rebuilds when the
    share changes, so a corpus made before that split existed keeps its fingerprint and gains the split.
    """
    fields = {key: value for key, value in asdict(config).items() if key != "seen_test_share"}
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode())
    for book in books:
        digest.update(book.full_text().encode())
    return digest.hexdigest()[:16]


def synthesize_corpus(
    root: str | Path, books: list[Book], config: SynthConfig, num_jobs: int = 1, cache_dir: str | Path | None = None
) -> Path:
    """Makes (or finishes) a LibriSpeech-layout corpus under ``root``.

    Args:
        root: the corpus folder (LibriSpeech's ``LibriSpeech/``).
        books: the source books (see :mod:`nemo_pc.data.recipes.books`).
        config: sizes, seed and realism knobs.
        num_jobs: parallel worker processes.
        cache_dir: cache of TN grammars and spoken forms (default
        :func:`nemo_pc.data.recipes.spoken.default_cache_dir`).

    Returns:
        ``root``. A second call with the same arguments only checks what exists; finished chapters and
        utterances are skipped after an interruption.

    Raises:
        ValueError: ``root`` holds a corpus made from another config or other books.
    """
    from tqdm import tqdm

    root = Path(root)
    with hold_output_folder(root):
        stamp = root / "SYNTH_CONFIG.json"
        fingerprint = config_fingerprint(config, books)
        if stamp.is_file():
            stamped = json.loads(stamp.read_text())
            if stamped["fingerprint"] != fingerprint:
                raise ValueError(f"{root} holds a corpus made with another config or other books; use a new folder")
            if stamped["config"].get("seen_test_share", 0.0) != config.seen_test_share:
                for folder in (root / SEEN_TEST_SPLIT, root / "synth" / SEEN_TEST_SPLIT):  # planned for another share
                    shutil.rmtree(folder, ignore_errors=True)
        voices = available_voices(tuple(config.engines))
        jobs = plan(books, config, voices)
        write_text_atomic(
            stamp, json.dumps({"fingerprint": fingerprint, "config": asdict(config)}, default=str) + "\n"
        )
        used = {job.book_id for job in jobs}
        for book in books:
            if book.book_id in used:
                write_book(root / "books", book)
        spoken = SpokenForm(config.tn, cache_dir)
        if num_jobs > 1:
            spoken.warm_up()
        tasks = [(root, job, config, spoken) for job in jobs]
        results: dict[int, list[dict]] = {}
        with tqdm(total=len(jobs), unit="chapter", desc="synth") as progress:
            for job, lines in zip(jobs, _map(tasks, num_jobs), strict=True):
                results[job.chapter] = lines
                progress.update()
        write_metadata(root, books, jobs, results)
        write_manifest(root / "SYNTH.jsonl", [line for job in jobs for line in results[job.chapter]])
        return root


def _map(tasks: list[tuple], num_jobs: int):
    if num_jobs <= 1:
        yield from map(_worker, tasks)
        return
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(num_jobs) as pool:
        yield from pool.imap(_worker, tasks)


def write_metadata(root: Path, books: list[Book], jobs: list[ChapterJob], results: dict[int, list[dict]]) -> None:
    """Writes ``CHAPTERS.TXT``, ``SPEAKERS.TXT`` and ``BOOKS.TXT`` for the synthesized chapters."""
    minutes = {job.chapter: sum(line["duration"] for line in results[job.chapter]) / 60 for job in jobs}
    chapters = [
        ChapterInfo(
            job.chapter,
            job.speaker.speaker_id,
            minutes[job.chapter],
            job.split,
            job.book_id,
            job.book_id,
            job.chapter_title,
            job.book_title,
        )
        for job in jobs
    ]
    write_chapters_txt(root / "CHAPTERS.TXT", chapters)
    speakers: dict[int, tuple[ChapterJob, float]] = {}
    for job in jobs:
        previous = speakers.get(job.speaker.speaker_id, (job, 0.0))[1]
        speakers[job.speaker.speaker_id] = (job, previous + minutes[job.chapter])
    lines = [";ID  |SEX| SUBSET           |MINUTES| NAME"]
    lines += [
        f"{spk:<5}| {job.speaker.voice.sex} | {job.split:<16} | {total:5.2f} | {job.speaker.describe()}"
        for spk, (job, total) in sorted(speakers.items())
    ]
    write_text_atomic(root / "SPEAKERS.TXT", "\n".join(lines) + "\n")
    titles = {book.book_id: book.title for book in books if book.book_id in {job.book_id for job in jobs}}
    write_text_atomic(root / "BOOKS.TXT", "".join(f"{bid:<6}| {title}\n" for bid, title in sorted(titles.items())))


def load_sources(sources: list[str]) -> list[Book]:
    """Books from source specs: ``kjv``, ``wiki:<wheel or json>``, ``text:<file>`` (book ids stay distinct)."""
    from nemo_pc.data.recipes import books as book_sources

    books: list[Book] = []
    for k, spec in enumerate(sources):
        kind, _, arg = spec.partition(":")
        first_id = 10001 + 10000 * k
        if kind == "kjv":
            books += book_sources.kjv_books(first_id=first_id)
        elif kind == "wiki" and arg:
            books += book_sources.wiki_books(arg, first_id=first_id)
        elif kind == "text" and arg:
            books += book_sources.text_books([arg], first_id=first_id)
        else:
            raise ValueError(f"unknown text source {spec!r}; use kjv, wiki:<file> or text:<file>")
    return books
