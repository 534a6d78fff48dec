"""TOBench's Table 2 layout: per model the accuracy per task family and difficulty (easy, medium, hard), then
the accuracy over the evaluated tasks (Avg, in %), and per task the tool calls, tokens (k) and cost ($),
models by Avg, best first; from the
verifiers' aggregate (engine.evaluators.verifiers: check_accuracy_evaluated, check_by_group,
check_usage)."""

from __future__ import annotations

from engine.contract import JsonValue
from engine.reports.read import ModelResult, block_of, number
from engine.reports.tables import Table

DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")
"""TOBench's difficulties in the paper's order."""


def group_order(name: str) -> tuple[tuple[int, int, str], ...]:
    """A group's place among the columns: by its parts ("<family> / <difficulty>"), a difficulty (any case)
    in the order easy, medium, hard, other parts by name.

    >>> sorted(["CS / hard", "IC / easy", "CS / easy", "CS / medium"], key=group_order)
    ['CS / easy', 'CS / medium', 'CS / hard', 'IC / easy']
    """
    parts = []
    for part in name.split(" / "):
        folded = part.strip().casefold()
        rank = DIFFICULTIES.index(folded) if folded in DIFFICULTIES else len(DIFFICULTIES)
        parts.append((0, rank, "") if rank < len(DIFFICULTIES) else (1, 0, part))
    return tuple(parts)


def tobench_table(results: list[ModelResult]) -> Table | None:
    """One row per model with verifier results, by Avg (best first): one column per group of its ``by``
    fields (family / difficulty, accuracy over the evaluated tasks of the group, in %), Avg, Tool Calls,
    Tokens (k) and Cost ($) per task; None when no model has verifier results."""
    checked = [r for r in results if r.aggregate.get("check_tasks")]
    if not checked:
        return None
    checked.sort(key=lambda r: (r.aggregate.get("check_accuracy_evaluated") is None,
                                -(number(r.aggregate.get("check_accuracy_evaluated")) or 0.0), r.name))
    groups = sorted({g for r in checked for g in block_of(r.aggregate.get("check_by_group"))}, key=group_order)

    def percent(value: JsonValue) -> float | None:
        found = number(value)
        return None if found is None else 100.0 * found

    rows: list[list[JsonValue]] = []
    for r in checked:
        by_group = block_of(r.aggregate.get("check_by_group"))
        usage = block_of(r.aggregate.get("check_usage"))
        rows.append([r.name,
                     *(percent(block_of(by_group[g]).get("check_accuracy_evaluated")) if g in by_group else None
                       for g in groups),
                     percent(r.aggregate.get("check_accuracy_evaluated")),
                     usage.get("tool_calls"), usage.get("tokens_k"), usage.get("cost_usd"),
                     r.aggregate.get("check_tasks"), r.aggregate.get("check_errors")])
    note = ("Laid out as TOBench's Table 2, models by Avg: one column per task family / difficulty (easy, medium, "
            "hard), then Avg = tasks whose checks all pass over the tasks evaluated (eq. 10-11; "
            "a task whose verifier failed is left out and counted under Evaluator Errors), in %; Tool Calls, "
            "Tokens (k) and Cost ($) are means per task over the runs whose usage the rollout recorded (cost at the "
            "verifiers' price setting).")
    return Table(columns=["Model", *groups, "Avg", "Tool Calls", "Tokens (k)", "Cost ($)", "Tasks Checked",
                          "Evaluator Errors"], rows=rows, title="TOBench Table 2", digits=2, note=note)
