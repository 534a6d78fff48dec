"""The report app (``m3bench-report``, ``scripts/report.py``): tables and plots of a finished run.

It takes one run folder and a few switches, with no config to compose, so it is a plain
command line (argparse) rather than a Hydra app.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.apps.kit import command_app
from engine.contract import InputError
from engine.metricspec import AVERAGE, evaluator_columns, leaderboard_columns
from engine.reports.write import write_reports

SORT_COLUMNS = {label.lower().replace(" ", "_"): label for label in
                (AVERAGE, *(c.label for c in (*leaderboard_columns("alignment"), *evaluator_columns())))}


def run(argv: list[str] | None = None) -> int:
    """Parse the command line, write the reports, print the leaderboard; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="m3bench-report", description="Write the leaderboard, per-family and budget tables and the plots "
        "of a finished scoring run (a folder holding results_eval.json files).")
    parser.add_argument("run_dir", type=Path, help="a finished scoring run (results_eval.json files, up to two "
                                                   "folder levels down)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: RUN_DIR)")
    parser.add_argument("--sort-by", choices=sorted(SORT_COLUMNS), default="average_score",
                        help="leaderboard order, best first (default: average_score)")
    args = parser.parse_args(argv)
    try:
        written = write_reports(args.run_dir, args.out, SORT_COLUMNS[args.sort_by])
    except (InputError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = args.out or args.run_dir
    print((out / "leaderboard.md").read_text(encoding="utf-8"))
    print(f"wrote {len(written)} files to {out}")
    return 0


main = command_app("report", run)
