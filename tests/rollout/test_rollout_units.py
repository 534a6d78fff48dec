"""Parsing of model replies, tool exposure modes, task and reference reading, and result files."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from rollout_helpers import compose, write_json

from engine.apps.config.rollout import Exposure, ExposureMode
from engine.contract import ConfigError, InputError, Task, read_tasks
from engine.contract.settings import SettingError
from rollout import prompts
from rollout.exposure import select_tools
from rollout.mcp.protocol import ToolInfo
from rollout.models.clients import bounded
from rollout.models.replies import parse_tool_calls
from rollout.output import ResultFile
from rollout.tasks import read_reference_tools


def test_parse_tool_calls():
    calls = [{"name": "math/mean", "arguments": {"numbers": [1]}}]
    assert parse_tool_calls(json.dumps({"tool_calls": calls})) == calls
    assert parse_tool_calls("```json\n" + json.dumps({"tool_calls": calls}) + "\n```") == calls
    assert parse_tool_calls('{"tool_calls": [{"name": " a/b ", "arguments": "{\\"x\\": 1}"}]}') == \
        [{"name": "a/b", "arguments": {"x": 1}}]
    assert parse_tool_calls('{"tool_calls": [{"name": "a/b"}]}') == [{"name": "a/b", "arguments": {}}]
    assert parse_tool_calls('{"tool_calls": []}') == []
    for bad, reason in [("call math/mean", "not valid JSON"), ("[1]", "not an object"),
                        ('{"calls": []}', '"tool_calls" list'), ('{"tool_calls": [3]}', "not an object"),
                        ('{"tool_calls": [{"name": "a/b", "arguments": [1]}]}', "arguments is not an object"),
                        ('{"tool_calls": [{"name": "a/b", "arguments": "x"}]}', "not JSON")]:
        with pytest.raises(ValueError, match=reason):
            parse_tool_calls(bad)


@pytest.mark.parametrize("reply, expected", [
    ("yes", True), ("Yes.", True), ("no, one more step", False), ("NO", False), ('{"stop": true}', True),
    ('{"answer": "no"}', False), ("maybe", None), ("", None), ("```json\n{\"done\": false}\n```", False)])
def test_parse_yes_no(reply, expected):
    assert prompts.parse_yes_no(reply) is expected


def test_phase_and_question_markers():
    assert prompts.phase_of("Results of step 1:\nx\n\n## PROCESS (step 2 of at most 5)\n...") == ("PROCESS", 2)
    assert prompts.phase_of(prompts.DECISION) == ("DECISION", None)
    assert prompts.phase_of("no heading") == (None, None)
    message = prompts.task_message("What is this?", ["media/a.png", "media/b.png"])
    assert message["content"][0]["text"].endswith("Images in the workspace: media/a.png, media/b.png")
    assert prompts.question_of(message["content"][0]["text"]) == "What is this?"
    assert prompts.parse_tool_choice('{"tools": ["a/b", 3, " c/d "]}') == ["a/b", "c/d"]
    assert prompts.parse_tool_choice("a/b") is None


TOOLS = [ToolInfo("math/mean", "Arithmetic mean of a list of numbers.", {"type": "object"}),
         ToolInfo("images/crop", "Crop an image to a rectangle.", {"type": "object"}),
         ToolInfo("excel/write_data_to_excel", "Write rows of values to a spreadsheet.", {"type": "object"}),
         ToolInfo("images/rotate", "Rotate an image by an angle.", {"type": "object"})]
TASKS = [Task("q1", "Crop the photo to the face and rotate it upright", None, None, None, 0),
         Task("q2", "Average these numbers: 3, 4, 5", None, None, None, 1)]


def test_exposure_modes():
    assert select_tools(Exposure(), TOOLS, TASKS)["q1"] == TOOLS
    fixed = select_tools(Exposure(ExposureMode.fixed, ["images/rotate", "math/mean"]), TOOLS, TASKS)
    assert [t.name for t in fixed["q2"]] == ["images/rotate", "math/mean"]
    with pytest.raises(InputError, match="field 'exposure.tools'.*weather/now"):
        select_tools(Exposure(ExposureMode.fixed, ["weather/now"]), TOOLS, TASKS)
    with pytest.raises(InputError, match="field 'exposure.tools': empty list"):
        select_tools(Exposure(ExposureMode.fixed), TOOLS, TASKS)
    oracle = select_tools(Exposure(ExposureMode.oracle), TOOLS, TASKS,
                          {"q1": ["images/crop", "ocr/read", "images/rotate"]})
    assert [t.name for t in oracle["q1"]] == ["images/crop", "images/rotate"] and "q2" not in oracle
    with pytest.raises(SettingError, match=r"^top_k=0: must be an integer >= 1$"):
        Exposure(ExposureMode.retrieve, top_k=0)
    with pytest.raises(SettingError, match=r"^tools=\[math/mean\]: a list of tools is for mode fixed"):
        Exposure(ExposureMode.all, ["math/mean"])


def test_exposure_settings_are_named_by_their_dotted_key(tmp_path):
    for given, line in ((["exposure=retrieve", "exposure.top_k=0"], "exposure.top_k=0: must be an integer >= 1"),
                        (["exposure.tools=[math/mean]"], "exposure.tools=[math/mean]: a list of tools is for mode "
                                                         "fixed (exposure=fixed)")):
        with pytest.raises(ConfigError, match=f"^{re.escape(line)}$"):
            compose("model=scripted", "tasks=demo", f"results_dir={tmp_path}", *given)
    with pytest.raises(Exception, match="exposure.mode"):
        compose("model=scripted", "tasks=demo", "exposure.mode=psychic")


@pytest.mark.slow
def test_retrieve_exposure_uses_the_engine_encoder():
    chosen = select_tools(Exposure(ExposureMode.retrieve, top_k=2), TOOLS, TASKS)
    assert {t.name for t in chosen["q1"]} == {"images/crop", "images/rotate"}
    assert "math/mean" in {t.name for t in chosen["q2"]} and len(chosen["q2"]) == 2


def test_task_and_reference_loading(tmp_path):
    (tmp_path / "img.png").write_bytes(b"png")
    path = write_json(tmp_path / "t.json", {"x1": {"image": "img.png", "question": "Q1", "prompt": "P1"},
                                            "x2": {"image": None, "question": "Q2", "prompt": "P2", "type": "t"}})
    tasks = read_tasks(path, question_field="prompt")
    assert [(t.id, t.question, t.image, t.type) for t in tasks] == [("x1", "P1", "img.png", None),
                                                                    ("x2", "P2", None, "t")]
    assert tasks[0].image_path == (tmp_path / "img.png").resolve()
    assert [t.id for t in read_tasks(path, ids=["x2"])] == ["x2"]
    with pytest.raises(InputError, match="requested id"):
        read_tasks(path, ids=["nope"])
    with pytest.raises(InputError, match=r"t2\.json: not valid JSON \(line 1"):
        (tmp_path / "t2.json").write_text("[{")
        read_tasks(tmp_path / "t2.json")
    with pytest.raises(InputError, match=r"id 7: field 'type': must be a string"):
        read_tasks(write_json(tmp_path / "t3.json", [{"id": 7, "question": "q", "type": 3}]))
    refs = write_json(tmp_path / "ref.json", [
        {"id": "a", "steps": [{"step": 1, "calls": [{"name": "s/t "}, {"name": "s/u"}]}, {"calls": [{"name": "s/t"}]}]},
        {"id": "a", "steps": [{"step": 1, "calls": [{"name": "s/v"}]}]}])
    assert read_reference_tools(refs) == {"a": ["s/v"]}  # the last object of a repeated id
    with pytest.raises(InputError, match=r"id b: field 'steps\[0\]\.calls\[0\]\.name'"):
        read_reference_tools(write_json(tmp_path / "r2.json", [{"id": "b", "steps": [{"calls": [{"name": 1}]}]}]))


def test_result_file_is_ordered_locked_and_resumable(tmp_path):
    path = tmp_path / "out.json"
    with ResultFile(path, {"a": 0, "b": 1, "c": 2}) as results:
        results.add({"id": "c", "v": 3})
        results.add({"id": "a", "v": 1})
        assert [r["id"] for r in json.loads(path.read_text())] == ["a", "c"]
        with pytest.raises(InputError, match="another run is writing"):
            ResultFile(path, {}).__enter__()
    assert not list(tmp_path.glob(".out.json.*.tmp"))
    with ResultFile(path, {"a": 0, "b": 1, "c": 2}) as results:
        assert results.done == {"a", "c"}
        results.add({"id": "b", "v": 2})
    assert [r["v"] for r in json.loads(path.read_text())] == [1, 2, 3]
    path.write_text('{"not": "a list"}')
    with pytest.raises(InputError, match="must be a JSON list"):
        ResultFile(path, {}).__enter__()


def test_bounded_cancels_the_other_jobs_when_one_raises() -> None:
    finished: list[int] = []

    async def work(i: int) -> int:
        if i == 0:
            raise InputError("tasks.json", "bad", task_id="t0", field="level")
        await asyncio.sleep(0.2)
        finished.append(i)
        return i

    async def main() -> None:
        with pytest.raises(InputError, match="id t0"):
            await bounded([0, 1, 2, 3], 4, work)
        await asyncio.sleep(0.3)  # a job left running would finish here

    asyncio.run(main())
    assert finished == []
