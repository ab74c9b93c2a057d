"""The record of what made a result: a checkout's revision (``+dirty`` with changed tracked files), the command line
without machine paths, and the machine."""

import subprocess

import pytest

from nemo_pc.parts import provenance


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    monkeypatch.delenv(provenance.REVISION_ENV, raising=False)
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one")
    return tmp_path


def test_a_clean_checkout_gives_its_commit_and_a_changed_one_adds_dirty(checkout):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True).stdout.strip()
    assert provenance.revision(checkout) == head and not provenance.is_dirty(head)
    (checkout / "b.txt").write_text("untracked files leave the revision clean\n")
    assert provenance.revision(checkout) == head
    (checkout / "a.txt").write_text("two\n")
    assert provenance.revision(checkout) == f"{head}+dirty" and provenance.is_dirty(provenance.revision(checkout))


def test_the_environment_names_an_exported_tree_and_a_subfolder_is_no_checkout(checkout, monkeypatch, tmp_path):
    (checkout / "sub").mkdir()
    assert provenance.revision(checkout / "sub") is None  # the enclosing checkout's commit is not this tree's
    assert provenance.revision(tmp_path.parent / "nowhere") is None
    monkeypatch.setenv(provenance.REVISION_ENV, "abc1234")
    assert provenance.revision(checkout / "sub") == "abc1234"
    assert not provenance.is_dirty(None)


def test_command_line_and_machine():
    assert provenance.command_line(["examples/demo_pc.py", "--out", "a b"]) == "python examples/demo_pc.py --out 'a b'"
    assert provenance.command_line(["/opt/venv/bin/nemo-pc", "demo", "--out", "/data/run"]).startswith("nemo-pc demo")
    shown = provenance.without_machine_paths("nemo-pc demo --out '/data/my run' --dir=/x/y --n 3")
    assert shown == "nemo-pc demo --out 'my run' --dir=y --n 3"
    found = provenance.machine()
    assert set(found) == {"cpus", "cpu_model", "torch_threads", "platform", "python", "torch", "nemo", "malloc"}
    assert found["cpu_model"] is None or found["cpu_model"].strip() == found["cpu_model"] != ""
    assert found["cpus"] >= 1 and found["torch_threads"] >= 1
    assert provenance.utc_now().endswith("+00:00")


def test_malloc_library_reads_the_mapped_allocator(tmp_path):
    maps = tmp_path / "maps"
    glibc = "7f00-7f10 r-xp 00000000 08:01 12 /usr/lib/x86_64-linux-gnu/libc.so.6\n7f20-7f30 rw-p 00000000 00:00 0\n"
    maps.write_text(glibc)
    assert provenance.malloc_library(maps) == "glibc"
    tcmalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4.5.10"
    maps.write_text(glibc + f"7f40-7f50 r-xp 00000000 08:01 13 {tcmalloc}\n")
    assert provenance.malloc_library(maps) == "tcmalloc"
    maps.write_text(glibc + "7f40-7f50 r-xp 00000000 08:01 14 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2\n")
    assert provenance.malloc_library(maps) == "jemalloc"
    assert provenance.malloc_library(tmp_path / "missing") is None
    assert provenance.malloc_library() in {"glibc", "tcmalloc", "jemalloc", "mimalloc"}  # this process, on Linux


def test_speed_probe_counts_the_products_it_times(monkeypatch):
    import torch

    calls, mm = [], torch.mm
    monkeypatch.setattr(torch, "mm", lambda a, b: calls.append(a.shape) or mm(a, b))
    rate = provenance.speed_probe(seconds=0.0, size=64)
    assert calls == [(64, 64)] * 4  # one untimed warm-up, then the three timed products of a zero-second probe
    assert rate > 0 and rate == round(rate, 1)
    calls.clear()
    import time

    clock = iter(i / 100 for i in range(1000))  # a clock that reads 10 ms later at each look, whatever the load
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    rate = provenance.speed_probe(seconds=0.05, size=64)
    # a longer probe repeats until its time is spent: the warm-up, three products, then four more while the clock
    # reads 0.01-0.04 after the start; the rate counts the seven timed products over the 0.06 s that it read
    assert len(calls) == 8
    assert rate == round(2 * 64**3 * 7 / 0.06 / 1e9, 1)
