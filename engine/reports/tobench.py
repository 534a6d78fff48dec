"""TOBench's Table 2 layout: per model the accuracy over the evaluated tasks (Avg, in %), the accuracy
per task family and difficulty, and per task the tool calls, tokens (k) and cost ($), from the
verifiers' aggregate (engine.evaluators.verifiers: check_accuracy_evaluated, check_by_group,
check_usage)."""

from __future__ import annotations

from engine.reports.read import ModelResult
from engine.reports.tables import Table


def tobench_table(results: list[ModelResult]) -> Table | None:
    """One row per model with verifier results (in the given order): Avg, one column per group of its
    ``by`` fields (family / difficulty, accuracy over the evaluated tasks of the group, in %), Tool
    Calls, Tokens (k) and Cost ($) per task; None when no model has verifier results."""
    checked = [r for r in results if r.aggregate.get("check_tasks")]
    if not checked:
        return None
    groups = sorted({g for r in checked for g in (r.aggregate.get("check_by_group") or {})})

    def percent(value: float | None) -> float | None:
        return None if value is None else 100.0 * value

    rows = []
    for r in checked:
        by_group = r.aggregate.get("check_by_group") or {}
        usage = r.aggregate.get("check_usage") or {}
        rows.append([r.name, percent(r.aggregate.get("check_accuracy_evaluated")),
                     *(percent(by_group[g]["check_accuracy_evaluated"]) if g in by_group else None for g in groups),
                     usage.get("tool_calls"), usage.get("tokens_k"), usage.get("cost_usd"),
                     r.aggregate.get("check_tasks"), r.aggregate.get("check_errors")])
    note = ("Laid out as TOBench's Table 2: Avg = tasks whose checks all pass over the tasks evaluated (eq. 10-11; "
            "a task whose verifier failed is left out and counted under Evaluator Errors), in %; one column per "
            "task family / difficulty; Tool Calls, Tokens (k) and Cost ($) are means per task over the runs whose "
            "usage the rollout recorded (cost at the verifiers' price setting).")
    return Table(columns=["Model", "Avg", *groups, "Tool Calls", "Tokens (k)", "Cost ($)", "Tasks Checked",
                          "Evaluator Errors"], rows=rows, title="TOBench Table 2", digits=2, note=note)
