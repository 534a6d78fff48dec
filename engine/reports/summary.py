"""The few lines an app ends with: its benchmark's headline numbers under the papers' names (the
leaderboard's columns and Average Score, VisualToolBench's rubric scores, MCPVerse's SR, TOBench's
accuracy, pass^k over trials), as aligned plain text; with the run's statistics each value's interval
beside it, the models tied with the top marked and the files that hold the rest named."""

from __future__ import annotations

from pathlib import Path

from engine.contract import JsonObject
from engine.judge_results import HEADLINE_KEYS
from engine.metricspec import AVERAGE, label_of
from engine.reports.read import real
from engine.reports.records import Stats
from engine.reports.tables import Table, interval_cell, score_table
from engine.reports.trials import read_trials, trials_leaderboard
from engine.stats import AVERAGE_KEY


def headline_table(names: list[str], aggregates: list[JsonObject]) -> Table:
    """One row per prediction file, best first: the tasks scored, the leaderboard's columns (the judges'
    and rubrics' ones where a file has them), Average Score, and the outcome checks' headlines present."""
    by_name = dict(zip(names, aggregates))
    table = score_table(list(zip(names, aggregates)), "Summary")
    outcomes = [k for k in HEADLINE_KEYS if any(a.get(k) is not None for a in aggregates)]
    table.columns = [table.columns[0], "Tasks", *table.columns[1:], *(label_of(k) for k in outcomes)]
    table.rows = [[name, by_name[name].get("num_ids"), *row[1:], *(by_name[name].get(k) for k in outcomes)]
                  for name, row in zip(table.names(), table.rows)]
    return table


def trials_headline(trials_file: Path, board: Table) -> Table:
    """Per model of a run's trials.json: its trials, Average Score (mean ± std over them), pass^1 and pass^k."""
    full = trials_leaderboard(read_trials(trials_file), board)
    keep = [i for i, c in enumerate(full.columns) if i < 2 or c == AVERAGE or c.startswith("pass^")]
    return Table([full.columns[i] for i in keep], [[row[i] for i in keep] for row in full.rows], full.title,
                 full.digits)


def with_intervals(table: Table, stats: Stats) -> Table:
    """The headline table with `value [low, high]` in every cell the statistics cover (the value alone where a
    quantity has no interval) and ` *` after the models tied with the top by the Average Score."""
    key_of = {label: key for key, label in stats.get("metrics", {}).items()}
    tied = set(stats.get("tied_with_top", {}).get(AVERAGE_KEY, []))
    rows = []
    for name, row in zip(table.names(), table.rows):
        record = stats.get("models", {}).get(name, {}).get("metrics", {})
        cells = [interval_cell(record.get(key_of[c]), table.digits) if c in key_of and record.get(key_of[c]) else v
                 for c, v in zip(table.columns[1:], row[1:])]
        rows.append([name + (" *" if name in tied else ""), *cells])
    return Table(table.columns, rows, table.title, table.digits, table.note)


def stats_note(stats: Stats, reports: bool) -> str:
    """What the intervals are, what * marks, and the files of the statistics."""
    s = stats.get("settings", {})
    if stats.get("warnings"):
        return f"No intervals: {'; '.join(stats['warnings'])}."
    files = "stats.json" + (", leaderboard_intervals.{md,csv,json}, pairwise.{md,csv,json} (every pair: difference, "
                            "interval, p_holm, separable) and the forest, rank and pairwise plots" if reports else "")
    return (f"[low, high]: {s.get('level', 0.95):.0%} intervals over {s.get('clusters')} "
            f"{'task families' if s.get('cluster') == 'family' else 'ids'} ({s.get('resamples')} resamples); "
            f"* tied with the top (rank interval by {AVERAGE} reaching 1, Holm over every pair); see {files}.")


def headline(names: list[str], aggregates: list[JsonObject], trials_file: Path | None = None,
             stats: Stats | None = None, reports: bool = True) -> str:
    """The score app's closing summary: the headline table (with the run's statistics, `stats`: each value's
    interval and the tie mark), what Average Score averages, the statistics' files, and pass^k with trials."""
    table = headline_table(names, aggregates)
    shown = table if stats is None else with_intervals(table, stats)
    parts = [shown.to_text(), table.note, *([stats_note(stats, reports)] if stats is not None else [])]
    if trials_file is not None and trials_file.is_file():
        parts.append(trials_headline(trials_file, table).to_text())
    return "\n".join(parts)


def grid_headline(rows: list[JsonObject], folder: Path) -> str:
    """A threshold grid's closing lines: Average Score (of the alignment metrics each grid row holds) pivoted
    by model (rows) and threshold pair (a column each, in the grid's order), then the files that hold it all."""
    pairs = list(dict.fromkeys((real(r["tau_weak"]), real(r["tau_strong"])) for r in rows))
    models = list(dict.fromkeys(str(r["model"]) for r in rows))
    cells: dict[str, dict[tuple[float, float], object]] = {m: {} for m in models}
    for pair in pairs:
        entries = [(str(r["model"]), r) for r in rows if (real(r["tau_weak"]), real(r["tau_strong"])) == pair]
        table = score_table(entries, "grid")
        for name, average in zip(table.names(), table.column(AVERAGE)):
            cells[name][pair] = average
    table = Table(["Model", *(f"{w:g}/{s:g}" for w, s in pairs)],
                  [[m, *(cells[m].get(p) for p in pairs)] for m in models])
    return "\n".join([f"threshold grid, {AVERAGE} of the alignment metrics by tau_weak/tau_strong:", table.to_text(),
                      f"threshold grid: {folder / 'threshold_grid.json'} (and .csv), every metric of every pair; "
                      f"plot: {folder / 'threshold_ablation.png'}"])


UNREFERENCED_KEYS = ("answer_sr", "pass_rate", "rubric_score", "check_accuracy_evaluated")
"""The headline values of a run without reference trajectories, in the order they are said."""


def unreferenced_headline(names: list[str], aggregates: list[JsonObject]) -> str:
    """A run without reference trajectories' closing lines: per file its tasks and the evaluators' headline
    values it has (UNREFERENCED_KEYS)."""
    keys = [k for k in UNREFERENCED_KEYS if any(k in a for a in aggregates)]
    return "\n".join(f"{name}: {a['num_ids']} tasks" + "".join(f", {k} {_number(a.get(k))}" for k in keys)
                     for name, a in zip(names, aggregates))


def _number(value: object) -> str:
    return "–" if value is None else f"{value:.4f}"
