"""Any task id makes file names the file system takes, inside the run's folders: the per-task workspace
and tool log are named by engine.contract.safe_name, while the records keep the real id."""

from __future__ import annotations

import json

from rollout_helpers import compose, local_overrides, plan_policy, plan_tasks, predictions_of, run_dir_of

from engine.contract import SAFE_NAME_CHARS, safe_name
from rollout.runner import run

IDS = ["x" * 300, "../../escaped", "a/../../b", "nul\x00byte", "..", "caf\u00e9/\u2028", "plain"]


def test_names_are_short_distinct_and_stay_in_their_folder() -> None:
    names = [safe_name(i) for i in IDS]
    assert len(set(names)) == len(IDS) and names[-1] == "plain"
    assert all(0 < len(n) <= SAFE_NAME_CHARS and n.isascii() and "/" not in n and "\x00" not in n
               and n.strip(".") == n for n in names)
    assert safe_name("x" * 300).startswith("x" * 80) and safe_name("x" * 300) != safe_name("x" * 301)


def test_every_task_of_hostile_ids_runs(tmp_path, chat_server, servers_config) -> None:
    """A 300-character id (once: OSError, File name too long, and the other tasks never ran) and ids
    with path tricks all run; their files lie in the run's workspace and tool_logs folders."""
    step = [[{"name": "math/mean", "arguments": {"numbers": [1, 2]}}]]
    tasks_file, ref = plan_tasks(tmp_path, {i: step for i in IDS}, image=False)
    server = chat_server(plan_policy(ref))
    results = tmp_path / "results"
    assert run(compose(*local_overrides(server, tasks_file, results, servers_config("math"), "prepare=false"))) == 0
    records = json.loads(predictions_of(results).read_text(encoding="utf-8"))
    assert [r["id"] for r in records] == IDS
    assert all(r["steps"][0]["calls"][0]["result"] and not r["steps"][0]["calls"][0]["is_error"] for r in records)
    run_dir = run_dir_of(results)
    assert sorted(p.name for p in (run_dir / "workspace").iterdir()) == sorted(safe_name(i) for i in IDS)
    logs = sorted(p.name for p in (run_dir / "tool_logs").iterdir())
    assert logs == sorted(f"{safe_name(i)}.json" for i in IDS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "results", "servers.json"]
    pred = predictions_of(results).name
    assert {p.name for p in results.iterdir()} <= {"rollout", pred, f".{pred}.lock"}
    assert not any(p.name in ("escaped", "b") for p in tmp_path.parent.iterdir())
