"""A rollout in a network namespace whose loopback interface is down (``unshare -rn``) stops before any task
with one line saying so, instead of failing every task with "model_api: connection failed"."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from rollout_helpers import ROOT

from rollout.models.errors import loopback_down, on_loopback


def _namespaces() -> bool:
    """Whether this machine lets a process make a user and network namespace of its own."""
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=30).returncode == 0


@pytest.mark.skipif(not _namespaces(), reason="unshare -rn (user and network namespaces) is not available here")
def test_a_rollout_with_the_loopback_interface_down(tmp_path):
    command = [sys.executable, str(ROOT / "scripts" / "rollout.py"), "model=scripted", "tasks=demo",
               f"results_dir={tmp_path}", "model.max_retries=0"]
    done = subprocess.run(["unshare", "-rn", *command], cwd=ROOT, capture_output=True, text=True, timeout=300)
    errors = [line for line in done.stderr.splitlines() if "loopback" in line]
    assert done.returncode == 2, done.stdout + done.stderr
    assert errors == [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "the loopback interface is down (a network namespace without `ip link set lo " \
        "up`?): the model's API at http://127.0.0.1:" in errors[0] and "no task was run" in errors[0]
    assert "Traceback" not in done.stderr and "connection failed" not in done.stderr + done.stdout
    assert not list(tmp_path.glob("*.json"))  # no task was recorded as failed


def test_loopback_here_and_which_urls_are_on_it():
    assert not loopback_down()
    assert [on_loopback(u) for u in ("http://127.0.0.1:8000/v1", "http://localhost/v1", "http://[::1]:9/v1",
                                     "https://api.openai.com/v1", None, "http://10.0.0.2/v1")] == \
        [True, True, True, False, False, False]
