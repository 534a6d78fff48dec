"""Score predicted tool-call trajectories against M3-Bench references (also `m3bench-score`).

    python scripts/score.py                               # built-in demo leaderboard
    python scripts/score.py model=gpt5                    # one published prediction file
    python scripts/score.py data.gt=G predictions=P output_dir=D
    python scripts/score.py data.gt=G 'predictions=[P1,P2]' output_dir=D
    python scripts/score.py -m align.tau_weak=0.5,0.6,0.7  # Hydra multirun
    python scripts/score.py --help                        # every setting with its description
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.apps.interrupt import run_app

if __name__ == "__main__":  # Ctrl-C while the app loads ends as later: one line, status 130
    run_app("engine.apps.score")
