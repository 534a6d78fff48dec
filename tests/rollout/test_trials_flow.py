"""Four trials as a user runs them, offline: rollout trials=4, the judge and the leaderboard sweep find
the trial files by their names, and trials.json accounts for every (task, trial) slot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from rollout_helpers import ROOT


def script(name: str, *overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / f"{name}.py"), *overrides], cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


@pytest.mark.slow
def test_four_trials_rollout_judge_score(tmp_path: Path, embedding_cache: Path) -> None:
    results, out = tmp_path / "results", tmp_path / "board"
    script("rollout", "model=scripted", "tasks=demo", "trials=4", f"results_dir={results}", cwd=tmp_path)
    judged = script("judge", "model=scripted", "judges=scripted", "data=rollout_demo", f"results_dir={results}",
                    cwd=tmp_path)
    assert judged.stdout.count("judge: 4 of 4 task(s) judged") == 4
    for i in range(1, 5):
        assert (results / f"scripted_test_mcp_fuzzy_trial{i}_taskcompletion.json").is_file()
    script("score", "sweep=leaderboard", "data=rollout_demo", f"results_dir={results}", f"output_dir={out}",
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
