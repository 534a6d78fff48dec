"""Outcome checks end to end: the final workspace and the tool log of a rollout (recorded, wiped,
replayed: the same files and log), a judge that never answers, and the MCPVerse- and TOBench-like demo
sets run as the README says: rollout -> judge -> score -> reports."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from rollout_helpers import compose, compose_judge, local_overrides, plan_policy, plan_tasks, run_dir_of, write_json
from script_runs import call_app

from rollout.judges.cli import judges_of
from rollout.judges.run import run as run_judge
from rollout.runner import run

PLANS = {
    "w1": [[{"name": "excel/create_workbook", "arguments": {"filepath": "book.xlsx", "sheet_name": "S"}},
            {"name": "math/mean", "arguments": {"numbers": [1, 2, 6]}}],
           [{"name": "excel/write_data_to_excel", "arguments": {"filepath": "book.xlsx", "sheet_name": "S",
                                                                "data": [["a", 1]]}},
            {"name": "images/resize", "arguments": {"input_path": "media/w1.png", "width": 20,
                                                    "output_path": "media/small.png"}}]],
    "w2": [[{"name": "math/evaluate", "arguments": {"expression": "1/0"}},
            {"name": "nowhere/tool", "arguments": {}}]],
}


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_workspace_and_tool_log_are_kept_and_replayed(tmp_path, chat_server, servers_config) -> None:
    tasks_file, ref = plan_tasks(tmp_path, PLANS)
    server = chat_server(plan_policy(ref))
    results = tmp_path / "res"
    overrides = local_overrides(server, tasks_file, results, servers_config("images", "math", "excel"))
    assert run(compose(*overrides, "mode=record")) == 0
    run_dir = run_dir_of(results)
    workspaces, logs = files_of(run_dir / "workspace"), files_of(run_dir / "tool_logs")
    assert {"w1/book.xlsx", "w1/media/small.png", "w1/media/w1.png"} <= set(workspaces)
    log = json.loads(logs["w1.json"])
    assert log["id"] == "w1"
    assert [(c["step"], c["index"], c["server"], c["tool"], c["is_error"]) for c in log["calls"]] == [
        (1, 1, "excel", "create_workbook", False), (1, 2, "math", "mean", False),
        (2, 1, "excel", "write_data_to_excel", False), (2, 2, "images", "resize", False)]
    assert log["calls"][1]["arguments"] == {"numbers": [1, 2, 6]} and '"mean": 3' in log["calls"][1]["result"]
    assert log["calls"][3]["files"] == ["media/small.png"]
    assert all(isinstance(c["duration_s"], float) and c["duration_s"] > 0 for c in log["calls"])
    w2 = json.loads(logs["w2.json"])["calls"]
    assert [c["is_error"] for c in w2] == [True, True] and w2[1]["duration_s"] == 0.0

    cache = tmp_path / "cache"
    shutil.move(run_dir / "cache", cache)
    shutil.rmtree(results)
    base_url = server.base_url
    server.stop()  # nothing may be asked of the model any more
    broken = write_json(tmp_path / "broken.json", {"servers": {
        name: {"command": str(tmp_path / "no-such-server"), "args": []} for name in ("images", "math", "excel")}})
    replay = local_overrides(base_url, tasks_file, results, broken, "mode=replay", f"cache_dir={cache}")
    assert run(compose(*replay)) == 0
    assert files_of(run_dir / "workspace") == workspaces
    assert files_of(run_dir / "tool_logs") == logs


def never(request: dict) -> str:
    """A judge that reasons but never gives a score."""
    return "I would need to think about this more."


def test_a_judge_that_never_answers_leaves_the_task_unjudged(tmp_path, chat_server) -> None:
    data = tmp_path / "data"
    tasks = write_json(data / "tasks.json", [
        {"id": "a", "question": "1 + 1?", "level": "L1", "ground_truth": "2"},
        {"id": "b", "question": "Anything?", "level": "L2", "ground_truth": None},
        {"id": "c", "question": "2 + 2?", "level": "L3", "ground_truth": "4"}])
    preds = write_json(tmp_path / "m_test_mcp_fuzzy.json", [{"id": "a", "steps": [], "final_reply": "2"},
                                                            {"id": "b", "steps": [], "final_reply": "?"}])
    server = chat_server(never)
    cfg = compose_judge(f"predictions={preds}", f"data.tasks={tasks}", "stage=answer_equivalence",
                        "evaluators=[answer_equivalence]",
                        f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}", "attempts=2",
                        f"workspace_dir={tmp_path / 'ws'}", f"tool_log_dir={tmp_path / 'logs'}")
    cfg.judges = judges_of({"max_requests": 2, "pool": {"j": {
        "provider": "openai", "api_name": "never", "base_url": server.base_url, "api_key_env": None, "params": {},
        "timeout": 10, "max_retries": 0, "backoff": {"initial": 0.01, "max": 0.05}}}})
    assert run_judge(cfg) == 1
    out = json.loads((tmp_path / "m_test_mcp_fuzzy_answers.json").read_text())
    assert set(out["per_id"]) == {"b", "c"}  # a: unjudged; b: skipped; c: no prediction, E = 0
    assert "no usable answer_equivalence answer in 2 attempt(s)" in out["meta"]["failed"]["a"]
    assert out["per_id"]["c"]["score"] == 0 and out["per_id"]["b"]["score"] is None
    assert len(server.requests) == 2
    server.policy = lambda request: 'Same value.\n```json\n{"score": 1}\n```'
    assert run_judge(cfg) == 0  # the rerun judges only what it lacks; the failed attempts are cached
    out = json.loads((tmp_path / "m_test_mcp_fuzzy_answers.json").read_text())
    assert out["per_id"]["a"]["score"] == 1 and out["meta"]["failed"] == {}
    assert out["aggregate"]["answer_sr"] == 0.5 and out["aggregate"]["answer_sr_micro"] == 0.5


def app(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = call_app(name, *args, cwd=cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.mark.slow
def test_demo_sets_rollout_judge_score_reports(tmp_path) -> None:
    for demo, evaluator in (("mcpverse", "answer_equivalence"), ("tobench", "verifiers")):
        results = tmp_path / demo
        app("rollout", f"model=scripted_{demo}", f"tasks={demo}_demo", f"results_dir={results}", cwd=tmp_path)
        app("judge", "model=scripted", "judges=scripted", f"data={demo}_demo",
            f"evaluators=[{evaluator}]", f"results_dir={results}", f"cache_dir={tmp_path / 'judges'}", cwd=tmp_path)
        out = tmp_path / f"score_{demo}"
        app("score", "sweep=leaderboard", f"data={demo}_demo", f"results_dir={results}", f"output_dir={out}",
            cwd=tmp_path)
        agg = json.loads((out / "scripted" / "results_eval.json").read_text())["aggregate"]
        table = (out / "outcomes.md").read_text()
        assert (out / "outcomes.png").is_file()
        if demo == "mcpverse":
            assert agg["answer_sr_l1"] == 1.0 and agg["answer_sr_l2"] == pytest.approx(1 / 3)
            assert agg["answer_sr_l3"] == 0.0 and agg["answer_sr"] == pytest.approx(4 / 9)
            assert agg["answer_sr_micro"] == 0.5 and (agg["answer_judged"], agg["answer_skipped"]) == (6, 1)
            assert "| scripted | 0.4444 | 1.0000 | 0.3333 | 0.0000 | 0.5000 | 6 | 1 |" in table
        else:
            assert (agg["check_accuracy"], agg["check_accuracy_evaluated"]) == (0.4, 0.5)
            assert (agg["check_tasks"], agg["check_errors"]) == (5, 1)
            assert set(agg["check_by_group"]) == {"Customer Service / easy", "Intelligent Creation / easy"}
            assert agg["check_usage"]["tool_calls"] > 0
            # TOBench Table 2's layout: the family / difficulty cells, then Avg, then the project's columns
            assert "| Model | Customer Service / easy | Intelligent Creation / easy | Avg | Tool Calls |" in \
                (out / "tobench.md").read_text()
            checks = json.loads((results / "scripted_test_mcp_fuzzy_checks.json").read_text())
            assert checks["aggregate"]["error_ids"] == ["tb-04"]
            assert checks["per_id"]["tb-04"]["error"] == "KeyError: 'answer'"
            assert "| scripted | 0.5000 | 0.4000 | 5 | 1 |" in table


def test_boolean_and_out_of_range_scores_are_shown_and_carried_into_the_results(tmp_path, chat_server,
                                                                                capsys) -> None:
    """MCPVerse judge scores given as true or outside [0, 1]: a line at the end of the judge app's run, and
    the counts in results_eval.json's aggregate (none of either where no such reply occurs)."""
    from engine.judge_results import JoinedFiles
    from engine.unreferenced import write_unreferenced

    tasks = write_json(tmp_path / "data" / "tasks.json", [
        {"id": "a", "question": "1 + 1?", "level": "L1", "ground_truth": "2"},
        {"id": "c", "question": "2 + 2?", "level": "L1", "ground_truth": "4"}])
    preds = write_json(tmp_path / "m_test_mcp_fuzzy.json", [{"id": "a", "steps": [], "final_reply": "2"},
                                                            {"id": "c", "steps": [], "final_reply": "4"}])
    asked: list[str] = []

    def odd(request: dict) -> str:
        asked.append(request["messages"][-1]["content"])
        if "1 + 1?" in asked[-1]:
            return 'Same.\n```json\n{"score": true}\n```'
        score = 2 if sum("2 + 2?" in a for a in asked) == 1 else 1
        return f'Same.\n```json\n{{"score": {score}}}\n```'

    server = chat_server(odd)
    cfg = compose_judge(f"predictions={preds}", f"data.tasks={tasks}", "stage=answer_equivalence",
                        "evaluators=[answer_equivalence]", f"cache_dir={tmp_path / 'cache'}",
                        f"run_dir={tmp_path / 'run'}", "attempts=2", f"workspace_dir={tmp_path / 'ws'}")
    cfg.judges = judges_of({"max_requests": 2, "pool": {"j": {
        "provider": "openai", "api_name": "odd", "base_url": server.base_url, "api_key_env": None, "params": {},
        "timeout": 10, "max_retries": 0, "backoff": {"initial": 0.01, "max": 0.05}}}})
    assert run_judge(cfg) == 0
    out = capsys.readouterr().out
    assert ("answer_equivalence: read otherwise by the published code (docs/judges.md): score_boolean 1, "
            "score_out_of_range 1") in out
    answers = tmp_path / "m_test_mcp_fuzzy_answers.json"
    assert json.loads(answers.read_text())["aggregate"]["answer_sr"] == 1.0
    for folder, keep in (("odd", {"a", "c"}), ("plain", set())):
        doc = json.loads(answers.read_text())
        doc["per_id"] = {i: e if i in keep else {k: v for k, v in e.items() if k != "odd_scores"}
                         for i, e in doc["per_id"].items()}
        named = write_json(tmp_path / f"{folder}_answers.json", doc)
        (tmp_path / folder).mkdir()
        write_unreferenced([preds], [tmp_path / folder], ["m"], [JoinedFiles({"answer_equivalence": named})])
    agg = json.loads((tmp_path / "odd" / "results_eval.json").read_text())["aggregate"]
    assert (agg["score_boolean"], agg["score_out_of_range"], agg["answer_sr"]) == (1, 1, 1.0)
    plain = json.loads((tmp_path / "plain" / "results_eval.json").read_text())["aggregate"]
    assert not {"score_boolean", "score_out_of_range"} & set(plain)
