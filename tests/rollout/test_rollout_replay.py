"""Record/replay: a replayed run starts no server, calls no model and gives the same bytes."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
from rollout_helpers import (
    HERE,
    TEST_MODEL,
    compose,
    local_overrides,
    plan_policy,
    plan_tasks,
    predictions_of,
    run_dir_of,
    write_json,
)

from engine.contract import InputError, canonical_json
from rollout.record import RolloutCache, tool_key
from rollout.runner import run
from rollout.scripted import PlanPolicy

PLANS = {
    "r1": [[{"name": "images/resize", "arguments": {"input_path": "media/r1.png", "width": 20,
                                                    "output_path": "media/small.png"}},
            {"name": "math/variance", "arguments": {"numbers": [1, 2, 4]}}],
           [{"name": "images/rotate", "arguments": {"input_path": "media/small.png", "angle": 90}}]],
    "r2": [[{"name": "math/evaluate", "arguments": {"expression": "1/0"}}]],
}


def test_replay_is_byte_for_byte(tmp_path, chat_server, servers_config):
    tasks_file, ref = plan_tasks(tmp_path, PLANS)
    server = chat_server(plan_policy(ref))
    recorded, replayed = predictions_of(tmp_path / "rec"), predictions_of(tmp_path / "rep")
    assert run(compose(*local_overrides(server, tasks_file, tmp_path / "rec", servers_config("images", "math"),
                                        "mode=record", "concurrency=2"))) == 0
    cache_dir = run_dir_of(tmp_path / "rec") / "cache"
    n_requests, base_url = len(server.requests), server.base_url
    server.stop()  # nothing may be asked of the model any more

    broken = write_json(tmp_path / "broken.json", {"servers": {
        "images": {"command": str(tmp_path / "no-such-server"), "args": []},
        "math": {"command": str(tmp_path / "no-such-server"), "args": []}}})
    assert run(compose(*local_overrides(base_url, tasks_file, tmp_path / "rep", broken, "mode=replay",
                                        f"cache_dir={cache_dir}", "concurrency=2"))) == 0
    assert replayed.read_bytes() == recorded.read_bytes()
    assert len(server.requests) == n_requests
    preds = json.loads(replayed.read_text())
    assert preds[1]["steps"][0]["calls"][0]["is_error"]  # a recorded tool error replays as it was
    ws = run_dir_of(tmp_path / "rep") / "workspace" / "r1" / "media"
    assert (ws / "small.png").is_file() and (ws / "small_rotate.png").is_file()  # files restored
    original = run_dir_of(tmp_path / "rec") / "workspace" / "r1" / "media" / "small.png"
    assert (ws / "small.png").read_bytes() == original.read_bytes()


def test_replay_miss_fails_the_task_and_keys_are_canonical(tmp_path, chat_server, servers_config):
    assert tool_key("m1", "s", "t", {"b": 1, "a": "é"}, 0) == tool_key("m1", "s", "t", {"a": "é", "b": 1}, 0)
    assert len({tool_key("m1", "s", "t", {}, 0), tool_key("m1", "s", "t", {}, 1), tool_key("m2", "s", "t", {}, 0)}) == 3
    assert canonical_json({"b": [1, {"d": 2, "c": 3}], "a": "é"}) == '{"a":"é","b":[1,{"c":3,"d":2}]}'
    with pytest.raises(InputError, match="field 'cache_dir'"):
        RolloutCache(tmp_path / "nothing", "replay")

    tasks_file, ref = plan_tasks(tmp_path, {"m1": PLANS["r2"]}, image=False)
    server = chat_server(plan_policy(ref))
    assert run(compose(*local_overrides(server, tasks_file, tmp_path / "rec", servers_config("math"),
                                        "mode=record"))) == 0
    # another model asked of the API makes every request a miss: the task fails, recorded as lost to the replay
    status = run(compose(*local_overrides(server, tasks_file, tmp_path / "rep", servers_config("math"), "mode=replay",
                                          f"cache_dir={run_dir_of(tmp_path / 'rec') / 'cache'}",
                                          "model.api_name=other")))
    assert status == 1
    (record,) = json.loads(predictions_of(tmp_path / "rep").read_text())
    assert record["error"]["kind"] == "replay" and "no recorded model response" in record["error"]["reason"]
    assert record["steps"] == [] and "final_reply" not in record


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_repeated_identical_calls_replay_each_their_own_result(tmp_path, servers_config, caplog):
    """Two tasks with one question and different plans, each repeating an identical call (in one step and
    across steps, writing a file each time) on a server whose every answer differs: the scripted model follows
    each task's own plan, and the replay gives every call its own recorded result, byte for byte."""
    tick = {"name": "counter/tick", "arguments": {"label": "a"}}
    save = {"name": "counter/tick", "arguments": {"label": "a", "file_path": "media/count.txt"}}
    tasks_file, ref = plan_tasks(tmp_path, {"c1": [[tick, tick], [save], [save]], "c2": [[tick], [save]]})
    for path in (tasks_file, ref):  # one question for both tasks, as several published tasks share one
        write_json(path, [{**t, "question": "Count for me."} for t in json.loads(path.read_text())])
    counter = {"command": sys.executable, "args": [str(HERE / "counter_server.py")], "env": {}}
    config = servers_config(extra={"counter": counter})

    def overrides(results: str, *extra: str) -> list[str]:
        return ["model=scripted", f"model.script={ref}", f"model.name={TEST_MODEL}", f"tasks.file={tasks_file}",
                f"results_dir={tmp_path / results}", *extra]

    with caplog.at_level(logging.WARNING, logger="rollout.scripted"):
        assert run(compose(*overrides("rec", f"servers={config}", "mode=record", "concurrency=1"))) == 0
    assert not caplog.records  # every request named its task: no plan was chosen by the shared question
    recorded = json.loads(predictions_of(tmp_path / "rec").read_text())
    results = {r["id"]: [c["result"] for s in r["steps"] for c in s["calls"]] for r in recorded}
    assert results == {"c1": ["a #1", "a #2", "a #3", "a #4"], "c2": ["a #5", "a #6"]}
    rec_dir = run_dir_of(tmp_path / "rec")
    assert (rec_dir / "workspace" / "c1" / "media" / "count.txt").read_text() == "count 4\n"
    broken = write_json(tmp_path / "broken.json", {"servers": {"counter": {"command": str(tmp_path / "none")}}})
    assert run(compose(*overrides("rep", f"servers={broken}", "mode=replay", f"cache_dir={rec_dir / 'cache'}",
                                  "concurrency=2"))) == 0
    rep_dir = run_dir_of(tmp_path / "rep")
    assert predictions_of(tmp_path / "rep").read_bytes() == predictions_of(tmp_path / "rec").read_bytes()
    for folder in ("workspace", "tool_logs"):  # the tool logs' duration_s included: the recorded ones
        assert _tree(rep_dir / folder) == _tree(rec_dir / folder), folder
    assert len(_tree(rep_dir / "workspace")) == 4  # two task images, two count.txt


def test_a_plan_is_chosen_by_task_id_and_a_shared_question_warns(tmp_path, caplog):
    tasks_file, ref = plan_tasks(tmp_path, {"q1": [[{"name": "math/mean", "arguments": {"numbers": [1]}}]],
                                            "q2": [[{"name": "math/mean", "arguments": {"numbers": [2]}}]]})
    write_json(ref, [{**t, "question": "Same?"} for t in json.loads(ref.read_text())])
    policy = PlanPolicy.from_file(ref)
    request = {"messages": [{"role": "system", "content": "s", "task": "q2"}, {"role": "user", "content": "x"}]}
    assert policy.plan(request, "Same?") == policy.plans["q2"]
    with caplog.at_level(logging.WARNING, logger="rollout.scripted"):
        assert policy.plan({"messages": []}, "Same?") == policy.plans["q1"]
        policy.plan({"messages": []}, "Same?")
    assert [r.getMessage() for r in caplog.records].count(caplog.records[0].getMessage()) == 1
    assert "2 tasks share it with different plans (q1, q2); following q1" in caplog.records[0].getMessage()
