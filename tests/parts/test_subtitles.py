"""SRT, WebVTT and JSON lines of timed segments, checked against the formats' grammar line by line."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.parts.longform import Segment, TimedWord
from nemo_pc.parts.subtitles import clock, parse_formats, render, to_jsonl, to_srt, to_vtt
from nemo_pc.testing.longform import parse_srt, parse_vtt


def _segments(texts_and_times):
    segments = []
    for text, start, end in texts_and_times:
        words = [TimedWord(word, start, end) for word in text.split()]
        segments.append(Segment(start, end, words, [TimedWord(w.text.lower(), start, end) for w in words]))
    return segments


SEGMENTS = _segments(
    [
        ("Yes, go home.", 0.0, 1.25),
        ("Who is <there> & why? " + "word " * 20, 1.5, 3661.0019),
    ]
)


def test_srt_and_vtt_parse_strictly_with_the_segment_times_and_text():
    srt, vtt = parse_srt(to_srt(SEGMENTS)), parse_vtt(to_vtt(SEGMENTS))
    assert [(start, end) for start, end, _ in srt] == [(0.0, 1.25), (1.5, 3661.002)]
    assert [(start, end) for start, end, _ in vtt] == [(start, end) for start, end, _ in srt]
    assert srt[0][2] == vtt[0][2] == "Yes, go home."
    assert " ".join(srt[1][2].split("\n")) == SEGMENTS[1].text  # wrapped, nothing lost
    assert all(len(line) <= 42 for line in srt[1][2].split("\n"))
    assert "&lt;there&gt; &amp; why?" in vtt[1][2]


def test_subtitles_show_the_requested_mode_and_json_lines_hold_both():
    assert parse_srt(render(SEGMENTS, "srt", "normalized"))[0][2] == "yes, go home."
    rows = [json.loads(line) for line in to_jsonl(SEGMENTS).splitlines()]
    assert rows[0]["text"] == "Yes, go home." and rows[0]["text_normalized"] == "yes, go home."
    assert rows[0]["words"][0] == {"word": "Yes,", "start": 0.0, "end": 1.25}


TRICKY = st.lists(st.sampled_from(["-->", "<b>", "&", "\n\n", "\r\n", "\u2028", " ", "word", "é", "1"]), max_size=12)
TEXTS = st.one_of(st.text(min_size=1, max_size=80), TRICKY.map("".join))


@given(st.lists(st.tuples(TEXTS, st.floats(0, 10_000), st.floats(0, 50)), max_size=8))
def test_any_text_and_times_give_valid_files(cues):
    segments = _segments([(text, start, start + length) for text, start, length in cues])
    srt, vtt = parse_srt(to_srt(segments)) if segments else [], parse_vtt(to_vtt(segments))
    assert len(srt) == len(vtt) == len(segments)
    assert all(start <= end for start, end, _ in srt)


def test_clock_rounds_to_milliseconds():
    assert clock(3661.25, ",") == "01:01:01,250"
    assert clock(59.9996, ".") == "00:01:00.000"


def test_formats_are_named_and_checked():
    assert parse_formats("srt, VTT,jsonl,json") == ["srt", "vtt", "json"]
    with pytest.raises(ValueError, match="--formats: unknown format 'txt'"):
        parse_formats("srt,txt")
    with pytest.raises(ValueError, match="unknown output format"):
        render(SEGMENTS, "txt")


@pytest.mark.parametrize(
    "broken",
    [
        "2\n00:00:00,000 --> 00:00:01,000\nHi\n",  # numbering starts at 2
        "1\n00:00:00.000 --> 00:00:01,000\nHi\n",  # a WebVTT decimal point
        "1\n00:00:00,000 --> 00:00:01,000\n\n",  # no text
        "1\n00:00:00,000 --> 00:00:01,000\nHi",  # no final newline
    ],
)
def test_the_strict_srt_reader_rejects_broken_files(broken):
    with pytest.raises(ValueError):
        parse_srt(broken)


@pytest.mark.parametrize(
    "broken",
    [
        "00:00:00.000 --> 00:00:01.000\nHi\n",
        "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\na --> b\n",
        "WEBVTT\n\n0:00.0 --> 1\nHi\n",
    ],
)
def test_the_strict_vtt_reader_rejects_broken_files(broken):
    with pytest.raises(ValueError):
        parse_vtt(broken)
