"""The simple evaluator docs/judges.md shows ("A new evaluator: one module and one config entry") is the
whole of one: its module and its config entry, under 60 lines together, judge the demo through the judge app,
their verdicts kept by the verdict store and read back by the score side's default reader."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from rollout_helpers import ROOT, compose_judge

from engine.contract import read_trajectories
from engine.evaluators.protocol import ReadSettings

SECTION = "### A new evaluator: one module and one config entry"


def doc_example() -> tuple[str, str]:
    """(the module, the YAML entry) of the section's fenced blocks, as the page gives them."""
    text = (ROOT / "docs" / "judges.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[:section.index("\n### ", len(SECTION))]
    blocks = dict(re.findall(r"```(python|yaml)\n(.*?)```", section, re.S))
    return blocks["python"], blocks["yaml"]


@pytest.fixture
def concise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The page's module registered in engine.evaluators for one test (a folder added to its path)."""
    import engine.evaluators as package

    module, _ = doc_example()
    folder = tmp_path / "more_evaluators"
    folder.mkdir()
    (folder / "concise.py").write_text(module, encoding="utf-8")
    caches = (package.names, package.evaluator, package.evaluators)
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    for cached in caches:
        cached.cache_clear()
    yield package.evaluator("concise")
    monkeypatch.undo()
    sys.modules.pop("engine.evaluators.concise", None)
    for cached in caches:
        cached.cache_clear()


def test_the_documented_evaluator_is_under_60_lines() -> None:
    module, entry = doc_example()
    assert len(module.splitlines()) + len(entry.splitlines()) < 60


def test_the_documented_evaluator_judges_the_demo_and_resumes(tmp_path: Path, concise, capsys) -> None:
    from rollout.judges.run import run

    _, entry = doc_example()
    predictions = tmp_path / "m_test_mcp_fuzzy.json"
    preds = json.loads((ROOT / "rollout" / "demo" / "reference.json").read_text())
    preds[0]["final_reply"] = "word " * 60
    predictions.write_text(json.dumps(preds))
    cfg = compose_judge("judges=scripted", "data=rollout_demo", f"predictions={predictions}",
                        f"results_dir={tmp_path}", f"cache_dir={tmp_path / 'cache'}")
    cfg = replace(cfg, evaluators=yaml.safe_load(entry))
    assert run(cfg) == 0
    written = json.loads((tmp_path / "m_test_mcp_fuzzy_concise.json").read_text())
    ids = list(read_trajectories(predictions).tasks)
    assert list(written["per_id"]) == ids and written["meta"]["format"] == {"name": "m3bench.concise", "version": 1}
    assert written["meta"]["max_words"] == 50 and set(written["meta"]["input_keys"]) == set(ids)
    assert written["per_id"][ids[0]] == {"concise": 0.0, "explanation": "60 word(s) of 50"}
    values = concise.read(tmp_path / "m_test_mcp_fuzzy_concise.json", ReadSettings())
    assert values.per_id == {i: {"concise": e["concise"]} for i, e in written["per_id"].items()}
    assert f"concise: {len(ids)} of {len(ids)} task(s) judged ({len(ids)} now" in capsys.readouterr().out
    assert run(cfg) == 0  # resumed: nothing to judge again
    assert "(0 now, 0 failed" in capsys.readouterr().out
    assert run(replace(cfg, evaluators={"concise": {"max_words": 100}})) == 0  # another setting: judged again
    assert json.loads((tmp_path / "m_test_mcp_fuzzy_concise.json").read_text())["per_id"][ids[0]]["concise"] == 1.0
