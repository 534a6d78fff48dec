"""Ctrl-C: a real SIGINT during scoring ends with one line and status 130, and keeps what was encoded."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _score(tmp_path: Path, out: str) -> list[str]:
    """The demo scored with enough tasks that encoding outlasts the first save (SAVE_EVERY) on an idle machine."""
    return [sys.executable, str(ROOT / "scripts" / "score.py"), "data=demo", "demo.n_tasks=400",
            f"demo.dir={tmp_path / 'demo'}", f"encoder.cache_dir={tmp_path / 'cache'}", f"output_dir={tmp_path / out}"]


@pytest.mark.slow
def test_sigint_during_encoding_keeps_the_batches_done(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(_score(tmp_path, "first"), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not list((tmp_path / "cache").glob("*/*.npz")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no encoding was saved in time"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert len(lines) == 1 and re.match(r"interrupted: \d+ of \d+ texts encoded and saved", lines[0]), err
    assert err.rstrip().endswith(lines[0])
    assert not (tmp_path / "first" / "results_eval.json").exists()
    assert not any((tmp_path / "first").glob("*/results_eval.json"))

    again = subprocess.run(_score(tmp_path, "second"), cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr
    n, cached, encoded = map(int, re.search(r"texts: (\d+) distinct, (\d+) cached, (\d+) encoded",
                                            again.stdout).groups())
    saved = int(re.match(r"interrupted: (\d+)", lines[0]).group(1))
    assert cached == saved > 0 and encoded < n and cached + encoded == n
