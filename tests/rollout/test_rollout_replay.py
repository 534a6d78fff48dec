"""Record/replay: a replayed run starts no server, calls no model and gives the same bytes."""

from __future__ import annotations

import json

import pytest
from rollout_helpers import compose, local_overrides, plan_policy, plan_tasks, predictions_of, run_dir_of, write_json

from engine.contract import InputError, canonical_json
from rollout.record import RolloutCache, tool_key
from rollout.runner import run

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
    assert tool_key("s", "t", {"b": 1, "a": "é"}) == tool_key("s", "t", {"a": "é", "b": 1})
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
