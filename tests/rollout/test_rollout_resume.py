"""scripts/rollout.py killed mid-run (SIGKILL) and run again: no finished task is lost or redone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from rollout_helpers import ROOT, local_overrides, plan_policy, plan_tasks, predictions_of

from rollout.models.loopback import message_texts


def _start(overrides, cwd):
    return subprocess.Popen([sys.executable, str(ROOT / "scripts" / "rollout.py"), *overrides], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _written(path):
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return []


@pytest.mark.slow
def test_kill_and_resume(tmp_path, chat_server, servers_config):
    ids = [f"k{i}" for i in range(8)]
    plans = {i: [[{"name": "math/mean", "arguments": {"numbers": [n, n + 1]}}]] for n, i in enumerate(ids)}
    tasks_file, ref = plan_tasks(tmp_path, plans, image=False)
    policy = plan_policy(ref)
    results = tmp_path / "out"
    out = predictions_of(results)
    servers = servers_config("math")
    first = chat_server(policy, delay=0.15)
    proc = _start(local_overrides(first, tasks_file, results, servers, "concurrency=2", "prepare=false"), tmp_path)
    deadline = time.monotonic() + 60
    while len(_written(out)) < 3:
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "no task was written in time"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    before = {p["id"]: p for p in _written(out)}
    assert 3 <= len(before) < len(ids), "the run must be killed while tasks remain"

    second = chat_server(policy)
    proc = _start(local_overrides(second, tasks_file, results, servers, "concurrency=2", "prepare=false"), tmp_path)
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, log
    after = _written(out)
    assert [p["id"] for p in after] == ids  # every task once, in task order
    for p in after:
        if p["id"] in before:
            assert p == before[p["id"]]  # kept as written
    asked = {message_texts(r["body"])[1][1].split(":")[0] for r in second.requests}
    assert asked == {f"Task {i}" for i in ids if i not in before}  # nothing finished was redone
    assert f"{len(before)} of {len(ids)} tasks already in" in log
