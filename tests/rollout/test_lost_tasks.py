"""The ``error`` of a prediction record as its readers take it: the model's own failure is judged and
counted as an unsuccessful trial; a task lost to the infrastructure is left out of the scores and the
judges, named in a warning, and counted apart in the trials inventory."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from rollout_helpers import compose_judge

from engine.contract import read_trajectories, task_error, without_lost
from engine.judge_results import joined_files, load_joined
from engine.trials import AGENT_FAILURE, FINISHED, INFRASTRUCTURE, Trial, inventory, success_rule, trial_path
from rollout.judges.run import run as run_judge


def test_lost_tasks_are_reported_apart_and_agent_failures_count(tmp_path: Path, caplog) -> None:
    (tmp_path / "check.py").write_text("def check(trajectory, workspace, tool_log):\n"
                                       "    return ['42' in (trajectory.get('final_reply') or '')]\n")
    rubric = {"description": 'States "42".', "weight": 5, "critical": True}
    tasks = [{"id": tid, "check": "check.py", "turns": [{"prompt": "6 x 7?", "golden_answer": "42",
                                                          "rubrics": [rubric]}]} for tid in ("a", "b", "c")]
    (tmp_path / "tasks.json").write_text(json.dumps(tasks))
    pred = tmp_path / "m_test_mcp_fuzzy.json"
    first = [{"id": t, "steps": [], "final_reply": "It is 42."} for t in ("a", "b", "c")]
    second = [{"id": "a", "steps": [], "error": task_error("agent", "step 1: the reply is not tool-call JSON", 2)},
              {"id": "b", "steps": [], "error": task_error("model_api", "HTTP 429: rate limited", 4)},
              {"id": "c", "steps": [], "final_reply": "It is 42."}]
    for i, records in enumerate((first, second), 1):
        trial_path(pred, i).write_text(json.dumps(records))

    kept, lost = without_lost(read_trajectories(trial_path(pred, 2), lenient=True))
    assert sorted(kept.tasks) == ["a", "c"] and lost == {"b": ("model_api", "HTTP 429: rate limited")}
    assert "1 task(s) lost to the infrastructure are left out (model_api 1; a rerun" in caplog.text
    assert "b (model_api)" in caplog.text

    cfg = compose_judge(f"predictions={pred}", f"data.tasks={tmp_path / 'tasks.json'}", "judges=scripted",
                        "evaluators=[vtb_rubrics,verifiers]", f"cache_dir={tmp_path / 'cache'}",
                        f"workspace_dir={tmp_path / 'ws'}", f"tool_log_dir={tmp_path / 'logs'}")
    with caplog.at_level(logging.WARNING):
        assert run_judge(cfg) == 0
    trials = []
    for i in (1, 2):
        path = trial_path(pred, i)
        checks = json.loads(path.with_name(f"{path.stem}_checks.json").read_text())["per_id"]
        assert sorted(checks) == (["a", "b", "c"] if i == 1 else ["a", "c"])  # the lost task is not judged
        joined = load_joined(joined_files(path))
        trials.append(Trial(path, read_trajectories(path), joined.per_id if joined else {}))
    slots = inventory(["a", "b", "c"], trials, success_rule({"rule": "outcome_checks"}))
    assert [(s.task_id, s.trial, s.state, s.success) for s in slots] == [
        ("a", 1, FINISHED, True), ("b", 1, FINISHED, True), ("c", 1, FINISHED, True),
        ("a", 2, AGENT_FAILURE, False), ("b", 2, INFRASTRUCTURE, None), ("c", 2, FINISHED, True)]
    assert slots[4].reason == "error (model_api): HTTP 429: rate limited"
