"""The whole flow as a user runs it, offline: a rollout of the scripted model over the shipped servers,
the scripted judge pool, then the leaderboard sweep, which finds the new model's files by their names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_runs import run_script


@pytest.mark.slow
def test_rollout_judge_score(tmp_path: Path, embedding_cache: Path) -> None:
    results, out = tmp_path / "results", tmp_path / "board"
    run_script("rollout", "model=scripted", "tasks=demo", f"results_dir={results}", cwd=tmp_path)
    judged = run_script("judge", "model=scripted", "judges=scripted", "data=rollout_demo", f"results_dir={results}",
                        cwd=tmp_path)
    assert "m3_judges: 4 of 4 task(s) judged" in judged.stdout
    assert "call_outcomes: 4 of 4 task(s) judged" in judged.stdout
    assert "m3_judges: Task Completion 0.9750, Information Grounding 0.9750" in judged.stdout
    assert "call_outcomes: Illegal Calling Format 0, " in judged.stdout and "Successful Call 9" in judged.stdout
    for suffix in ("taskcompletion", "callanalysis"):
        assert (results / f"scripted_test_mcp_fuzzy_{suffix}.json").is_file()
    scored = run_script("score", "sweep=leaderboard", "data=rollout_demo", f"results_dir={results}",
                        f"output_dir={out}", f"encoder.cache_dir={embedding_cache}", "device=cpu", cwd=tmp_path)
    assert "Task Completion" in scored.stdout and "Information Grounding  Average Score" in scored.stdout

    result = json.loads((out / "scripted" / "results_eval.json").read_text())
    aggregate = result["aggregate"]
    assert aggregate["task_completion"] == pytest.approx(0.975)  # judges 1.0, 0.95, 1.0, 0.9: trimmed mean
    assert aggregate["information_grounding"] == pytest.approx(0.975)
    assert aggregate["success"] == 9 and aggregate["illegal_calling"] == 0
    assert all("task_completion" in entry for entry in result["per_id"])
    board = json.loads((out / "leaderboard.json").read_text())
    row = board["rows"][0]
    assert row["Model"] == "scripted" and row["Task Completion"] == pytest.approx(0.975)
    averaged = [row[c] for c in ("Recall", "Precision", "Argument Similarity", "Step Coherence", "Order Consistency",
                                 "Merge Purity", "Information Grounding")]
    assert row["Average Score"] == pytest.approx(sum(averaged) / 7)
    calls = json.loads((out / "calls.json").read_text())["rows"][0]
    assert calls["Successful Call"] == 9 and calls["Successful Call %"] == 1.0
    assert (out / "calls.png").read_bytes()[:4] == b"\x89PNG"

    again = tmp_path / "again"
    run_script("report", str(out), "--out", str(again), cwd=tmp_path)
    assert (again / "calls.md").read_text().startswith("| Model | Calls |")
