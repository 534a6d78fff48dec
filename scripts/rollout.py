"""Roll out an agent over MCP servers: ``python scripts/rollout.py model=gpt5`` (see rollout/README.md)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rollout.cli import main

if __name__ == "__main__":
    main()
