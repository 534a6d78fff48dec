"""Each evaluator file the project writes records its format (meta.format), and its reader checks it: a
file without the record (a published shape, a drop-in) reads as version 1, another format's record or a
version the reader does not know is one line naming the file and the field. The tasks file has one
reader (engine.contract.tasks)."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import pytest

from engine.contract import InputError, read_tasks, task_records
from engine.evaluators import evaluator
from engine.evaluators.protocol import ReadSettings
from engine.evaluators.vtb_records import read_task_records
from rollout.judges.inputs import read_task_records as judge_task_records
from rollout.judges.verdicts import earlier_entries, export
from rollout.tasks import read_turns

RUBRIC_ENTRY = {"turns": [{"answered": True, "rubrics": [{"description": "d", "weight": 2, "critical": False,
                                                          "category": ["c"], "met": True,
                                                          "judges": [{"name": "j", "verdict": "Met"}]}]}]}
DOCUMENTS = {  # evaluator -> (suffix, the file its writer makes of one task)
    "m3_judges": ("taskcompletion", lambda: export(evaluator("m3_judges"),
        {"1": {"final": 0.5, "judges": [], "info_grounding": {"final": 0.25, "judges": []}}}, {"num_total": 1})),
    "call_outcomes": ("callanalysis", lambda: export(evaluator("call_outcomes"), {"1": {"illegal": None, "calls": [
        {"id": "1", "step": 0, "call": 0, "label": "success", "by": "rule"}]}}, {})),
    "vtb_rubrics": ("rubrics", lambda: export(evaluator("vtb_rubrics"), {"1": RUBRIC_ENTRY}, {})),
    "answer_equivalence": ("answers", lambda: export(evaluator("answer_equivalence"),
        {"1": {"level": "L1", "score": 1, "judges": {"j": 1}}}, {})),
    "verifiers": ("checks", lambda: export(evaluator("verifiers"),
        {"1": {"check": "c.py", "checks": [1], "passed": True, "error": None}}, {})),
}


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_each_file_records_its_format_and_its_reader_checks_it(tmp_path: Path, name: str) -> None:
    suffix, make = DOCUMENTS[name]
    doc = make()
    assert doc["meta"]["format"] == {"name": f"m3bench.{suffix}", "version": 1}
    path = tmp_path / f"p_{suffix}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    read = partial(evaluator(name).read, settings=ReadSettings())
    assert "1" in read(path).per_id
    del doc["meta"]["format"]  # the published shapes and drop-ins have none: version 1
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert "1" in read(path).per_id
    for record, field, message in (
            ({"name": f"m3bench.{suffix}", "version": 2}, "meta.format.version",
             rf"version 2 of m3bench\.{suffix} is not one this build reads \(it reads 1\): update m3bench"),
            ({"name": f"m3bench.{suffix}", "version": "1"}, "meta.format.version",
             rf"must be an integer \(a version of m3bench\.{suffix}\), got the string '1'"),
            ({"name": f"m3bench.{suffix}", "version": True}, "meta.format.version", "must be an integer"),
            ({"name": "m3bench.other", "version": 1}, "meta.format", "must be"),
            ("m3bench", "meta.format", "must be")):
        doc["meta"]["format"] = record
        path.write_text(json.dumps(doc), encoding="utf-8")
        # the score app's reader and the judge app's resume
        for reader in (read, partial(earlier_entries, evaluator(name))):
            with pytest.raises(InputError, match=rf"p_{suffix}\.json: field '{field}': {message}") as info:
                reader(path)
            assert "\n" not in str(info.value)


def test_each_display_shows_what_its_reader_gives(tmp_path: Path) -> None:
    """Every display gives known blocks for a task of its own file and for the file as a whole."""
    for name, (suffix, make) in DOCUMENTS.items():
        path = tmp_path / f"p_{suffix}.json"
        path.write_text(json.dumps(make()), encoding="utf-8")
        e = evaluator(name)
        values = e.read(path, ReadSettings())
        blocks = e.display({**values.per_id.get("1", {}), **values.detail.get("1", {})}, values.meta)
        assert blocks and all(b["parts"] for b in blocks), name
        assert isinstance(e.display(None, values.meta), list)


def test_the_tasks_file_has_one_reader(tmp_path: Path) -> None:
    listed = tmp_path / "listed.json"
    listed.write_text(json.dumps([{"id": 1, "question": "q1"}, {"task_id": "b", "question": "q2",
                                                                 "turns": [{"prompt": "a"}, {"prompt": "b"}]}]))
    keyed = tmp_path / "keyed.json"
    keyed.write_text(json.dumps({"a": {"question": "q1"}, "b": {"id": "b2", "question": "q2"}}))
    assert list(task_records(listed)) == ["1", "b"] and list(task_records(keyed)) == ["a", "b2"]
    assert [t.id for t in read_tasks(listed)] == ["1", "b"] and list(judge_task_records(keyed)) == ["a", "b2"]
    assert list(read_turns(listed)) == ["b"]
    for root, message in (([{"id": "a", "question": "q"}, {"id": "a", "question": "r"}],
                           "id a: field 'id': the id is given twice (again at #1)"),
                          ([{"question": "q"}], "id #0: field 'id': a task needs an id"),
                          ([3], "id #0: a task must be an object"), ("x", "the root must be")):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(root))
        for reader in (task_records, read_tasks, judge_task_records, read_task_records, read_turns):
            with pytest.raises(InputError, match=re.escape(message)):
                reader(bad)
