"""benchmarks/speed_aed_decoding.py: its plain rounds switch the AED's fast search steps off, and only for them."""

from benchmark_loader import load_benchmark


def test_the_plain_rounds_switch_the_fast_steps_off_and_back():
    import nemo_pc.modules.aed_search as aed_search

    bench = load_benchmark("speed_aed_decoding")
    fast = aed_search.fast_steps
    with bench._plain_steps():
        assert aed_search.fast_steps is not fast
        with aed_search.fast_steps(object()) as cached:  # takes no module of the search
            assert cached == 0
    assert aed_search.fast_steps is fast
