"""A server that crashes mid-run: the call is a tool error in the record, the run goes on."""

from __future__ import annotations

import json

import pytest
from rollout_helpers import compose, flaky_entry, local_overrides, plan_policy, plan_tasks, predictions_of, run_dir_of

from rollout.runner import run


@pytest.mark.slow
def test_server_crash_mid_run(tmp_path, chat_server, servers_config):
    echo = {"name": "flaky/echo", "arguments": {"text": "hello"}}
    plans = {"c1": [[echo], [{"name": "flaky/crash", "arguments": {}}, {"name": "math/mean",
                                                                       "arguments": {"numbers": [2, 4]}}]],
             "c2": [[echo, {"name": "flaky/picture", "arguments": {"width": 8, "height": 6}}]],
             "c3": [[{"name": "flaky/hang", "arguments": {"seconds": 3}}], [echo]]}
    tasks_file, ref = plan_tasks(tmp_path, plans, image=False)
    server = chat_server(plan_policy(ref))
    out = predictions_of(tmp_path)
    servers = servers_config("math", extra={"flaky": flaky_entry()})
    assert run(compose(*local_overrides(server, tasks_file, tmp_path, servers, "concurrency=1", "prepare=false",
                                        "call_timeout=1"))) == 0
    c1, c2, c3 = json.loads(out.read_text())
    crash, mean = c1["steps"][1]["calls"]
    assert crash["is_error"] and crash["result"] == "Error: MCP server 'flaky' exited during the call"
    assert not mean["is_error"]  # the other server and the other call are unaffected
    assert c1["final_reply"] == "Done. (c1)"
    assert c2["steps"][0]["calls"][0] == {**echo, "result": "hello", "is_error": False}  # restarted
    picture = c2["steps"][0]["calls"][1]
    assert picture["result"] == "[image saved to media/picture_s1c2.png]" and not picture["is_error"]
    assert (run_dir_of(tmp_path) / "workspace" / "c2" / "media" / "picture_s1c2.png").is_file()
    results = next(m for m in c2["dialogue"] if m["role"] == "user" and "Results of step 1" in m["content"][0]["text"])
    assert {"type": "image", "path": "media/picture_s1c2.png"} in results["content"]
    hang, again = (s["calls"][0] for s in c3["steps"])
    assert hang["is_error"] and "timed out after 1 s" in hang["result"]
    assert again["result"] == "hello" and not again["is_error"]
