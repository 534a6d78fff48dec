"""Write the leaderboard, per-family and budget tables and the plots of a finished scoring run
(also `m3bench-report`).

    python scripts/report.py RUN_DIR                 # files go into RUN_DIR
    python scripts/report.py RUN_DIR --out DIR --sort-by recall
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.apps.interrupt import run_app

if __name__ == "__main__":  # Ctrl-C while the app loads ends as later: one line, status 130
    run_app("engine.apps.report")
