"""VisualToolBench rubrics through the apps: the judge stage (file, resume, rerun of unanswered judges), the
score app's vtb.profile, the drop-in verdicts joined to results_eval.json, the report tables, the demo set,
and the demo flow end to end as the README gives it."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from preloaded import run_python
from script_runs import run_script

from engine.evaluators import vtb_rubrics as vtb
from engine.evaluators.protocol import ReadSettings
from engine.evaluators.vtb_records import read_task_records
from engine.judge_results import JoinedFiles, joined_aggregate, load_joined

ROOT = Path(__file__).resolve().parents[1]


def _write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


def _stage(tmp_path: Path, pool: str = "scripted", *extra: str) -> tuple[int, dict]:
    from rollout.judges.cli import compose_config
    from rollout.judges.run import run

    cfg = compose_config(["evaluators=[vtb_rubrics]", "stage=vtb_rubrics", f"judges={pool}", "data=vtb_demo",
                          f"results_dir={tmp_path}",
                          f"predictions={tmp_path / 'p_test_mcp_fuzzy.json'}", f"cache_dir={tmp_path / 'cache'}",
                          *extra])
    status = run(cfg)
    return status, json.loads((tmp_path / "p_test_mcp_fuzzy_rubrics.json").read_text())


def test_the_judge_stage_writes_resumes_and_reports_failures(tmp_path: Path, capsys, caplog) -> None:
    reference = json.loads((ROOT / "rollout" / "demo" / "vtb_reference.json").read_text())
    _write(tmp_path / "p_test_mcp_fuzzy.json", reference[:3])
    status, doc = _stage(tmp_path)
    assert status == 0 and list(doc["per_id"]) == [r["id"] for r in reference[:3]]
    assert doc["meta"]["evaluator"] == "vtb_rubrics" and doc["meta"]["incomplete"] == []
    assert doc["meta"]["profile"] == "published"
    assert doc["meta"]["agreement"]["judges"] == ["scripted-judge-a"]  # published: the pool's first judge alone
    assert doc["aggregate"]["tasks"] == 3 and doc["aggregate"]["by_domain"]["STEM"]["tasks"] == 3
    assert "(3 now, 0 failed, 0 incomplete)" in capsys.readouterr().out
    status, again = _stage(tmp_path)
    assert status == 0 and again["per_id"] == doc["per_id"]
    assert "(0 now, 0 failed, 0 incomplete)" in capsys.readouterr().out
    assert again["meta"]["usage"]["scripted_a"]["requests"] == doc["meta"]["usage"]["scripted_a"]["requests"]
    with caplog.at_level(logging.WARNING, logger="engine.evaluators.vtb_files"):
        vtb.read_verdicts(tmp_path / "p_test_mcp_fuzzy_rubrics.json", "strict")
    assert "judged under the published profile, which asks the pool's first judge alone" in caplog.text
    _, strict = _stage(tmp_path, "scripted", "evaluators.vtb_rubrics.profile=strict")  # every judge: judged again
    assert list(strict["per_id"]) == list(doc["per_id"]) and strict["aggregate"]["profile"] == "strict"
    assert strict["meta"]["agreement"]["judges"] == ["scripted-judge-a", "scripted-judge-b", "scripted-judge-c",
                                                     "scripted-judge-d"]
    # vtb-02 has no critical rubric: it passes as published, fails strictly; the others the other way round
    assert strict["aggregate"]["APR"] == 2 / 3 and doc["aggregate"]["APR"] == 1 / 3


def test_a_rerun_judges_again_the_tasks_a_judge_left_unanswered(tmp_path: Path, chat_server, capsys) -> None:
    silent = chat_server(lambda request: "no verdict")
    mute = ("+judges.pool.mute={provider: openai, api_name: mute, base_url: '" + silent.base_url + "', "
            "api_key_env: null, params: {}, timeout: 10, max_retries: 0, backoff: {initial: 0.01, max: 0.01}}")
    reference = json.loads((ROOT / "rollout" / "demo" / "vtb_reference.json").read_text())
    _write(tmp_path / "p_test_mcp_fuzzy.json", reference[:2])
    strict = "evaluators.vtb_rubrics.profile=strict"  # every judge of the pool is asked
    status, doc = _stage(tmp_path, "scripted", mute, "evaluators.vtb_rubrics.attempts=1", strict)
    assert status == 1 and doc["meta"]["incomplete"] == [r["id"] for r in reference[:2]]
    assert doc["aggregate"]["unanswered"] == sum(len(t["rubrics"]) for e in doc["per_id"].values()
                                                 for t in e["turns"])
    capsys.readouterr()
    status, again = _stage(tmp_path, "scripted",
                           strict)  # the pool without the mute judge: judged again, from the cache
    assert status == 0 and again["meta"]["incomplete"] == [] and again["aggregate"]["unanswered"] == 0
    assert "(2 now, 0 failed, 0 incomplete)" in capsys.readouterr().out
    assert again["meta"]["usage"]["scripted_a"]["cached"] > 0


def test_the_judge_app_warns_of_turn_markers_and_shows_the_replies_read_otherwise(tmp_path: Path, chat_server,
                                                                                   capsys, caplog) -> None:
    """The judge app reads the tasks as the evaluator does (the one-prompt schema's "[Turn N]" markers said
    once, with their count) and ends with the counts of the replies the published scripts read otherwise."""
    from rollout.judges.cli import compose_config, judges_of
    from rollout.judges.run import run

    rubric = {"description": "x", "weight": 3}
    tasks = _write(tmp_path / "tasks.json", [
        {"id": "a", "prompt": "[Turn 1] Crop it. [Turn 2] Now count.", "rubrics": [rubric]},
        {"id": "b", "prompt": "[Turn 1] Zoom. [Turn 2] Read.", "rubrics": [rubric, rubric]},
        {"id": "c", "prompt": "Plain.", "rubrics": [rubric]}])
    preds = _write(tmp_path / "p_test_mcp_fuzzy.json", [{"id": i, "steps": [], "final_reply": "x"} for i in "abc"])
    fenced = chat_server(lambda request: '```json\n{"explanation": "ok", "judge_result": "Met"}\n```')
    cfg = compose_config(["evaluators=[vtb_rubrics]", "stage=vtb_rubrics", "data=vtb_demo", f"data.tasks={tasks}",
                          f"results_dir={tmp_path}", f"predictions={preds}", f"cache_dir={tmp_path / 'cache'}"])
    cfg.judges = judges_of({"max_requests": 2, "pool": {"j": {
        "provider": "openai", "api_name": "fenced", "base_url": fenced.base_url, "api_key_env": None, "params": {},
        "timeout": 10, "max_retries": 0, "backoff": {"initial": 0.01, "max": 0.05}}}})
    with caplog.at_level(logging.WARNING, logger="engine.evaluators.vtb_records"):
        assert run(cfg) == 0
    assert [r.message for r in caplog.records].count(
        f"{tasks}: 2 task(s) give several turns in one prompt ([Turn N] markers, the earlier one-prompt schema): "
        "each is put and judged as one turn, as VisualToolBench's scripts send it") == 1
    out = capsys.readouterr().out
    assert "vtb_rubrics: read otherwise by the published code (docs/judges.md): fenced_replies 4" in out
    doc = json.loads((tmp_path / "p_test_mcp_fuzzy_rubrics.json").read_text())
    assert doc["aggregate"]["fenced_replies"] == 4 and doc["aggregate"]["ARS"] == 1.0
    fenced.policy = lambda request: '{"explanation": "ok", "judge_result": "Met"}'
    (tmp_path / "p_test_mcp_fuzzy_rubrics.json").unlink()
    assert run(dataclasses.replace(cfg, cache_dir=str(tmp_path / "cache2"))) == 0
    assert "read otherwise" not in capsys.readouterr().out


def test_a_tasks_file_with_a_repeated_id_is_refused_by_the_judge_app(tmp_path: Path) -> None:
    task = {"id": "vtb-01", "turns": [{"prompt": "q", "rubrics": [{"description": "d", "weight": 2}]}]}
    tasks = _write(tmp_path / "tasks.json", [task, {**task, "turns": []}])
    _write(tmp_path / "p_test_mcp_fuzzy.json", [{"id": "vtb-01", "steps": [], "final_reply": "x"}])
    proc = run_python([str(ROOT / "scripts" / "judge.py"), "judges=scripted", "data=vtb_demo",
                           f"data.tasks={tasks}", "evaluators=[vtb_rubrics]", f"results_dir={tmp_path}",
                           f"predictions={tmp_path / 'p_test_mcp_fuzzy.json'}", f"cache_dir={tmp_path / 'cache'}"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith("id vtb-01: field 'id': the id is given twice (again at #1)")
    assert not (tmp_path / "p_test_mcp_fuzzy_rubrics.json").exists()


def test_the_dropin_file_joins_per_task_and_in_aggregate_under_each_profile(tmp_path: Path) -> None:
    path = _write(tmp_path / "verdicts.json", [
        {"id": "a", "prompt_category": "biology", "rubrics": [{"weight": 3, "met": True, "category": "Reasoning"},
                                                              {"weight": 4, "critical": False, "met": False},
                                                              {"weight": 5, "met": True}]},
        {"id": "b", "prompt_category": "sports", "rubrics": [{"weight": 5, "critical": True, "met": True}]}])
    joined = load_joined(JoinedFiles({"vtb_rubrics": path}))
    assert joined.per_id == {"a": {"rubric_score": 8 / 12, "pass_rate": 0.0},
                             "b": {"rubric_score": 1.0, "pass_rate": 1.0}}
    agg = joined_aggregate(joined, ["a", "b", "c"])
    assert agg["rubric_score"] == (8 / 12 + 1) / 2 and agg["pass_rate"] == 0.5
    assert agg["rubrics"]["by_category"]["Reasoning"] == {"ARS": 1.0, "APR": 1.0, "tasks": 1}
    assert agg["rubrics"]["by_domain"] == {"STEM": {"ARS": 8 / 12, "APR": 0.0, "tasks": 1},
                                           "sports": {"ARS": 1.0, "APR": 1.0, "tasks": 1}}
    strict = JoinedFiles({"vtb_rubrics": path}, {"vtb_rubrics": {"profile": "strict"}})
    assert load_joined(strict).per_id["a"] == {"rubric_score": 8 / 12, "pass_rate": 1.0}
    assert strict.meta() == {"rubrics": str(path), "rubrics_profile": "strict"}


def test_the_score_app_refuses_an_unknown_profile_in_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "verdicts.json", [{"id": "vtb-01", "rubrics": [{"weight": 2, "met": True}]}])
    proc = run_python([str(ROOT / "scripts" / "score.py"), "data=vtb_demo",
                           f"inputs.file={ROOT / 'rollout' / 'demo' / 'vtb_reference.json'}",
                           f"inputs.verdicts.rubrics={path}", "vtb.profile=lenient", f"output_dir={tmp_path / 'out'}"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == ("error: vtb.profile=lenient: wrong type for vtb.profile: Invalid "
                                                   "value 'lenient', expected one of [published, strict]")
    assert not (tmp_path / "out" / "results_eval.json").exists()


def test_the_demo_set_is_what_the_generator_makes(tmp_path: Path) -> None:
    from engine.synthetic.vtb import REFERENCE_FILE, TASKS_FILE, write_vtb_demo

    write_vtb_demo(ROOT / "rollout" / "demo" / "reference.json", tmp_path)
    for name in (TASKS_FILE, REFERENCE_FILE):
        assert (tmp_path / name).read_text() == (ROOT / "rollout" / "demo" / name).read_text()
    tasks = read_task_records(tmp_path / TASKS_FILE)
    assert len(tasks) == 6 and sum(t["turncase"] == "multi-turn" for t in tasks.values()) == 2
    assert {t["prompt_category"] for t in tasks.values()} == {"engineering", "maths", "generalist", "finance"}


@pytest.mark.slow
def test_the_vtb_demo_end_to_end(tmp_path: Path, embedding_cache: Path) -> None:
    results, out = tmp_path / "results", tmp_path / "board"
    run_script("rollout", "model=scripted", "tasks=vtb_demo", "model.script=${rollout_path:demo/vtb_reference.json}",
               f"results_dir={results}", cwd=tmp_path)
    judged = run_script("judge", "model=scripted", "judges=scripted", "data=vtb_demo", "evaluators=[vtb_rubrics]",
                        f"results_dir={results}", cwd=tmp_path)
    assert "vtb_rubrics: 6 of 6 task(s) judged (6 now, 0 failed, 0 incomplete)" in judged.stdout
    assert "vtb_rubrics: Average Rubric Score 0." in judged.stdout and ", Average Pass Rate 0.1667" in judged.stdout
    assert (judged.stdout + judged.stderr).count("flagged critical otherwise than weight >= 4") == 1  # said once
    run_script("score", "sweep=leaderboard", "data=vtb_demo", f"results_dir={results}", f"output_dir={out}",
               f"encoder.cache_dir={embedding_cache}", "device=cpu", cwd=tmp_path)
    values = vtb.VtbRubrics().read(results / "scripted_test_mcp_fuzzy_rubrics.json", ReadSettings())
    result = json.loads((out / "scripted" / "results_eval.json").read_text())
    aggregate = result["aggregate"]
    # as published, the weight-4 rubric flagged not critical fails five tasks: APR 1/6 (strict: 5/6)
    assert aggregate["pass_rate"] == sum(v["pass_rate"] for v in values.per_id.values()) / 6 == 1 / 6
    assert aggregate["rubric_score"] == pytest.approx(sum(v["rubric_score"] for v in values.per_id.values()) / 6)
    assert aggregate["rubrics"]["profile"] == "published" and result["meta"]["rubrics_profile"] == "published"
    assert aggregate["rubrics"]["by_turncase"]["multi-turn"]["tasks"] == 2
    # 14 calls, one on a missing file (is_error true): 13/14 over all calls and over the flagged ones
    split = aggregate["tool_use"].pop("by_turncase")
    assert aggregate["tool_use"] == pytest.approx({"proactivity": 1.0, "success_rate": 13 / 14,
                                                   "success_rate_flagged": 13 / 14, "volume": 14 / 6})
    assert split["multi-turn"]["tasks"] == 2 and split["single-turn"]["tasks"] == 4
    assert split["single-turn"]["calls"] + split["multi-turn"]["calls"] == 14
    table8 = json.loads((out / "vtb_table8.json").read_text())["rows"][0]
    assert table8["Total #"] == 14 and table8["Multi-turn Volume"] == split["multi-turn"]["volume"]
    table3 = json.loads((out / "vtb_table3.json").read_text())["rows"][0]
    assert table3["Overall"] == pytest.approx(100 * aggregate["pass_rate"])
    board = json.loads((out / "leaderboard.json").read_text())["rows"][0]
    assert board["Average Pass Rate"] == aggregate["pass_rate"]
    turns = json.loads((out / "vtb_turns.json").read_text())
    assert turns["columns"] == ["Model", "APR", "ARS", "single-turn APR", "single-turn ARS", "multi-turn APR",
                                "multi-turn ARS"]
    assert turns["rows"][0]["multi-turn APR"] == aggregate["rubrics"]["by_turncase"]["multi-turn"]["APR"]
    domains = json.loads((out / "vtb_domains.json").read_text())["rows"][0]
    assert domains["STEM APR"] == aggregate["rubrics"]["by_domain"]["STEM"]["APR"] == 0.25
    assert "region_switch_qa ARS" in json.loads((out / "vtb_focus.json").read_text())["columns"]

    strict = tmp_path / "strict"
    run_script("score", "sweep=leaderboard", "data=vtb_demo", f"results_dir={results}", f"output_dir={strict}",
               "vtb.profile=strict", f"encoder.cache_dir={embedding_cache}", "device=cpu", cwd=tmp_path)
    assert json.loads((strict / "scripted" / "results_eval.json").read_text())["aggregate"]["pass_rate"] == 5 / 6

    # the drop-in verdicts list, named with model.rubrics
    dropin = _write(tmp_path / "verdicts.json", [{"id": tid, "rubrics": [{"weight": 2, "met": tid.endswith("mt")}]}
                                                 for tid in values.per_id])
    one = tmp_path / "one"
    run_script("score", "data=vtb_demo", f"inputs.file={results / 'scripted_test_mcp_fuzzy.json'}",
               f"inputs.verdicts.rubrics={dropin}", f"output_dir={one}", f"encoder.cache_dir={embedding_cache}",
               "device=cpu", cwd=tmp_path)
    result = json.loads((one / "results_eval.json").read_text())
    assert result["aggregate"]["rubric_score"] == 2 / 6 and result["aggregate"]["pass_rate"] == 1.0


def _released_task(tid: str, prompts: list[str], turncase: str) -> dict:
    rubric = {"description": "States the answer.", "weight": 5, "category": "Truthfulness"}
    return {"id": tid, "turncase": turncase, "prompt_category": "Finance", "eval_focus": "hybrid_tool",
            "turn_prompts": prompts, "turn_golden_answers": [f"{p} answer" for p in prompts],
            "rubrics_by_turn": [json.dumps({"r1": rubric}) for _ in prompts]}


def _tool_use(name: str, observation: Any) -> dict:
    return {"function_name": name, "function_args": {"image": "a.png"}, "observation": observation}


def test_vtb_response_files_are_judged_and_scored_without_references(tmp_path: Path) -> None:
    """VisualToolBench's own files drop in: its released tasks and the response files its
    run_model_response_*.py write (single-turn answers at the top, multi-turn ones per turn), judged, then
    scored into its tables without reference trajectories."""
    tasks = _write(tmp_path / "dataset.json", [_released_task("s1", ["q1"], "single-turn"),
                                               _released_task("m1", ["q2", "q3"], "multi-turn")])
    responses = _write(tmp_path / "gpt_trial_1.json", [
        {"id": "s1", "task_id": "s1", "prompt": "q1", "turncase": "single-turn", "prompt_category": "Finance",
         "eval_focus": "hybrid_tool", "model_answer": "the answer",
         "tool_use_list": [_tool_use("crop", {"output_paths": []}), _tool_use("crop", {"error": "bad box"})],
         "num_tool_calls": 2, "content_list": []},
        {"id": "m1", "task_id": "m1", "turncase": "multi-turn", "prompt_category": "Finance",
         "eval_focus": "hybrid_tool", "total_turns": 2,
         "turns": [{"turn_number": 0, "prompt": "q2", "model_answer": "first", "num_tool_calls": 1,
                    "tool_use_list": [_tool_use("zoom", "ok")]},
                   {"turn_number": 1, "prompt": "q3", "model_answer": "second", "num_tool_calls": 0,
                    "tool_use_list": []}]}])
    run_script("judge", "judges=scripted", "data=vtb", f"data.tasks={tasks}", f"predictions={responses}",
               "evaluators=[vtb_rubrics]", f"results_dir={tmp_path}", f"cache_dir={tmp_path / 'cache'}", cwd=tmp_path)
    verdicts = json.loads((tmp_path / "gpt_trial_1_rubrics.json").read_text())
    assert [len(verdicts["per_id"][t]["turns"]) for t in ("s1", "m1")] == [1, 2]
    assert all(turn["answered"] for turn in verdicts["per_id"]["m1"]["turns"])
    out = tmp_path / "board"
    proc = run_script("score", "data=vtb", f"inputs.file={responses}", f"output_dir={out}", "device=cpu",
                      cwd=tmp_path)
    assert proc.stderr.count("no reference trajectories") == 1
    aggregate = json.loads((out / "results_eval.json").read_text())["aggregate"]
    assert aggregate["rubrics"]["tasks"] == 2 and "pass_rate" in aggregate
    assert aggregate["tool_use"]["success_rate"] == 2 / 3 and aggregate["tool_use"]["volume"] == 1.5
    table8 = json.loads((out / "vtb_table8.json").read_text())["rows"][0]
    assert table8["Total #"] == 3 and table8["Multi-turn Volume"] == 1.0
    assert json.loads((out / "vtb_table3.json").read_text())["rows"][0]["Overall"] == pytest.approx(
        100 * aggregate["pass_rate"])
