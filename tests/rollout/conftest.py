"""Fixtures of the rollout tests: servers configs, and third-party MCP servers installed from the
package registries by scripts/servers.py (the scripted chat servers are the root conftest's)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rollout_helpers import ROOT, THIRD_PARTY, write_json

from rollout.mcp.environments import default_env_root


@pytest.fixture
def servers_config(tmp_path: Path) -> Callable[..., Path]:
    """A servers config (published shape) with the shipped servers named, plus extra entries."""

    def make(*shipped: str, extra: dict[str, Any] | None = None) -> Path:
        modules = {"images": "rollout.servers.images", "math": "rollout.servers.mathstats",
                   "excel": "rollout.servers.spreadsheet"}
        servers = {name: {"command": "python", "python": "host", "args": ["-m", modules[name]], "env": {},
                          "disabled": False}
                   for name in shipped}
        servers.update(extra or {})
        return write_json(tmp_path / "servers.json", {"servers": servers})

    return make


def _install(servers: list[str], registry_probe: list[str]) -> Path:
    """Install third-party test servers with the project's own command (kept between runs under the default
    environments folder); skip only when the package registry cannot be reached."""
    root = default_env_root()
    command = [sys.executable, str(ROOT / "scripts" / "servers.py"), "install", "--config", str(THIRD_PARTY),
               "--envs", str(root), "--only", *servers]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        try:
            probe = subprocess.run(registry_probe, capture_output=True, text=True, timeout=120)
            reached, why = probe.returncode == 0, (probe.stderr or probe.stdout).strip()[-300:]
        except (OSError, subprocess.TimeoutExpired) as exc:
            reached, why = False, str(exc)
        if not reached:
            pytest.skip(f"the package registry cannot be reached ({' '.join(registry_probe[:4])}: {why})")
        pytest.fail(f"installing {', '.join(servers)} failed while the registry answers:\n{done.stdout}{done.stderr}")
    return root


@pytest.fixture(scope="session")
def python_servers() -> Path:
    """The environments folder holding the PyPI test servers (time, excel: each on mcp 1.x in its own venv)."""
    return _install(["time", "excel"], [sys.executable, "-m", "pip", "index", "versions", "mcp-server-time"])


@pytest.fixture(scope="session")
def node_servers() -> Path:
    """The environments folder holding the npm test servers (filesystem, everything)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed, so the npm servers cannot run")
    return _install(["filesystem", "everything"], ["npm", "view", "@modelcontextprotocol/server-filesystem@2026.8.31",
                                                   "version"])
