"""Tool-use analytics (engine.evaluators.tool_use): Proactivity, Success Rate (micro over all calls, as
VisualToolBench's eq. 4; and over the calls that carry is_error) and Volume, against a plain per-task Python
version, the undefined cases, and the report table."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from engine.contract import parse_trajectories
from engine.evaluators import tool_use
from engine.evaluators.base import Verdicts
from engine.reports.read import ModelResult
from engine.reports.tables import tool_use_table

USE = tool_use.ToolUse()


def _call(flag: object, result: str = "ok") -> dict:
    call = {"name": "images/crop", "arguments": {"x": 1}, "result": result}
    if flag is not None:
        call["is_error"] = flag
    return call


def _file(tasks: dict[str, list[list[dict]]]) -> object:
    root = [{"id": tid, "type": "fam", "steps": [{"step": i + 1, "calls": calls} for i, calls in enumerate(steps)]}
            for tid, steps in tasks.items()]
    return parse_trajectories(Path("pred.json"), root)


def plain(tasks: dict[str, list[list[dict]]]) -> dict[str, float | None]:
    """The spec's equations 3-5, written out task by task (eq. 4: a call is valid unless it reports an
    error), and the flagged-calls variant."""
    n = len(tasks)
    with_calls, calls, flagged, valid, not_error = 0, 0, 0, 0, 0
    for steps in tasks.values():
        task_calls = [c for step in steps for c in step]
        if len(task_calls) > 0:
            with_calls += 1
        for c in task_calls:
            calls += 1
            if c.get("is_error") is not True:
                not_error += 1
            if "is_error" in c:
                flagged += 1
                if c["is_error"] is False:
                    valid += 1
    return {"proactivity": with_calls / n, "success_rate": not_error / calls if calls else None,
            "success_rate_flagged": valid / flagged if flagged else None, "volume": calls / n}


def _random_tasks(rng: random.Random, n: int) -> dict[str, list[list[dict]]]:
    tasks = {}
    for i in range(n):
        steps = [[_call(rng.choice([True, False, False, None]), rng.choice(["ok", "error: none", "Error"]))
                  for _ in range(rng.randint(0, 3))] for _ in range(rng.randint(0, 3))]
        tasks[f"t{i}"] = steps
    return tasks


@pytest.mark.parametrize("seed", range(5))
def test_formulas_match_the_plain_version(seed: int) -> None:
    rng = random.Random(seed)
    tasks = _random_tasks(rng, 12)
    values = USE.compute(_file(tasks))
    ids = list(tasks)
    assert USE.aggregate(values, ids)["tool_use"] == pytest.approx(plain(tasks))
    half = ids[::2]
    assert USE.aggregate(values, half)["tool_use"] == pytest.approx(plain({i: tasks[i] for i in half}))


def test_success_rate_is_micro_over_calls_and_volume_counts_every_task() -> None:
    # task a: 3 calls, 1 failed; task b: 1 call, failed; task c: no call
    tasks = {"a": [[_call(False), _call(True)], [_call(False)]], "b": [[_call(True)]], "c": []}
    out = USE.aggregate(USE.compute(_file(tasks)), ["a", "b", "c"])["tool_use"]
    assert out["success_rate"] == pytest.approx(2 / 4)  # micro: 2 valid of 4 calls (macro would be (2/3 + 0) / 2)
    # a call without is_error counts as valid over all calls (eq. 4), and not at all over the flagged ones
    tasks["c"] = [[_call(None)]]
    out = USE.aggregate(USE.compute(_file(tasks)), ["a", "b", "c"])["tool_use"]
    assert out["success_rate"] == pytest.approx(3 / 5) and out["success_rate_flagged"] == pytest.approx(2 / 4)
    tasks["c"] = []
    out = USE.aggregate(USE.compute(_file(tasks)), ["a", "b", "c"])["tool_use"]
    assert out["proactivity"] == pytest.approx(2 / 3)
    assert out["volume"] == pytest.approx(4 / 3)  # the zero-call task counts


def test_validity_comes_from_is_error_never_from_the_text() -> None:
    tasks = {"a": [[_call(False, '{"error": null, "file": "error_log.txt"}'), _call(True, "all fine")]]}
    counts = USE.compute(_file(tasks)).per_id["a"]["tool_use"]
    assert counts == {"calls": 2, "flagged": 2, "valid": 1}


def test_success_rate_is_null_without_calls_and_the_flagged_one_without_flags() -> None:
    unflagged = {"a": [[_call(None), _call(None)]], "b": []}
    out = USE.aggregate(USE.compute(_file(unflagged)), ["a", "b"])["tool_use"]
    assert out == {"proactivity": 0.5, "success_rate": 1.0, "success_rate_flagged": None, "volume": 1.0}
    none = {"a": [], "b": [[]]}
    assert USE.aggregate(USE.compute(_file(none)), ["a", "b"])["tool_use"] == {
        "proactivity": 0.0, "success_rate": None, "success_rate_flagged": None, "volume": 0.0}
    assert USE.aggregate(Verdicts(), [])["tool_use"] == {"proactivity": None, "success_rate": None,
                                                              "success_rate_flagged": None, "volume": None}


def test_evaluator_declaration() -> None:
    card = USE.card
    assert card.name == "tool_use" and card.suffix is None
    assert [m.key for m in card.metrics] == ["tool_use.proactivity", "tool_use.success_rate",
                                             "tool_use.success_rate_flagged", "tool_use.volume"]
    assert all(m.aggregation == "evaluator" and not m.column for m in card.metrics)


def test_report_table_has_the_columns_overall_and_per_family() -> None:
    block = {"tool_use": {"proactivity": 0.5, "success_rate": None, "volume": 2.0}}
    results = [ModelResult("m", Path("r.json"), block, {"fam": {"tool_use": {"proactivity": 1.0, "success_rate": 0.25,
                                                                             "volume": 3.0}}}),
               ModelResult("old", Path("o.json"), {}, {})]
    table = tool_use_table(results)
    assert table is not None and table.column("Model") == ["m"]
    row = table.records()[0]
    assert row["Tool-Call Proactivity"] == 0.5 and row["Tool-Call Success Rate"] is None
    assert row["fam Tool-Call Success Rate"] == 0.25 and row["fam Tool-Call Volume"] == 3.0
    assert "–" in table.to_markdown()
    assert tool_use_table(results[1:]) is None
