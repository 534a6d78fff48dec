"""Curation: verdicts and summaries from a scripted model over HTTP, validation, GT-format output."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
from rollout_helpers import compose, local_overrides, plan_policy, plan_tasks, run_dir_of

from engine.contract import parse_trajectories
from rollout import prompts
from rollout.curate import validate_trajectory
from rollout.models.loopback import message_texts
from rollout.runner import run

A = {"name": "math/mean", "arguments": {"numbers": [1, 2]}}
B = {"name": "math/median", "arguments": {"numbers": [3, 4, 5]}}
BAD = {"name": "math/evaluate", "arguments": {"expression": "1/0"}}
PLANS = {"j1": [[A], [B], [BAD]], "j2": [[A]], "j3": [[BAD], [A]]}


def _curator_policy(body):
    texts = message_texts(body)
    task = re.search(r"Task (j\d):", texts[1][1]).group(1)
    phase, _ = prompts.phase_of(texts[-1][1])
    retry = "(retry)" in texts[-1][1]
    if phase == "VERDICT":
        return json.dumps({"success": task != "j2", "reason": f"verdict on {task}"})
    if task == "j1" and not retry:  # invents a call: rejected, asked again
        return json.dumps({"steps": [{"step": 1, "calls": [A, {"name": "math/mode", "arguments": {}}]}]})
    if task == "j1":  # the two independent calls merged into one step, the failed call dropped
        return json.dumps({"steps": [{"step": 1, "calls": [B, A]}], "final_reply": "Mean 1.5, median 4."})
    return json.dumps({"steps": [{"step": 1, "calls": [BAD]}]})  # j3: keeps a failed call, twice


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.slow
def test_curation_end_to_end_and_replay(tmp_path, chat_server, servers_config, monkeypatch):
    tasks_file, ref = plan_tasks(tmp_path, PLANS, image=False)
    agent = chat_server(plan_policy(ref))
    curator = chat_server(_curator_policy)
    results = tmp_path / "results"
    common = local_overrides(agent, tasks_file, results, servers_config("math"), "mode=record", "prepare=false")
    run_dir = run_dir_of(results)
    curator_model = ["model@curate.model=local", f"curate.model.base_url={curator.base_url}",
                     "curate.model.name=curator"]
    terminal = Terminal()
    monkeypatch.setattr("engine.contract.progress.PROGRESS_DELAY", 0.0)
    monkeypatch.setattr(sys, "stderr", terminal)
    assert run(compose(*common, "stage=both", *curator_model)) == 0
    monkeypatch.undo()
    for label in ("rollout", "curate"):  # each loop's bar, one tick per task
        assert f"{label}: 100%" in terminal.getvalue() and "3/3 [" in terminal.getvalue(), terminal.getvalue()

    optimal = json.loads((run_dir / "optimal.json").read_text())
    verdicts = {r["id"]: r for r in json.loads((run_dir / "verdicts.json").read_text())}
    assert [o["id"] for o in optimal] == ["j1"]
    assert optimal[0] == {"id": "j1", "image": None, "type": "test", "question": "Task j1: follow the plan.",
                          "steps": [{"step": 1, "calls": [B, A]}], "num_step": 1, "max_num_concurrent": 2,
                          "final_reply": "Mean 1.5, median 4."}
    assert verdicts["j1"]["success"] is True and verdicts["j1"]["accepted"] is True
    first_summary = [m for m in verdicts["j1"]["dialogue"] if m["role"] == "user"][-1]["content"][0]["text"]
    assert "math/mode with these arguments is not a successful call of the run" in first_summary
    assert verdicts["j2"]["success"] is False and verdicts["j2"]["accepted"] is False
    assert verdicts["j2"]["reason"] == "verdict on j2"
    assert verdicts["j3"]["success"] is True and verdicts["j3"]["accepted"] is False
    assert verdicts["j3"]["error"].startswith("rejected: steps[0].calls[0]: math/evaluate")
    assert all(r["usage"]["requests"] >= 1 for r in verdicts.values())
    assert all("Task" in r["body"]["messages"][1]["content"][0]["text"] for r in curator.requests)

    # curation replays offline to the same bytes
    curator.stop()
    rep = tmp_path / "rep"
    replay = [*common[:-2], "mode=replay", "prepare=false", "stage=curate", *curator_model,
              f"curate.optimal={rep / 'optimal.json'}", f"curate.verdicts={rep / 'verdicts.json'}"]
    assert run(compose(*replay)) == 0
    for name in ("optimal.json", "verdicts.json"):
        assert (rep / name).read_bytes() == (run_dir / name).read_bytes()


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
