"""Mixed-style transcripts (papers/001 §2.3): composers M0, M1, M2 and an error-tolerant style parser.

A mixed-style transcript carries the punctuated (P) and the normalized (N) transcript of one utterance in one
token sequence, decorated with style tags, so that one greedy decoding pass yields both styles. P comes first, as
the readable style does in the paper.

* **M0** concatenates the two transcripts, each closed by its style-end tag: ``P <end_p> N <end_n>``.
* **M1** interlaces them word by word along an alignment. A word both styles share is written once; where they
  differ, ``<T>`` is followed by exactly one P word and one N word, with ``<p_null>`` / ``<n_null>`` standing in
  for a missing word: ``<T> Hello, hello world <T> Why? why``.
* **M2** merges each run of differing positions into one alternative section ``<T> P words <sep> N words </T>``:
  ``<T> Hello, <sep> hello </T> world <T> Why? <sep> why </T>``.

The alignment is over whitespace-separated words, matched on their normalized form
(:func:`nemo_pc.parts.text.normalize`); a matched pair whose spellings differ ("Hello," / "hello") is an
alternative. The tags are plain strings here; the tokenizer must know them as SentencePiece user-defined symbols
(:data:`STYLE_TAGS`) so that each is a single token.

:func:`parse_mixed` never raises on a hypothesis: a tag that is illegal where it stands is skipped and parsing
resumes with the next legal one, as papers/001 §3.4 describes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import zip_longest

from rapidfuzz.distance import Levenshtein

from nemo_pc.parts.text import normalize

END_P, END_N = "<end_p>", "<end_n>"
ALT, P_NULL, N_NULL = "<T>", "<p_null>", "<n_null>"
SECTION_SEP, SECTION_END = "<sep>", "</T>"

MIXED_FORMATS = ("m0", "m1", "m2")
FORMAT_TAGS: dict[str, tuple[str, ...]] = {
    "m0": (END_P, END_N),
    "m1": (ALT, P_NULL, N_NULL),
    "m2": (ALT, SECTION_SEP, SECTION_END),
}
STYLE_TAGS: tuple[str, ...] = tuple(dict.fromkeys(tag for tags in FORMAT_TAGS.values() for tag in tags))
"""Every style tag of every format, in a fixed order: the user-defined symbols of a mixed-style tokenizer."""

_TAG_SPLIT = re.compile("(" + "|".join(re.escape(tag) for tag in sorted(STYLE_TAGS, key=len, reverse=True)) + ")")


@dataclass(frozen=True)
class Segment:
    """One alignment position: ``shared`` words, or differing ``punctuated`` / ``normalized`` words."""

    punctuated: tuple[str, ...]
    normalized: tuple[str, ...]
    shared: bool = False


def check_format(fmt: str) -> str:
    """Returns ``fmt`` lower-cased, or raises ``ValueError`` naming the allowed formats."""
    if str(fmt).lower() not in MIXED_FORMATS:
        raise ValueError(f"mixed-style format must be one of {MIXED_FORMATS}, got {fmt!r}")
    return str(fmt).lower()


def _words(text: str, name: str) -> list[str]:
    if _TAG_SPLIT.search(text):
        raise ValueError(f"the {name} transcript contains a style tag {STYLE_TAGS}: {text!r}")
    return text.split()


def align_styles(normalized: str, punctuated: str) -> list[Segment]:
    """Aligns the two transcripts word by word on their normalized form.

    Returns:
        Segments in order. Shared segments hold one word; the others hold the words of one differing stretch
        (either side may be empty). Concatenating each side's words gives back that transcript.
    """
    n_words, p_words = _words(normalized, "normalized"), _words(punctuated, "punctuated")
    p_keys, n_keys = [normalize(w) for w in p_words], [normalize(w) for w in n_words]
    segments: list[Segment] = []
    for op in Levenshtein.opcodes(p_keys, n_keys):
        p_span, n_span = p_words[op.src_start : op.src_end], n_words[op.dest_start : op.dest_end]
        if op.tag != "equal":
            if segments and not segments[-1].shared:
                last = segments.pop()  # adjacent edits form one differing stretch
                p_span, n_span = [*last.punctuated, *p_span], [*last.normalized, *n_span]
            segments.append(Segment(tuple(p_span), tuple(n_span)))
            continue
        for p_word, n_word in zip(p_span, n_span, strict=True):
            if p_word == n_word:
                segments.append(Segment((p_word,), (n_word,), shared=True))
            else:
                segments.append(Segment((p_word,), (n_word,)))
    return segments


def _runs(segments: Sequence[Segment]) -> Iterator[tuple[bool, list[Segment]]]:
    """Groups consecutive segments by whether they are shared."""
    run: list[Segment] = []
    for segment in segments:
        if run and run[-1].shared != segment.shared:
            yield run[-1].shared, run
            run = []
        run.append(segment)
    if run:
        yield run[-1].shared, run


def compose_m0(normalized: str, punctuated: str) -> str:
    """``P <end_p> N <end_n>`` (papers/001 eq. 1)."""
    p_words, n_words = _words(punctuated, "punctuated"), _words(normalized, "normalized")
    return " ".join([*p_words, END_P, *n_words, END_N])


def compose_m1(normalized: str, punctuated: str) -> str:
    """Word-interlaced: shared words once, ``<T> p n`` where the styles differ (papers/001 eq. 3)."""
    out: list[str] = []
    for segment in align_styles(normalized, punctuated):
        if segment.shared:
            out.append(segment.punctuated[0])
            continue
        for p_word, n_word in zip_longest(segment.punctuated, segment.normalized):
            out.extend([ALT, p_word or P_NULL, n_word or N_NULL])
    return " ".join(out)


def compose_m2(normalized: str, punctuated: str) -> str:
    """Alternative sections ``<T> p … <sep> n … </T>`` around each differing run (papers/001 eq. 4)."""
    out: list[str] = []
    for shared, run in _runs(align_styles(normalized, punctuated)):
        if shared:
            out.extend(segment.punctuated[0] for segment in run)
            continue
        out.append(ALT)
        out.extend(word for segment in run for word in segment.punctuated)
        out.append(SECTION_SEP)
        out.extend(word for segment in run for word in segment.normalized)
        out.append(SECTION_END)
    return " ".join(out)


_COMPOSERS = {"m0": compose_m0, "m1": compose_m1, "m2": compose_m2}


def compose_mixed(normalized: str, punctuated: str, fmt: str) -> str:
    """The mixed-style transcript of format ``fmt`` (``"m0"``, ``"m1"`` or ``"m2"``).

    Raises:
        ValueError: for an unknown format, or a transcript that already contains a style tag.
    """
    return _COMPOSERS[check_format(fmt)](normalized, punctuated)


def split_tags(text: str) -> list[str]:
    """Splits decoded text into words and style tags; a tag glued to a word is split off."""
    items: list[str] = []
    for k, piece in enumerate(_TAG_SPLIT.split(text)):
        if k % 2:
            items.append(piece)
        else:
            items.extend(piece.split())
    return items


def _parse_m0(items: Sequence[str]) -> tuple[list[str], list[str]]:
    p_words: list[str] = []
    n_words: list[str] = []
    section = "p"
    for item in items:
        if item == END_P and section == "p":
            section = "n"
        elif item == END_N and section == "n":
            section = "done"
        elif item not in STYLE_TAGS:
            (p_words if section == "p" else n_words).append(item)
    if section == "p":
        n_words = normalize(" ".join(p_words)).split()
    return n_words, p_words


def _parse_m1(items: Sequence[str]) -> tuple[list[str], list[str]]:
    p_words: list[str] = []
    n_words: list[str] = []
    slot = "shared"
    for item in items:
        if item == ALT:
            slot = "p"  # a new group; an unfinished one simply ends here
        elif slot == "shared":
            if item not in STYLE_TAGS:
                p_words.append(item)
                n_words.append(item)
        elif slot == "p":
            if item == N_NULL:  # the P slot was left out: the group is empty on both sides
                slot = "shared"
            elif item == P_NULL:
                slot = "n"
            elif item not in STYLE_TAGS:
                p_words.append(item)
                slot = "n"
        elif item == N_NULL:
            slot = "shared"
        elif item not in STYLE_TAGS:
            n_words.append(item)
            slot = "shared"
    return n_words, p_words


def _parse_m2(items: Sequence[str]) -> tuple[list[str], list[str]]:
    p_words: list[str] = []
    n_words: list[str] = []
    part = "shared"
    for item in items:
        if item == ALT:
            part = "p"  # also closes a section whose end tag is missing
        elif item == SECTION_SEP and part == "p":
            part = "n"
        elif item == SECTION_END and part != "shared":
            part = "shared"
        elif item not in STYLE_TAGS:
            if part != "n":
                p_words.append(item)
            if part != "p":
                n_words.append(item)
    return n_words, p_words


_PARSERS = {"m0": _parse_m0, "m1": _parse_m1, "m2": _parse_m2}


def parse_mixed(hypothesis: str, fmt: str) -> tuple[str, str]:
    """Recovers ``(normalized, punctuated)`` from a mixed-style hypothesis of format ``fmt``.

    Error tolerance: a tag that is illegal where it stands (a tag of another format, ``<sep>`` outside a section,
    a second ``<end_p>``, a null tag in the wrong slot) is skipped, and parsing resumes at the next legal tag. An
    unfinished M1 group or M2 section ends at the next ``<T>`` or at the end. An M0 hypothesis without
    ``<end_p>`` is read as punctuated, and its normalized transcript is derived from it.

    Returns:
        Two strings, words joined by single spaces. It never raises on any ``hypothesis`` string.
    """
    n_words, p_words = _PARSERS[check_format(fmt)](split_tags(hypothesis))
    return " ".join(n_words), " ".join(p_words)
