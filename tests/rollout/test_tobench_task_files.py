"""TOBench's task files drop in: a folder of family folders holding task JSON files in the paper's shape
(task_name, task_difficulty, turn_mode, required_mcp, agent_config, user_request, input_files), each with
its check module beside it, checked by the judge app's verifiers and broken down by family and difficulty."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rollout_helpers import compose_judge

from engine.contract import InputError
from engine.neighbour_tasks import read_task_dir, task_dir_tasks
from rollout.judges.run import run as run_judge

CHECK = ("def check(trajectory, workspace, tool_log):\n"
         "    return [int('{word}' in (trajectory.get('final_reply') or '')), int(bool(trajectory['steps']))]\n")


def task_files(root: Path) -> Path:
    for family, name, difficulty, word in (("Customer Service", "refund", "easy", "refunded"),
                                           ("Customer Service", "invoice", "hard", "invoice"),
                                           ("Intelligent Creation", "poster", "easy", "poster")):
        folder = root / family
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps({
            "task_name": name, "task_difficulty": difficulty, "turn_mode": "single", "required_mcp": ["math"],
            "agent_config": {"role": "support agent", "rules": ["be brief"]},
            "user_request": f"Please handle the {name}.", "input_files": []}))
        (folder / f"{name}.py").write_text(CHECK.format(word=word))
    return root


def test_task_files_read_as_tasks(tmp_path: Path) -> None:
    records = read_task_dir(task_files(tmp_path / "tobench"))
    assert list(records) == ["invoice", "refund", "poster"]
    assert records["refund"]["type"] == "Customer Service" and records["refund"]["task_difficulty"] == "easy"
    assert records["poster"]["check"] == "Intelligent Creation/poster.py"
    assert [t.type for t in task_dir_tasks(tmp_path / "tobench", ["poster"])] == ["Intelligent Creation"]
    (tmp_path / "tobench" / "Customer Service" / "copy.json").write_text(json.dumps(
        {"task_name": "refund", "user_request": "again"}))
    with pytest.raises(InputError, match="id refund: field 'task_name'"):
        read_task_dir(tmp_path / "tobench")
    with pytest.raises(InputError, match="field 'tasks.root'"):
        read_task_dir(tmp_path / "empty")


def test_the_judge_app_checks_them_by_family_and_difficulty(tmp_path: Path) -> None:
    root = task_files(tmp_path / "tobench")
    call = [{"name": "math/add", "arguments": {"a": 1, "b": 2}, "result": "3"}]
    usage = {"prompt_tokens": 2000, "completion_tokens": 500, "total_tokens": 2500}
    preds = tmp_path / "m_test_mcp_fuzzy.json"
    preds.write_text(json.dumps([
        {"id": "refund", "steps": [{"calls": call}], "final_reply": "Your order is refunded.", "usage": usage},
        {"id": "invoice", "steps": [], "final_reply": "Here is the invoice.", "usage": usage},
        {"id": "poster", "steps": [{"calls": call * 2}], "final_reply": "The poster is ready.", "usage": usage}]))
    cfg = compose_judge(f"predictions={preds}", f"data.tasks={root}", "stage=verifiers", "evaluators=[verifiers]",
                        "+evaluators.verifiers.price={input: 1.0, output: 4.0}",
                        f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}",
                        f"workspace_dir={tmp_path / 'ws'}", f"tool_log_dir={tmp_path / 'logs'}")
    assert run_judge(cfg) == 0
    agg = json.loads((tmp_path / "m_test_mcp_fuzzy_checks.json").read_text())["aggregate"]
    assert agg["check_accuracy_evaluated"] == pytest.approx(2 / 3)
    assert {g: v["check_accuracy_evaluated"] for g, v in agg["check_by_group"].items()} == {
        "Customer Service / easy": 1.0, "Customer Service / hard": 0.0, "Intelligent Creation / easy": 1.0}
    assert agg["check_usage"] == {"tool_calls": 1.0, "tokens_k": 2.5, "cost_usd": pytest.approx(0.004)}


def test_input_files_are_data_and_a_broken_task_file_is_left_out_with_a_warning(tmp_path: Path, caplog) -> None:
    root = task_files(tmp_path / "tobench")
    folder = root / "Customer Service"
    (folder / "data").mkdir()
    (folder / "data" / "orders.json").write_text('{"orders": [1, 2,')  # a task's own input, not JSON at all
    (folder / "data" / "ticket.json").write_text(json.dumps({"task_name": "not-a-task", "user_request": "data"}))
    refund = json.loads((folder / "refund.json").read_text())
    (folder / "refund.json").write_text(json.dumps({**refund, "input_files": ["data/orders.json",
                                                                              "data/ticket.json"]}))
    (folder / "draft.json").write_text('{"task_name": "draft", ')
    with caplog.at_level("WARNING"):
        records = read_task_dir(root)
    assert list(records) == ["invoice", "refund", "poster"]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and warned[0].startswith(f"{folder / 'draft.json'}: ") and "left out" in warned[0]
    for data in ("orders", "ticket"):
        (folder / "data" / f"{data}.json").unlink()
    for name in ("invoice", "refund", "poster"):
        for path in root.rglob(f"{name}.json"):
            path.write_text("{")
    with pytest.raises(InputError, match=r"no TOBench task file .*\(4 \*\.json not valid JSON, first: "):
        read_task_dir(root)


def test_an_input_file_that_is_a_fifo_is_named_as_such(tmp_path: Path) -> None:
    """A task's image among its input_files that is a FIFO: once "not found" (it is there); never opened to wait on."""
    root = task_files(tmp_path / "tobench")
    task = root / "Intelligent Creation" / "poster.json"
    task.write_text(json.dumps({**json.loads(task.read_text()), "input_files": ["draft.png"]}))
    image = root / "Intelligent Creation" / "draft.png"
    os.mkfifo(image)
    with pytest.raises(InputError) as caught:
        task_dir_tasks(root, ["poster"])
    assert str(caught.value).endswith(f": id poster: field 'input_files': input file {image}: not a regular file "
                                      "(a FIFO)")
    image.unlink()
    with pytest.raises(InputError) as caught:
        task_dir_tasks(root, ["poster"])
    assert str(caught.value).endswith(f": id poster: field 'input_files': input file {image}: not found")


def test_a_family_that_is_no_text_is_named(tmp_path: Path) -> None:
    """A task's task_family (or category) must be a text: a number is one line naming the file, the task and the
    field, not a task whose family is a number."""
    root = task_files(tmp_path / "tobench")
    task = root / "Intelligent Creation" / "poster.json"
    task.write_text(json.dumps({**json.loads(task.read_text()), "task_family": 3}))
    with pytest.raises(InputError, match="id poster: field 'task_family': must be a text, got 3"):
        read_task_dir(root)
