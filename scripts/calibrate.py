"""Calibrate the similarity thresholds on labelled call pairs (also `m3bench-calibrate`).

    python scripts/calibrate.py pairs=pairs.json [output_dir=DIR] [encoder.cache_dir=DIR] [profile=paper]
    python scripts/calibrate.py --help      # every setting with its description
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.apps.interrupt import run_app

if __name__ == "__main__":  # Ctrl-C while the app loads ends as later: one line, status 130
    run_app("engine.apps.calibrate")
