"""A benchmark script of the checkout (``benchmarks/<name>.py``) loaded as a module, for its tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS_DIR = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a fresh module named ``<name>_benchmark_under_test`` (registered in
    ``sys.modules``, as dataclasses and pickling need; a later call replaces it).

    Raises:
        FileNotFoundError: no such script (benchmarks live in a source checkout, not in an installed wheel).
    """
    path = BENCHMARKS_DIR / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such benchmark script (benchmarks ship with the source checkout)")
    spec = importlib.util.spec_from_file_location(f"{name}_benchmark_under_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
