"""Writing a run's reports: leaderboard, family, budget, call outcome and tool-use tables (md, csv, json)
and plots."""

from __future__ import annotations

from pathlib import Path

from engine.contract import atomic_write_json, atomic_write_text
from engine.metricspec import AVERAGE
from engine.reports.cost import cost_chart, cost_table, read_cost
from engine.reports.groups import Group, differing, group_results, run_folder, why_not_comparable
from engine.reports.intervals import (
    neighbour_intervals_table,
    pairwise_table,
    read_stats,
    robustness_table,
    write_stats_plots,
)
from engine.reports.mcpverse import mcpverse_table
from engine.reports.plots import (
    calls_chart,
    family_chart,
    leaderboard_chart,
    outcomes_chart,
    threshold_chart,
    tool_use_chart,
)
from engine.reports.read import GRID_FILE, ModelResult, collect_run, load_threshold_grid
from engine.reports.tables import (
    Table,
    budget_table,
    calls_table,
    families_markdown,
    family_tables,
    intervals_table,
    leaderboard_table,
    outcomes_table,
    tool_use_table,
)
from engine.reports.tobench import tobench_table
from engine.reports.trials import (
    conventions_table,
    inventory_table,
    pass_k_chart,
    read_trials,
    spread_chart,
    trials_leaderboard,
)
from engine.reports.vtb import vtb_tables
from engine.stats import STATS_FILE
from engine.stats.cost import COST_FILE
from engine.trials import TRIALS_FILE


def write_reports(run_dir: Path, out_dir: Path | None = None, sort_by: str = AVERAGE,
                  results: list[ModelResult] | None = None) -> list[Path]:
    """Write the run's leaderboard, family, budget and cost tables (md/csv/json) and plots, and the call
    outcomes, tool-use, outcome checks and VisualToolBench (vtb_table3, vtb_table7, vtb_table8, vtb_turns,
    vtb_domains, vtb_focus) tables and plots, TOBench's Table 2 (tobench.md) and MCPVerse's Table 2
    (mcpverse.md), when some model has them; returns the paths.

    Files go to out_dir (default: run_dir), each written atomically. `results` (default: every result of
    run_dir, read by collect_run) are the results the tables show.
    """
    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir
    results = collect_run(run_dir) if results is None else results
    board = leaderboard_table(results, sort_by)
    families = family_tables(results, sort_by)
    rank = {name: i for i, name in enumerate(board.names())}
    ranked = sorted(results, key=lambda r: rank[r.name])
    budget = budget_table(ranked)
    calls = calls_table(ranked)
    tools = tool_use_table(ranked)
    outcomes = outcomes_table(ranked)
    tobench = tobench_table(ranked)
    mcpverse = mcpverse_table(ranked)
    stats = read_stats(run_dir / STATS_FILE)
    intervals = None if stats is None else intervals_table(board, stats)
    robustness = None if stats is None else robustness_table(stats)
    neighbours = None if stats is None else neighbour_intervals_table(stats, board.names())
    pairwise = None if stats is None else pairwise_table(stats)
    spent = read_cost(run_dir / COST_FILE)
    cost = None if spent is None else cost_table(spent, board.names())
    written: list[Path] = []

    def text(name: str, content: str) -> None:
        atomic_write_text(out / name, content)
        written.append(out / name)

    def obj(name: str, content: object) -> None:
        atomic_write_json(out / name, content)
        written.append(out / name)

    for stem, table in (("leaderboard", board), ("leaderboard_intervals", intervals), ("pairwise", pairwise),
                        ("threshold_robustness", robustness), ("neighbour_intervals", neighbours), ("budget", budget),
                        ("cost", cost), ("calls", calls), ("tool_use", tools), ("outcomes", outcomes),
                        ("tobench", tobench), ("mcpverse", mcpverse), *vtb_tables(ranked).items()):
        if table is None:
            continue
        text(f"{stem}.md", table.to_markdown())
        text(f"{stem}.csv", table.to_csv())
        obj(f"{stem}.json", table.to_json())
    text("families.md", families_markdown(families))
    obj("families.json", {family: table.to_json() for family, table in families.items()})
    written.append(leaderboard_chart(board, out / "leaderboard.png"))
    if stats is not None:
        written += write_stats_plots(stats, out)
    if spent is not None and (chart := cost_chart(spent, out / "cost_frontier.png", stats)) is not None:
        written.append(chart)
    if families:
        written.append(family_chart(families, out / "families.png", models=board.names()))
    if calls is not None:
        written.append(calls_chart(calls, out / "calls.png"))
    if tools is not None:
        written.append(tool_use_chart(tools, out / "tool_use.png"))
    if outcomes is not None:
        written.append(outcomes_chart(outcomes, out / "outcomes.png"))
    grid = run_dir / GRID_FILE
    if grid.is_file():
        written.append(threshold_chart(load_threshold_grid(grid), out / "threshold_ablation.png"))
    if (run_dir / TRIALS_FILE).is_file():
        written += write_trial_reports(run_dir / TRIALS_FILE, board, out)
    return written


class NotComparable(ValueError):
    """A folder's runs cannot share one leaderboard (raised when one table was asked for)."""


GROUPS_FILE = "groups.md"
COMPARISON = "comparison"
PIVOT = "comparison_pivot"


def own_name(result: ModelResult, run_dir: Path) -> str:
    """A result's model name without the folder collect_run adds when names collide across runs."""
    rel = result.path.parent.relative_to(run_dir).as_posix()
    if result.name == rel:
        return result.path.parent.name
    suffix = f" [{rel}]"
    return result.name[:-len(suffix)] if result.name.endswith(suffix) else result.name


def pivot_table(groups: list[Group], boards: list[Table], run_dir: Path, metric: str) -> Table:
    """One metric of every group side by side: a row per model, a column per group named by the settings
    that differ ("tau_weak 0.5"), models in the first group's order; a model whose name recurs within a
    group keeps its full name."""
    columns = differing(groups)
    labels = [", ".join(f"{key} {group.settings[key]}" for key in columns) or group.digest for group in groups]
    cells: dict[str, dict[int, object]] = {}
    for i, (group, board) in enumerate(zip(groups, boards)):
        names = {r.name: own_name(r, run_dir) for r in group.results}
        counts: dict[str, int] = {}
        for short in names.values():
            counts[short] = counts.get(short, 0) + 1
        for record in board.records():
            model = str(record["Model"])
            short = names.get(model, model)
            row = short if counts.get(short, 1) == 1 else model
            cells.setdefault(row, {})[i] = record.get(metric)
    rows = [[name, *(values.get(i) for i in range(len(groups)))] for name, values in cells.items()]
    return Table(["Model", *labels], rows, title=f"{metric} by model and setting",
                 note=f"{metric} of each model (rows) under each group of settings (columns); "
                      "each group's own reports are in its folder.")


def write_comparison(run_dir: Path, out: Path, sort_by: str = AVERAGE,
                     one_table: bool = False) -> tuple[list[Group], list[Path]]:
    """The reports of a folder of runs, one leaderboard per group of comparable results
    (engine.reports.groups); returns the groups and the paths written.

    One group: its reports go to `out`. Several: each group's reports go to `out/<settings digest>/`,
    with groups.md (a line per group: its digest, size and settings) and comparison.{md,csv,json} (every
    group's leaderboard rows, with the group and the settings that differ) in `out`; with `one_table`
    they are refused (NotComparable, naming the settings that differ).
    """
    run_dir = Path(run_dir)
    results = collect_run(run_dir)
    groups = group_results(results, run_dir)
    if len(groups) == 1:
        return groups, write_reports(run_dir, out, sort_by, results)
    reason = why_not_comparable(groups)
    if one_table:
        raise NotComparable(f"{run_dir}: its runs are not comparable ({reason}); one leaderboard would mix them "
                            "(leave out --one-table to write one per group)")
    written: list[Path] = []
    columns = differing(groups)
    boards = []
    for group in groups:
        runs = {run_folder(r, run_dir) for r in group.results}
        only = runs.pop() if len(runs) == 1 else None
        source = only if only is not None else run_dir
        written += write_reports(source, out / group.digest, sort_by, group.results)
        boards.append(leaderboard_table(group.results, sort_by))
    board_columns = list(dict.fromkeys(c for board in boards for c in board.columns[1:]))
    rows = [[record["Model"], group.digest, *(group.settings[c] for c in columns),
             *(record.get(c) for c in board_columns)]
            for group, board in zip(groups, boards) for record in board.records()]
    table = Table(["Model", "Group", *columns, *board_columns], rows, title="Runs compared by group",
                  note=f"Not one leaderboard: {reason}. Each group's own reports are in its folder.")
    pivot = pivot_table(groups, boards, run_dir, sort_by)
    lines = [f"# Groups of comparable runs in {run_dir}", "", f"Not comparable: {reason}.", "",
             *(f"- {g.line()}" for g in groups), ""]
    atomic_write_text(out / GROUPS_FILE, "\n".join(lines))
    atomic_write_text(out / f"{COMPARISON}.md", table.to_markdown())
    atomic_write_text(out / f"{COMPARISON}.csv", table.to_csv())
    atomic_write_json(out / f"{COMPARISON}.json", table.to_json())
    atomic_write_text(out / f"{PIVOT}.md", pivot.to_markdown())
    atomic_write_text(out / f"{PIVOT}.csv", pivot.to_csv())
    atomic_write_json(out / f"{PIVOT}.json", pivot.to_json())
    written += [out / GROUPS_FILE,
                *(out / f"{stem}.{suffix}" for stem in (COMPARISON, PIVOT) for suffix in ("md", "csv", "json"))]
    return groups, written


def write_trial_reports(path: Path, board: Table, out: Path) -> list[Path]:
    """The reports of a run's trials.json: leaderboard_trials, trial_inventory and trial_conventions
    (md, csv, json), pass_k.png and task_spread.png."""
    models = read_trials(path)
    if not models:
        return []
    written = []
    for stem, table in (("leaderboard_trials", trials_leaderboard(models, board)),
                        ("trial_inventory", inventory_table(models)), ("trial_conventions", conventions_table(models))):
        if table is None:
            continue
        for suffix, content in (("md", table.to_markdown()), ("csv", table.to_csv())):
            atomic_write_text(out / f"{stem}.{suffix}", content)
            written.append(out / f"{stem}.{suffix}")
        atomic_write_json(out / f"{stem}.json", table.to_json())
        written.append(out / f"{stem}.json")
    written.append(pass_k_chart(models, out / "pass_k.png"))
    written.append(spread_chart(models, out / "task_spread.png"))
    return written
