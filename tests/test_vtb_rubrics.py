"""VisualToolBench rubrics (engine.evaluators.vtb_rubrics, vtb_scoring, vtb_records, vtb_files): the two
profiles against a plain task-by-task version of each (the published one as VisualToolBench's judge scripts
compute it), their edge cases (no critical rubric, a failed judge, labels other than Met / Not Met, a
critical flag that disagrees with the weight, unanswered turns), the released task shape, VisualToolBench's
judge results, repeated ids, the breakdowns, and judging with the real pool (scripted judges and judges on
loopback)."""

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
from engine.evaluators.base import TaskInputs, Verdicts
from engine.evaluators.protocol import JudgeContext, ReadSettings, RunFiles
from engine.evaluators.vtb_records import read_task_records, task_groups, task_turns
from engine.evaluators.vtb_scoring import task_score
from engine.judge_results import JoinedFiles, joined_aggregate, load_joined

V = vtb.VtbRubrics()


def read(path: Path, profile: str | None = None) -> Verdicts:
    """The rubrics file read as the score app reads it under `profile`."""
    return V.read(path, ReadSettings(profile))

LABELS = ["Met", "Not Met", "Partially Met", "met", " Not  met"]


# -- plain versions of the two profiles, task by task ----------------------------------------------------

def plain_published(rubrics: list[dict[str, Any]]) -> tuple[float, bool]:
    """As the published judge script: the weight of every rubric in the total, "Met" adds its weight,
    "Not Met" with weight >= 4 fails the task (the critical flag is not read)."""
    total = met = 0
    accuracy = 1
    for r in rubrics:
        total += r["weight"]
        if r["judge_result"] == "Met":
            met += r["weight"]
        if r["judge_result"] == "Not Met" and r["weight"] >= 4:
            accuracy = 0
    return (met / total if total > 0 else 0), accuracy == 1


def plain_strict(rubrics: list[dict[str, Any]]) -> tuple[float, bool] | None:
    """Labels read without regard to case or spacing; another label: no verdict (None); critical from the
    flag else weight >= 4; no critical rubric: passes only when every rubric is met."""
    folded = [" ".join(r["judge_result"].split()).casefold() for r in rubrics]
    if any(f not in ("met", "not met") for f in folded):
        return None
    met = [f == "met" for f in folded]
    critical = [r.get("critical", r["weight"] >= 4) for r in rubrics]
    score = sum(r["weight"] for r, m in zip(rubrics, met) if m) / sum(r["weight"] for r in rubrics)
    if not any(critical):
        return score, all(met)
    return score, all(m for c, m in zip(critical, met) if c)


def _write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


def _random_records(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    records = []
    for i in range(20):
        rubrics = []
        for _ in range(rng.randint(1, 6)):
            r: dict[str, Any] = {"weight": rng.randint(1, 5),
                                 "judge_result": rng.choice(LABELS + ["Met", "Not Met"] * 2),
                                 "category": rng.choice(["Reasoning", "Truthfulness"])}
            if rng.random() < 0.4:
                r["critical"] = rng.random() < 0.5
            rubrics.append(r)
        records.append({"id": f"t{i}", "rubrics": rubrics,
                        "prompt_category": rng.choice(["maths", "physics", "finance"]),
                        "eval_focus": rng.choice(["temporal", "hybrid_tool"])})
    return records


def test_the_worked_example() -> None:
    from engine.evaluators.vtb_records import RubricItem

    items = [RubricItem("", w, w >= 4, None, ("x",)) for w in (3, 4, 3, 5, 2)]
    for profile in ("published", "strict"):
        result = task_score(items, [True, False, True, False, True], profile)
        assert result.score == pytest.approx(8 / 17) and round(result.score, 2) == 0.47 and result.passed is False


@pytest.mark.parametrize("seed", range(4))
def test_both_profiles_match_their_plain_versions(tmp_path: Path, seed: int) -> None:
    records = _random_records(seed)
    path = _write(tmp_path / "v.json", records)
    published, strict = read(path), read(path, "strict")
    for rec in records:
        score, passed = plain_published(rec["rubrics"])
        assert published.per_id[rec["id"]] == {"rubric_score": score, "pass_rate": 1.0 if passed else 0.0}
        expected = plain_strict(rec["rubrics"])
        assert strict.per_id[rec["id"]] == ({} if expected is None else
                                            {"rubric_score": expected[0], "pass_rate": 1.0 if expected[1] else 0.0})
    ids = [rec["id"] for rec in records]
    block = V.aggregate(published, ids)["rubrics"]
    plain = [plain_published(rec["rubrics"]) for rec in records]
    assert block["ARS"] == sum(s for s, _ in plain) / len(ids) and block["APR"] == sum(p for _, p in plain) / len(ids)
    stem = [p for rec, p in zip(records, plain) if rec["prompt_category"] in ("maths", "physics")]
    assert block["by_domain"]["STEM"] == {"ARS": sum(s for s, _ in stem) / len(stem),
                                          "APR": sum(p for _, p in stem) / len(stem), "tasks": len(stem)}
    assert set(block["by_domain"]) <= {"STEM", "finance"} and block["by_turncase"]["single-turn"]["tasks"] == 20
    for focus in ("temporal", "hybrid_tool"):
        mine = [p for rec, p in zip(records, plain) if rec["eval_focus"] == focus]
        assert block["by_eval_focus"][focus]["APR"] == sum(p for _, p in mine) / len(mine)
    assert block["other_labels"] == sum(r["judge_result"] not in ("Met", "Not Met") for rec in records
                                        for r in rec["rubrics"])


def test_published_rules_and_the_strict_reading(tmp_path: Path, caplog) -> None:
    records = [
        # weight 4 flagged not critical, Not Met: fails as published; weight 3 flagged critical: does not
        {"id": "flag", "rubrics": [{"weight": 4, "critical": "no", "met": False}, {"weight": 3, "critical": "yes",
                                                                                  "met": True}]},
        {"id": "flag3", "rubrics": [{"weight": 3, "critical": True, "met": False}, {"weight": 5, "met": True}]},
        # no critical rubric: passes whatever its verdicts as published; strict: only when all are met
        {"id": "none", "rubrics": [{"weight": 2, "met": True}, {"weight": 3, "met": False}]},
        # "Partially Met" on a critical rubric: no weight, no failure; strict: no verdict, not scored
        {"id": "partial", "rubrics": [{"weight": 5, "judge_result": "Partially Met"}, {"weight": 2, "met": True}]},
        {"id": "lower", "rubrics": [{"weight": 5, "judge_result": "met"}, {"weight": 1, "met": False}]}]
    path = _write(tmp_path / "v.json", records)
    with caplog.at_level(logging.DEBUG):
        published = read(path).per_id
    assert published == {"flag": {"rubric_score": 3 / 7, "pass_rate": 0.0},
                         "flag3": {"rubric_score": 5 / 8, "pass_rate": 1.0},
                         "none": {"rubric_score": 2 / 5, "pass_rate": 1.0},
                         "partial": {"rubric_score": 2 / 7, "pass_rate": 1.0},
                         "lower": {"rubric_score": 0.0, "pass_rate": 1.0}}
    assert "task flag: 2 rubric(s) flagged critical otherwise than weight >= 4 (weight >= 4 decides" in caplog.text
    flagged = [(r.levelno, r.getMessage()) for r in caplog.records if "flagged critical otherwise" in r.getMessage()]
    assert {level for level, _ in flagged[:-1]} == {logging.DEBUG}  # each task's, then one summary
    assert flagged[-1] == (logging.WARNING, f"{path}: 3 rubric(s) of 2 task(s) flagged critical otherwise than "
                           "weight >= 4 (weight >= 4 decides, as published): flag, flag3; each rubric at DEBUG "
                           "(hydra.verbose=engine.evaluators.vtb_records)")
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "neither" in r.getMessage()]
    assert warned == [f'{path}: 2 rubric verdict(s) neither "Met" nor "Not Met" (counted as neither: no weight, no '
                      'failure, as published); first: task partial, field [3].rubrics[0].judge_result']
    strict = read(path, "strict")
    assert strict.per_id == {"flag": {"rubric_score": 3 / 7, "pass_rate": 1.0},
                             "flag3": {"rubric_score": 5 / 8, "pass_rate": 0.0},
                             "none": {"rubric_score": 2 / 5, "pass_rate": 0.0},
                             "partial": {}, "lower": {"rubric_score": 5 / 6, "pass_rate": 1.0}}
    block = V.aggregate(strict, list(strict.per_id))["rubrics"]
    assert block["unscored"] == 1 and block["no_critical"] == 1 and block["profile"] == "strict"
    with pytest.raises(ValueError, match="unknown VisualToolBench profile 'lenient'"):
        read(path, "lenient")


def test_repeated_ids_and_bad_verdicts_are_refused_naming_file_task_and_field(tmp_path: Path) -> None:
    cases = [([{"id": "a", "rubrics": [{"weight": 2, "met": True}]},
               {"id": "a", "rubrics": [{"weight": 1, "met": True}]}],
              "id a: field 'id': the id is given twice"),
             ([{"id": "a", "rubrics": [{"weight": 6, "met": True}]}], "id a: field 'rubrics[0].weight'"),
             ([{"id": "a", "rubrics": [{"weight": 2, "met": "yes"}]}], "id a: field 'rubrics[0].met'"),
             ([{"id": "a", "rubrics": [{"weight": 2, "met": True, "critical": "maybe"}]}],
              "id a: field 'rubrics[0].critical'"),
             ([{"id": "a", "rubrics": []}], "id a: field 'rubrics'"),
             ([{"rubrics": []}], "id #0: field 'id'")]
    for root, message in cases:
        path = _write(tmp_path / "bad.json", root)
        with pytest.raises(InputError, match=re.escape(message)) as info:
            read(path)
        assert "bad.json" in str(info.value) and "\n" not in str(info.value)
    tasks = _write(tmp_path / "tasks.json", [RELEASED, RELEASED])
    with pytest.raises(InputError, match=re.escape(f"id {RELEASED['id']}: field 'id': the id is given twice")):
        read_task_records(tasks)
    twice = {**RELEASED, "rubrics_by_turn": ['{"r1": {"weight": 2, "description": "x"}, "r1": {"weight": 3, '
                                             '"description": "y"}}']}
    with pytest.raises(InputError, match=re.escape("field 'rubrics_by_turn[0]': rubric id 'r1' is given twice")):
        read_task_records(_write(tmp_path / "tasks.json", [twice]))


# -- the released task shape and VisualToolBench's judge results -------------------------------------------------

def _rubric(description: str, weight: int, critical: str) -> dict[str, Any]:
    return {"description": description, "weight": weight, "objective/subjective": "objective",
            "explicit/implicit": "explicit", "category": ["visual understanding"], "critical": critical,
            "final_answer": "yes"}


RELEASED = {"id": "rel-1", "turncase": "single-turn", "num_turns": 1, "prompt_category": "physics",
            "eval_focus": "region_switch_qa", "turn_prompts": ["How large is the crop?"],
            "turn_golden_answers": ["101 x 81 pixels."], "turn_tool_trajectories": ["[]"],
            "rubrics_by_turn": [json.dumps({"u1": _rubric('States "101 x 81".', 5, "yes"),
                                            "u2": _rubric('Mentions "green".', 4, "no"),
                                            "u3": _rubric('Says "pixels".', 2, "yes")})],
            "image_paths": ["data/single_turn/images/sample_0/image_0.png"], "images_by_turn_paths": [[]]}


def test_a_released_task_reads_as_it_is() -> None:
    (turn,) = task_turns("t.json", RELEASED, "rel-1")
    assert turn.prompt == "How large is the crop?" and turn.golden_answer == "101 x 81 pixels."
    assert [(r.rid, r.weight, r.critical, r.flag) for r in turn.rubrics] == [("u1", 5, True, True),
                                                                              ("u2", 4, True, False),
                                                                              ("u3", 2, False, True)]
    strict = task_turns("t.json", RELEASED, "rel-1", "strict")[0].rubrics
    assert [r.critical for r in strict] == [True, False, True]
    assert task_groups(RELEASED) == {"domain": "physics", "eval_focus": "region_switch_qa", "turncase": "single-turn"}


def test_visualtoolbench_judge_results_give_their_scores(tmp_path: Path, caplog) -> None:
    def result(label: str) -> dict[str, str]:
        return {"rubric_id": "r", "judge_result": json.dumps({"explanation": "", "judge_result": label})}

    root = [{"task_id": "s1", "turncase": "single-turn", "eval_focus": "temporal", "prompt_category": "maths",
             "judge_result": [result("Met"), result("Partially Met")], "score": 0.625, "accuracy": 1},
            {"task_id": "m1", "turncase": "multi-turn", "eval_focus": "follow_up", "prompt_category": "medical",
             "judge_result": [[result("Met")], [result("Not Met")]], "score": 0.25, "accuracy": 0}]
    path = _write(tmp_path / "eval_results.json", root)
    with caplog.at_level(logging.WARNING):
        values = read(path)
    assert values.per_id == {"s1": {"rubric_score": 0.625, "pass_rate": 1.0},
                             "m1": {"rubric_score": 0.25, "pass_rate": 0.0}}
    block = V.aggregate(values, ["s1", "m1"])["rubrics"]
    assert (block["ARS"], block["APR"], block["other_labels"]) == ((0.625 + 0.25) / 2, 0.5, 1)
    assert block["by_domain"] == {"STEM": {"ARS": 0.625, "APR": 1.0, "tasks": 1}, "medical": {"ARS": 0.25, "APR": 0.0,
                                                                                              "tasks": 1}}
    assert "first: task s1, field [0].judge_result[1].judge_result" in caplog.text
    with pytest.raises(InputError, match="carry no rubric weights: only vtb.profile=published reads them"):
        read(path, "strict")
    _write(path, [{**root[0], "accuracy": 0.5}])
    with pytest.raises(InputError, match=re.escape("id s1: field 'accuracy': must be 0 or 1")):
        read(path)


# -- judging with the real pool -----------------------------------------------------------------------------

TASK = {"id": "mt", "prompt_category": "chemistry", "eval_focus": "follow_up", "turns": [
    {"prompt": "How large is the crop?", "golden_answer": "101 x 81 pixels.",
     "rubrics": [{"description": 'States "101 x 81".', "weight": 5, "category": "Truthfulness"},
                 {"description": 'Mentions "Pixels".', "weight": 2, "category": ["Presentation"]}]},
    {"prompt": "Where is it saved?", "golden_answer": "media/red_box.png",
     "rubrics": [{"description": 'Names "red_box.png".', "weight": 3, "critical": True},
                 {"description": 'Names "blue.png".', "weight": 4}]}]}


def _predictions(replies: list[Any] | None, final: str) -> TrajectoryFile:
    record: dict[str, Any] = {"id": "mt", "steps": [], "final_reply": final}
    if replies is not None:
        record["turns"] = replies
    return parse_trajectories(Path("pred.json"), [record])


def _scripted(model: str, bias: float = 0.0) -> dict[str, Any]:
    return {"provider": "scripted", "api_name": model, "policy": "judge", "bias": bias, "timeout": 10,
            "max_retries": 0, "backoff": {"initial": 0.01, "max": 0.01}}


def _loopback(server: Any, model: str) -> dict[str, Any]:
    return {"provider": "openai", "api_name": model, "base_url": server.base_url, "api_key_env": None, "params": {},
            "timeout": 10, "max_retries": 0, "backoff": {"initial": 0.01, "max": 0.01}}


def _judge(tmp_path: Path, judges: dict[str, dict[str, Any]], preds: TrajectoryFile, attempts: int = 2,
           profile: str = "published") -> dict:
    import rollout.judges.scripted  # noqa: F401 (registers the scripted judge policy)
    from rollout.judges.cache import ReplyCache
    from rollout.judges.pool import JudgePool, judge_specs

    async def go() -> dict:
        async with JudgePool(judge_specs(judges), ReplyCache(tmp_path / "cache")) as pool:
            ctx = JudgeContext(pool=pool, attempts=attempts, options=vtb.VtbOptions(profile=profile),
                               files=RunFiles(Path("predictions.json")))
            found = await V.verdict(ctx, TaskInputs("mt", prediction=preds.tasks["mt"], task=TASK))
            assert found.entry is not None
            return dict(found.entry)

    return asyncio.run(go())


def _reread(tmp_path: Path, entry: dict, profile: str) -> dict:
    path = _write(tmp_path / "own.json", V.export({"mt": entry}, {"profile": profile}))
    return read(path, profile).per_id["mt"]


def test_each_turn_is_judged_on_its_reply_and_unanswered_turns_are_dropped(tmp_path: Path) -> None:
    preds = _predictions([{"final_reply": "The crop is 101 x 81 pixels."}, "It is media/red_box.png."], "unused")
    entry = _judge(tmp_path, {"a": _scripted("judge-a"), "c": _scripted("judge-c", -0.1)}, preds)
    first, second = entry["turns"]
    # published: the first judge's label counts ("Pixels": judge-a ignores case, judge-c does not)
    assert [r["met"] for r in first["rubrics"]] == [True, True]
    assert [r["met"] for r in second["rubrics"]] == [True, False]
    assert [v["verdict"] for v in first["rubrics"][1]["judges"]] == ["Met", "Not Met"]
    assert entry["score"] == pytest.approx(10 / 14) and entry["pass"] is False  # weight 4 Not Met fails
    assert (entry["domain"], entry["turncase"], entry["profile"]) == ("chemistry", "multi-turn", "published")
    # strict: the judges' majority (a tie is Not Met), the weight-4 rubric without flag critical, Not Met
    assert _reread(tmp_path, entry, "strict") == {"rubric_score": pytest.approx(8 / 14), "pass_rate": 0.0}
    # the second turn never answered: dropped as published, Not Met in the strict reading
    entry = _judge(tmp_path, {"a": _scripted("judge-a")}, _predictions(["101 x 81 pixels", None], ""))
    assert entry["turns"][1]["answered"] is False and all(r["judges"] == [] for r in entry["turns"][1]["rubrics"])
    assert entry["score"] == 1.0 and entry["pass"] is True and V.complete(entry, ["judge-a"])
    assert _reread(tmp_path, entry, "strict") == {"rubric_score": pytest.approx(7 / 14), "pass_rate": 0.0}
    # no per-turn replies: the final reply answers every turn
    entry = _judge(tmp_path, {"a": _scripted("judge-a")}, _predictions(None, "101 x 81 pixels, red_box.png"))
    assert [t["answered"] for t in entry["turns"]] == [True, True] and entry["score"] == pytest.approx(10 / 14)


def test_an_earlier_verdict_without_a_judge_name_is_judged_again() -> None:
    """A rubric of an earlier file whose verdicts name no judge for one of them (a damaged file) makes
    the task judged again on resume, as a missing verdict does (it was a TypeError sorting None with names)."""
    judges = [{"name": "judge-a", "verdict": "Met", "explanation": ""}, {"verdict": "Met", "explanation": ""}]
    entry = {"turns": [{"answered": True, "rubrics": [{"judges": judges}]}]}
    assert not V.complete(entry, ["judge-a", "judge-b"])
    assert V.complete({"turns": [{"answered": True, "rubrics": [{"judges": judges[:1]}]}]}, ["judge-a"])


def test_a_failed_judge_is_not_met_as_published_and_unanswered_strictly(tmp_path: Path, chat_server) -> None:
    from rollout.models.loopback import Reply

    down = chat_server(lambda request: Reply(status=500, error="down"))
    silent = chat_server(lambda request: "I would rather not say.")
    partial = chat_server(lambda request: '{"explanation": "half", "judge_result": "Partially Met"}')
    preds = _predictions(["101 x 81 pixels", "red_box.png"], "")
    for server, error in ((down, "HTTP 500: down"), (silent, "no usable vtb_rubric answer in 2 attempt(s)")):
        entry = _judge(tmp_path / str(server.base_url)[-5:], {"x": _loopback(server, "x")}, preds)
        assert entry["unanswered"] == 4 and not V.complete(entry, ["x"])
        assert error in entry["turns"][0]["rubrics"][0]["judges"][0]["error"]
        assert (entry["score"], entry["pass"]) == (0.0, False)  # four Not Met, the task still scored
        assert _reread(tmp_path, entry, "strict") == {}
    entry = _judge(tmp_path / "partial", {"p": _loopback(partial, "p"), "a": _scripted("judge-a")}, preds)
    assert entry["other_labels"] == 4 and entry["unanswered"] == 0 and V.complete(entry, ["p", "judge-a"])
    assert (entry["score"], entry["pass"]) == (0.0, True)  # neither: no weight, no failure
    # strict: the other label is not counted, the second judge's verdicts decide
    assert _reread(tmp_path, entry, "strict") == {"rubric_score": pytest.approx(10 / 14), "pass_rate": 0.0}


def test_verdict_replies_record_any_label_and_need_a_judge_result() -> None:
    assert vtb.parse_verdict('```json\n{"explanation": "ok", "judge_result": "Not Met"}\n```') == ("Not Met", "ok")
    assert vtb.parse_verdict('{"judge_result": "Partially Met"}') == ("Partially Met", "")
    for bad in ("Met", '{"verdict": "Met"}', "[]"):
        with pytest.raises(ValueError):
            vtb.parse_verdict(bad)


def test_weights_written_as_a_float_or_as_text_are_scored_as_numbers(caplog: pytest.LogCaptureFixture) -> None:
    rubrics = {"r1": {"description": "a", "weight": 4.0}, "r2": {"description": "b", "weight": "5"},
               "r3": {"description": "c", "weight": 2}}
    task = {"id": "t", "turn_prompts": ["q"], "turn_golden_answers": ["g"], "rubrics_by_turn": [json.dumps(rubrics)]}
    with caplog.at_level(logging.WARNING):
        items = task_turns("tasks.json", task, "t")[0].rubrics
    assert [(r.weight, r.critical) for r in items] == [(4, True), (5, True), (2, False)]
    assert "task t, field rubrics_by_turn[0][r2].weight: weight given as text '5', read as 5" in caplog.text
    # as the published script adds the weights: (4 + 2) / 11 with r2 Not Met, which fails the task
    score = task_score(items, [True, False, True], "published")
    assert (score.score, score.passed) == ((4 + 2) / 11, False)
    for bad in ("five", 0, 6.5, True):
        with pytest.raises(InputError, match=r"must be a number 1-5"):
            task_turns("tasks.json", {**task, "rubrics_by_turn": [[{"description": "a", "weight": bad}]]}, "t")


def test_the_one_prompt_schema_with_turn_markers_is_one_turn_with_a_warning(tmp_path: Path, caplog) -> None:
    """The earlier schema's "[Turn N]" markers in one prompt: one turn, as VisualToolBench's scripts send it,
    said once per file with the count of such tasks."""
    from engine.evaluators.vtb_records import read_task_records

    rubric = {"description": "x", "weight": 3}
    path = tmp_path / "old.json"
    path.write_text(json.dumps([{"id": "a", "prompt": "[Turn 1] Crop it. [Turn 2] Now count.", "rubrics": [rubric]},
                                {"id": "b", "prompt": "[Turn 1] Zoom. [Turn 2] Read. [Turn 3] Sum.",
                                 "rubrics": [rubric]},
                                {"id": "c", "prompt": "Plain.", "rubrics": [rubric]}]))
    with caplog.at_level(logging.WARNING, logger="engine.evaluators.vtb_records"):
        records = read_task_records(path)
    assert len(records) == 3
    assert [r.message for r in caplog.records].count(
        f"{path}: 2 task(s) give several turns in one prompt ([Turn N] markers, the earlier one-prompt schema): "
        "each is put and judged as one turn, as VisualToolBench's scripts send it") == 1


def test_fenced_and_empty_replies_and_middle_turns_never_answered_are_counted_not_rescored(tmp_path: Path,
                                                                                         chat_server) -> None:
    """A reply fenced in ```json and an empty reply (which VisualToolBench's scripts lose the chunk on) and a
    middle turn never answered are counted apart in the entry and the aggregate; the scores stay the
    project's reading."""
    seen: set[str] = set()

    def empty_first(request: dict[str, Any]) -> str:
        asked = request["messages"][-1]["content"]
        if asked not in seen:
            seen.add(asked)
            return ""
        return '{"explanation": "ok", "judge_result": "Met"}'

    fenced = chat_server(lambda request: '```json\n{"explanation": "ok", "judge_result": "Met"}\n```')
    plain = chat_server(lambda request: '{"explanation": "ok", "judge_result": "Met"}')
    preds = _predictions(["101 x 81 pixels", "red_box.png"], "")
    entries = {name: _judge(tmp_path / name, {"x": _loopback(server, "x")}, preds)
               for name, server in (("fenced", fenced), ("empty", chat_server(empty_first)), ("plain", plain))}
    assert entries["fenced"]["odd_replies"] == {"fenced_replies": 4}
    assert entries["empty"]["odd_replies"] == {"empty_replies": 4}
    assert "odd_replies" not in entries["plain"]
    for entry in entries.values():
        assert (entry["score"], entry["pass"], entry["unanswered"]) == (1.0, True, 0)
    doc = V.export({"a": entries["fenced"], "b": entries["empty"], "c": entries["plain"]}, {})
    assert (doc["aggregate"]["fenced_replies"], doc["aggregate"]["empty_replies"]) == (4, 4)
    assert doc["aggregate"]["ARS"] == 1.0 and "unanswered_middle_turns" not in doc["aggregate"]
    assert not {"fenced_replies", "empty_replies"} & set(V.export({"c": entries["plain"]}, {})["aggregate"])
    path = _write(tmp_path / "own.json", doc)
    joined = load_joined(JoinedFiles({"vtb_rubrics": path}))
    rubrics = joined_aggregate(joined, ["a", "b", "c"])["rubrics"]
    assert (rubrics["fenced_replies"], rubrics["empty_replies"]) == (4, 4)
    assert joined_aggregate(joined, ["c"])["rubrics"].keys().isdisjoint({"fenced_replies", "empty_replies"})
    # a middle turn never answered (the third answers): dropped as published, counted; a last one is not middle
    first, second = entries["plain"]["turns"]
    middle = V.export({"m": {**entries["plain"], "turns": [first, {**second, "answered": False}, first]},
                           "l": {**entries["plain"], "turns": [first, {**second, "answered": False}]}}, {})
    assert middle["aggregate"]["unanswered_middle_turns"] == 1 and middle["aggregate"]["dropped_turns"] == 2
    assert middle["aggregate"]["ARS"] == 1.0
