"""benchmarks/data_real_pool.py: the chunks cover a recording end to end, none longer than the limit, and a long one
is cut in its quiet stretch."""

import numpy as np
from benchmark_loader import load_benchmark
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=30, deadline=None)
@given(seconds=st.floats(min_value=0.1, max_value=70.0), seed=st.integers(0, 2**16))
def test_the_chunks_cover_the_recording_and_none_is_too_long(seconds, seed):
    bench = load_benchmark("data_real_pool")
    audio = np.random.default_rng(seed).normal(size=int(seconds * bench.RATE)).astype(np.float32)
    ranges = bench.cut_points(audio)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(audio)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    assert all(0 < end - start <= bench.MAX_SECONDS * bench.RATE for start, end in ranges)


def test_a_long_recording_is_cut_in_its_silence():
    bench = load_benchmark("data_real_pool")
    rate = bench.RATE
    audio = np.random.default_rng(0).normal(size=25 * rate).astype(np.float32)
    audio[int(11.0 * rate) : int(11.3 * rate)] = 0.0  # the only quiet stretch within 8-14 s
    (first_start, first_end), (second_start, second_end) = bench.cut_points(audio)
    assert first_start == 0 and 11.0 * rate <= first_end < 11.3 * rate
    assert second_start == first_end and second_end == len(audio)


def test_a_missing_teacher_is_named_with_exit_code_2(tmp_path, capsys):
    bench = load_benchmark("data_real_pool")
    code = bench.main([str(tmp_path / "absent.nemo"), str(tmp_path / "pool"), "--json", str(tmp_path / "r.json")])
    assert code == 2
    assert "absent.nemo: no such teacher model" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
