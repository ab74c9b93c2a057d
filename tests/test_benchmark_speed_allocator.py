"""benchmarks/speed_allocator.py: the libraries it preloads, the order it runs them in, its means and ratios, and a
clear stop for an allocator it does not know or cannot find."""

import pytest
from benchmark_loader import load_benchmark

bench = load_benchmark("speed_allocator")


def test_library_paths_come_from_the_folders_and_glibc_preloads_nothing(tmp_path):
    (tmp_path / "libtcmalloc_minimal.so.4").write_bytes(b"")
    assert bench.library_path("glibc", (str(tmp_path),)) is None
    assert bench.library_path("tcmalloc", ("/nowhere", str(tmp_path))) == str(tmp_path / "libtcmalloc_minimal.so.4")
    with pytest.raises(SystemExit, match="jemalloc: libjemalloc.so.2 is in none of"):
        bench.library_path("jemalloc", (str(tmp_path),))
    with pytest.raises(SystemExit, match="unknown allocator 'mymalloc'"):
        bench.library_path("mymalloc")


def test_each_round_turns_the_order_so_every_allocator_goes_first_once():
    order = ["glibc", "tcmalloc", "jemalloc"]
    rounds = [bench.rotated(order, k) for k in range(3)]
    assert [r[0] for r in rounds] == order
    assert all(sorted(r) == sorted(order) for r in rounds)
    assert bench.rotated(order, 3) == order


def test_summary_means_over_rounds_and_ratios_to_the_first_allocator():
    def run(allocator, fit, steps, val, plain):
        return {"allocator": allocator, "fit_seconds": fit, "step_seconds_validating": steps,
                "validation_seconds": val, "step_seconds_no_validation": plain}  # fmt: skip

    runs = [run("glibc", 120, 90, 25, 100), run("tcmalloc", 80, 60, 15, 70),
            run("tcmalloc", 100, 70, 15, 60), run("glibc", 120, 100, 15, 80)]  # fmt: skip
    glibc, tcmalloc = bench.summary(runs, ["glibc", "tcmalloc"])
    assert glibc["fit_seconds"] == 120 and glibc["fit_speedup"] == 1.0
    assert glibc["step_seconds_validating"] == 95 and glibc["validation_seconds"] == 20
    assert tcmalloc["fit_seconds"] == 90 and tcmalloc["step_seconds_no_validation"] == 65
    assert tcmalloc["fit_speedup"] == round(120 / 90, 3)
    assert tcmalloc["steps_speedup_no_validation"] == round(90 / 65, 3)
    table = bench.markdown({"rounds": 2, "steps": 200, "val_every": 100, "summary": [glibc, tcmalloc]})
    assert "| glibc | 120.0 | 95.0 | 20.0 | 90.0 | 1.00x | 1.00x |" in table
    assert "| tcmalloc | 90.0 | 65.0 | 15.0 | 65.0 | 1.33x | 1.39x |" in table and "weights" not in table
    flagged = bench.markdown({"rounds": 2, "steps": 200, "val_every": 100, "summary": [glibc], "same_weights": False})
    assert "Every run trained NOT the same weights" in flagged


def test_a_folder_that_is_no_demo_folder_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(["--demo-dir", str(tmp_path)])
    assert stop.value.code == 2 and "not a demo folder" in capsys.readouterr().err


def test_the_corpus_alone_is_timed_with_steps_0():
    timed = [("glibc", 100.0), ("tcmalloc", 80.0), ("tcmalloc", 120.0), ("glibc", 110.0)]
    runs = [{"allocator": allocator, "synth_seconds": seconds} for allocator, seconds in timed]
    glibc, tcmalloc = bench.summary(runs, ["glibc", "tcmalloc"])
    assert glibc == {"allocator": "glibc", "synth_seconds": 105.0, "synth_speedup": 1.0}
    assert tcmalloc == {"allocator": "tcmalloc", "synth_seconds": 100.0, "synth_speedup": 1.05}
    table = bench.markdown(
        {"rounds": 2, "steps": 0, "val_every": 100, "synth_hours": 0.1, "summary": [glibc, tcmalloc]}
    )
    assert "| tcmalloc | 100.0 | 1.05x |" in table and "fit s" not in table and "0.1 h corpus" in table


def test_nothing_to_time_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(["--demo-dir", str(tmp_path), "--steps", "0"])
    assert stop.value.code == 2 and "--steps 0 needs --synth-hours" in capsys.readouterr().err
