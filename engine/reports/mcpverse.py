"""MCPVerse's Table 2 layout: per model the Success Rate (SR, the mean of the levels' rates) and the rates of
L1, L2 and L3, in % to one decimal, in one column group per tool exposure mode (Oracle, Standard,
Max-Scale) where the runs say which mode they were; read from the answer equivalence aggregate
(engine.evaluators.answer_equivalence: answer_sr, answer_sr_l1..l3)."""

from __future__ import annotations

from pathlib import Path

from engine.contract import JsonValue
from engine.reports.read import ModelResult, number
from engine.reports.tables import Table

MODES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Oracle", ("oracle",)), ("Standard", ("standard",)), ("Max-Scale", ("max-scale", "max_scale", "maxscale")))
"""The paper's modes in its order, each with the names a run may give it (without regard to case)."""
UNSTATED = "(mode not given)"
KEYS: tuple[tuple[str, str], ...] = (("answer_sr", "SR"), ("answer_sr_l1", "L1"), ("answer_sr_l2", "L2"),
                                     ("answer_sr_l3", "L3"))


def _mode_name(value: object) -> str | None:
    """The paper's name of a mode a run gives, None when it names none of them."""
    folded = value.strip().casefold() if isinstance(value, str) else None
    return next((label for label, names in MODES if folded in names), None)


def run_mode(result: ModelResult) -> str | None:
    """The mode a run says it was: its meta's ``mode`` (or ``exposure_mode``), else a folder of its path
    named after a mode (``<run>/oracle/<model>/results_eval.json``); None when it does not say."""
    for key in ("mode", "exposure_mode"):
        found = _mode_name(result.meta.get(key))
        if found is not None:
            return found
    return next((found for part in reversed(Path(result.path).parent.parts) if (found := _mode_name(part))), None)


def mcpverse_table(results: list[ModelResult]) -> Table | None:
    """One row per model with a Success Rate: SR, L1, L2, L3 (in %) per mode the runs say, in the paper's
    mode order (runs that do not say make one group after them, or the only one); models by the SR of the
    first group, best first; after the paper's columns, the answers judged and skipped over all the model's
    runs. None when no model has a Success Rate."""
    rated = [r for r in results if r.aggregate.get("answer_sr") is not None]
    if not rated:
        return None
    cells: dict[str, dict[str, ModelResult]] = {}
    for r in rated:
        model = str(r.meta.get("model") or r.name)
        mode = run_mode(r) or UNSTATED
        cells.setdefault(model, {})[mode] = r
    present = {mode for runs in cells.values() for mode in runs}
    groups = [label for label, _ in MODES if label in present] + ([UNSTATED] if UNSTATED in present else [])
    named = groups != [UNSTATED]

    def percent(r: ModelResult | None, key: str) -> float | None:
        value = None if r is None else number(r.aggregate.get(key))
        return None if value is None else 100.0 * value

    rows: list[list[JsonValue]] = []
    for model, runs in cells.items():
        rows.append([model, *(percent(runs.get(g), key) for g in groups for key, _ in KEYS),
                     sum(int(number(r.aggregate.get("answer_judged")) or 0) for r in runs.values()),
                     sum(int(number(r.aggregate.get("answer_skipped")) or 0) for r in runs.values())])
    rows.sort(key=lambda row: (row[1] is None, -(number(row[1]) or 0.0), str(row[0])))
    columns = ["Model", *((f"{g} {label}" if named else label) for g in groups for _, label in KEYS),
               "Answers Judged", "Answers Skipped"]
    note = ("Laid out as MCPVerse's Table 2: SR = (SR L1 + SR L2 + SR L3) / 3 over the levels present, and each "
            "level's success rate, in %" + (", per tool exposure mode the runs say (meta.mode or a folder named "
                                            "oracle, standard or max-scale)" if named else "") +
            "; models by the SR of the first group, best first; '–' where a model has no such run. After the "
            "paper's columns: the answers judged and skipped over the model's runs.")
    return Table(columns=columns, rows=rows, title="MCPVerse Table 2", digits=1, note=note)
