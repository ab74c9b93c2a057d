"""benchmarks/quality_longform.py: corpus-level scores over utterances, the SRT cue figures, the window option, and
the table rendered from its results file."""

import argparse

import pytest
from benchmark_loader import load_benchmark

from nemo_pc.parts.longform import CueRules, TimedWord, build_segments
from nemo_pc.testing.longform import agreement_table, write_results


def test_scores_sum_counts_over_utterances():
    bench = load_benchmark("quality_longform")
    scores = bench.corpus_scores(["Yes, go.", "no"], ["yes go", "no"])
    # case and marks do not count for WER; WER-PC counts "Yes" -> "yes" and both lost marks of 5 tokens
    assert scores["wer"] == 0.0 and scores["wer_pc"] == pytest.approx(3 / 5)
    assert scores["per"] == 1.0 and scores["per_operations"] == 2
    assert (scores["utterances"], scores["words"], scores["hypothesis_words"]) == (2, 3, 3)
    # one error in five reference words: 20%, not the mean of the utterances' rates (50%)
    assert bench.corpus_scores(["a b c d", "e"], ["a b c d", "x"])["wer"] == pytest.approx(0.2)


def test_cue_figures_say_why_each_cue_ended():
    bench = load_benchmark("quality_longform")
    words = [
        TimedWord("Hello,", 0.0, 0.5),
        TimedWord("world.", 0.6, 1.0),
        TimedWord("again", 1.2, 1.5),
        TimedWord("more", 2.5, 2.9),
        TimedWord("and", 3.0, 3.3),
        TimedWord("more", 3.4, 3.8),
    ]
    rules = CueRules(max_seconds=1.0)
    figures = bench.cue_figures(build_segments(words, None, 4.0, rules), rules)
    # "Hello, world." ends at its mark, "again" at the 1 s pause, "more and" at the 1 s cap, "more" is the last
    assert figures["cues"] == 4
    assert figures["ended_by"] == {"mark": 1, "pause": 1, "cap": 1}
    assert figures["max_seconds"] == pytest.approx(1.0) and figures["mean_seconds"] == pytest.approx(2.5 / 4)
    assert (figures["max_lines"], figures["max_line_chars"], figures["max_cue_chars"]) == (1, 13, 13)


def test_boundary_times_measure_the_matched_first_and_last_words():
    bench = load_benchmark("quality_longform")
    spans = [[0.0, 2.0, 0], [2.5, 4.0, 1]]
    rows = [["a", 0.1, 0.5], ["b", 0.6, 1.9], ["x", 2.0, 2.2], ["c", 2.6, 3.0], ["d", 3.1, 3.5]]
    # "x" is an insertion (no time counted); "d" replaces "e", so its end counts against the second utterance's end
    times = bench.boundary_times(rows, spans, ["a b", "c e"], limit=0.3)
    assert times["bounds"] == 4
    assert times["median_seconds"] == pytest.approx(0.1)  # errors 0.1, 0.1, 0.1, 0.5
    assert times["within_limit"] == pytest.approx(0.75)
    # a word given to the wrong utterance shows: "b" timed in the second utterance's span
    late = [["a", 0.1, 0.5], ["b", 2.6, 2.9], ["c", 3.0, 3.2], ["e", 3.3, 3.9]]
    assert bench.boundary_times(late, spans, ["a b", "c e"])["within_limit"] == pytest.approx(0.5)
    assert bench.boundary_times([], spans, ["a b", "c e"])["bounds"] == 0


def test_windows_are_chunk_and_context_pairs():
    bench = load_benchmark("quality_longform")
    assert bench.parse_windows("16:4,6:1") == [(16.0, 4.0), (6.0, 1.0)]
    for bad in ("16", "16:4:1", "a:b"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench.parse_windows(bad)


def test_the_table_renders_from_the_results_file(tmp_path):
    render = load_benchmark("render_results")
    score = {
        "wer": 0.25,
        "wer_pc": 0.3,
        "per": 0.5,
        "utterances": 2,
        "words": 8,
        "hypothesis_words": 7,
        "per_operations": 4,
    }
    no_marks = {**score, "per": 0.0, "per_operations": 0}
    window = {
        "chunk_seconds": 16.0,
        "context_seconds": 4.0,
        "chunks": 3,
        "cpu_rtf": 0.05,
        "modes": {
            mode: {"longform_vs_reference": score, "longform_vs_per_utterance": no_marks, "joined_wer": 0.2}
            for mode in ("punctuated", "normalized")
        },
        "agreement": agreement_table(0.1, 0.0),
        "cues": {
            "cues": 5,
            "mean_seconds": 2.0,
            "max_seconds": 6.5,
            "max_lines": 2,
            "max_line_chars": 41,
            "ended_by": {"mark": 1, "pause": 2, "cap": 1},
        },
    }
    model = {
        "model": "rnnt_dual.nemo",
        "modified": "2026-11-27 11:42 UTC",
        "windows": [window],
        "per_utterance_vs_reference": {"punctuated": score, "normalized": score},
    }
    results = {
        "utterances": 2,
        "manifest": "test.json",
        "pause_seconds": 0.5,
        "audio_seconds": 600.0,
        "threads": 1,
        "models": [model],
    }
    path = write_results(tmp_path / "longform_trained.json", results)
    text = render.render_longform_trained(path)
    assert "recording of 10.0 min" in text and "`rnnt_dual.nemo` (2026-11-27 11:42 UTC)" in text
    # PER against per-utterance text with no mark on either side is no figure; the normalized mode has no PER
    assert "| `rnnt_dual` | 16 + 4 s | P | 25.0% | 25.0% | 20.0% | 50.0% | 50.0% | 25.0% | - | 10.0% | 0.0% |" in text
    assert "| `rnnt_dual` | 16 + 4 s | N | 25.0% | 25.0% | 20.0% | - | - | 25.0% | - | 10.0% | 0.0% |" in text
    # a results file from before the word-time figure shows none
    assert "| `rnnt_dual` | 16 + 4 s | 3 | 0.050 | 7 / 8 | 5 | 2.0 s | 6.5 s | 2 | 41 | 1 / 2 / 1 | - |" in text
    window["boundary_times"] = {"bounds": 4, "median_seconds": 0.12, "within_limit": 0.75, "limit": 0.3}
    write_results(path, results)
    assert "| 1 / 2 / 1 | 0.12 s (75% ≤ 0.3 s) |" in render.render_longform_trained(path)


def test_an_aed_row_names_its_pieces(tmp_path):
    """An AED is measured on pieces cut at pauses, not in chunk windows; its row names the longest piece."""
    render = load_benchmark("render_results")
    assert render._longform_window({"chunk_seconds": 16.0, "context_seconds": 4.0}) == "16 + 4 s"
    aed = {"chunk_seconds": None, "context_seconds": None, "max_piece_seconds": 10.0, "spread_pieces": 0}
    assert render._longform_window(aed) == "pieces ≤ 10 s"
    bench = load_benchmark("quality_longform")
    args = bench.parse_args(["--model", "a.nemo", "--manifest", "m.json", "--max-piece-seconds", "8"])
    assert args.max_piece_seconds == 8.0 and args.windows == [(16.0, 4.0)]
