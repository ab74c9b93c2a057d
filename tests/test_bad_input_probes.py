import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bad_input_probes.py"


def test_every_bad_input_probe_ends_in_one_line_with_exit_code_2():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 not ending in one line with exit 2" in done.stderr
    assert done.stdout.count("| 2 |") >= 66
    assert done.stdout.count("another run writes here: pid <pid>") == 3  # one writer per output folder
