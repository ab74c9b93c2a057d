"""benchmarks/speed_longform.py: the synthetic recording it builds and its seam/inside word disagreement."""

import soundfile
from benchmark_loader import load_benchmark

from nemo_pc.testing.asr import write_pc_manifest
from nemo_pc.testing.longform import agreement_table, write_results


def test_the_recording_cycles_the_utterances_with_pauses(tmp_path):
    from nemo_pc.parts.manifest import read_manifest

    entries = read_manifest(write_pc_manifest(tmp_path / "data", duration=0.5))
    spans = load_benchmark("speed_longform").write_recording(entries, 3.2, 0.25, 16000, tmp_path / "rec.wav")
    assert [index for _, _, index in spans] == [0, 1, 2, 3, 0]  # 4 x 0.75 s < 3.2 s: a fifth utterance
    assert [(start, end) for start, end, _ in spans][:2] == [(0.0, 0.5), (0.75, 1.25)]
    assert soundfile.info(str(tmp_path / "rec.wav")).frames == 5 * (8000 + 4000)


def test_seam_and_inside_disagreement_are_counted_apart():
    bench = load_benchmark("speed_longform")
    spans = [[0.0, 1.0, 0], [1.5, 2.5, 1], [3.0, 4.0, 0]]
    references = {0: {"punctuated": "Yes, go.", "normalized": "yes go"}, 1: {"punctuated": "No.", "normalized": "no"}}
    words = {
        # the seam at 2.0 s cuts the second utterance, whose word is lost; the others are intact
        "punctuated": [["Yes,", 0.1, 0.3], ["go.", 0.5, 0.9], ["Yes,", 3.1, 3.3], ["go.", 3.5, 3.9]],
        "normalized": [["yes", 0.1, 0.3], ["go", 0.5, 0.9], ["no", 1.6, 1.9], ["yes", 3.1, 3.3], ["go", 3.5, 3.9]],
    }
    table = bench.seam_agreement({"seams": [2.0], "words": words}, spans, references)
    assert table["punctuated"]["seam"] == {"utterances": 1, "words": 1, "word_disagreement": 1.0}
    assert table["punctuated"]["inside"] == {"utterances": 2, "words": 4, "word_disagreement": 0.0}
    assert table["normalized"]["seam"]["word_disagreement"] == 0.0


def test_words_go_to_the_nearest_utterance_and_seams_mark_the_cut_ones():
    bench = load_benchmark("speed_longform")
    spans = [[0.0, 1.0, 0], [1.5, 2.0, 1]]
    rows = [["a", 0.1, 0.2], ["b", 1.1, 1.2], ["c", 1.3, 1.4], ["d", 1.6, 1.7]]
    # the gap between the utterances is cut at 1.25 s: "b" (midpoint 1.15 s) is the first's, "c" the second's
    assert bench.utterance_texts(rows, spans) == ["a b", "c d"]
    assert bench.cut_by_seams(spans, [1.25, 1.8]) == [False, True]


def test_the_table_names_an_aeds_pieces_and_its_per_utterance_rtf(tmp_path):
    render = load_benchmark("render_results")
    row = {
        "audio_seconds": 600.0,
        "chunks": 160,
        "loaded_rss_mb": 1000.0,
        "peak_rss_mb": 1100.0,
        "rtf": 0.2,
        "cpu_rtf": 0.17,
        "load_average": 2.0,
        "agreement": agreement_table(0.1, 0.05),
    }
    report = {
        "model": "aed.nemo",
        "manifest": "test.json",
        "pause_seconds": 0.5,
        "chunk_seconds": 16.0,
        "context_seconds": 4.0,
        "max_piece_seconds": 10.0,
        "threads": 1,
        "per_utterance": {"audio_seconds": 100.0, "seconds": 25.0, "cpu_seconds": 21.0, "cpu_rtf": 0.21},
        "rows": [row],
    }
    path = write_results(tmp_path / "longform.json", report)
    text = render.render_longform(path)
    assert "pieces of at most 10 s cut at pauses" in text and "16 s chunks" not in text
    assert "each utterance alone: CPU RTF 0.2100" in text
    assert "| 10.00 min | 160 | 1000 MB | 1100 MB | 0.200 | 0.1700 | 2.0 | 10.0% | 5.0% | 10.0% | 5.0% |" in text
    del report["max_piece_seconds"], report["per_utterance"]
    write_results(path, report)
    assert "16 s chunks, 4 s context, 1 thread(s)" in render.render_longform(path)
