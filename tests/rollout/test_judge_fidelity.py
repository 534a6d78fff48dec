"""Judging as the published evaluation does it, against the scripted chat server on loopback:
evaluators.call_outcomes.mode=published (one classifier asked about every call of every entry, agreement with the
rules per class), a pool's own prompts file, and the judge app's handling of bad input (ids, API
keys, numbers too large for a float, repeated and unmatched ids)."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from rollout_helpers import compose_judge, write_json

from engine.apps.compose import compose
from engine.apps.overrides import CommandLineError
from engine.contract import InputError, read_trajectories
from engine.evaluators.call_outcomes import CALL_KEYS
from engine.evaluators.m3_judges import read_taskcompletion
from engine.judge_results import joined_files, load_joined
from engine.judging import COMPLETION, OUTCOME
from rollout.judges.cli import judges_of, run_config
from rollout.judges.pool import judge_specs
from rollout.judges.run import run
from rollout.models.loopback import message_texts

CLASS_OF_NAME = {"s/ok": "4", "s/missing": "Class 3", "s/bad": "3", "s/ghost": "1"}


def loop_judge(base_url: str, model: str = "loop") -> dict:
    return {"provider": "openai", "api_name": model, "base_url": base_url, "api_key_env": None, "params": {},
            "timeout": 10, "max_retries": 1, "backoff": {"initial": 0.01, "max": 0.02}}


def _call(name: str, result: str) -> dict:
    return {"name": name, "arguments": {}, "result": result}


def predictions(tmp_path: Path) -> Path:
    """Three entries, one id repeated: the last object of a repeated id is what the rules-first stage
    reads; the published count reads both."""
    first = {"id": "a", "steps": [{"step": 1, "calls": [_call("s/ok", "fine"),
                                                        _call("s/bad", "Error: Invalid arguments")]}],
             "dialogue": [{"role": "assistant", "work": {"tool_calls": []}}]}
    again = {"id": "a", "steps": [{"step": 1, "calls": [_call("s/missing", "Error: 404 not found")]}]}
    other = {"id": "b", "steps": [{"step": 1, "calls": [_call("s/ok", "fine"),
                                                        _call("s/ghost", "The request failed upstream.")]}],
             "dialogue": [{"role": "assistant", "work": {"tool_calls": []}}]}
    return write_json(tmp_path / "m_test_mcp_fuzzy.json", [first, again, other])


def test_published_mode_asks_the_classifier_about_every_call_of_every_entry(tmp_path, chat_server) -> None:
    server = chat_server(lambda body: CLASS_OF_NAME[json.loads(message_texts(body)[-1][1])["name"]]
                         if message_texts(body)[0][1] == OUTCOME.system else "?")
    preds = predictions(tmp_path)
    cfg = compose_judge(f"predictions={preds}", "stage=calls", "evaluators.call_outcomes.catalogue=null",
                        "evaluators.call_outcomes.mode=published",
                        f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}")
    cfg.judges = judges_of({"max_requests": 4, "pool": {"pooled": loop_judge("http://127.0.0.1:9")},
                     "classifier": loop_judge(server.base_url, "flash-lite")})
    assert run(cfg) == 0
    assert len(server.requests) == 5  # every call of every entry, the repeated id's included
    document = json.loads((tmp_path / "m_test_mcp_fuzzy_callanalysis.json").read_text())
    assert {k: document[k] for k in ("illegal_calling", "unknown_tool", "invalid_arguments", "resource_not_found",
                                     "success", "undecided")} == {
        "illegal_calling": 2, "unknown_tool": 1, "invalid_arguments": 0, "resource_not_found": 2, "success": 2,
        "undecided": 0}
    assert document["num_samples"] == 3 and document["total_calls"] == 5
    assert document["per_id"]["a"] == {"illegal_calling": 1, "unknown_tool": 0, "invalid_arguments": 0,
                                       "resource_not_found": 2, "success": 1}
    assert document["meta"]["classifier"] == "flash-lite" and document["meta"]["mode"] == "published"
    agreement = document["agreement"]
    assert agreement["success"] == {"rule": 2, "agree": 2, "rate": 1.0}
    assert agreement["invalid_arguments"] == {"rule": 1, "agree": 0, "rate": 0.0}
    assert agreement["resource_not_found"] == {"rule": 1, "agree": 1, "rate": 1.0}
    assert agreement["unknown_tool"] == {"rule": 0, "agree": 0, "rate": None}
    assert agreement["all"] == {"rule": 4, "agree": 3, "rate": 0.75} and agreement["no_rule"] == 1

    # rules first (the default) reads the last object of the repeated id: one call fewer, one illegal fewer
    calls = cfg.evaluators["call_outcomes"]
    rules = replace(cfg, evaluators={**cfg.evaluators, "call_outcomes": {**calls, "mode": "rules", "judge": None}})
    rules.judges = judges_of({"max_requests": 4, "pool": {"loop": loop_judge(server.base_url)}})
    assert run(rules) == 0
    document = json.loads((tmp_path / "m_test_mcp_fuzzy_callanalysis.json").read_text())
    assert document["total_calls"] == 3 and document["illegal_calling"] == 1


def test_the_calls_stage_honours_ids(tmp_path, chat_server) -> None:
    server = chat_server(lambda body: CLASS_OF_NAME[json.loads(message_texts(body)[-1][1])["name"]])
    preds = predictions(tmp_path)
    for mode, calls in (("rules", 2), ("published", 2)):
        cfg = compose_judge(f"predictions={preds}", "stage=calls", "evaluators.call_outcomes.catalogue=null",
                            f"evaluators.call_outcomes.mode={mode}",
                            "ids=b", f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}")
        cfg.judges = judges_of({"max_requests": 4, "pool": {"loop": loop_judge(server.base_url)}})
        assert run(cfg) == 0
        document = json.loads((tmp_path / "m_test_mcp_fuzzy_callanalysis.json").read_text())
        assert document["total_calls"] == calls and list(document["per_id"]) == ["b"], mode


def _judge_files(tmp_path: Path) -> tuple[Path, Path]:
    gt = [{"id": t, "question": f"Q {t}", "steps": [{"step": 1, "calls": [{"name": "s/ok", "arguments": {}}]}]}
          for t in ("demo-0001", "demo-0002")]
    preds = [{**g, "final_reply": "done", "steps": [{"step": 1, "calls": [_call("s/ok", "fine")]}]} for g in gt]
    return write_json(tmp_path / "gt.json", gt), write_json(tmp_path / "p_test_mcp_fuzzy.json", preds)


def test_ids_as_one_id_and_unknown_ids_are_named(tmp_path, chat_server, caplog) -> None:
    server = chat_server(lambda body: "\\boxed{8}" if message_texts(body)[0][1] == COMPLETION.system else "\\boxed{1}")
    gt, preds = _judge_files(tmp_path)
    output = tmp_path / "tc.json"
    cfg = compose_judge(f"predictions={preds}", f"data.gt={gt}", f"evaluators.m3_judges.output={output}", "stage=judge",
                        "ids=demo-0001",
                        f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}")
    cfg.judges = judges_of({"max_requests": 4, "pool": {"loop": loop_judge(server.base_url)}})
    assert run(cfg) == 0
    assert list(json.loads(output.read_text())["pre_id"]) == ["demo-0001"]
    with caplog.at_level(logging.WARNING, logger="judge"):
        assert run(replace(cfg, ids=["demo-0002", "unknown", "nope"])) == 0
    assert "2 id(s) of `ids` match no task to judge: nope, unknown" in caplog.text
    assert set(json.loads(output.read_text())["pre_id"]) == {"demo-0001", "demo-0002"}
    with pytest.raises(CommandLineError, match="^ids=.*: must be a task id or a list of task ids"):
        compose_judge(f"predictions={preds}", "ids={a: 1}")


def test_every_missing_key_is_named_before_judging(tmp_path, monkeypatch, capsys) -> None:
    for env in ("M3_FID_KEY_A", "M3_FID_KEY_B"):
        monkeypatch.delenv(env, raising=False)
    gt, preds = _judge_files(tmp_path)
    cfg = compose_judge(f"predictions={preds}", f"data.gt={gt}", f"evaluators.m3_judges.output={tmp_path / 'tc.json'}",
                        "stage=judge",
                        f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}")
    cfg.judges = judges_of({"max_requests": 4, "pool": {
        "a": {**loop_judge("http://127.0.0.1:9", "ma"), "api_key_env": "M3_FID_KEY_A"},
        "b": {**loop_judge("http://127.0.0.1:9", "mb"), "api_key_env": "M3_FID_KEY_B"},
        "c": loop_judge("http://127.0.0.1:9", "mc")}})
    assert run_config(cfg, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "M3_FID_KEY_A (judge a), M3_FID_KEY_B (judge b)" in err


HUGE = 10 ** 400


def test_numbers_too_large_for_a_float_are_one_line_errors(tmp_path) -> None:
    for entry, field in (({"final": HUGE}, "final"),
                         ({"final": 0.5, "judges": [{"name": "m", "score": HUGE}]}, "judges[0].score"),
                         ({"final": 0.5, "info_grounding": {"final": 0.5, "judges": [{"name": "m", "score": HUGE}]}},
                          "info_grounding.judges[0].score")):
        path = tmp_path / "tc.json"
        path.write_text(json.dumps({"pre_id": {"t1": entry}}))
        with pytest.raises(InputError, match=re.escape(f"field '{field}'")):
            read_taskcompletion(path)
    with pytest.raises(InputError, match="field 'judges.pool.j.price.input'"):
        judge_specs({"j": {"provider": "openai", "api_name": "m", "price": {"input": HUGE, "output": 1}}})


def test_a_resumed_output_with_a_too_large_count_is_one_line(tmp_path, capsys) -> None:
    gt, preds = _judge_files(tmp_path)
    output = tmp_path / "tc.json"
    output.write_text(json.dumps({"pre_id": {"demo-0001": {"final": 0.5, "judges": []}},
                                  "meta": {"usage": {"loop": {"prompt_tokens": HUGE, "completion_tokens": 1}}}}))
    cfg = compose_judge(f"predictions={preds}", f"data.gt={gt}", f"evaluators.m3_judges.output={output}", "stage=judge",
                        f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}")
    cfg.judges = judges_of({"max_requests": 4, "pool": {"loop": loop_judge("http://127.0.0.1:9")}})
    assert run_config(cfg, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field 'meta.usage.loop.prompt_tokens'" in err and str(output) in err


def test_repeated_judge_records_and_unmatched_ids_are_warned_about(tmp_path, caplog) -> None:
    preds = write_json(tmp_path / "p_test_mcp_fuzzy.json", [{"id": "t1", "steps": []}])
    records = tmp_path / "p_test_mcp_fuzzy_taskcompletion.json"
    records.write_text(json.dumps([{"id": "t1", "task_completion": 0.2, "information_grounding": 0.1},
                                   {"id": "t1", "task_completion": 0.4, "information_grounding": 0.3}]))
    write_json(tmp_path / "p_test_mcp_fuzzy_callanalysis.json", {
        "illegal_calling": 0, "unknown_tool": 0, "invalid_arguments": 0, "resource_not_found": 0, "success": 3,
        "per_id": {"t1": {"illegal_calling": 0, "unknown_tool": 0, "invalid_arguments": 0, "resource_not_found": 0,
                          "success": 1},
                   **{f"x{i}": {"illegal_calling": 0, "unknown_tool": 0, "invalid_arguments": 0,
                                "resource_not_found": 0, "success": 1} for i in range(7)}}})
    with caplog.at_level(logging.WARNING):
        joined = load_joined(joined_files(preds), read_trajectories(preds))
    assert joined is not None and joined.per_id["t1"]["task_completion"] == 0.4
    assert "id t1 has more than one judge record (record #1); the last one is kept" in caplog.text
    assert "7 id(s) match no prediction" in caplog.text and "x0, x1, x2, x3, x4 ..." in caplog.text


def test_a_pools_own_prompts_file(tmp_path, chat_server) -> None:
    seen: list[str] = []

    def policy(body: dict) -> str:
        seen.append(message_texts(body)[0][1])
        return "\\boxed{8}" if "COMPLETION" in message_texts(body)[0][1] else "\\boxed{1}"

    server = chat_server(policy)
    prompts = tmp_path / "prompts.yaml"
    prompts.write_text("task_completion: |\n  Mine: COMPLETION, answer \\boxed{S}.\n"
                       "information_grounding: {system: 'Mine: grounding.'}\n")
    gt, preds = _judge_files(tmp_path)
    output = tmp_path / "tc.json"
    cfg = compose_judge(f"predictions={preds}", f"data.gt={gt}", f"evaluators.m3_judges.output={output}", "stage=judge",
                        f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}")
    cfg.judges = judges_of({"max_requests": 4, "prompts": str(prompts), "pool": {"loop": loop_judge(server.base_url)}})
    assert run(cfg) == 0
    assert sorted(set(seen)) == ["Mine: COMPLETION, answer \\boxed{S}.\n", "Mine: grounding."]
    versions = json.loads(output.read_text())["meta"]["prompt_versions"]
    assert versions["task_completion"].startswith("file-") and versions["information_grounding"].startswith("file-")
    prompts.write_text("task_completion: ''\n")
    with pytest.raises(InputError, match="field 'task_completion'"):
        run(replace(cfg, evaluators={"m3_judges": {"output": str(tmp_path / "other.json")}}))


def test_the_judges_see_the_tasks_input_image(tmp_path, chat_server, caplog) -> None:
    from PIL import Image

    server = chat_server(lambda body: "\\boxed{8}" if message_texts(body)[0][1] == COMPLETION.system else "\\boxed{1}")
    gt, preds = _judge_files(tmp_path)
    (tmp_path / "images").mkdir()
    Image.new("RGB", (2, 2), (0, 90, 0)).save(tmp_path / "images" / "one.png")
    reference = json.loads(gt.read_text())
    reference[0]["image"], reference[1]["image"] = "images/one.png", "images/two.png"
    gt.write_text(json.dumps(reference))
    cfg = compose_judge(f"predictions={preds}", f"data.gt={gt}", f"evaluators.m3_judges.output={tmp_path / 'tc.json'}",
                        "stage=judge",
                        f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}", "concurrency=1")
    cfg.judges = judges_of({"max_requests": 1, "pool": {"loop": loop_judge(server.base_url)}})
    with caplog.at_level(logging.WARNING, logger="judge"):
        assert run(cfg) == 0
    users = [r["body"]["messages"][-1]["content"] for r in server.requests]
    shown = [[p["image_url"]["url"][:22] for p in content if p["type"] == "image_url"]
             if isinstance(content, list) else [] for content in users]
    assert sorted(shown) == [[], [], ["data:image/png;base64,"], ["data:image/png;base64,"]]
    assert f"image {tmp_path / 'images' / 'two.png'} not shown to the judges: not found" in caplog.text
    assert caplog.text.count("not shown to the judges") == 1  # named once, though both questions of the task name it


def _calls_config(tmp_path: Path, base_url: str, *extra: str) -> dict:
    cfg = compose_judge(f"predictions={tmp_path / 'm_test_mcp_fuzzy.json'}", "stage=calls",
                        "evaluators.call_outcomes.catalogue=null", f"cache_dir={tmp_path / 'cache'}",
                        f"run_dir={tmp_path / 'run'}", *extra)
    cfg.judges = judges_of({"max_requests": 4, "pool": {
        "loop": loop_judge(base_url), "other": loop_judge(base_url, "other"),
        "unreachable": loop_judge("http://127.0.0.1:9", "unreachable")}})
    return cfg


def test_call_outcomes_resume_their_file_unless_it_was_made_otherwise(tmp_path, chat_server, caplog) -> None:
    server = chat_server(lambda body: CLASS_OF_NAME[json.loads(message_texts(body)[-1][1])["name"]])
    predictions(tmp_path)
    output = tmp_path / "m_test_mcp_fuzzy_callanalysis.json"
    with caplog.at_level(logging.INFO, logger="judge"):
        assert run(_calls_config(tmp_path, server.base_url, "ids=a")) == 0
    assert "call_outcomes: 1 of 1 task(s) to judge with 1 judge(s)" in caplog.text  # the one judge asked
    first = json.loads(output.read_text())
    assert list(first["per_id"]) == ["a"] and first["meta"]["judge"] == "loop"
    assert set(first["meta"]) == {"format", "predictions", "catalogue", "judge", "prompt_version", "usage",
                                  "input_keys"}

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="judge"):
        assert run(_calls_config(tmp_path, server.base_url)) == 0  # resumed: task b added
    assert "call_outcomes: 1 of 2 task(s) to judge" in caplog.text
    second = json.loads(output.read_text())
    assert list(second["per_id"]) == ["a", "b"] and second["calls"][:1] == first["calls"]
    assert second["decided_by"] == {"rule": 2, "judge": 1, "undecided": 0} and second["illegal_calling"] == 1

    asked = len(server.requests)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="judge"):
        assert run(_calls_config(tmp_path, server.base_url, "evaluators.call_outcomes.judge=other")) == 0
    assert "it was made with judge 'loop', this run's is 'other'" in caplog.text
    third = json.loads(output.read_text())
    assert len(server.requests) == asked + 1 and third["calls"][-1]["by"] == "judge:other"
    assert {k: third[k] for k in CALL_KEYS} == {k: second[k] for k in CALL_KEYS}

    with pytest.raises(InputError, match="no judge 'nobody' in the pool"):
        run(_calls_config(tmp_path, server.base_url, "evaluators.call_outcomes.judge=nobody"))


def test_a_call_classifier_refused_is_one_line_naming_its_own_setting(tmp_path) -> None:
    """Under mode=published the classifier's model config is that of the setting giving it: a setting it refuses
    is named under the evaluator's option or the pool's ``classifier``, never as a judge of the pool."""
    predictions(tmp_path)
    cfg = _calls_config(tmp_path, "http://127.0.0.1:9", "evaluators.call_outcomes.mode=published")
    cfg.evaluators["call_outcomes"]["classifier"] = {**loop_judge("http://127.0.0.1:9"), "timeout": -1}
    with pytest.raises(InputError) as caught:
        run(cfg)
    assert str(caught.value) == ("config: field 'evaluators.call_outcomes.classifier.timeout': must be a number of "
                                 "seconds > 0, got -1.0")
    cfg.evaluators["call_outcomes"]["classifier"] = None
    cfg.judges = judges_of({"pool": {"loop": loop_judge("http://127.0.0.1:9")},
                            "classifier": {**loop_judge("http://127.0.0.1:9", "flash-lite"), "provider": "nope"}})
    with pytest.raises(InputError, match=re.escape("field 'judges.classifier.provider': ")) as caught:
        run(cfg)
    assert "\n" not in str(caught.value)


def test_an_undecided_call_leaves_its_task_incomplete_and_a_rerun_asks_again(tmp_path, chat_server) -> None:
    replies = iter(["no idea", "still none", "1"])
    server = chat_server(lambda body: next(replies))
    predictions(tmp_path)
    cfg = _calls_config(tmp_path, server.base_url, "ids=b", "attempts=2")
    assert run(cfg) == 1
    document = json.loads((tmp_path / "m_test_mcp_fuzzy_callanalysis.json").read_text())
    assert document["undecided"] == 1 and document["calls"][1]["by"].startswith("undecided: judge loop")
    assert run(cfg) == 0 and len(server.requests) == 3
    document = json.loads((tmp_path / "m_test_mcp_fuzzy_callanalysis.json").read_text())
    assert document["undecided"] == 0 and document["unknown_tool"] == 1


def test_published_counting_keeps_the_file_order_of_a_repeated_id(tmp_path, chat_server) -> None:
    server = chat_server(lambda body: CLASS_OF_NAME[json.loads(message_texts(body)[-1][1])["name"]])
    first, again, other = json.loads(predictions(tmp_path).read_text())
    write_json(tmp_path / "m_test_mcp_fuzzy.json", [first, other, again])  # a, b, a
    assert run(_calls_config(tmp_path, server.base_url, "evaluators.call_outcomes.mode=published")) == 0
    document = json.loads((tmp_path / "m_test_mcp_fuzzy_callanalysis.json").read_text())
    assert [(c["id"], c["entry"]) for c in document["calls"]] == [("a", 0), ("a", 0), ("b", 1), ("b", 1), ("a", 2)]
    assert [i["entry"] for i in document["illegal"]] == [0, 1] and list(document["per_id"]) == ["a", "b"]
    assert document["num_samples"] == 3 and document["meta"]["classifier"] == "loop"


def test_call_outcomes_need_the_judges_key_only_for_a_call_the_rules_leave(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("M3_FID_KEY_CALLS", raising=False)
    settled = {"id": "a", "steps": [{"step": 1, "calls": [_call("s/ok", "fine"),
                                                         _call("s/bad", "Error: Invalid arguments")]}]}
    write_json(tmp_path / "m_test_mcp_fuzzy.json", [settled])
    cfg = _calls_config(tmp_path, "http://127.0.0.1:9")
    cfg.judges.pool = judges_of({"pool": {"keyed": {**loop_judge("http://127.0.0.1:9"),
                                                    "api_key_env": "M3_FID_KEY_CALLS"}}}).pool
    assert run(cfg) == 0  # every call settled by the rules: no key asked for
    document = json.loads((tmp_path / "m_test_mcp_fuzzy_callanalysis.json").read_text())
    assert document["success"] == 1 and document["invalid_arguments"] == 1
    write_json(tmp_path / "m_test_mcp_fuzzy.json", [settled, {"id": "b", "steps": [{"step": 1, "calls": [
        _call("s/ghost", "The request failed upstream.")]}]}])
    assert run_config(cfg, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "M3_FID_KEY_CALLS is not set (the key of judge keyed)" in err
    assert set(json.loads((tmp_path / "m_test_mcp_fuzzy_callanalysis.json").read_text())["per_id"]) == {"a"}


def test_a_data_set_whose_tasks_the_user_names_is_refused_without_them(tmp_path, capsys) -> None:
    preds = write_json(tmp_path / "m_test_mcp_fuzzy.json", [{"id": "a", "steps": [], "final_answer": "x"}])
    overrides = [f"predictions={preds}", "data=mcpverse", "judges=scripted", "evaluators=[answer_equivalence]",
                 f"run_dir={tmp_path / 'run'}"]
    assert OmegaConf.is_missing(compose("judge", overrides).data, "tasks")  # ??? in the data set
    cfg = compose_judge(*overrides)
    assert cfg.data.tasks is None  # the typed config's: what reads it names it
    assert run_config(cfg, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert err == "error: config: field 'data.tasks': no tasks file: set data.tasks=PATH\n"
