"""Write a static site of a finished scoring run into it (also `m3bench-view`); it opens from the file system.

    python scripts/view.py RUN_DIR                    # RUN_DIR/viewer/index.html
    python scripts/view.py RUN_DIR --serve --port 8000
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.apps.interrupt import run_app

if __name__ == "__main__":  # Ctrl-C while the app loads ends as later: one line, status 130
    run_app("engine.apps.view")
