"""benchmarks/suite.py: the timer, the results writer and paths and the number formats that every benchmark script
shares; and every script's ``main(argv)``."""

import json
import math
import time
from pathlib import Path

import pytest
from benchmark_loader import BENCHMARKS_DIR, load_benchmark

suite = load_benchmark("suite")


def test_time_runs_warms_up_then_times_each_run():
    calls, cleared = [], []
    timing, last = suite.time_runs(
        lambda: calls.append(1) or len(calls), repeats=3, warmup=2, before=lambda: cleared.append(1)
    )
    assert len(calls) == len(cleared) == 5 and last == 5  # two warm-up runs, three timed
    assert len(timing.runs) == 3 and all(seconds >= 0 for seconds in timing.runs)
    assert len(suite.time_runs(lambda: None, repeats=0, warmup=0)[0].runs) == 1  # at least one timed run


def test_timing_statistics():
    timing = suite.Timing((0.3, 0.1, 0.2, 0.4))
    assert timing.median == 0.3  # the later of the two middle runs: a time that was measured
    assert timing.best == 0.1
    assert timing.spread_pct == pytest.approx(100 * 0.3 / 0.25)
    assert math.isnan(suite.spread_pct([0.0, 0.0]))


def test_stopwatch_and_call_timer():
    with suite.Stopwatch() as watch:
        inside = watch.seconds
        sum(range(10_000))
    stopped = watch.seconds
    time.sleep(0.01)
    assert 0 <= inside <= stopped == watch.seconds and watch.cpu_seconds >= 0  # stopped at the end of the block
    timer = suite.CallTimer(lambda a, b=0: a + b)
    assert timer(1, b=2) == 3 and timer(4) == 4 and len(timer.seconds) == 2


def test_results_path_names_the_script(monkeypatch, tmp_path):
    monkeypatch.chdir(BENCHMARKS_DIR.parent)
    assert suite.results_path("benchmarks/speed_lhotse.py") == Path("benchmarks/results/speed_lhotse.json")
    assert suite.results_path(Path("/x/run_all.py"), ".md") == Path("benchmarks/results/run_all.md")
    monkeypatch.chdir(tmp_path)  # outside the checkout: the absolute path
    assert suite.results_path("quality_lm_loso.py") == BENCHMARKS_DIR / "results" / "quality_lm_loso.json"


def test_write_results_records_provenance_atomically(tmp_path):
    path = suite.write_results(tmp_path / "new" / "r.json", {"wer": 0.25}, argv=["benchmarks/x.py", "--json", "r"])
    written = json.loads(path.read_text())
    assert written["wer"] == 0.25 and written["provenance"]["command"] == "python benchmarks/x.py --json r"
    assert list(path.parent.iterdir()) == [path]  # no temporary file left


def test_number_formats():
    assert suite.num(None) == suite.pct(None) == suite.p_value(None) == "-"
    assert suite.num(1.23456) == "1.2346" and suite.num(2.5, 1) == "2.5"
    assert suite.pct(0.1234) == "12.3%" and suite.pct(0.1234, 2) == "12.34%" and suite.pct(0.5, 2, "") == "50.00"
    assert suite.p_value(0.0004) == "<0.001" and suite.p_value(0.04567) == "0.046"


SCRIPTS = sorted(path.stem for path in BENCHMARKS_DIR.glob("*.py") if "def main(" in path.read_text())


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_parses_the_arguments_it_is_given(name, capsys):
    """``main(argv)`` parses ``argv``, not pytest's command line: ``--help`` prints the usage and exits 0."""
    with pytest.raises(SystemExit) as stop:
        load_benchmark(name).main(["--help"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("usage:")


def test_the_revision_is_this_trees_own(monkeypatch, tmp_path):
    import subprocess

    monkeypatch.delenv("NEMO_PC_REVISION", raising=False)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=suite.REPO, capture_output=True, text=True).stdout.strip()
    assert suite.revision().split("+")[0] == head
    monkeypatch.setenv("NEMO_PC_REVISION", "abc1234")  # a tree exported without its git folder names its revision
    assert suite.revision() == "abc1234"
    monkeypatch.delenv("NEMO_PC_REVISION")
    # an exported tree inside another checkout: that checkout's commit is not this tree's
    monkeypatch.setattr(suite, "REPO", suite.REPO / "benchmarks")
    assert suite.revision() is None


CHILD = """
import json, os, sys
from pathlib import Path
variant, work = sys.argv[2], Path(sys.argv[3])
if variant == "bad":
    sys.exit(3)
(work / variant).mkdir(parents=True, exist_ok=True)
row = {"variant": variant, "threads": os.environ["OMP_NUM_THREADS"]}
(work / variant / "row.json").write_text(json.dumps(row))
"""


def test_variant_rounds_runs_each_variant_in_rounds_and_resumes(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    work = tmp_path / "work"
    rows = list(suite.variant_rounds(script, ["a", "b", "c"], work, [str(work)], jobs=2, threads=3))
    assert [(r, row["variant"], row["threads"]) for r, row in rows] == [(0, "a", "3"), (0, "b", "3"), (1, "c", "3")]
    (work / "b" / "row.json").write_text(json.dumps({"variant": "b", "threads": "kept"}))
    resumed = list(suite.variant_rounds(script, ["b"], work, [str(work)], jobs=1, threads=1, resume=True))
    assert resumed == [(0, {"variant": "b", "threads": "kept"})]
    with pytest.raises(SystemExit, match="variant bad failed"):
        list(suite.variant_rounds(script, ["bad"], work, [str(work)], jobs=1, threads=1))


def test_shown_path_records_a_folder_under_the_working_directory_relative_to_it(tmp_path, monkeypatch):
    (tmp_path / "demo_out" / "models").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert suite.shown_path(tmp_path / "demo_out" / "models" / "tagger.nemo") == "demo_out/models/tagger.nemo"
    assert suite.shown_path("demo_out") == "demo_out"
    outside = tmp_path.parent / "elsewhere" / "demo_out"
    assert suite.shown_path(outside) == str(outside)
    assert suite.shown_path(None) is None


def _puts_a_row(value, queue):
    queue.put({"value": value * 2})


def _exits_without_a_row(value, queue):
    raise SystemExit(3)


def test_weights_digest_reads_the_weights_member_of_a_nemo_archive(tmp_path):
    import hashlib
    import io
    import tarfile

    def archive(name, weights, config):
        path = tmp_path / name
        with tarfile.open(path, "w") as tar:
            for member, data in (("./model_config.yaml", config), ("./model_weights.ckpt", weights)):
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return path

    one, other = archive("a.nemo", b"w1", b"cfg a"), archive("b.nemo", b"w1", b"cfg b")
    assert suite.weights_digest(one) == suite.weights_digest(other) == hashlib.sha256(b"w1").hexdigest()
    assert suite.weights_digest(archive("c.nemo", b"w2", b"cfg a")) != suite.weights_digest(one)
    empty = tmp_path / "empty.nemo"
    with tarfile.open(empty, "w"):
        pass
    with pytest.raises(SystemExit, match="empty.nemo: no model_weights.ckpt"):
        suite.weights_digest(empty)


def test_row_from_child_returns_the_childs_row_or_names_the_failed_run():
    assert suite.row_from_child(_puts_a_row, (21,), "doubling") == {"value": 42}
    with pytest.raises(SystemExit, match=r"the quiet run failed \(exit code 3\)"):
        suite.row_from_child(_exits_without_a_row, (1,), "the quiet run")
