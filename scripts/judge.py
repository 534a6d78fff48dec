"""Judge a model's predictions: Task Completion, Information Grounding and call outcomes (also `m3bench-judge`).

    python scripts/judge.py model=gpt5                          # the published judge pool
    python scripts/judge.py model=scripted judges=scripted data=rollout_demo   # the offline demo
    python scripts/judge.py model=gpt5 stage=calls              # only the call outcomes
    python scripts/judge.py model=NAME data=vtb_demo 'evaluators=[vtb_rubrics]'   # another evaluator
    python scripts/judge.py --help                              # every setting with its description
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.apps.interrupt import run_app

if __name__ == "__main__":  # Ctrl-C while the app loads ends as later: one line, status 130
    run_app("rollout.judges.cli")
