"""A real judge process (scripts/judge.py) killed with SIGKILL mid-run, then run again: no judged task is
lost (the verdicts it kept are in its file's journal), none is judged again, and the replies the killed run got
are not asked for again. The judges are
a pool of its own config group (--config-dir) on a loopback server that counts every request."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from rollout_helpers import ROOT, write_json

from engine.judging import COMPLETION

TASKS = [f"t{i:02d}" for i in range(12)]
JUDGES = ("j1", "j2", "j3", "j4")


def asked(requests: list[dict]) -> Counter:
    """(model, purpose, task id) -> requests, of the server's recorded requests (those the kill cut short
    before their body arrived left out)."""
    out: Counter = Counter()
    for body in (r["body"] for r in requests if "messages" in r["body"]):
        purpose = "tc" if body["messages"][0]["content"] == COMPLETION.system else "ig"
        out[body["model"], purpose, json.loads(body["messages"][-1]["content"])["prediction"]["id"]] += 1
    return out


def kept_in(journal: Path) -> dict:
    """Task id -> entry of the verdicts a journal holds (a line the kill cut short left out)."""
    out = {}
    for line in journal.read_text().splitlines()[1:] if journal.is_file() else ():
        try:
            verdict = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "entry" in verdict:
            out[verdict["id"]] = verdict["entry"]
    return out


@pytest.mark.slow
def test_kill_and_resume(tmp_path, chat_server) -> None:
    def policy(body: dict) -> str:
        if "messages" not in body:
            return "cut short"
        return "\\boxed{7}" if body["messages"][0]["content"] == COMPLETION.system else "\\boxed{0.5}"

    server = chat_server(policy, delay=0.1)
    items = [{"id": t, "question": f"Task {t}?", "final_reply": "done",
              "steps": [{"step": 1, "calls": [{"name": "a/b", "arguments": {"i": t}}]}]} for t in TASKS]
    gt, preds = write_json(tmp_path / "gt.json", items), write_json(tmp_path / "m_test_mcp_fuzzy.json", items)
    pool = {name: {"provider": "openai", "api_name": name, "base_url": server.base_url, "api_key_env": None,
                   "params": {}, "timeout": 10, "max_retries": 2, "backoff": {"initial": 0.01, "max": 0.05}}
            for name in JUDGES}
    conf = tmp_path / "conf"
    (conf / "judges").mkdir(parents=True)
    (conf / "judges" / "loopback.yaml").write_text(json.dumps({"max_requests": 8, "pool": pool}))
    output = tmp_path / "m_test_mcp_fuzzy_taskcompletion.json"
    journal = tmp_path / "m_test_mcp_fuzzy_taskcompletion.json.journal"
    command = [sys.executable, str(ROOT / "scripts" / "judge.py"), "--config-dir", str(conf), "judges=loopback",
               f"predictions={preds}", f"data.gt={gt}", "stage=judge", "concurrency=2",
               f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    judged: dict = {}
    while len(judged) < 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.02)
        judged = kept_in(journal)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL, process.stderr.read().decode()
    kept = kept_in(journal)
    assert 3 <= len(kept) < len(TASKS)
    assert not output.exists(), "the file is written whole only on the journal's schedule and at the end"
    first = asked(server.requests)
    n_first = len(server.requests)

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    final = json.loads(output.read_text())
    assert list(final["pre_id"]) == TASKS
    assert not journal.exists()
    assert all(final["pre_id"][t] == entry for t, entry in kept.items())  # nothing lost, nothing redone
    second = asked(server.requests[n_first:])
    assert not any(tid in kept for _, _, tid in second), "a task judged before the kill was asked again"
    total = first + second
    assert set(total) == {(j, p, t) for j in JUDGES for p in ("tc", "ig") for t in TASKS}
    started = {tid for _, _, tid in first}
    for (judge, purpose, tid), count in total.items():
        assert count == 1 or (tid in started and tid not in kept and count == 2), (judge, purpose, tid, count)
    assert final["aggregate"]["num_scored"] == len(TASKS)
    assert final["aggregate"]["completion_rate"] == pytest.approx(0.7)
