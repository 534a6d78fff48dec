"""Write the leaderboard, per-family and budget tables and the plots of a finished scoring run.

    python scripts/report.py RUN_DIR                 # files go into RUN_DIR
    python scripts/report.py RUN_DIR --out DIR --sort-by recall
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.contract import InputError  # noqa: E402
from engine.leaderboard import AVERAGE, write_reports  # noqa: E402

SORT_COLUMNS = {"average": AVERAGE, "recall": "Recall"}


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, write the reports, print the leaderboard; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a finished scoring run (folder holding results_eval.json files)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: RUN_DIR)")
    parser.add_argument("--sort-by", choices=sorted(SORT_COLUMNS), default="average",
                        help="leaderboard order, best first (default: average)")
    args = parser.parse_args(argv)
    try:
        written = write_reports(args.run_dir, args.out, SORT_COLUMNS[args.sort_by])
    except (InputError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = args.out or args.run_dir
    print((out / "leaderboard.md").read_text(encoding="utf-8"))
    print(f"wrote {len(written)} files to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
