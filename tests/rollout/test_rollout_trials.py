"""trials=N: every task N times, one file per trial, each resumable and replayable offline."""

from __future__ import annotations

import json

from rollout_helpers import compose, local_overrides, plan_policy, plan_tasks, predictions_of, run_dir_of, write_json

from engine.trials import find_trials, trial_path
from rollout.runner import run

PLANS = {f"t{i}": [[{"name": "math/mean", "arguments": {"numbers": [i, i + 1]}}]] for i in range(3)}


def test_trials_resume_and_replay(tmp_path, chat_server, servers_config):
    tasks_file, ref = plan_tasks(tmp_path, PLANS, image=False)
    server = chat_server(plan_policy(ref))
    servers = servers_config("math")
    results = tmp_path / "rec"
    assert run(compose(*local_overrides(server, tasks_file, results, servers, "mode=record", "trials=2",
                                        "prepare=false"))) == 0
    pred = predictions_of(results)
    assert not pred.exists() and find_trials(pred) == [trial_path(pred, 1), trial_path(pred, 2)]
    for i in (1, 2):
        records = json.loads(trial_path(pred, i).read_text())
        assert [(r["id"], r["trial"]) for r in records] == [(t, i) for t in PLANS]
        assert (run_dir_of(results) / "cache" / f"trial{i}" / "models.jsonl").is_file()
        assert (run_dir_of(results) / "workspace" / f"trial{i}" / "t0").is_dir()

    # a lost slot (trial 2 of t1) is redone by a rerun, and nothing else is
    second = trial_path(pred, 2)
    kept = json.loads(second.read_text())
    second.write_text(json.dumps([r for r in kept if r["id"] != "t1"]))
    asked = len(server.requests)
    assert run(compose(*local_overrides(server, tasks_file, results, servers, "mode=record", "trials=2",
                                        "prepare=false"))) == 0
    assert [r["id"] for r in json.loads(second.read_text())] == list(PLANS)
    assert 0 < len(server.requests) - asked <= 3  # one task's turns
    recorded = {i: trial_path(pred, i).read_bytes() for i in (1, 2)}
    base_url = server.base_url
    server.stop()
    broken = write_json(tmp_path / "broken.json", {"servers": {"math": {"command": str(tmp_path / "none"),
                                                                        "args": []}}})

    # replayed offline from the trials' caches, without a model or servers
    replayed = predictions_of(tmp_path / "rep")
    assert run(compose(*local_overrides(base_url, tasks_file, tmp_path / "rep", broken, "mode=replay",
                                        f"cache_dir={run_dir_of(results) / 'cache'}", "trials=2",
                                        "prepare=false"))) == 0
    assert {i: trial_path(replayed, i).read_bytes() for i in (1, 2)} == recorded
