"""The package's layering, checked from the source: which folder may import which, and no import cycle.

``python tools/check_layers.py`` prints each layer's imports and every violation (exit 1 when there is one);
``tests/test_layers.py`` runs the same checks. Every import counts, at module level or inside a function (a
deferred import is still a dependency), except those under ``if TYPE_CHECKING:``. docs/architecture.md explains
the layers.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

PACKAGE = "nemo_pc"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

LAYERS: dict[str, frozenset[str]] = {
    # layer: the layers it may import (besides itself). Lower layers first.
    "parts": frozenset(),
    "data": frozenset({"parts"}),
    "metrics": frozenset({"parts"}),
    "losses": frozenset({"parts"}),
    "modules": frozenset({"parts", "losses"}),
    "models": frozenset({"parts", "data", "metrics", "losses", "modules"}),
    "formatter": frozenset({"parts", "data", "metrics", "models"}),
    "pipelines": frozenset({"parts", "data", "metrics", "losses", "modules", "models", "formatter"}),
    "cli": frozenset({"parts", "data", "metrics", "losses", "modules", "models", "formatter", "pipelines"}),
    "testing": frozenset({"parts", "data", "metrics", "losses", "modules", "models", "formatter", "pipelines", "cli"}),
    # nemo_pc/__init__.py and nemo_pc/_registration.py: the allowlist hook and the model registry
    "": frozenset({"parts", "models"}),
}


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = (PACKAGE, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    return skipped


def imports_of(name: str, path: Path, modules: Iterable[str]) -> set[str]:
    """The package modules that module ``name`` imports (``from a import b`` counts ``a.b`` when it is a module)."""
    known = set(modules)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skipped = _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            for alias in node.names:
                full = f"{source}.{alias.name}"
                found.add(full if full in known else source)
    return {module for module in found if module in known and module != name}


def layer_of(module: str) -> str:
    """The first folder under the package ('' for top-level modules)."""
    rest = module.split(".")[1:]
    if len(rest) >= 1 and (ROOT / rest[0]).is_dir():
        return rest[0]
    return ""


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = module_files(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def _package_edge(importer: str, imported: str) -> bool:
    """``import a.b.c`` runs ``a/__init__`` and ``a/b/__init__``; an edge from a package's ``__init__`` to its own
    submodules (or the reverse) is that mechanism, not a dependency between layers."""
    return imported.startswith(importer + ".") or importer.startswith(imported + ".")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if _package_edge(node, nxt):
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between the package's top-level folders (a folder imports another when one of its modules
    imports one of the other's), with no exception: the plain graph a reader draws."""
    folders: dict[str, set[str]] = defaultdict(set)
    for importer, imported in graph.items():
        source = layer_of(importer) or PACKAGE
        folders[source].update(layer_of(target) or PACKAGE for target in imported)
        folders[source].discard(source)
    return dict(folders)


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Each import that goes from a layer to one it may not import, as ``importer -> imported (a -> b)``."""
    found = []
    for importer, imported in sorted(graph.items()):
        source = layer_of(importer)
        for target in sorted(imported):
            layer = layer_of(target)
            if layer != source and layer not in LAYERS[source] and not _package_edge(importer, target):
                found.append(f"{importer} -> {target} ({source or PACKAGE} -> {layer or PACKAGE})")
    return found


def main() -> int:
    graph = import_graph()
    edges = defaultdict(set)
    for importer, imported in graph.items():
        for target in imported:
            if layer_of(target) != layer_of(importer):
                edges[layer_of(importer)].add(layer_of(target))
    for layer in LAYERS:
        print(f"{layer or PACKAGE:13} imports {', '.join(sorted(edges[layer])) or '-'}")
    problems = [f"layer: {line}" for line in layer_violations(graph)]
    problems += [f"cycle: {' <-> '.join(component)}" for component in cycles(graph)]
    problems += [f"folder cycle: {' <-> '.join(component)}" for component in cycles(folder_graph(graph))]
    for line in problems:
        print(line)
    print(f"{len(graph)} modules, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
