"""One evaluator shape: every evaluator of the registry is one object of a `Plain` subclass of its own module
that satisfies the `Evaluator` protocol; it declares `partial` exactly when it can find an entry incomplete; no
method of it forwards to a module function, and no module function shares a method's name; the verdict store
decides what to write from what an evaluator declares, never by reflection."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from engine.evaluators import names
from engine.evaluators.protocol import Evaluator, Plain

ROOT = Path(__file__).resolve().parents[1]


def _shapes() -> dict[str, type[Plain]]:
    """Module name -> the Plain subclass it defines, for every module of the registry that defines one."""
    found = {}
    for name in names():
        module = importlib.import_module(f"engine.evaluators.{name}")
        own = [c for _, c in inspect.getmembers(module, inspect.isclass)
               if issubclass(c, Plain) and c is not Plain and c.__module__ == module.__name__]
        assert len(own) <= 1, (name, own)
        if own:
            found[name] = own[0]
    return found


def test_every_evaluator_is_one_plain_object_satisfying_the_protocol() -> None:
    shapes = _shapes()
    assert set(shapes) == {"m3_judges", "call_outcomes", "vtb_rubrics", "answer_equivalence", "verifiers", "tool_use"}
    for name, shape in shapes.items():
        made = shape()
        assert isinstance(made, Evaluator) and made.card.name == name


def test_an_evaluator_that_finds_entries_incomplete_declares_them_partial() -> None:
    shapes = _shapes()
    for name, shape in shapes.items():
        assert shape.card.partial == (shape.complete is not Plain.complete), name
    assert {n for n, s in shapes.items() if s.card.partial} == {"m3_judges", "call_outcomes", "vtb_rubrics"}


def test_no_method_forwards_to_a_module_function_of_its_name() -> None:
    for name in _shapes():
        tree = ast.parse((ROOT / "engine" / "evaluators" / f"{name}.py").read_text(encoding="utf-8"))
        functions = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        methods = {m.name for c in tree.body if isinstance(c, ast.ClassDef)
                   for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
        assert not functions & methods, (name, functions & methods)


def test_the_verdict_store_uses_no_reflection() -> None:
    tree = ast.parse((ROOT / "rollout" / "judges" / "verdicts.py").read_text(encoding="utf-8"))
    calls = [node for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"]
    assert not calls, [ast.unparse(c) for c in calls]
