"""Roll out an agent over MCP servers: ``python scripts/rollout.py model=gpt5`` (see rollout/README.md)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.apps.interrupt import run_app

if __name__ == "__main__":  # Ctrl-C while the app loads ends as later: one line, status 130
    run_app("rollout.cli")
