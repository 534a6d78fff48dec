"""Running the project's scripts as a user would, for the end-to-end tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_script(name: str, *overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run scripts/<name>.py with these overrides in `cwd`; it must exit 0 without a traceback."""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / f"{name}.py"), *overrides], cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc
