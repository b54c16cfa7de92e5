"""The desk's modules import in one direction (issue 24, item 7): no module of graphs/analyze imports, even under
TYPE_CHECKING or inside a function, a module that imports it back, directly or through others."""

from __future__ import annotations

import ast
from pathlib import Path

from testkit.paths import REPO

PACKAGE = REPO / "graphs" / "analyze"


def _module(path: Path) -> str:
    return ".".join(("graphs", *path.relative_to(PACKAGE.parent).with_suffix("").parts))


def _desk_imports(path: Path) -> set[str]:
    """Every graphs.analyze module `path` imports anywhere in its text."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("graphs.analyze"):
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names if alias.name.startswith("graphs.analyze")}
    return names


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles that lead back to a module from its own imports (each found from every module on it)."""
    found: list[list[str]] = []

    def walk(path: list[str]) -> None:
        for target in sorted(graph.get(path[-1], ())):
            if target == path[0]:
                found.append([*path, target])
            elif target not in path:
                walk([*path, target])

    for module in sorted(graph):
        walk([module])
    return found


def test_no_desk_module_imports_one_that_imports_it_back() -> None:
    graph = {_module(path): _desk_imports(path) for path in PACKAGE.rglob("*.py")}
    assert "graphs.analyze.state" in graph["graphs.analyze.nodes.analyst_agent"]  # the walk sees the imports
    assert _circles(graph) == []
