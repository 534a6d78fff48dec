"""The report app (``m3bench-report``, ``scripts/report.py``): tables and plots of a finished run.

It takes one run folder and a few switches, with no config to compose, so it is a plain
command line (argparse) rather than a Hydra app.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from engine.apps.kit import command_app
from engine.contract import InputError
from engine.metricspec import AVERAGE, evaluator_columns, leaderboard_columns
from engine.reports.groups import group_results, run_folder
from engine.reports.index import index_table, read_index
from engine.reports.read import collect_run
from engine.reports.write import PIVOT, write_comparison

REPORT_FOLDER = "report"
"""Where the reports of a folder of several runs go by default: RUN_DIR/report/."""

SORT_COLUMNS = {label.lower().replace(" ", "_"): label for label in
                (AVERAGE, *(c.label for c in (*leaderboard_columns("alignment"), *evaluator_columns())))}


def run(argv: list[str] | None = None) -> int:
    """Parse the command line, write the reports, print the leaderboard; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="m3bench-report", description="Write the leaderboard, per-family and budget tables and the plots "
        "of a finished scoring run (a folder holding results_eval.json files).")
    parser.add_argument("run_dir", type=Path, help="a finished scoring run, or a folder of runs (results_eval.json "
                                                   "files, up to two folder levels down); with --list, a run index "
                                                   "folder")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: RUN_DIR for one run, "
                        "RUN_DIR/report for a folder of several runs)")
    parser.add_argument("--sort-by", choices=sorted(SORT_COLUMNS), default="average_score",
                        help="leaderboard order, best first (default: average_score)")
    parser.add_argument("--one-table", action="store_true", help="refuse (exit status 2) when the runs are not "
                        "comparable, instead of writing one leaderboard per group of comparable runs")
    parser.add_argument("--list", action="store_true", help="print the run index of RUN_DIR (its index.json) "
                        "and exit: one row per score run, its best model's Average Score and its settings")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s")
    try:
        if args.list:
            entries = read_index(args.run_dir)
            if not entries:
                raise InputError(args.run_dir / "index.json", "no run index here (score runs add to "
                                 "<index_dir>/index.json, by default <home>/runs)")
            table = index_table(entries, args.run_dir)
            print(f"{table.title}\n{table.to_text()}\n{table.note}")
            return 0
        out = args.out or default_out(args.run_dir)
        groups, written = write_comparison(args.run_dir, out, SORT_COLUMNS[args.sort_by], args.one_table)
    except (InputError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if len(groups) == 1:
        print((out / "leaderboard.md").read_text(encoding="utf-8"))
    else:
        print((out / "groups.md").read_text(encoding="utf-8"))
        print((out / f"{PIVOT}.md").read_text(encoding="utf-8"))
        print(f"one leaderboard per group in {out}/<group>/; all rows side by side in {out / 'comparison.md'}; "
              f"the table above in {out / f'{PIVOT}.md'}")
    print(f"wrote {len(written)} files to {out}")
    return 0


def default_out(run_dir: Path) -> Path:
    """RUN_DIR when it is one run (its results share their settings and none lies in a run folder of its
    own below it), else RUN_DIR/report: the reports of several runs never land among them."""
    run_dir = Path(run_dir)
    results = collect_run(run_dir)
    below = any(folder not in (None, run_dir) for folder in (run_folder(r, run_dir) for r in results))
    return run_dir / REPORT_FOLDER if below or len(group_results(results, run_dir)) > 1 else run_dir


main = command_app("report", run)
