"""One writer per output folder: a second run stops at once naming the holder; a dead holder's lock is taken over."""

import contextlib
import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from nemo_pc.cli import main
from nemo_pc.parts.output_lock import LOCK_NAME, OutputFolderLocked, hold_output_folder
from nemo_pc.testing.faults import held_elsewhere


@pytest.fixture
def holder():
    """Holds folders from another process until the test ends: ``holder(folder)`` returns that process's pid."""
    with contextlib.ExitStack() as stack:
        yield lambda folder: stack.enter_context(held_elsewhere(folder))


def _wait_gone(pid: int) -> None:
    """Waits until a killed process has exited (a zombie or reaped): its descriptors, and so its lock, are gone."""
    for _ in range(1000):
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                return
        except FileNotFoundError:
            return
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} still runs")


def test_the_lock_names_its_holder_and_is_removed_at_the_end(tmp_path):
    with hold_output_folder(tmp_path / "out") as folder:
        holder = json.loads((folder / LOCK_NAME).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        assert holder["started"] and holder["command"]
    assert not (tmp_path / "out" / LOCK_NAME).exists()


def test_a_second_run_stops_at_once_naming_the_holder(tmp_path, holder):
    pid = holder(tmp_path / "out")
    with pytest.raises(OutputFolderLocked, match=rf"another run writes here: pid {pid} on "):
        with hold_output_folder(tmp_path / "out"):
            pass
    with pytest.raises(OutputFolderLocked, match=rf"pid {pid}"):  # a folder inside a held one
        with hold_output_folder(tmp_path / "out" / "corpus"):
            pass
    with hold_output_folder(tmp_path / "other"):  # other folders are free
        pass


def test_a_dead_holders_lock_is_taken_over_with_a_warning(tmp_path, holder, capsys):
    pid = holder(tmp_path / "out")
    os.kill(pid, signal.SIGKILL)
    _wait_gone(pid)
    assert (tmp_path / "out" / LOCK_NAME).is_file()  # killed: no cleanup ran
    with hold_output_folder(tmp_path / "out") as folder:
        assert json.loads((folder / LOCK_NAME).read_text())["pid"] == os.getpid()
    warning = capsys.readouterr().err
    assert f"taking over the lock of pid {pid}" in warning and "no longer running" in warning


def test_holding_is_reentrant_within_a_process(tmp_path):
    with hold_output_folder(tmp_path / "out"):
        with hold_output_folder(tmp_path / "out"), hold_output_folder(tmp_path / "out" / "corpus"):
            pass
        assert (tmp_path / "out" / LOCK_NAME).is_file()
    assert not (tmp_path / "out" / LOCK_NAME).exists()


@pytest.mark.parametrize(
    "command",
    [
        ["synth", "{out}", "--no-audio", "--tn", "none", "--hours", "0.01"],
        ["librispeech-pc", "{corpus}", "{out}", "--tn", "none"],
        ["formatter-data", "{out}", "--sources", "synthetic", "--tn", "none"],
    ],
)
def test_cli_commands_refuse_a_held_folder_in_one_line_with_exit_code_2(tmp_path, holder, capsys, command):
    (tmp_path / "corpus").mkdir()
    pid = holder(tmp_path / "out")
    argv = [arg.format(out=tmp_path / "out", corpus=tmp_path / "corpus") for arg in command]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"nemo-pc {argv[0]}: error: {tmp_path / 'out'}: another run")
    assert f"pid {pid}" in err[0]


def test_demo_refuses_a_held_folder_with_exit_code_2(tmp_path, holder, capsys):
    from nemo_pc.pipelines.demo import command

    pid = holder(tmp_path / "out")
    with pytest.raises(SystemExit) as stop:
        command.main(["--out", str(tmp_path / "out"), "--backbone", "fastconformer", "--no-anchor"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"pid {pid}" in err[0] and "another run writes here" in err[0]
