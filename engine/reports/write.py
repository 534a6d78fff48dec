"""Writing a run's reports: leaderboard, family, budget, call outcome and tool-use tables (md, csv, json)
and plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.contract import atomic_write_json, atomic_write_text
from engine.metricspec import AVERAGE
from engine.reports.plots import (calls_chart, family_chart, leaderboard_chart, outcomes_chart, threshold_chart,
                                  tool_use_chart)
from engine.reports.read import GRID_FILE, collect_run, load_threshold_grid
from engine.reports.tables import (budget_table, calls_table, families_markdown, family_tables, leaderboard_table,
                                   outcomes_table, tool_use_table)


def write_reports(run_dir: Path, out_dir: Path | None = None, sort_by: str = AVERAGE) -> list[Path]:
    """Write the run's leaderboard, family and budget tables (md/csv/json) and plots, and the call
    outcomes, tool-use and outcome checks tables and plots when some model has them; returns the paths.

    Files go to out_dir (default: run_dir), each written atomically.
    """
    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir
    results = collect_run(run_dir)
    board = leaderboard_table(results, sort_by)
    families = family_tables(results, sort_by)
    rank = {name: i for i, name in enumerate(board.column("Model"))}
    ranked = sorted(results, key=lambda r: rank[r.name])
    budget = budget_table(ranked)
    calls = calls_table(ranked)
    tools = tool_use_table(ranked)
    outcomes = outcomes_table(ranked)
    written: list[Path] = []

    def text(name: str, content: str) -> None:
        atomic_write_text(out / name, content)
        written.append(out / name)

    def obj(name: str, content: Any) -> None:
        atomic_write_json(out / name, content)
        written.append(out / name)

    for stem, table in (("leaderboard", board), ("budget", budget), ("calls", calls), ("tool_use", tools),
                        ("outcomes", outcomes)):
        if table is None:
            continue
        text(f"{stem}.md", table.to_markdown())
        text(f"{stem}.csv", table.to_csv())
        obj(f"{stem}.json", table.to_json())
    text("families.md", families_markdown(families))
    obj("families.json", {family: table.to_json() for family, table in families.items()})
    written.append(leaderboard_chart(board, out / "leaderboard.png"))
    if families:
        written.append(family_chart(families, out / "families.png", models=board.column("Model")))
    if calls is not None:
        written.append(calls_chart(calls, out / "calls.png"))
    if tools is not None:
        written.append(tool_use_chart(tools, out / "tool_use.png"))
    if outcomes is not None:
        written.append(outcomes_chart(outcomes, out / "outcomes.png"))
    grid = run_dir / GRID_FILE
    if grid.is_file():
        written.append(threshold_chart(load_threshold_grid(grid), out / "threshold_ablation.png"))
    return written
