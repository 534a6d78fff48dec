"""Every verdict the judge app resumes is keyed by what it judged (rollout.judges.inputs.input_key): judge,
change one task's input (its task record, a file it names, its reference, its prediction, its workspace)
or a setting, judge again in the same folder: that task is judged again, the others are kept. A file of
an earlier build without keys keeps its verdicts; a file of a newer format version is refused, never
rewritten. Each run is the judge app's, with the offline scripted judges and no reply cache, so the
judges' usage counts exactly the questions each run asked."""

from __future__ import annotations

import json
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
