"""The few lines an app ends with: its benchmark's headline numbers under the papers' names (the
leaderboard's columns and Average Score, VisualToolBench's rubric scores, MCPVerse's SR, TOBench's
accuracy, pass^k over trials), as aligned plain text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.judge_results import HEADLINE_KEYS
from engine.metricspec import AVERAGE, label_of
from engine.reports.tables import Table, score_table
from engine.reports.trials import read_trials, trials_leaderboard


def headline_table(names: list[str], aggregates: list[dict[str, Any]]) -> Table:
    """One row per prediction file, best first: the tasks scored, the leaderboard's columns (the judges'
    and rubrics' ones where a file has them), Average Score, and the outcome checks' headlines present."""
    by_name = dict(zip(names, aggregates))
    table = score_table(list(zip(names, aggregates)), "Summary")
    outcomes = [k for k in HEADLINE_KEYS if any(a.get(k) is not None for a in aggregates)]
    table.columns = [table.columns[0], "Tasks", *table.columns[1:], *(label_of(k) for k in outcomes)]
    table.rows = [[row[0], by_name[row[0]].get("num_ids"), *row[1:], *(by_name[row[0]].get(k) for k in outcomes)]
                  for row in table.rows]
    return table


def trials_headline(trials_file: Path, board: Table) -> Table:
    """Per model of a run's trials.json: its trials, Average Score (mean ± std over them), pass^1 and pass^k."""
    full = trials_leaderboard(read_trials(trials_file), board)
    keep = [i for i, c in enumerate(full.columns) if i < 2 or c == AVERAGE or c.startswith("pass^")]
    return Table([full.columns[i] for i in keep], [[row[i] for i in keep] for row in full.rows], full.title,
                 full.digits)


def headline(names: list[str], aggregates: list[dict[str, Any]], trials_file: Path | None = None) -> str:
    """The score app's closing summary: the headline table, what Average Score averages, and pass^k with trials."""
    table = headline_table(names, aggregates)
    parts = [table.to_text(), table.note]
    if trials_file is not None and trials_file.is_file():
        parts.append(trials_headline(trials_file, table).to_text())
    return "\n".join(parts)
