"""Install, check and time the MCP servers of a servers config (see rollout/README.md):

    python scripts/servers.py install [--config FILE] [-j N]
    python scripts/servers.py check [--config FILE]      # the shipped rollout/servers.json by default
    python scripts/servers.py bench [--config FILE] --server NAME
    python scripts/servers.py init DIR [--complete CONFIG [--requirements FILE]]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.apps.interrupt import run_app

if __name__ == "__main__":  # Ctrl-C while the app loads ends as later: one line, status 130
    run_app("rollout.servers_command")
