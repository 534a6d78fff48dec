"""The judge app's typed settings: the command line's spellings of a judge added to the pool, of a judge's
setting beneath a null node (its price) and of one task id, and a wrong value of a typed setting refused in one
line naming it, status 2, before any work."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rollout_helpers import ROOT, compose_judge
from script_runs import root_logger_kept

from rollout.judges.cli import main, spelt_out


@pytest.fixture(autouse=True)
def _root_logger() -> Iterator[None]:
    """The root logger as it was after each test (an app run in-process here adds Hydra's file handler)."""
    with root_logger_kept():
        yield


def test_a_judge_added_on_the_command_line_joins_the_typed_pool() -> None:
    cfg = compose_judge("~judges.pool.deepseek_chat", "+judges.pool.qwen={provider: openai, api_name: Qwen/Q, "
                        "base_url: 'http://127.0.0.1:8001/v1', api_key_env: null}", "+judges.pool.gpt5_mini.params.x=1",
                        "judges.pool.grok4_fast.price.input=0.5", "ids=demo-0001")
    assert list(cfg.judges.pool) == ["gpt5_mini", "gemini25_flash", "grok4_fast", "qwen"]
    qwen = cfg.judges.pool["qwen"]
    assert (qwen.provider, qwen.api_name, qwen.base_url, qwen.api_key_env) == (
        "openai", "Qwen/Q", "http://127.0.0.1:8001/v1", None)
    assert cfg.judges.pool["gpt5_mini"].params == {"max_output_tokens": 32768, "x": 1}
    assert cfg.judges.pool["grok4_fast"].price is not None and cfg.judges.pool["grok4_fast"].price.input == 0.5
    assert cfg.ids == ["demo-0001"]
    assert spelt_out(["judges.pool.a.timeout=3", "~judges.pool.a", "judges.max_requests=2"]) == [
        "+judges.pool={a: {timeout: 3}}", "~judges.pool.a", "judges.max_requests=2"]


@pytest.mark.parametrize(("setting", "line"), [
    ("judges.max_requests=0", "error: judges.max_requests=0: must be an integer >= 1"),
    ("judges.pool.scripted_a.price.input=-1",
     "error: judges.pool.scripted_a.price.input=-1.0: must be a number >= 0 (USD per million tokens) or null"),
    ("judges.pool.scripted_b.timeout=0", "error: judges.pool.scripted_b.timeout=0.0: must be a number of seconds > 0"),
    ("stage=nope", "error: stage=nope: must be one of both, judge, calls, m3_judges, call_outcomes (an evaluator's "
                   "name: one of evaluators)"),
    ("shard=3/3", "error: shard=3/3: must be i/n with 0 <= i < n (e.g. 0/3)"),
    ("ids=[[a]]", "error: ids=[[a]]: must be a task id or a list of task ids (text or integers); [a] is not one"),
])
def test_a_wrong_typed_setting_is_one_line_naming_it(tmp_path: Path, capsys, setting: str, line: str) -> None:
    predictions = tmp_path / "m_test_mcp_fuzzy.json"
    predictions.write_bytes((ROOT / "rollout" / "demo" / "reference.json").read_bytes())
    with pytest.raises(SystemExit) as stop:
        main(["judges=scripted", "data=rollout_demo", f"predictions={predictions}", f"results_dir={tmp_path / 'r'}",
              setting])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines() == [line]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m_test_mcp_fuzzy.json"]
