"""Rollouts against a model API that misbehaves on loopback (tests/rollout/fault_server.py): every task
ends with a record, finished or failed with the kind of its failure, and the counts add up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from fault_server import CUT_BODY, FaultPolicy, bad_arguments, dated_retry_after, malformed, resets, storm, trickle
from rollout_helpers import ROOT, compose, local_overrides, plan_policy, plan_tasks, predictions_of

from rollout.runner import run

STEP = [[{"name": "math/mean", "arguments": {"numbers": [1, 3]}}]]
IDS = [f"t0{i}" for i in range(1, 5)]


def _rollout(tmp_path, chat_server, servers_config, *faults, extra=(), once=False):
    tasks_file, ref = plan_tasks(tmp_path, {i: STEP for i in IDS}, image=False)
    policy = FaultPolicy(plan_policy(ref), *faults, once=once)
    server = chat_server(policy)
    overrides = local_overrides(server, tasks_file, tmp_path, servers_config("math"), "prepare=false",
                                "model.max_retries=3", "model.timeout=5", *extra)
    start = time.monotonic()
    status = run(compose(*overrides))
    records = {r["id"]: r for r in json.loads(predictions_of(tmp_path).read_text())}
    return status, records, policy, server, time.monotonic() - start, overrides


def _kinds(records):
    return {i: r["error"]["kind"] if "error" in r else "finished" for i, r in records.items()}


@pytest.mark.slow
def test_bad_arguments_on_one_task_are_recorded_and_counted(tmp_path, chat_server, servers_config, capsys):
    status, records, policy, _, _, _ = _rollout(tmp_path, chat_server, servers_config, bad_arguments("t03"))
    assert status == 0 and _kinds(records) == dict.fromkeys(IDS, "finished")
    (bad,), = [s["calls"] for s in records["t03"]["steps"]]
    assert bad["arguments"] == "{numbers: [1, 3" and bad["is_error"] and "Invalid arguments" in bad["result"]
    assert bad["made"] is False and all("made" not in c for i in IDS if i != "t03"
                                        for s in records[i]["steps"] for c in s["calls"])
    assert records["t03"]["illegal_calls"] == 1 and records["t03"]["final_reply"] == "Done. (t03)"
    assert all("illegal_calls" not in records[i] for i in IDS if i != "t03")
    assert "4 of 4 task(s) finished, 0 failed, 0 model request(s) retried" in capsys.readouterr().out


@pytest.mark.slow
def test_malformed_replies_and_resets_share_the_retries(tmp_path, chat_server, servers_config, capsys, caplog):
    status, records, policy, server, _, _ = _rollout(tmp_path, chat_server, servers_config, malformed(3), resets(5),
                                                     extra=("concurrency=2",), once=True)
    assert status == 0 and _kinds(records) == dict.fromkeys(IDS, "finished")
    assert policy.served == 6 and len(server.requests) == 12 + 6  # 3 requests a task: 1 in 3 malformed, 2 resets
    assert f"4 of 4 task(s) finished, 0 failed, {policy.served} model request(s) retried" in capsys.readouterr().out
    assert "malformed reply: the reply has no choices" in caplog.text
    assert "malformed reply: the body is not JSON" in caplog.text and "connection failed" in caplog.text
    assert CUT_BODY.decode() not in caplog.text


@pytest.mark.slow
def test_a_trickled_body_is_abandoned_at_the_timeout(tmp_path, chat_server, servers_config, caplog):
    status, records, policy, server, wall, _ = _rollout(tmp_path, chat_server, servers_config, trickle(1, 1.5),
                                                        extra=("concurrency=1", "model.timeout=1"))
    assert status == 0 and _kinds(records) == dict.fromkeys(IDS, "finished") and policy.served == 1
    first, second = server.requests[:2]
    assert 0.95 <= second["time"] - first["time"] < 3.0  # not the 4.5 s the whole body takes
    assert "no complete reply within 1 s" in caplog.text


@pytest.mark.slow
def test_a_retry_after_date_is_honoured(tmp_path, chat_server, servers_config):
    status, records, policy, server, _, _ = _rollout(tmp_path, chat_server, servers_config, dated_retry_after(60.0),
                                                     extra=("concurrency=1", "model.backoff.max=1.5"))
    assert status == 0 and _kinds(records) == dict.fromkeys(IDS, "finished")
    first, second = server.requests[:2]
    assert second["time"] - first["time"] >= 1.4  # the date read, the wait capped at backoff.max (not 0.01 s)


@pytest.mark.slow
def test_a_429_storm_loses_tasks_that_a_rerun_retries(tmp_path, chat_server, servers_config, capsys):
    status, records, _, _, _, overrides = _rollout(tmp_path, chat_server, servers_config, storm(4),
                                                   extra=("concurrency=1",))
    assert status == 1 and _kinds(records) == {"t01": "model_api", "t02": "finished", "t03": "finished",
                                               "t04": "finished"}
    assert records["t01"]["error"] == {"kind": "model_api", "reason": "HTTP 429: rate limited", "attempts": 4}
    assert records["t01"]["steps"] == [] and "final_reply" not in records["t01"]
    out = capsys.readouterr().out
    assert "3 of 4 task(s) finished, 1 failed (model_api 1; 1 lost to the infrastructure" in out
    finished = {i: json.dumps(records[i]) for i in IDS[1:]}

    # the rerun asks only for the lost task and leaves the finished ones as they were
    calm = chat_server(FaultPolicy(plan_policy(tmp_path / "data" / "ref.json")))
    rerun = [o if not o.startswith("model.base_url=") else f"model.base_url={calm.base_url}" for o in overrides]
    assert run(compose(*rerun)) == 0
    again = {r["id"]: r for r in json.loads(predictions_of(tmp_path).read_text())}
    assert _kinds(again) == dict.fromkeys(IDS, "finished")
    assert {i: json.dumps(again[i]) for i in IDS[1:]} == finished
    assert all("Task t01:" in json.dumps(r["body"]) for r in calm.requests) and len(calm.requests) == 3


@pytest.mark.slow
def test_an_interrupted_run_records_the_tasks_under_way_as_cut_short(tmp_path, chat_server, servers_config):
    tasks_file, ref = plan_tasks(tmp_path, {i: STEP for i in IDS}, image=False)
    overrides = local_overrides(chat_server(plan_policy(ref), delay=0.2), tasks_file, tmp_path,
                                servers_config("math"), "prepare=false", "concurrency=2")
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "rollout.py"), *overrides], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    out, deadline = predictions_of(tmp_path), time.monotonic() + 60
    while not out.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    time.sleep(0.3)  # the next tasks are under way
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err and "recorded as cut short" in err
    records = {r["id"]: r for r in json.loads(out.read_text())}
    cut = {i for i, r in records.items() if "error" in r}
    assert cut and all(records[i]["error"]["kind"] == "cut_short" for i in cut)

    assert run(compose(*overrides)) == 0  # the rerun does the tasks cut short and those never started
    again = {r["id"]: r for r in json.loads(out.read_text())}
    assert _kinds(again) == dict.fromkeys(IDS, "finished")
    assert all(again[i] == r for i, r in records.items() if i not in cut)
