"""Every verdict the judge app resumes is keyed by what it judged (rollout.judges.inputs.input_key): judge,
change one task's input (its task record, a file it names, its reference, its prediction, its workspace)
or a setting, judge again in the same folder: that task is judged again, the others are kept. A file of
an earlier build without keys keeps its verdicts; a file of a newer format version is refused, never
rewritten. Each run is the judge app's, with the offline scripted judges and no reply cache, so the
judges' usage counts exactly the questions each run asked."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rollout_helpers import ROOT, compose_judge, write_json

from engine.contract import InputError
from rollout.judges.run import run

DEMO = ROOT / "rollout" / "demo"


def _requests(doc: dict[str, Any]) -> int:
    return sum(u["requests"] for u in doc["meta"].get("usage", {}).values())


def _judge(capsys, output: Path, *overrides: str) -> tuple[dict[str, Any], str, int]:
    """(the evaluator's file, the run's summary line, the questions the run asked) of one judge run."""
    before = _requests(json.loads(output.read_text())) if output.is_file() else 0
    assert run(compose_judge("judges=scripted", "cache_dir=null", *overrides)) == 0
    doc = json.loads(output.read_text())
    judged = [ln for ln in capsys.readouterr().out.splitlines() if " task(s) judged (" in ln]  # not the headline
    return doc, judged[-1], _requests(doc) - before


def _entries(doc: dict[str, Any]) -> dict[str, Any]:
    return doc.get("pre_id", doc.get("per_id"))


def _edit(path: Path, tid: str, change: Callable[[dict[str, Any]], None]) -> None:
    records = json.loads(path.read_text())
    change(next(r for r in records if r["id"] == tid))
    write_json(path, records)


def _vtb(tmp_path: Path) -> tuple[list[str], Path]:
    tasks = Path(shutil.copy(DEMO / "vtb_tasks.json", tmp_path / "tasks.json"))
    shutil.copy(DEMO / "vtb_reference.json", tmp_path / "m_test_mcp_fuzzy.json")
    args = ["data=vtb_demo", f"data.tasks={tasks}", "evaluators=[vtb_rubrics]"]
    return args, tmp_path / "m_test_mcp_fuzzy_rubrics.json"


def test_a_task_revised_to_one_turn_is_judged_again_the_others_are_kept(tmp_path: Path, capsys) -> None:
    args, output = _vtb(tmp_path)
    args.append(f"predictions={tmp_path / 'm_test_mcp_fuzzy.json'}")
    first, line, asked = _judge(capsys, output, *args)
    assert "(6 now," in line and len(first["per_id"]["vtb-01-mt"]["turns"]) == 2 and asked > 0
    _edit(tmp_path / "tasks.json", "vtb-01-mt", lambda t: t.update(turns=t["turns"][:1], turncase="single-turn"))
    second, line, asked = _judge(capsys, output, *args)
    assert "(1 now," in line
    assert len(second["per_id"]["vtb-01-mt"]["turns"]) == 1
    assert asked == len(second["per_id"]["vtb-01-mt"]["turns"][0]["rubrics"])  # one judge: one question a rubric
    assert {i: e for i, e in second["per_id"].items() if i != "vtb-01-mt"} == \
        {i: e for i, e in first["per_id"].items() if i != "vtb-01-mt"}
    assert set(second["meta"]["input_keys"]) == set(second["per_id"])
    assert second["meta"]["input_keys"]["vtb-01-mt"] != first["meta"]["input_keys"]["vtb-01-mt"]
    _, line, asked = _judge(capsys, output, *args)
    assert "(0 now," in line and asked == 0
    _, line, asked = _judge(capsys, output, *args, "evaluators.vtb_rubrics.agreement_top=3")  # no verdict changes
    assert "(0 now," in line and asked == 0


def test_a_changed_reference_or_prediction_is_judged_again(tmp_path: Path, capsys) -> None:
    gt = Path(shutil.copy(DEMO / "reference.json", tmp_path / "gt.json"))
    preds = Path(shutil.copy(DEMO / "reference.json", tmp_path / "m_test_mcp_fuzzy.json"))
    judges = tmp_path / "m_test_mcp_fuzzy_taskcompletion.json"
    calls = tmp_path / "m_test_mcp_fuzzy_callanalysis.json"
    args = ["data=rollout_demo", f"data.gt={gt}", f"predictions={preds}", "evaluators.call_outcomes.catalogue=null"]
    _judge(capsys, judges, *args, "stage=judge")
    first_calls, line, _ = _judge(capsys, calls, *args, "stage=calls")
    assert "(4 now," in line
    _edit(gt, "demo-0002", lambda r: r.update(final_reply="Something else entirely."))
    second, line, asked = _judge(capsys, judges, *args, "stage=judge")
    assert "(1 now," in line and asked == 2 * len(second["meta"]["judges"])  # both questions, every judge
    _, line, _ = _judge(capsys, calls, *args, "stage=calls")  # the calls stage reads no reference
    assert "(0 now," in line
    _edit(preds, "demo-0003", lambda r: r["steps"][0]["calls"][0].update(name="nowhere/ghost"))
    _, line, _ = _judge(capsys, judges, *args, "stage=judge")
    assert "(1 now," in line
    second_calls, line, _ = _judge(capsys, calls, *args, "stage=calls")
    assert "(1 now," in line
    assert [c for c in second_calls["calls"] if c["id"] == "demo-0003"][0]["name"] == "nowhere/ghost"
    assert [c for c in second_calls["calls"] if c["id"] != "demo-0003"] == \
        [c for c in first_calls["calls"] if c["id"] != "demo-0003"]


def test_a_changed_ground_truth_is_judged_again(tmp_path: Path, capsys) -> None:
    tasks = Path(shutil.copy(DEMO / "mcpverse" / "tasks.json", tmp_path / "tasks.json"))
    shutil.copy(DEMO / "mcpverse" / "reference.json", tmp_path / "m_test_mcp_fuzzy.json")
    output = tmp_path / "m_test_mcp_fuzzy_answers.json"
    args = ["data=mcpverse", f"data.tasks={tasks}", f"predictions={tmp_path / 'm_test_mcp_fuzzy.json'}",
            "evaluators=[answer_equivalence]", f"workspace_dir={tmp_path / 'ws'}"]
    first, _, _ = _judge(capsys, output, *args)
    assert first["per_id"]["mv-01"]["score"] == 1
    _edit(tasks, "mv-01", lambda t: t.update(ground_truth="19"))
    second, line, asked = _judge(capsys, output, *args)
    assert "(1 now," in line and asked == 1 and second["per_id"]["mv-01"]["score"] == 0
    assert {i: e for i, e in second["per_id"].items() if i != "mv-01"} == \
        {i: e for i, e in first["per_id"].items() if i != "mv-01"}
    _, line, asked = _judge(capsys, output, *args, "evaluators.answer_equivalence.parser=strict")  # another reading
    assert f"({len(first['per_id'])} now," in line


def test_a_changed_check_script_or_workspace_is_checked_again(tmp_path: Path, capsys) -> None:
    data = Path(shutil.copytree(DEMO / "tobench", tmp_path / "tobench"))
    output = data / "reference_checks.json"
    args = ["data=tobench_demo", f"data.tasks={data / 'tasks.json'}", f"predictions={data / 'reference.json'}",
            "evaluators=[verifiers]", f"workspace_dir={tmp_path / 'ws'}",
            f"tool_log_dir={tmp_path / 'logs'}", "evaluators.verifiers.bubblewrap=false"]
    first, _, _ = _judge(capsys, output, *args)
    assert first["per_id"]["tb-05"]["passed"] is False  # no workspace: its file is missing
    (data / "checks" / "notes.py").write_text("def check(trajectory, workspace, tool_log):\n    return [1]\n")
    second, line, _ = _judge(capsys, output, *args)
    assert "(1 now," in line and second["per_id"]["tb-05"]["passed"] is True
    (tmp_path / "ws" / "tb-01").mkdir(parents=True)
    (tmp_path / "ws" / "tb-01" / "report.xlsx").write_bytes(b"not a workbook")
    third, line, _ = _judge(capsys, output, *args)
    assert "(1 now," in line
    assert {i: e for i, e in third["per_id"].items() if i != "tb-01"} == \
        {i: e for i, e in second["per_id"].items() if i != "tb-01"}


def test_a_file_without_keys_keeps_its_verdicts(tmp_path: Path, capsys, caplog) -> None:
    """A file of a build that recorded no keys: nothing shows that its inputs changed, so its verdicts are
    kept (with a warning naming the file); the tasks judged from then on have keys."""
    args, output = _vtb(tmp_path)
    args.append(f"predictions={tmp_path / 'm_test_mcp_fuzzy.json'}")
    first, _, _ = _judge(capsys, output, *args)
    del first["meta"]["input_keys"]
    write_json(output, first)
    _edit(tmp_path / "tasks.json", "vtb-01-mt", lambda t: t.update(turns=t["turns"][:1]))
    second, line, asked = _judge(capsys, output, *args)
    assert "(0 now," in line and asked == 0 and second["per_id"] == first["per_id"]
    assert "6 task(s) of" in caplog.text and "recorded no input keys" in caplog.text
    assert second["meta"]["input_keys"] == {}


def test_a_file_of_a_newer_format_is_refused_not_rewritten(tmp_path: Path, capsys) -> None:
    gt = Path(shutil.copy(DEMO / "reference.json", tmp_path / "gt.json"))
    args = ["data=rollout_demo", f"data.gt={gt}", f"predictions={gt}", "evaluators.call_outcomes.catalogue=null"]
    for stage, suffix in (("calls", "callanalysis"), ("judge", "taskcompletion")):
        output = tmp_path / f"gt_{suffix}.json"
        doc, _, _ = _judge(capsys, output, *args, f"stage={stage}")
        doc["meta"]["format"]["version"] = 2
        doc["meta"]["from_the_future"] = True
        text = json.dumps(doc)
        output.write_text(text)
        with pytest.raises(InputError, match=rf"gt_{suffix}\.json: field 'meta.format.version': version 2 of "
                                             rf"m3bench\.{suffix} is not one this build reads \(it reads 1\)"):
            run(compose_judge("judges=scripted", "cache_dir=null", *args, f"stage={stage}"))
        assert output.read_text() == text


def _checks_folder(folder: Path) -> tuple[Path, Path]:
    """Three tasks: t1's and t2's checks import a helper (which imports another), t3's imports none."""
    folder.mkdir()
    (folder / "checks").mkdir()
    (folder / "checks" / "_common.py").write_text("from _deep import VERDICT\n\ndef verdict():\n    return VERDICT\n")
    (folder / "checks" / "_deep.py").write_text("VERDICT = 1\n")
    for tid in ("t1", "t2"):
        (folder / "checks" / f"{tid}.py").write_text("from _common import verdict\n\n"
                                                     "def check(trajectory, workspace, tool_log):\n"
                                                     "    return [1, verdict()]\n")
    (folder / "checks" / "t3.py").write_text("def check(trajectory, workspace, tool_log):\n    return [1]\n")
    write_json(folder / "tasks.json", [{"id": t, "question": "q", "type": "demo", "check": f"checks/{t}.py"}
                                       for t in ("t1", "t2", "t3")])
    predictions = folder / "m_test_mcp_fuzzy.json"
    write_json(predictions, [{"id": t, "steps": [], "final_reply": "done"} for t in ("t1", "t2", "t3")])
    return folder / "tasks.json", predictions


def _verifier_args(tmp_path: Path, tasks: Path, predictions: Path) -> list[str]:
    return ["data=tobench_demo", f"data.tasks={tasks}", f"predictions={predictions}", "evaluators=[verifiers]",
            f"workspace_dir={tmp_path / 'ws'}", f"tool_log_dir={tmp_path / 'logs'}",
            "evaluators.verifiers.bubblewrap=false"]


def test_an_edited_helper_judges_again_the_tasks_importing_it_and_a_rerun_equals_a_fresh_run(
        tmp_path: Path, capsys, caplog) -> None:
    """A helper two checks import (through another helper) is edited so that every check importing it fails:
    the rerun judges exactly those two tasks again, and its file equals a fresh run's (the code before
    judged none again and kept accuracy 1.0 where a fresh run gives 1/3)."""
    tasks, predictions = _checks_folder(tmp_path / "data")
    output = predictions.with_name("m_test_mcp_fuzzy_checks.json")
    first, line, _ = _judge(capsys, output, *_verifier_args(tmp_path, tasks, predictions))
    assert "(3 now," in line and first["aggregate"]["check_accuracy"] == 1.0
    (tmp_path / "data" / "checks" / "_deep.py").write_text("VERDICT = 0\n")
    caplog.clear()
    second, line, _ = _judge(capsys, output, *_verifier_args(tmp_path, tasks, predictions))
    assert "(2 now," in line and "changed since" in caplog.text and "judged again: t1, t2" in caplog.text
    assert second["aggregate"]["check_accuracy"] == pytest.approx(1 / 3)
    fresh_data = Path(shutil.copytree(tmp_path / "data", tmp_path / "fresh",
                                      ignore=shutil.ignore_patterns("*_checks.json")))
    fresh, line, _ = _judge(capsys, fresh_data / output.name,
                            *_verifier_args(tmp_path, fresh_data / "tasks.json", fresh_data / predictions.name))
    assert "(3 now," in line
    assert (second["per_id"], second["aggregate"]) == (fresh["per_id"], fresh["aggregate"])
    _, line, _ = _judge(capsys, output, *_verifier_args(tmp_path, tasks, predictions))
    assert "(0 now," in line


def test_a_check_loading_a_module_at_run_time_is_named_as_such(tmp_path: Path, capsys, caplog) -> None:
    """A check that loads its helper through importlib: a warning names it and says that what it loads so is
    not in its verdict's input key (a change to that helper judges nothing again: the documented limit)."""
    tasks, predictions = _checks_folder(tmp_path / "data")
    (tmp_path / "data" / "checks" / "t3.py").write_text(
        "import importlib\n\ndef check(trajectory, workspace, tool_log):\n"
        "    return [importlib.import_module('_deep').VERDICT]\n")
    output = predictions.with_name("m_test_mcp_fuzzy_checks.json")
    _judge(capsys, output, *_verifier_args(tmp_path, tasks, predictions))
    assert f"{tmp_path / 'data' / 'checks' / 't3.py'} loads modules at run time (import_module (line 4))" in caplog.text


def test_a_changed_task_image_judges_again_the_tasks_showing_it(tmp_path: Path, capsys) -> None:
    """The judges are shown a task's image: a change to its content judges again the tasks showing it, and
    only those (the code before keyed its path alone)."""
    shutil.copytree(DEMO / "images", tmp_path / "images")
    gt = Path(shutil.copy(DEMO / "reference.json", tmp_path / "gt.json"))
    preds = Path(shutil.copy(DEMO / "reference.json", tmp_path / "m_test_mcp_fuzzy.json"))
    output = tmp_path / "m_test_mcp_fuzzy_taskcompletion.json"
    args = ["data=rollout_demo", f"data.gt={gt}", f"predictions={preds}", "stage=judge"]
    _, line, _ = _judge(capsys, output, *args)
    assert "(4 now," in line
    shown = {r["id"] for r in json.loads(gt.read_text()) if r.get("image") == "images/demo_prices.png"}
    assert shown
    (tmp_path / "images" / "demo_prices.png").write_bytes((DEMO / "images" / "demo_shapes.png").read_bytes())
    _, line, _ = _judge(capsys, output, *args)
    assert f"({len(shown)} now," in line


def test_a_fifo_in_a_workspace_is_keyed_never_opened(tmp_path: Path) -> None:
    """A FIFO the agent left in a task's workspace: the judge app keys the workspace and checks the task
    without opening it, and ends (the code before waited forever for a writer, reading it for the key)."""
    import subprocess
    import sys

    tasks, predictions = _checks_folder(tmp_path / "data")
    (tmp_path / "ws" / "t1").mkdir(parents=True)
    os.mkfifo(tmp_path / "ws" / "t1" / "pipe")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "judge.py"), "judges=scripted", "cache_dir=null",
                           f"run_dir={tmp_path / 'run'}", *_verifier_args(tmp_path, tasks, predictions)],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    entry = json.loads(predictions.with_name("m_test_mcp_fuzzy_checks.json").read_text())["per_id"]["t1"]
    assert entry["passed"] is True and "pipe (a FIFO)" in entry["reason"]
    assert "verifiers: task t1: not in the workspace's copy: pipe (a FIFO)" in done.stdout + done.stderr


def test_a_new_version_of_a_prompt_judges_again_every_task_it_asked(tmp_path: Path, capsys, monkeypatch) -> None:
    """Answer equivalence's prompts are in its input keys: a new version of the published prompt judges every
    task again (the code before keyed only the prompts an evaluator records in its meta)."""
    from engine.evaluators import answer_equivalence as ae

    tasks = Path(shutil.copy(DEMO / "mcpverse" / "tasks.json", tmp_path / "tasks.json"))
    shutil.copy(DEMO / "mcpverse" / "reference.json", tmp_path / "m_test_mcp_fuzzy.json")
    output = tmp_path / "m_test_mcp_fuzzy_answers.json"
    args = ["data=mcpverse", f"data.tasks={tasks}", f"predictions={tmp_path / 'm_test_mcp_fuzzy.json'}",
            "evaluators=[answer_equivalence]", f"workspace_dir={tmp_path / 'ws'}"]
    first, _, _ = _judge(capsys, output, *args)
    newer = dataclasses.replace(ae.PUBLISHED_PROMPT, version="ae-published-2")
    monkeypatch.setattr(ae, "PUBLISHED_PROMPT", newer)
    monkeypatch.setattr(ae.AnswerEquivalence, "card", dataclasses.replace(ae.AnswerEquivalence.card,
                                                                           asked=(ae.PROMPT, newer)))
    _, line, _ = _judge(capsys, output, *args)
    assert f"({len(first['per_id'])} now," in line


PROMPTS = {("task_completion", "tc-1"): "70594e9f1688702a", ("information_grounding", "ig-1"): "54a80ffd8e68aaab",
           ("call_outcome", "call-1"): "e56bad328622dd54", ("answer_equivalence", "ae-1"): "7ae2377b1affad97",
           ("answer_equivalence", "ae-published-1"): "8a200db2bb026f37",
           ("vtb_rubric", "vtb-rubric-2"): "d8c74d1f237ec11d"}
"""Each built-in prompt's version -> the digest of its text (system and user template)."""


def test_every_prompt_text_is_pinned_to_its_version() -> None:
    """The input keys and the reply cache know a prompt by its version: a text edited under the same version
    would keep stale verdicts and replies. Edit a prompt, give it a new version, then pin that here."""
    from engine.contract import digest
    from engine.evaluators import evaluators

    found = {(r.purpose, r.version): digest([r.system, r.user])[:16] for e in evaluators()
             for r in (*e.card.rubrics, *e.card.asked)}
    assert found == PROMPTS
