"""A demo folder names the invocations that made it: ``timings.json`` keeps one record per invocation (command,
revision, dates, machine, step seconds), REPORT.md and the README's demo block say who made the folder, and records
from before revisions were kept still read."""

import json
from pathlib import Path

import pytest
from benchmark_loader import load_benchmark

from nemo_pc.parts.output_lock import LOCK_NAME
from nemo_pc.pipelines.demo.config import DemoConfig
from nemo_pc.pipelines.demo.pipeline import Demo
from nemo_pc.pipelines.demo.report import write_report
from nemo_pc.pipelines.demo.runs import folder_is_empty, made_by_section, read_runs

OLD_RUNS = [
    {"finished": "2026-11-27 15:46:15", "seconds": {"corpus": 60.0}},
    {"finished": "2026-11-27 20:03:30", "seconds": {"corpus": 0.0, "train": 120.0}},
]
REPORT = {"num_utterances": 2, "empty_share": 0.0, "normalized_output": {"wer": 0.5}}
REPORT |= {"metrics": {"wer": 0.5}, "support": {"wer": 4}}
KEYS = {"command", "revision", "started", "finished", "from_empty_folder", "machine", "seconds"}


@pytest.fixture
def demo(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMO_PC_REVISION", "0123456789abcdef0123+dirty")
    monkeypatch.setattr("sys.argv", ["examples/demo_pc.py", "--out", str(tmp_path / "out")])
    config = DemoConfig(out_dir=str(tmp_path / "out"), backbone="fastconformer", anchor=False, real_speech=False)
    return Demo(config, log=lambda message: None)


def test_each_invocation_appends_its_record(demo):
    demo.out.mkdir()
    (demo.out / LOCK_NAME).write_text("")
    assert folder_is_empty(demo.out)
    demo.timings = {"corpus": 1.5}
    first = demo._record_invocation("2026-12-01T10:00:00+00:00", True)
    assert len(first) == 1 and set(first[0]) == KEYS
    record = first[0]
    assert record["revision"] == "0123456789abcdef0123+dirty" and record["seconds"] == {"corpus": 1.5}
    assert record["command"] == f"python examples/demo_pc.py --out {demo.out}"  # the out dir as given
    assert record["started"] == "2026-12-01T10:00:00+00:00" and record["finished"].endswith("+00:00")
    assert record["machine"]["cpus"] >= 1 and record["machine"]["torch_threads"] >= 1
    assert not folder_is_empty(demo.out)
    demo.timings = {"train": 2.0}  # a resumed invocation: only the steps it ran
    second = demo._record_invocation("2026-12-01T11:00:00+00:00", False)
    assert [run["seconds"] for run in second] == [{"corpus": 1.5}, {"train": 2.0}]
    assert read_runs(demo.out) == second and not second[1]["from_empty_folder"]


def test_a_stopped_invocation_keeps_the_steps_it_finished(demo):
    demo.out.mkdir()
    demo._running = {"started": "2026-12-01T10:00:00+00:00", "from_empty_folder": True, "speed": {"start": 50.0}}
    demo._running["index"] = 0
    demo._timed("corpus", lambda: None)
    with pytest.raises(KeyboardInterrupt):  # killed in its second step: the first step's record stays
        demo._timed("train aed_prompt", lambda: (_ for _ in ()).throw(KeyboardInterrupt()))
    (stopped,) = read_runs(demo.out)
    assert stopped["finished"] is None and list(stopped["seconds"]) == ["corpus"]
    assert stopped["started"] == "2026-12-01T10:00:00+00:00" and stopped["machine"]["matmul_gflops"] == {"start": 50.0}
    demo.timings = {}  # the next invocation resumes: its record comes after the stopped one and is rewritten in place
    demo._running = {"started": "2026-12-01T11:00:00+00:00", "from_empty_folder": False, "speed": {}, "index": 1}
    demo._timed("train aed_prompt", lambda: None)
    demo._timed("formatter", lambda: None)
    runs = demo._save_record(finished=True)
    assert read_runs(demo.out) == runs and len(runs) == 2
    assert list(runs[1]["seconds"]) == ["train aed_prompt", "formatter"] and runs[1]["finished"].endswith("+00:00")
    text = "\n".join(made_by_section(runs, demo.out))
    assert "made by 2 invocations (resumed)" in text and "| 2026-12-01T10:00:00+00:00 | stopped | 0.0 |" in text
    assert "Invocation 1 stopped before its end" in text
    assert "stopped before" not in "\n".join(made_by_section(runs[1:], demo.out))


def _new_run(revision: str, empty: bool, seconds: float) -> dict:
    machine = {"cpus": 16, "torch_threads": 8, "platform": "Linux", "python": "3.11.7", "torch": "2.5", "nemo": "3.0"}
    return {
        "command": "python examples/demo_pc.py --out /data/runs/demo_out",
        "revision": revision,
        "started": "2026-12-01T10:00:00+00:00",
        "finished": "2026-12-01T11:00:00+00:00",
        "from_empty_folder": empty,
        "machine": machine,
        "seconds": {"corpus": seconds},
    }


def test_the_report_names_one_invocation_or_several(tmp_path):
    text = "\n".join(made_by_section([_new_run("a" * 40, True, 90.0)], tmp_path / "demo_out"))
    assert "`demo_out/` was made by one invocation from an empty folder: 1.5 min of steps" in text
    assert f"| 1 | `{'a' * 12}` | 2026-12-01T10:00:00+00:00 | 2026-12-01T11:00:00+00:00 | 1.5 |" in text
    assert "`python examples/demo_pc.py --out demo_out`" in text and "16 CPUs, 8 torch threads" in text
    assert "No recorded revision had tracked files changed" in text and str(tmp_path) not in text
    runs = [_new_run("a" * 40, True, 60.0), _new_run("b" * 40 + "+dirty", False, 60.0)]
    text = "\n".join(made_by_section(runs, tmp_path / "demo_out"))
    assert "made by 2 invocations (resumed): 2.0 min of steps" in text
    assert f"| 2 | `{'b' * 12}+dirty` |" in text and "Invocation 2 ran with tracked files changed" in text


def test_old_records_still_read_and_render(tmp_path):
    (tmp_path / "timings.json").write_text(json.dumps({"runs": OLD_RUNS}))
    assert read_runs(tmp_path) == OLD_RUNS
    text = "\n".join(made_by_section(OLD_RUNS, tmp_path))
    assert "2 invocations (resumed): 3.0 min" in text
    assert "| 1 | not recorded | - | 2026-11-27 15:46:15 | 1.0 | - | - |" in text
    assert "2 invocation(s) recorded no revision" in text
    (tmp_path / "models").mkdir()
    (tmp_path / "config.json").write_text(json.dumps({"hours": 0.1, "sources": ["kjv"], "seed": 0}))
    report = write_report(tmp_path, {"rnnt_conditioned": REPORT}, OLD_RUNS, "rnnt_conditioned").read_text()
    assert report.index("## How this folder was made") < report.index("## Held-out voices")


def _demo_folder(folder: Path, runs: list[dict]) -> Path:
    config = {"systems": ["rnnt_conditioned"], "hours": 0.1, "seed": 0, "base_steps": 0, "rnnt_steps": 2}
    config |= {"asr_steps": 2, "vocab_size": 64, "held_out_voices": 2, "out_dir": str(folder)}
    (folder / "eval").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "timings.json").write_text(json.dumps({"runs": runs}))
    metrics = {"wer_pc": 0.5, "per": 0.25, "cer": 0.1}
    report = {"num_utterances": 2, "normalized_output": {"wer": 0.5}, "metrics": metrics}
    (folder / "eval" / "rnnt_conditioned.json").write_text(json.dumps(report))
    return folder


def test_the_readme_block_names_revision_invocations_and_machine(tmp_path):
    render = load_benchmark("render_results")
    runs = [_new_run("b" * 40, True, 60.0), _new_run("a" * 40 + "+dirty", False, 60.0)]
    block = render.render_demo(_demo_folder(tmp_path / "new", runs))
    assert block.startswith(
        f"Run of 2026-12-01T11:00:00+00:00, revision `{'a' * 12}+dirty`, 2 invocations (resumed) "
        f"(earlier at `{'b' * 12}`), on 16 CPUs, 8 torch threads: "
    )
    assert "2 min 0 s over all 2" in block and "Source: `new/`" in block and str(tmp_path) not in block
    block = render.render_demo(_demo_folder(tmp_path / "old", OLD_RUNS))
    assert block.startswith("Run of 2026-11-27 20:03:30, revision not recorded, 2 invocations (resumed): ")
    assert str(tmp_path) not in block


def test_the_block_names_each_familys_tokenizer_and_start(tmp_path):
    render = load_benchmark("render_results")
    folder = _demo_folder(tmp_path / "run", [_new_run("a" * 40, True, 60.0)])
    assert "RNN-T 2 steps, CTC 2 steps, tokenizer 64 pieces. **" in render.render_demo(folder)
    config = json.loads((folder / "config.json").read_text())
    config |= {"rnnt_vocab_size": 32, "ctc_init": "aed_prompt", "rnnt_init": "ctc_inter"}
    (folder / "config.json").write_text(json.dumps(config))
    assert (
        "CTC tokenizer 64 pieces, RNN-T 32, the CTC from `aed_prompt`'s encoder and the RNN-Ts from `ctc_inter`'s "
        "encoder. **"
    ) in render.render_demo(folder)
    (folder / "config.json").write_text(json.dumps(config | {"backbone": "whisper_tiny", "rnnt_stack": 2}))
    assert "and the RNN-Ts from `ctc_inter`'s encoder at 40 ms frames. **" in render.render_demo(folder)
    (folder / "config.json").write_text(
        json.dumps(config | {"backbone": "whisper_tiny", "rnnt_stack": 2, "ctc_stack": 2})
    )
    assert (
        "the CTC from `aed_prompt`'s encoder at 40 ms frames and the RNN-Ts from `ctc_inter`'s encoder at 40 ms "
        "frames. **"
    ) in render.render_demo(folder)
    aed = {"backbone": "whisper_tiny", "rnnt_stack": 2, "rnnt_init": "aed_prompt", "rnnt_init_frozen_layers": 2}
    (folder / "config.json").write_text(json.dumps(config | aed))
    assert "and the RNN-Ts from `aed_prompt`'s encoder at 40 ms frames, its lower 2 blocks frozen. **" in (
        render.render_demo(folder)
    )
    (folder / "config.json").write_text(json.dumps(config | aed | {"rnnt_init_frozen_layers": -1}))
    assert "RNN-Ts from `aed_prompt`'s encoder at 40 ms frames, every block frozen. **" in render.render_demo(folder)
    (folder / "config.json").write_text(json.dumps(config | {"base_steps": 100, "rnnt_vocab_size": 64}))
    assert "base encoder 100 steps, RNN-T 2 steps, CTC 2 steps, tokenizer 64 pieces. **" in render.render_demo(folder)


def test_the_report_names_the_allocator_when_the_record_has_it(tmp_path):
    run = _new_run("b" * 40, True, 60.0)
    run["machine"] = run["machine"] | {"malloc": "tcmalloc"}
    assert "| 16 CPUs, 8 torch threads, allocator tcmalloc; Linux" in "\n".join(made_by_section([run], tmp_path / "d"))
    older = "\n".join(made_by_section([_new_run("b" * 40, True, 60.0)], tmp_path / "d"))
    assert "allocator" not in older


def test_the_report_names_the_processor_when_the_record_has_it(tmp_path):
    with_model = _new_run("b" * 40, True, 60.0)
    with_model["machine"] = with_model["machine"] | {"cpu_model": "Intel(R) Xeon(R) Processor"}
    text = "\n".join(made_by_section([with_model], tmp_path / "demo_out"))
    assert "Intel(R) Xeon(R) Processor, Linux, Python 3.11.7" in text
    older = "\n".join(made_by_section([_new_run("b" * 40, True, 60.0)], tmp_path / "demo_out"))
    assert "Xeon" not in older and "; Linux, Python 3.11.7" in older


def test_the_record_keeps_the_machines_speed_at_start_and_end(demo):
    demo.out.mkdir()
    demo.timings = {"corpus": 1.5}
    speed = {"start": 41.25, "formatter": 30.0, "end": 19.5}
    record = demo._record_invocation("2026-12-01T10:00:00+00:00", True, speed)[0]
    assert record["machine"]["matmul_gflops"] == speed
    text = "\n".join(made_by_section([record], demo.out))
    allocator = record["machine"]["malloc"]
    assert allocator in {"glibc", "tcmalloc", "jemalloc", "mimalloc"}
    speed_text = "fp32 matmul GFLOP/s 41.2 at the start, 30.0 before the formatter, 19.5 at the end;"
    assert f"torch threads, allocator {allocator}, {speed_text}" in text
    without = demo._record_invocation("2026-12-01T11:00:00+00:00", False)[1]  # a record from before the probe
    assert "matmul_gflops" not in without["machine"]
    assert "GFLOP/s" not in "\n".join(made_by_section([without], demo.out))
    half = _new_run("a" * 40, True, 60.0)
    half["machine"] = half["machine"] | {"matmul_gflops": {"end": 30.0}}
    assert "8 torch threads, fp32 matmul GFLOP/s 30.0 at the end;" in "\n".join(made_by_section([half], demo.out))


def test_the_models_table_says_what_the_validations_cost(tmp_path):
    from nemo_pc.pipelines.demo.report import models_table

    (tmp_path / "models").mkdir()
    timed = {"seconds": 600.0, "validation_seconds": 150.25, "validations": 6, "steps": 500, "parameters": 8_000_000}
    older = {"seconds": 300.0, "steps": 1000, "parameters": 7_000_000}  # a record from before the clock
    (tmp_path / "models" / "rnnt_dual.json").write_text(json.dumps(timed | {"init_from": "ctc_inter.nemo"}))
    (tmp_path / "models" / "ctc_inter.json").write_text(json.dumps(older | {"init_from": None}))
    lines = models_table(tmp_path, {"backbone": "whisper_tiny"})
    assert "| model | steps | parameters | training seconds | of which validation | seconds per step |" in lines[0]
    row = {line.split(" | ")[0].removeprefix("| "): line for line in lines[2:]}
    assert row["`rnnt_dual.nemo`"].startswith("| `rnnt_dual.nemo` | 500 | 8,000,000 | 600.0 | 150.2 (6) | 1.20 |")
    assert row["`ctc_inter.nemo`"].startswith("| `ctc_inter.nemo` | 1000 | 7,000,000 | 300.0 | - | 0.30 |")
