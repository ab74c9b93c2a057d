"""The package's layering (docs/architecture.md): each folder imports only the layers below it, no cycle."""

import subprocess
import sys
from pathlib import Path

from check_layers import LAYERS, cycles, folder_graph, import_graph, layer_of, layer_violations

ROOT = Path(__file__).resolve().parents[1]


def test_every_folder_of_the_package_is_a_layer():
    graph = import_graph()
    assert {layer_of(module) for module in graph} <= set(LAYERS)


def test_no_import_goes_up_a_layer():
    assert layer_violations(import_graph()) == []


def test_no_import_cycle_between_or_inside_folders():
    assert cycles(import_graph()) == []


def test_no_cycle_between_top_level_folders():
    graph = folder_graph(import_graph())
    assert cycles(graph) == []
    assert "data" in graph["models"] and "models" not in graph.get("data", set())


def test_the_folder_graph_sees_a_cycle_through_subfolders():
    graph = {"nemo_pc.parts.sub.a": {"nemo_pc.data.b"}, "nemo_pc.data.b": {"nemo_pc.parts.c"}}
    assert folder_graph(graph) == {"parts": {"data"}, "data": {"parts"}}
    assert cycles(folder_graph(graph)) == [["data", "parts"]]


def test_the_checks_find_a_cycle_and_an_upward_import():
    graph = {
        "nemo_pc.parts.a": {"nemo_pc.data.b"},  # parts may import nothing above it
        "nemo_pc.data.b": {"nemo_pc.parts.a"},
        "nemo_pc.data.c": {"nemo_pc.data.d"},
        "nemo_pc.data.d": {"nemo_pc.data.c"},
    }
    assert layer_violations(graph) == ["nemo_pc.parts.a -> nemo_pc.data.b (parts -> data)"]
    assert cycles(graph) == [["nemo_pc.data.b", "nemo_pc.parts.a"], ["nemo_pc.data.c", "nemo_pc.data.d"]]


def test_the_command_reports_no_problem():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "check_layers.py")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    assert done.stdout.rstrip().endswith("0 problem(s)")
