import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_hydra_evaluate_example_writes_a_report(tmp_path):
    out = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "evaluate_pc.py"),
            f"manifest={ROOT / 'manifests' / 'sample_predictions.json'}",
            f"json={out}",
            "progress=false",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "PER by mark" in done.stdout
    report = json.loads(out.read_text())
    assert report["num_utterances"] == 5 and 0 < report["metrics"]["per"] < 1
