"""VisualToolBench rubrics (engine.evaluators.vtb_rubrics): the weighted score and the critical-gated pass
against the spec's worked example and a plain per-task version, the critical flag, tasks without a
critical rubric, multi-turn pooling, the judge pool (real scripted judges on loopback) with a tie and a
judge that never answers, resuming, the drop-in verdicts file, and the demo flow end to end."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from pathlib import Path
from typing import Any

import pytest

from engine.contract import InputError, TrajectoryFile, parse_trajectories
from engine.evaluators import vtb_rubrics as vtb
from engine.evaluators.base import JudgeContext, TaskInputs
from engine.judge_results import JoinedFiles, joined_aggregate, load_joined
from script_runs import run_script

ROOT = Path(__file__).resolve().parents[1]


# -- a plain version of the spec's equations, task by task --------------------------------------------

def plain_task(rubrics: list[dict[str, Any]]) -> tuple[float, bool]:
    """s_i (eq. 1) and pass_i, critical from the flag else weight >= 4; no critical rubric: all met."""
    total = 0
    got = 0
    critical_ok = True
    any_critical = False
    for r in rubrics:
        total += r["weight"]
        if r["met"]:
            got += r["weight"]
        critical = r["critical"] if "critical" in r else r["weight"] >= 4
        if critical:
            any_critical = True
            if not r["met"]:
                critical_ok = False
    score = got / total
    if not any_critical:
        return score, score == 1.0
    return score, critical_ok


def _write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


def test_the_worked_example(tmp_path: Path) -> None:
    weights, verdicts = [3, 4, 3, 5, 2], [True, False, True, False, True]
    result = vtb.task_score(weights, [w >= 4 for w in weights], verdicts)
    assert result.score == pytest.approx(8 / 17) and round(result.score, 2) == 0.47
    assert result.passed is False
    dropin = _write(tmp_path / "v.json", [{"id": "fig2", "rubrics": [{"weight": w, "met": m}
                                                                    for w, m in zip(weights, verdicts)]}])
    values = vtb.read(dropin).per_id["fig2"]
    assert values["rubric_score"] == pytest.approx(8 / 17) and values["pass_rate"] == 0.0


@pytest.mark.parametrize("seed", range(4))
def test_scores_and_aggregates_match_the_plain_version(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    categories = ["Visual Understanding", "Truthfulness", "Reasoning"]
    records = []
    for i in range(15):
        rubrics = []
        for _ in range(rng.randint(1, 6)):
            r: dict[str, Any] = {"weight": rng.randint(1, 5), "met": rng.random() < 0.6,
                                 "category": rng.choice(categories)}
            if rng.random() < 0.4:
                r["critical"] = rng.random() < 0.5
            rubrics.append(r)
        records.append({"id": f"t{i}", "rubrics": rubrics})
    values = vtb.read(_write(tmp_path / "v.json", records))
    expected = {rec["id"]: plain_task(rec["rubrics"]) for rec in records}
    for tid, (score, passed) in expected.items():
        assert values.per_id[tid]["rubric_score"] == pytest.approx(score)
        assert values.per_id[tid]["pass_rate"] == (1.0 if passed else 0.0)
    ids = [rec["id"] for rec in records]
    block = vtb.aggregate(values, ids)["rubrics"]
    assert block["ARS"] == pytest.approx(sum(s for s, _ in expected.values()) / len(ids))
    assert block["APR"] == pytest.approx(sum(p for _, p in expected.values()) / len(ids))
    for category in categories:
        per_task = [plain_task([r for r in rec["rubrics"] if r["category"] == category]) for rec in records
                    if any(r["category"] == category for r in rec["rubrics"])]
        got = block["by_category"][category]
        assert got["tasks"] == len(per_task)
        assert got["ARS"] == pytest.approx(sum(s for s, _ in per_task) / len(per_task))
        assert got["APR"] == pytest.approx(sum(p for _, p in per_task) / len(per_task))


def test_critical_flag_wins_over_the_weight_and_mismatches_are_logged(tmp_path: Path, caplog) -> None:
    record = {"id": "a", "rubrics": [{"weight": 4, "critical": False, "met": False},  # not critical: no gate
                                     {"weight": 3, "critical": True, "met": True},
                                     {"weight": 5, "met": True}]}  # absent: weight >= 4 -> critical
    with caplog.at_level(logging.INFO, logger="engine.evaluators.vtb_rubrics"):
        values = vtb.read(_write(tmp_path / "v.json", [record]))
    assert values.per_id["a"]["pass_rate"] == 1.0 and values.per_id["a"]["rubric_score"] == pytest.approx(8 / 12)
    assert values.totals["critical_mismatches"] == 2
    assert "task a: 2 rubric(s) flagged critical otherwise than weight >= 4" in caplog.text
    assert "turn 1 weight 4 critical false; turn 1 weight 3 critical true" in caplog.text
    assert "2 rubric(s) flagged critical otherwise" in caplog.text
    record["rubrics"][2]["met"] = False
    assert vtb.read(_write(tmp_path / "v.json", [record])).per_id["a"]["pass_rate"] == 0.0


def test_a_task_without_critical_rubric_passes_only_when_every_rubric_is_met(tmp_path: Path) -> None:
    records = [{"id": "all", "rubrics": [{"weight": 2, "met": True}, {"weight": 3, "met": True}]},
               {"id": "some", "rubrics": [{"weight": 2, "met": True}, {"weight": 3, "critical": False, "met": False}]}]
    values = vtb.read(_write(tmp_path / "v.json", records))
    assert values.per_id["all"]["pass_rate"] == 1.0 and values.per_id["some"]["pass_rate"] == 0.0
    block = vtb.aggregate(values, ["all", "some"])["rubrics"]
    assert block["no_critical"] == 2 and block["APR"] == 0.5


def test_bad_verdicts_name_the_file_the_task_and_the_field(tmp_path: Path) -> None:
    cases = [([{"id": "a", "rubrics": [{"weight": 6, "met": True}]}], "field 'rubrics[0].weight'"),
             ([{"id": "a", "rubrics": [{"weight": 2, "met": "yes"}]}], "field 'rubrics[0].met'"),
             ([{"id": "a", "rubrics": [{"weight": 2, "met": True, "critical": "no"}]}], "field 'rubrics[0].critical'"),
             ([{"id": "a", "rubrics": []}], "field 'rubrics'"),
             ([{"rubrics": []}], "field 'id'")]
    for root, where in cases:
        path = _write(tmp_path / "bad.json", root)
        with pytest.raises(InputError, match=re.escape(f"id {root[0].get('id', '#0')}: {where}")) as info:
            vtb.read(path)
        assert "bad.json" in str(info.value)


def test_majority_and_its_tie_rule() -> None:
    assert vtb.majority([True, True, False]) is True
    assert vtb.majority([True, False]) is False  # a tie is Not Met
    assert vtb.majority([False]) is False and vtb.majority([]) is None


def test_verdict_replies_are_parsed_strictly() -> None:
    assert vtb.parse_verdict('```json\n{"explanation": "ok", "judge_result": "not  met"}\n```') == (False, "ok")
    assert vtb.parse_verdict('{"judge_result": "Met"}') == (True, "")
    for bad in ("Met", '{"judge_result": "Partly"}', "[]"):
        with pytest.raises(ValueError):
            vtb.parse_verdict(bad)


# -- judging with the real pool and scripted judges on loopback ------------------------------------------

TASK = {"id": "mt", "turns": [
    {"prompt": "How large is the crop?", "golden_answer": "101 x 81 pixels.",
     "rubrics": [{"description": 'States "101 x 81".', "weight": 5, "category": "Truthfulness"},
                 {"description": 'Mentions "Pixels".', "weight": 2, "category": ["Presentation"]}]},
    {"prompt": "Where is it saved?", "golden_answer": "media/red_box.png",
     "rubrics": [{"description": 'Names "red_box.png".', "weight": 3, "critical": True},
                 {"description": 'Names "blue.png".', "weight": 1}]}]}


def _predictions(replies: list[str] | None, final: str) -> TrajectoryFile:
    record: dict[str, Any] = {"id": "mt", "steps": [], "final_reply": final}
    if replies is not None:
        record["turns"] = replies
    return parse_trajectories(Path("pred.json"), [record])


def _pool(tmp_path: Path, judges: dict[str, dict[str, Any]]):
    from rollout.judges.cache import ReplyCache
    from rollout.judges.pool import JudgePool, judge_specs

    return JudgePool(judge_specs(judges), ReplyCache(tmp_path / "cache"))


def _scripted(model: str, bias: float = 0.0) -> dict[str, Any]:
    return {"provider": "scripted", "api_name": model, "policy": "judge", "bias": bias, "timeout": 10,
            "max_retries": 0, "backoff": {"initial": 0.01, "max": 0.01}}


def _judge(tmp_path: Path, judges: dict[str, dict[str, Any]], preds: TrajectoryFile, attempts: int = 2) -> dict:
    async def go() -> dict:
        async with _pool(tmp_path, judges) as pool:
            ctx = JudgeContext(pool, attempts)
            return await vtb.EVALUATOR.judge(ctx, TaskInputs("mt", prediction=preds.tasks["mt"], task=TASK))

    return asyncio.run(go())


def test_multi_turn_tasks_pool_their_rubrics_and_keep_each_turn(tmp_path: Path) -> None:
    preds = _predictions(["The crop is 101 x 81 pixels.", "It is saved as media/red_box.png."], "unused")
    entry = _judge(tmp_path, {"a": _scripted("judge-a"), "b": _scripted("judge-b", 0.05),
                              "c": _scripted("judge-c", -0.1)}, preds)
    first, second = entry["turns"]
    # "Pixels": judges a and b ignore case (Met), c matches case exactly (Not Met): majority Met
    assert [r["met"] for r in first["rubrics"]] == [True, True] and first["score"] == 1.0 and first["pass"]
    assert [v["verdict"] for v in first["rubrics"][1]["judges"]] == ["Met", "Met", "Not Met"]
    assert all(v["explanation"] for v in first["rubrics"][1]["judges"])
    assert [r["met"] for r in second["rubrics"]] == [True, False] and second["score"] == 0.75 and second["pass"]
    assert entry["score"] == pytest.approx(plain_task([{"weight": 5, "met": True}, {"weight": 2, "met": True},
                                                       {"weight": 3, "critical": True, "met": True},
                                                       {"weight": 1, "met": False}])[0])
    assert entry["pass"] is True and entry["unanswered"] == 0
    # one answer for all turns: turn 2's critical rubric fails, so the pooled task fails
    entry = _judge(tmp_path, {"a": _scripted("judge-a")}, _predictions(None, "101 x 81 pixels"))
    assert entry["turns"][0]["pass"] is True and entry["turns"][1]["pass"] is False and entry["pass"] is False
    values = vtb.read(_write(tmp_path / "own.json", vtb.document({"mt": entry}, {})))
    assert values.detail["mt"]["turns"] == [{"score": 1.0, "pass": True, "no_critical": False},
                                            {"score": 0.0, "pass": False, "no_critical": False}]
    assert values.per_id["mt"]["rubric_score"] == pytest.approx(7 / 11) and values.per_id["mt"]["pass_rate"] == 0.0


def test_a_tie_between_judges_is_not_met(tmp_path: Path) -> None:
    preds = _predictions(["101 x 81 pixels", "red_box.png"], "")
    entry = _judge(tmp_path, {"a": _scripted("judge-a"), "d": _scripted("judge-d", -0.1)}, preds)
    pixels = entry["turns"][0]["rubrics"][1]
    assert sorted(v["verdict"] for v in pixels["judges"]) == ["Met", "Not Met"] and pixels["met"] is False


def test_a_judge_that_never_answers_is_counted_apart(tmp_path: Path, chat_server) -> None:
    silent = chat_server(lambda request: "I would rather not say.")
    mute = {"provider": "openai", "api_name": "mute", "base_url": silent.base_url, "api_key_env": None,
            "params": {}, "timeout": 10, "max_retries": 0, "backoff": {"initial": 0.01, "max": 0.01}}
    preds = _predictions(["101 x 81 pixels", "red_box.png"], "")
    entry = _judge(tmp_path, {"a": _scripted("judge-a"), "mute": mute}, preds, attempts=2)
    assert entry["unanswered"] == 4  # the mute judge on each of the four rubrics, never a Not Met
    rubric = entry["turns"][0]["rubrics"][0]
    assert rubric["met"] is True and rubric["judges"][1]["name"] == "mute"
    assert "no usable vtb_rubric answer in 2 attempt(s)" in rubric["judges"][1]["error"]
    assert entry["score"] is not None and not vtb.complete(entry, ["judge-a", "mute"])
    # no judge answers: no verdict, the task is not scored (not zero-filled)
    alone = _judge(tmp_path / "alone", {"mute": mute}, preds, attempts=1)
    assert alone["score"] is None and alone["pass"] is None and alone["unanswered"] == 4
    values = vtb.read(_write(tmp_path / "own.json", vtb.document({"mt": alone}, {})))
    assert "rubric_score" not in values.per_id["mt"]
    block = vtb.aggregate(values, ["mt"])["rubrics"]
    assert block["unscored"] == 1 and block["unanswered"] == 4 and block["ARS"] is None


def test_an_unreachable_judge_is_counted_apart(tmp_path: Path, chat_server) -> None:
    from rollout.models.loopback import Reply

    down = chat_server(lambda request: Reply(status=500, error="down"))
    broken = {"provider": "openai", "api_name": "down", "base_url": down.base_url, "api_key_env": None,
              "params": {}, "timeout": 10, "max_retries": 0, "backoff": {"initial": 0.01, "max": 0.01}}
    entry = _judge(tmp_path, {"a": _scripted("judge-a"), "down": broken}, _predictions(["101 x 81", "x"], ""))
    assert entry["unanswered"] == 4 and entry["score"] is not None
    assert entry["turns"][0]["rubrics"][0]["judges"][1]["error"].startswith("judge down:")


# -- the judge stage: file, resume, exit status ------------------------------------------------------------

def _stage(tmp_path: Path, pool: str = "scripted", *extra: str) -> tuple[int, dict]:
    from rollout.judges.cli import compose_config
    from rollout.judges.run import run

    cfg = compose_config(["evaluators=[vtb_rubrics]", "stage=vtb_rubrics", f"judges={pool}", "data=vtb_demo",
                          f"results_dir={tmp_path}",
                          f"predictions={tmp_path / 'p_test_mcp_fuzzy.json'}", f"cache_dir={tmp_path / 'cache'}",
                          *extra])
    status = run(cfg)
    return status, json.loads((tmp_path / "p_test_mcp_fuzzy_rubrics.json").read_text())


def test_the_judge_stage_writes_resumes_and_reports_failures(tmp_path: Path, capsys) -> None:
    reference = json.loads((ROOT / "rollout" / "demo" / "vtb_reference.json").read_text())
    _write(tmp_path / "p_test_mcp_fuzzy.json", reference[:3])
    status, doc = _stage(tmp_path)
    assert status == 0 and list(doc["per_id"]) == [r["id"] for r in reference[:3]]
    assert doc["meta"]["evaluator"] == "vtb_rubrics" and doc["meta"]["incomplete"] == []
    assert doc["meta"]["agreement"]["judges"] == ["scripted-judge-a", "scripted-judge-b", "scripted-judge-c",
                                                  "scripted-judge-d"]
    assert doc["aggregate"]["tasks"] == 3 and "by_category" in doc["aggregate"]
    assert "(3 now, 0 failed, 0 incomplete)" in capsys.readouterr().out
    status, again = _stage(tmp_path)
    assert status == 0 and again["per_id"] == doc["per_id"]
    assert "(0 now, 0 failed, 0 incomplete)" in capsys.readouterr().out
    assert again["meta"]["usage"]["scripted_a"]["requests"] == doc["meta"]["usage"]["scripted_a"]["requests"]


def test_a_rerun_judges_again_the_tasks_a_judge_left_unanswered(tmp_path: Path, chat_server, capsys) -> None:
    silent = chat_server(lambda request: "no verdict")
    mute = ("+judges.pool.mute={provider: openai, api_name: mute, base_url: '" + silent.base_url + "', "
            "api_key_env: null, params: {}, timeout: 10, max_retries: 0, backoff: {initial: 0.01, max: 0.01}}")
    reference = json.loads((ROOT / "rollout" / "demo" / "vtb_reference.json").read_text())
    _write(tmp_path / "p_test_mcp_fuzzy.json", reference[:2])
    status, doc = _stage(tmp_path, "scripted", mute, "evaluators.vtb_rubrics.attempts=1")
    assert status == 1 and doc["meta"]["incomplete"] == [r["id"] for r in reference[:2]]
    assert doc["aggregate"]["unanswered"] == sum(len(t["rubrics"]) for e in doc["per_id"].values()
                                                 for t in e["turns"])
    assert doc["aggregate"]["tasks"] == 2  # the four scripted judges still give every rubric a verdict
    capsys.readouterr()
    status, again = _stage(tmp_path, "scripted")  # the pool without the mute judge: judged again, from the cache
    assert status == 0 and again["meta"]["incomplete"] == [] and again["aggregate"]["unanswered"] == 0
    assert "(2 now, 0 failed, 0 incomplete)" in capsys.readouterr().out
    assert again["meta"]["usage"]["scripted_a"]["requests"] == doc["meta"]["usage"]["scripted_a"]["requests"]
    assert again["meta"]["usage"]["scripted_a"]["cached"] > 0


# -- the drop-in file joins results_eval.json's values --------------------------------------------------

def test_the_dropin_file_joins_per_task_and_in_aggregate(tmp_path: Path) -> None:
    path = _write(tmp_path / "verdicts.json", [
        {"id": "a", "rubrics": [{"weight": 3, "met": True, "category": "Reasoning"}, {"weight": 4, "met": False}]},
        {"id": "b", "rubrics": [{"weight": 5, "critical": True, "met": True}]}])
    joined = load_joined(JoinedFiles({"vtb_rubrics": path}))
    assert joined.per_id == {"a": {"rubric_score": pytest.approx(3 / 7), "pass_rate": 0.0},
                             "b": {"rubric_score": 1.0, "pass_rate": 1.0}}
    agg = joined_aggregate(joined, ["a", "b", "c"])
    assert agg["rubric_score"] == pytest.approx((3 / 7 + 1) / 2) and agg["pass_rate"] == 0.5
    assert agg["rubrics"]["by_category"]["Reasoning"] == {"ARS": 1.0, "APR": 1.0, "tasks": 1}
    assert joined.keys() == ["rubric_score", "pass_rate"]


def test_the_demo_set_is_what_the_generator_makes(tmp_path: Path) -> None:
    from engine.synthetic.vtb import REFERENCE_FILE, TASKS_FILE, write_vtb_demo

    write_vtb_demo(ROOT / "rollout" / "demo" / "reference.json", tmp_path)
    for name in (TASKS_FILE, REFERENCE_FILE):
        assert (tmp_path / name).read_text() == (ROOT / "rollout" / "demo" / name).read_text()
    tasks = vtb.read_task_records(tmp_path / TASKS_FILE)
    assert len(tasks) == 6 and sum(len(t["turns"]) > 1 for t in tasks.values()) == 2


# -- the demo flow as the README gives it -------------------------------------------------------------------

@pytest.mark.slow
def test_the_vtb_demo_end_to_end(tmp_path: Path, embedding_cache: Path) -> None:
    results, out = tmp_path / "results", tmp_path / "board"
    run_script("rollout", "model=scripted", "tasks=vtb_demo", "model.script=${rollout_path:demo/vtb_reference.json}",
               f"results_dir={results}", cwd=tmp_path)
    judged = run_script("judge", "model=scripted", "judges=scripted", "data=vtb_demo", "evaluators=[vtb_rubrics]",
                        f"results_dir={results}", cwd=tmp_path)
    assert "vtb_rubrics: 6 of 6 task(s) judged (6 now, 0 failed, 0 incomplete)" in judged.stdout
    run_script("score", "sweep=leaderboard", "data=vtb_demo", f"results_dir={results}", f"output_dir={out}",
               f"encoder.cache_dir={embedding_cache}", "device=cpu", cwd=tmp_path)

    doc = json.loads((results / "scripted_test_mcp_fuzzy_rubrics.json").read_text())
    expected = {tid: vtb.score_items([vtb.rubric_item("t", r, tid, "r") for t in e["turns"] for r in t["rubrics"]],
                                     [r["met"] for t in e["turns"] for r in t["rubrics"]])
                for tid, e in doc["per_id"].items()}
    result = json.loads((out / "scripted" / "results_eval.json").read_text())
    aggregate = result["aggregate"]
    assert aggregate["rubric_score"] == pytest.approx(sum(s.score for s in expected.values()) / 6)
    assert aggregate["pass_rate"] == pytest.approx(sum(s.passed for s in expected.values()) / 6)
    assert aggregate["pass_rate"] < 1.0 and aggregate["rubrics"]["no_critical"] == 1
    # 14 calls, one on a missing file (is_error true): micro success rate 13/14
    assert aggregate["tool_use"] == pytest.approx({"proactivity": 1.0, "success_rate": 13 / 14, "volume": 14 / 6})
    assert result["by_type"]["follow_up"]["tool_use"]["success_rate"] == pytest.approx(4 / 5)
    for entry in result["per_id"]:
        assert entry["rubric_score"] == pytest.approx(expected[entry["id"]].score)
        assert entry["tool_use"]["calls"] == entry["total_pred_calls"]
    board = json.loads((out / "leaderboard.json").read_text())["rows"][0]
    assert board["Average Rubric Score"] == pytest.approx(aggregate["rubric_score"])
    assert board["Average Pass Rate"] == pytest.approx(aggregate["pass_rate"])
    tools = json.loads((out / "tool_use.json").read_text())["rows"][0]
    assert tools["Tool-Call Success Rate"] == pytest.approx(13 / 14)
    for png in ("leaderboard.png", "tool_use.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"

    # the drop-in verdicts list, named with model.rubrics
    dropin = _write(tmp_path / "verdicts.json", [{"id": tid, "rubrics": [{"weight": 2, "met": tid.endswith("mt")}]}
                                                 for tid in expected])
    one = tmp_path / "one"
    run_script("score", "data=vtb_demo", f"model.predictions={results / 'scripted_test_mcp_fuzzy.json'}",
               f"model.rubrics={dropin}", f"output_dir={one}", f"encoder.cache_dir={embedding_cache}", "device=cpu",
               cwd=tmp_path)
    result = json.loads((one / "results_eval.json").read_text())
    assert result["aggregate"]["rubric_score"] == pytest.approx(2 / 6)
    assert result["aggregate"]["pass_rate"] == pytest.approx(2 / 6)
    assert {e["id"]: e["pass_rate"] for e in result["per_id"]}["vtb-01-mt"] == 1.0
