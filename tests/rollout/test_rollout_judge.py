"""The judge: verdicts and summaries from a scripted model over HTTP, validation, GT-format output."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rollout_helpers import compose, local_overrides, plan_policy, plan_tasks

from engine.contract import parse_trajectories
from rollout import prompts
from rollout.judge import validate_trajectory
from rollout.runner import run
from rollout.scripted import message_texts

A = {"name": "math/mean", "arguments": {"numbers": [1, 2]}}
B = {"name": "math/median", "arguments": {"numbers": [3, 4, 5]}}
BAD = {"name": "math/evaluate", "arguments": {"expression": "1/0"}}
PLANS = {"j1": [[A], [B], [BAD]], "j2": [[A]], "j3": [[BAD], [A]]}


def _judge_policy(body):
    texts = message_texts(body)
    task = re.search(r"Task (j\d):", texts[1][1]).group(1)
    phase, _ = prompts.phase_of(texts[-1][1])
    retry = "(retry)" in texts[-1][1]
    if phase == "JUDGE":
        return json.dumps({"success": task != "j2", "reason": f"verdict on {task}"})
    if task == "j1" and not retry:  # invents a call: rejected, asked again
        return json.dumps({"steps": [{"step": 1, "calls": [A, {"name": "math/mode", "arguments": {}}]}]})
    if task == "j1":  # the two independent calls merged into one step, the failed call dropped
        return json.dumps({"steps": [{"step": 1, "calls": [B, A]}], "final_reply": "Mean 1.5, median 4."})
    return json.dumps({"steps": [{"step": 1, "calls": [BAD]}]})  # j3: keeps a failed call, twice


def test_judge_end_to_end_and_replay(tmp_path, chat_server, servers_config):
    tasks_file, ref = plan_tasks(tmp_path, PLANS, image=False)
    agent = chat_server(plan_policy(ref))
    judge = chat_server(_judge_policy)
    out = tmp_path / "run" / "pred.json"
    common = local_overrides(agent, tasks_file, out, servers_config("math"), "mode=record", "prepare=false")
    judge_model = ["model@judge.model=local", f"judge.model.base_url={judge.base_url}", "judge.model.name=judge"]
    assert run(compose(*common, "stage=both", *judge_model)) == 0

    optimal = json.loads((out.parent / "optimal.json").read_text())
    reports = {r["id"]: r for r in json.loads((out.parent / "judge.json").read_text())}
    assert [o["id"] for o in optimal] == ["j1"]
    assert optimal[0] == {"id": "j1", "image": None, "type": "test", "question": "Task j1: follow the plan.",
                          "steps": [{"step": 1, "calls": [B, A]}], "num_step": 1, "max_num_concurrent": 2,
                          "final_reply": "Mean 1.5, median 4."}
    assert reports["j1"]["success"] is True and reports["j1"]["accepted"] is True
    first_summary = [m for m in reports["j1"]["dialogue"] if m["role"] == "user"][-1]["content"][0]["text"]
    assert "math/mode with these arguments is not a successful call of the run" in first_summary
    assert reports["j2"]["success"] is False and reports["j2"]["accepted"] is False
    assert reports["j2"]["reason"] == "verdict on j2"
    assert reports["j3"]["success"] is True and reports["j3"]["accepted"] is False
    assert reports["j3"]["error"].startswith("rejected: steps[0].calls[0]: math/evaluate")
    assert all(r["usage"]["requests"] >= 1 for r in reports.values())
    assert all("Task" in r["body"]["messages"][1]["content"][0]["text"] for r in judge.requests)

    # the judge replays offline to the same bytes
    judge.stop()
    replay = [*common[:-2], "mode=replay", "prepare=false", "stage=judge", *judge_model,
              f"judge.output={tmp_path / 'rep' / 'optimal.json'}", f"judge.report={tmp_path / 'rep' / 'judge.json'}"]
    assert run(compose(*replay)) == 0
    for name in ("optimal.json", "judge.json"):
        assert (tmp_path / "rep" / name).read_bytes() == (out.parent / name).read_bytes()


def test_validate_trajectory_rules():
    steps = [{"step": 1, "calls": [{**A, "result": "1.5", "is_error": False}]},
             {"step": 2, "calls": [{**B, "result": "4", "is_error": False},
                                   {**BAD, "result": "Error", "is_error": True}]}]
    run_steps = parse_trajectories(Path("pred.json"), [{"id": "x", "steps": steps}]).tasks["x"]
    ok = {"steps": [{"step": 1, "calls": [A, B]}]}
    assert validate_trajectory(ok, run_steps) == []
    assert validate_trajectory({"steps": [{"step": 1, "calls": [A]}, {"step": 2, "calls": [B]}],
                                "final_reply": "x"}, run_steps) == []

    def problems(proposal):
        return " | ".join(validate_trajectory(proposal, run_steps))

    assert "'arguments' is a required property" in problems({"steps": [{"step": 1, "calls": [{"name": "math/mean"}]}]})
    assert "does not match" in problems({"steps": [{"step": 1, "calls": [{"name": "mean", "arguments": {}}]}]})
    assert "steps" in problems({"steps": []})
    assert "Additional properties" in problems({"steps": [{"step": 1, "calls": [A]}], "notes": "x"})
    assert "expected 1, got 2" in problems({"steps": [{"step": 2, "calls": [A]}]})
    assert "math/evaluate" in problems({"steps": [{"step": 1, "calls": [BAD]}]})
    assert "used more often" in problems({"steps": [{"step": 1, "calls": [A]}, {"step": 2, "calls": [A]}]})
    assert "keep the order" in problems({"steps": [{"step": 1, "calls": [B]}, {"step": 2, "calls": [A]}]})
