"""The judge app's published-shape files, byte for byte: each evaluator judges its demo with the scripted pool
and its file is compared with the one the app wrote before the verdict store held every evaluator's file
(tests/rollout/judge_exports/, its run folder and the repository's root written as <run> and <root>)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rollout_helpers import ROOT, compose_judge

from rollout.judges.run import run

EXPORTS = Path(__file__).parent / "judge_exports"
DEMOS = {"rollout_demo": ("reference.json", ("m3_judges", "call_outcomes"), ("taskcompletion", "callanalysis")),
         "vtb_demo": ("vtb_reference.json", ("vtb_rubrics",), ("rubrics",)),
         "mcpverse_demo": ("mcpverse/reference.json", ("answer_equivalence",), ("answers",)),
         "tobench_demo": ("tobench/reference.json", ("verifiers",), ("checks",))}


@pytest.mark.parametrize("data", list(DEMOS))
def test_every_published_file_is_byte_identical_on_the_demo(tmp_path: Path, data: str) -> None:
    reference, names, suffixes = DEMOS[data]
    predictions = tmp_path / "m_test_mcp_fuzzy.json"
    shutil.copy(ROOT / "rollout" / "demo" / reference, predictions)
    (tmp_path / "ws").mkdir()
    (tmp_path / "logs").mkdir()
    cfg = compose_judge(f"evaluators=[{','.join(names)}]", "judges=scripted", f"data={data}",
                        f"results_dir={tmp_path}", f"predictions={predictions}", f"cache_dir={tmp_path / 'cache'}",
                        f"workspace_dir={tmp_path / 'ws'}", f"tool_log_dir={tmp_path / 'logs'}",
                        f"run_dir={tmp_path / 'run'}")
    assert run(cfg) == 0
    for suffix in suffixes:
        written = (tmp_path / f"m_test_mcp_fuzzy_{suffix}.json").read_text(encoding="utf-8")
        written = written.replace(str(tmp_path), "<run>").replace(str(ROOT), "<root>")
        assert written == (EXPORTS / f"{suffix}.json").read_text(encoding="utf-8"), suffix
