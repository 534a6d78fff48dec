"""The import graph of the project's own modules, read from the source: the layers import downward only.

- the engine imports nothing of the rollout side;
- the judges (rollout.judges) import nothing of the agent loop; they reach models through the model
  layer (rollout.models) and tools through the MCP host (rollout.mcp);
- the model layer imports neither the agent nor the judges;
- the MCP host (rollout.mcp) imports neither the agent, the judges nor the servers command above it;
- the judging package (engine.judging) imports nothing of the engine but engine.contract (kernels it may);
- a module outside engine.judging imports the package's face (``from engine.judging import ...``), never one
  of its modules;
- no module imports a private module (``_name``) of another package;
- of the engine only the apps (engine.apps) import the apps, and of the model layer and the judges only
  the judges' command line (rollout.judges.cli);
- no function imports a project module (an import inside a function hides an edge of the graph);
- the graph of module-level imports has no cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "kernels", "rollout")
AGENT = ("rollout.cli", "rollout.curate", "rollout.dialogue", "rollout.errors", "rollout.executor",
         "rollout.exposure", "rollout.output", "rollout.prompts", "rollout.record", "rollout.runner",
         "rollout.scripted", "rollout.tasks", "rollout.toolrunner", "rollout.workspace")
"""The agent loop: what the judges and the model layer must not import."""


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _targets(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    """The project modules an import statement names (`from a import b` names a.b when that is a module)."""
    assert not getattr(node, "level", 0), f"{module}: relative import (the project imports absolutely)"
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
    return [n for n in names if n.split(".")[0] in PACKAGES]


def _imports(module: str) -> tuple[set[str], list[tuple[int, str]]]:
    """The module-level project imports of a module, and (line, name) of those made inside a function."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    top: set[str] = set()
    inner: list[tuple[int, str]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for name in _targets(child, module):
                    (inner.append((child.lineno, name)) if in_function else top.add(name))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return top, inner


GRAPH = {m: _imports(m) for m in MODULES}


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _offenders(sources: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(f"{m} -> {t}" for m, (top, inner) in GRAPH.items() if _under(m, sources)
                  for t in top | {n for _, n in inner} if _under(t, forbidden))


def test_the_graph_is_read():
    assert "rollout.judges.run" in GRAPH and "engine.evaluators.base" in GRAPH
    assert "rollout.models.registry" in GRAPH["rollout.judges.pool"][0]
    assert "engine.contract" in GRAPH["rollout.scripted"][0]


def _edges(sources: Callable[[str], bool]) -> list[tuple[str, str]]:
    """(module, imported) of every project import of the modules `sources` admits, those inside functions too."""
    return sorted((m, t) for m, (top, inner) in GRAPH.items() if sources(m) for t in top | {n for _, n in inner})


def test_judging_imports_only_the_contract():
    """engine.judging sits under the evaluators and the judge app: of the engine it imports engine.contract only."""
    assert [f"{m} -> {t}" for m, t in _edges(lambda m: _under(m, ("engine.judging",)))
            if _under(t, ("engine",)) and not _under(t, ("engine.judging", "engine.contract"))] == []
    assert "engine.contract" in GRAPH["engine.judging.questions"][0]


def test_judging_is_imported_through_its_face():
    """Outside engine.judging, `from engine.judging import name` only: never a module of the package."""
    outside = [f"{m} -> {t}" for m, t in _edges(lambda m: not _under(m, ("engine.judging",)))
               if t.startswith("engine.judging.")]
    assert outside == []
    assert "engine.judging" in GRAPH["engine.evaluators.call_outcomes"][0]


def _private(module: str) -> bool:
    return any(part.startswith("_") and part != "__init__" for part in module.split("."))


def _package(module: str) -> str:
    path = MODULES[module]
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def test_no_private_module_of_another_package():
    """A module named `_name` is its package's own: no module of another package imports it."""
    assert [f"{m} -> {t}" for m, t in _edges(lambda m: True)
            if t in MODULES and _private(t) and _package(t) != _package(m)] == []


def test_only_the_front_door_imports_the_apps():
    """engine.apps is the top of the engine: nothing else of the engine imports it, nor the model layer,
    nor the judges but their command line."""
    def below(m: str) -> bool:
        return (_under(m, ("engine",)) and not _under(m, ("engine.apps",))
                or _under(m, ("rollout.models", "rollout.judges")) and m != "rollout.judges.cli")

    assert [f"{m} -> {t}" for m, t in _edges(below) if _under(t, ("engine.apps",))] == []
    assert "engine.apps" in GRAPH["rollout.judges.cli"][0] or "engine.apps.kit" in GRAPH["rollout.judges.cli"][0]


@pytest.mark.parametrize(("sources", "forbidden"), [
    (("engine", "kernels"), ("rollout",)),
    (("rollout.judges",), AGENT),
    (("rollout.models",), (*AGENT, "rollout.judges", "rollout.mcp", "rollout.servers")),
    (("rollout.mcp",), (*AGENT, "rollout.judges", "rollout.servers_command")),
])
def test_no_upward_import(sources, forbidden):
    assert _offenders(sources, forbidden) == []


def test_no_project_import_inside_a_function():
    assert sorted(f"{m}:{line} {name}" for m, (_, inner) in GRAPH.items() for line, name in inner) == []


def test_no_import_cycle():
    edges = {m: {t for t in top if t in GRAPH} for m, (top, _) in GRAPH.items()}
    # a package's __init__ importing its own modules is how a package exposes them, not a cycle
    edges = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in edges.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            strongconnect(v)
    assert cycles == []
