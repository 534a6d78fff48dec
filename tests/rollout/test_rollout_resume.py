"""scripts/rollout.py killed mid-run (SIGKILL) and run again: no finished task is lost or redone."""

from __future__ import annotations

import pytest
from rollout_helpers import (
    kill_when_written,
    local_overrides,
    plan_policy,
    plan_tasks,
    predictions_of,
    start_rollout,
    written_records,
)

from rollout.models.loopback import message_texts


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
    proc = start_rollout(local_overrides(first, tasks_file, results, servers, "concurrency=2", "prepare=false"),
                         tmp_path)
    before = kill_when_written(proc, out, 3, 60)
    assert 3 <= len(before) < len(ids), "the run must be killed while tasks remain"

    second = chat_server(policy)
    proc = start_rollout(local_overrides(second, tasks_file, results, servers, "concurrency=2", "prepare=false"),
                         tmp_path)
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, log
    after = written_records(out)
    assert [p["id"] for p in after] == ids  # every task once, in task order
    for p in after:
        if p["id"] in before:
            assert p == before[p["id"]]  # kept as written
    asked = {message_texts(r["body"])[1][1].split(":")[0] for r in second.requests}
    assert asked == {f"Task {i}" for i in ids if i not in before}  # nothing finished was redone
    assert f"{len(before)} of {len(ids)} tasks already in" in log
