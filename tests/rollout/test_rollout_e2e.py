"""End-to-end rollouts over stdio against the shipped servers, the model a scripted HTTP server."""

from __future__ import annotations

import json

import pytest
from rollout_helpers import compose, local_overrides, plan_policy, plan_tasks, predictions_of, run_dir_of

from rollout.models.loopback import Reply, message_texts
from rollout.runner import run

PLANS = {
    "t1": [[{"name": "images/crop", "arguments": {"input_path": "media/t1.png", "x1": 0, "y1": 0, "x2": 32, "y2": 24,
                                                  "output_path": "media/t1_crop.png"}},
            {"name": "math/mean", "arguments": {"numbers": [1, 2, 3, 4]}}],
           [{"name": "images/draw_texts", "arguments": {"input_path": "media/t1_crop.png",
                                                        "texts": [{"text": "hi", "x": 1, "y": 1}]}}]],
    "t2": [[{"name": "excel/create_workbook", "arguments": {"filepath": "out.xlsx"}}],
           [{"name": "excel/write_data_to_excel", "arguments": {"filepath": "out.xlsx", "data": [["x", 1]]}}]],
    "t3": [[{"name": "weather/get_weather", "arguments": {"city": "Paris"}},
            {"name": "math/mode", "arguments": {"numbers": [1, 1, 2]}}]],
}


def _image_parts(body: dict) -> list[str]:
    return [p["image_url"]["url"] for m in body["messages"] if isinstance(m["content"], list)
            for p in m["content"] if p.get("type") == "image_url"]


@pytest.mark.slow
def test_rollout_end_to_end(tmp_path, chat_server, servers_config):
    tasks_file, ref = plan_tasks(tmp_path, PLANS)
    server = chat_server(plan_policy(ref))
    results = tmp_path / "results"
    out = predictions_of(results)
    cfg = compose(*local_overrides(server, tasks_file, results, servers_config("images", "math", "excel"),
                                   "concurrency=3"))
    assert run(cfg) == 0

    preds = json.loads(out.read_text())
    assert [p["id"] for p in preds] == ["t1", "t2", "t3"]
    for p in preds:
        assert set(p) == {"id", "image", "type", "question", "steps", "num_step", "max_num_concurrent",
                          "final_reply", "dialogue", "usage"}
        assert p["final_reply"] == f"Done. ({p['id']})"
        assert p["num_step"] == len(p["steps"]) == len(PLANS[p["id"]])
        for step, planned in zip(p["steps"], PLANS[p["id"]], strict=True):
            assert [c["name"] for c in step["calls"]] == [c["name"] for c in planned]
            assert [c["arguments"] for c in step["calls"]] == [c["arguments"] for c in planned]
            assert all(set(c) == {"name", "arguments", "result", "is_error"} for c in step["calls"])
        assigned = [m["usage"] for m in p["dialogue"] if m["role"] == "assistant"]
        assert p["usage"]["requests"] == len(assigned)
        assert p["usage"]["total_tokens"] == sum(u["total_tokens"] for u in assigned) > 0

    t1, t2, t3 = preds
    assert t1["max_num_concurrent"] == 2
    assert not any(c["is_error"] for s in t1["steps"] + t2["steps"] for c in s["calls"])
    assert json.loads(t1["steps"][0]["calls"][1]["result"])["mean"] == 2.5
    ws = run_dir_of(results) / "workspace"
    assert (ws / "t1" / "media" / "t1_crop.png").is_file() and (ws / "t1" / "media" / "t1_crop_texts.png").is_file()
    assert (ws / "t2" / "out.xlsx").is_file()
    unknown, mode = t3["steps"][0]["calls"]
    assert unknown["is_error"] and unknown["result"] == "Error: unknown tool 'weather/get_weather'"
    assert not mode["is_error"] and json.loads(mode["result"])["modes"] == [1]

    # the produced image joined the pool: listed in the results and sent as a data URL afterwards
    results = [m for m in t1["dialogue"] if m["role"] == "user" and "Results of step 1" in m["content"][0]["text"]]
    assert "New images in the workspace: media/t1_crop.png" in results[0]["content"][0]["text"]
    assert {"type": "image", "path": "media/t1_crop.png"} in results[0]["content"]
    t1_bodies = [r["body"] for r in server.requests if "Task t1:" in message_texts(r["body"])[1][1]]
    assert all(u.startswith("data:image/png;base64,") for b in t1_bodies for u in _image_parts(b))
    assert len(_image_parts(t1_bodies[0])) == 1 and len(_image_parts(t1_bodies[-1])) == 3


class _Malformed:
    """Prose instead of JSON once (t1) or always (t2) in PROCESS; too many calls in t3; arguments that are
    not JSON in one of t4's calls."""

    def __init__(self, base):
        self.base = base

    def __call__(self, body):
        texts = message_texts(body)
        last, first = texts[-1][1], texts[1][1]
        if "## PROCESS (retry)" in last and "Task t2:" in first:
            return "still not json"
        if "## PROCESS (step 1" in last and "Task t1:" in first:
            return "Sure! I will call math/mean now."
        if "## PROCESS (step 1" in last and "Task t2:" in first:
            return '{"tool_calls": [{"arguments": {}}]}'
        if "## PROCESS (step 1" in last and "Task t3:" in first:
            calls = [{"name": "math/mean", "arguments": {"numbers": [i]}} for i in range(4)]
            return "```json\n" + json.dumps({"tool_calls": calls}) + "\n```"
        if "## PROCESS (step 1" in last and "Task t4:" in first:
            return json.dumps({"tool_calls": [{"name": "math/mean", "arguments": "{numbers: [1, 3"},
                                              {"name": "math/mean", "arguments": {"numbers": [1, 3]}}]})
        return self.base(body)


@pytest.mark.slow
def test_malformed_model_output(tmp_path, chat_server, servers_config):
    step = [[{"name": "math/mean", "arguments": {"numbers": [1, 3]}}]]
    tasks_file, ref = plan_tasks(tmp_path, {"t1": step, "t2": step, "t3": step, "t4": step}, image=False)
    server = chat_server(_Malformed(plan_policy(ref)))
    out = predictions_of(tmp_path)
    overrides = local_overrides(server, tasks_file, tmp_path, servers_config("math"), "max_concurrent=2",
                                "prepare=false")
    assert run(compose(*overrides)) == 0  # the model's own failure is no loss to the infrastructure
    t1, t2, t3, t4 = json.loads(out.read_text())

    # one retry fixes t1
    retries = [m for m in t1["dialogue"] if m["role"] == "user" and m["content"][0]["text"].startswith(
        "## PROCESS (retry)")]
    assert len(retries) == 1 and "not valid JSON" in retries[0]["content"][0]["text"]
    assert [c["name"] for s in t1["steps"] for c in s["calls"]] == ["math/mean"]
    # two bad replies: the agent's failure, recorded with its steps so far (none) and no final reply
    assert t2["steps"] == [] and t2["num_step"] == 0 and "final_reply" not in t2
    assert t2["error"] == {"kind": "agent", "attempts": 2, "reason": "step 1: the PROCESS reply is not tool-call "
                           "JSON after a retry (not valid JSON (Expecting value at line 1 column 1))"}
    assert 'has no "name" string' in t2["dialogue"][-2]["content"][0]["text"]
    assert t2["dialogue"][-1]["content"] == "still not json"
    # arguments that are not JSON: the call recorded as written, not run, counted; the loop goes on
    (bad, good), = [s["calls"] for s in t4["steps"]]
    assert bad == {"name": "math/mean", "arguments": "{numbers: [1, 3", "is_error": True, "result":
                   "Error: Invalid arguments: tool_calls[0].arguments is a string that is not JSON (the call was "
                   "not made)", "made": False}
    assert not good["is_error"] and json.loads(good["result"])["mean"] == 2
    assert t4["illegal_calls"] == 1 and "error" not in t4 and t4["final_reply"] == "Done. (t4)"
    assert "error" not in t1 and "error" not in t3
    # four calls asked for, two run, the model is told
    assert [c["arguments"] for c in t3["steps"][0]["calls"]] == [{"numbers": [0]}, {"numbers": [1]}]
    assert any("Only the first 2 of your 4 calls were run" in m["content"][0]["text"]
               for m in t3["dialogue"] if m["role"] == "user")

    # a rerun leaves every task alone: the agent's failure is its outcome, not a loss
    before = out.read_bytes()
    assert run(compose(*overrides)) == 0
    assert out.read_bytes() == before


class _Flaky:
    """429 (with Retry-After) then 500 on the first requests, then the plan; task t2 always gets 400."""

    def __init__(self, base):
        self.base = base
        self.n = 0

    def __call__(self, body):
        self.n += 1
        if self.n == 1:
            return Reply(status=429, error="slow down", headers={"Retry-After": "0"})
        if self.n == 2:
            return Reply(status=500, error="boom")
        if "Task t2:" in message_texts(body)[1][1]:
            return Reply(status=400, error="bad request for t2")
        return self.base(body)


@pytest.mark.slow
def test_retries_key_secrecy_and_failed_tasks(tmp_path, chat_server, servers_config, monkeypatch, capsys, caplog):
    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("M3_ROLLOUT_TEST_KEY", secret)
    step = [[{"name": "math/median", "arguments": {"numbers": [1, 2, 3]}}]]
    tasks_file, ref = plan_tasks(tmp_path, {"t1": step, "t2": step}, image=False)
    policy = plan_policy(ref)
    server = chat_server(_Flaky(policy))
    results = tmp_path / "out"
    out = predictions_of(results)
    overrides = local_overrides(server, tasks_file, results, servers_config("math"), "concurrency=1",
                                "model.api_key_env=M3_ROLLOUT_TEST_KEY", "mode=record")
    assert run(compose(*overrides)) == 1  # t2 failed for good
    preds = json.loads(out.read_text())
    assert [p["id"] for p in preds] == ["t1", "t2"]
    assert "error" not in preds[0]
    assert preds[1]["error"] == {"kind": "model_api", "reason": "HTTP 400: bad request for t2", "attempts": 1}
    assert "final_reply" not in preds[1] and preds[1]["steps"] == []
    assert server.requests[0]["authorization"] == f"Bearer {secret}"
    assert sum(1 for r in server.requests if "Task t2:" in message_texts(r["body"])[1][1]) == 1  # 400: no retry
    captured = capsys.readouterr()
    assert "t2 failed (model_api)" in caplog.text and "HTTP 400: bad request for t2" in caplog.text
    assert "1 failed (model_api 1; 1 lost to the infrastructure" in captured.out
    assert "retrying" in caplog.text

    # the rerun does only t2
    good = chat_server(policy)
    overrides = local_overrides(good, tasks_file, results, servers_config("math"),
                                "model.api_key_env=M3_ROLLOUT_TEST_KEY", "mode=record")
    assert run(compose(*overrides)) == 0
    preds = json.loads(out.read_text())
    assert [p["id"] for p in preds] == ["t1", "t2"] and not any("error" in p for p in preds)
    assert all("Task t2:" in message_texts(r["body"])[1][1] for r in good.requests)

    texts = [captured.out, captured.err, caplog.text, capsys.readouterr().out]
    texts += [p.read_text(errors="replace") for p in results.rglob("*") if p.is_file()]
    assert not any(secret in t for t in texts)
