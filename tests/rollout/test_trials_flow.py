"""Four trials as a user runs them, offline: rollout trials=4, the judge and the leaderboard sweep find
the trial files by their names, and trials.json accounts for every (task, trial) slot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rollout_helpers import compose_judge
from script_runs import run_script

from engine.contract import read_trajectories
from engine.judge_results import joined_files, load_joined
from engine.trials import Trial, inventory, success_rule, trial_path
from rollout.judges.run import run as run_judge


@pytest.mark.slow
def test_four_trials_rollout_judge_score(tmp_path: Path, embedding_cache: Path) -> None:
    results, out = tmp_path / "results", tmp_path / "board"
    run_script("rollout", "model=scripted", "tasks=demo", "trials=4", f"results_dir={results}", cwd=tmp_path)
    judged = run_script("judge", "model=scripted", "judges=scripted", "data=rollout_demo", f"results_dir={results}",
                        cwd=tmp_path)
    assert judged.stdout.count("m3_judges: 4 of 4 task(s) judged") == 4
    for i in range(1, 5):
        assert (results / f"scripted_test_mcp_fuzzy_trial{i}_taskcompletion.json").is_file()
    run_script("score", "sweep=leaderboard", "data=rollout_demo", f"results_dir={results}", f"output_dir={out}",
               f"encoder.cache_dir={embedding_cache}", "device=cpu", "trials.success.threshold=0.95", cwd=tmp_path)

    doc = json.loads((out / "trials.json").read_text())["models"]["scripted"]
    assert doc["meta"]["trials"] == 4 and doc["inventory"]["slots"] == 16 and doc["inventory"]["finished"] == 16
    # the scripted model repeats itself: every task's Task Completion is 0.975 in every trial
    for k in range(1, 5):
        assert doc["pass_hat_k"]["losses_as_failures"][str(k)] == {"value": 1.0, "tasks": 4}
    assert all(s["success"] for s in doc["inventory"]["records"])
    assert doc["aggregate"]["task_completion"] == {"mean": pytest.approx(0.975), "std": 0.0, "n": 4}
    assert "| scripted | 4 |" in (out / "leaderboard_trials.md").read_text()
    assert (out / "scripted_trial4" / "results_eval.json").is_file()


def test_trial_success_from_each_evaluator_rule(tmp_path: Path) -> None:
    """Two trials judged by the judge app (scripted judges, a real check module), their rubric and check
    files joined as the score app joins them: the default keys of critical_rubrics and outcome_checks."""
    (tmp_path / "check.py").write_text("def check(trajectory, workspace, tool_log):\n"
                                       "    return ['42' in (trajectory.get('final_reply') or '')]\n")
    rubric = {"description": 'States "42".', "weight": 5, "critical": True}
    tasks = [{"id": tid, "check": "check.py", "turns": [{"prompt": "6 x 7?", "golden_answer": "42",
                                                          "rubrics": [rubric]}]} for tid in ("a", "b")]
    (tmp_path / "tasks.json").write_text(json.dumps(tasks))
    pred = tmp_path / "m_test_mcp_fuzzy.json"
    replies = [{"a": "It is 42.", "b": "It is 41."}, {"a": "Perhaps 40.", "b": "42, surely."}]
    for i, answers in enumerate(replies, 1):
        records = [{"id": t, "steps": [], "final_reply": r} for t, r in answers.items()]
        trial_path(pred, i).write_text(json.dumps(records))
    cfg = compose_judge(f"predictions={pred}", f"data.tasks={tmp_path / 'tasks.json'}", "judges=scripted",
                        "evaluators=[vtb_rubrics,verifiers]", f"cache_dir={tmp_path / 'cache'}",
                        f"workspace_dir={tmp_path / 'ws'}", f"tool_log_dir={tmp_path / 'logs'}")
    assert run_judge(cfg) == 0
    trials = []
    for i in (1, 2):
        path = trial_path(pred, i)
        for suffix in ("rubrics", "checks"):
            assert path.with_name(f"{path.stem}_{suffix}.json").is_file()
        joined = load_joined(joined_files(path))
        trials.append(Trial(path, read_trajectories(path), joined.per_id if joined else {}))
    expected = [("a", 1, True), ("b", 1, False), ("a", 2, False), ("b", 2, True)]
    for rule in ("critical_rubrics", "outcome_checks"):
        slots = inventory(["a", "b"], trials, success_rule({"rule": rule}))
        assert [(s.task_id, s.trial, s.success) for s in slots] == expected, rule
