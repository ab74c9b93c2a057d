"""Every ``nemo-pc`` command on bad inputs (``nemo_pc.testing.bad_inputs``) ends in one stderr line and exit 2."""

import subprocess
import sys


def test_every_bad_input_probe_ends_in_one_line_with_exit_code_2():
    command = [sys.executable, "-m", "nemo_pc.testing.bad_inputs"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 not ending in one line with exit 2" in done.stderr
    assert done.stdout.count("| 2 |") >= 66
    assert done.stdout.count("another run writes here: pid <pid>") == 3  # one writer per output folder
