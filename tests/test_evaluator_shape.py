"""The verdict store decides what to write from what an evaluator declares, never by reflection: it names the
incomplete ids in a file's meta for an evaluator whose entries may be partial, and every evaluator that can
find an entry incomplete declares it."""

from __future__ import annotations

import ast
from pathlib import Path

from engine.evaluators import evaluators
from engine.evaluators.base import Judge

ROOT = Path(__file__).resolve().parents[1]


def test_the_verdict_store_uses_no_reflection() -> None:
    tree = ast.parse((ROOT / "rollout" / "judges" / "verdicts.py").read_text(encoding="utf-8"))
    calls = [node for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"]
    assert not calls, [ast.unparse(c) for c in calls]


def test_an_evaluator_that_finds_entries_incomplete_declares_them_partial() -> None:
    judged = [e for e in evaluators() if e.judge is not None]
    assert judged
    for found in judged:
        overrides = type(found.judge).complete is not Judge.complete
        assert found.judge.partial == overrides, found.name
    assert {e.name for e in judged if e.judge is not None and e.judge.partial} == {"m3_judges", "call_outcomes",
                                                                                   "vtb_rubrics"}
