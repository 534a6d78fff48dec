"""Call outcome rules on error shapes recorded from real MCP servers (the shipped ones and a strict test
server speaking the TypeScript SDK's -32602 errors and in-band 404s) through the real host and tool
runner; the illegal calling format from a real rollout and from the published dialogue shape; call outcomes
in the judge app with a loopback judge for what no rule settles."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from rollout_helpers import (
    HERE,
    compose,
    compose_judge,
    local_overrides,
    plan_policy,
    plan_tasks,
    predictions_of,
    write_json,
)

from engine.contract import read_trajectories
from engine.evaluators.call_outcomes import read_callanalysis
from engine.judging import OUTCOME, decide, illegal_format
from rollout.judges.catalogue import load_catalogue
from rollout.judges.cli import judges_of
from rollout.judges.run import run as run_judge
from rollout.mcp.config import read_servers_config
from rollout.mcp.host import MCPHost
from rollout.models.loopback import message_texts
from rollout.record import RolloutCache
from rollout.runner import run as run_rollout
from rollout.toolrunner import ToolRunner
from rollout.workspace import Workspace

CROP = {"x1": 0, "y1": 0, "x2": 4, "y2": 4}
SETTLED_BY_TEXT = {"unknown-tool-text", "invalid-arguments-text", "not-found-text", "no-error"}
# name, arguments, (label, rule) with the catalogue; without it the same, except where noted
CASES = [
    ("math/mean", {"numbers": [1, 2]}, ("success", "no-error")),
    ("math/nope", {}, ("unknown_tool", "catalogue")),                         # the server: "Unknown tool: nope"
    ("nosrv/x", {}, ("unknown_tool", "catalogue")),                           # the host: "unknown MCP server"
    ("math/mean", {}, ("invalid_arguments", "invalid-arguments-text")),        # pydantic: Field required
    ("math/mean", {"numbers": "abc"}, ("invalid_arguments", "invalid-arguments-text")),
    ("math/mean", [1, 2], ("invalid_arguments", "invalid-arguments-text")),    # not an object: the client refuses
    ("images/image_info", {"path": "x.png"}, ("invalid_arguments", "invalid-arguments-text")),
    ("images/crop", {"input_path": "media/missing.png", **CROP}, ("resource_not_found", "not-found-text")),
    ("excel/list_worksheets", {"filepath": "missing.xlsx"}, ("resource_not_found", "not-found-text")),
    ("images/crop", {"input_path": "../outside.png", **CROP}, ("invalid_arguments", "invalid-arguments-text")),
    ("math/mean", {"numbers": []}, None),                                     # "need at least 1 number": a judge's call
    ("math/evaluate", {"expression": "1/0"}, None),                           # division by zero: a judge's call
    ("strict/lookup", {"record": "alpha"}, ("success", "no-error")),
    ("strict/lookup", {"record": "zeta"}, ("resource_not_found", "not-found-text")),   # in-band {"error": "404 ..."}
    ("strict/lookup", {"name": 3}, ("invalid_arguments", "invalid-arguments-text")),   # -32602 Invalid arguments
    ("strict/nope", {}, ("unknown_tool", "catalogue")),                       # -32602 Tool nope not found
    ("strict/convert", {"amount": "ten"}, ("invalid_arguments", "schema")),   # a generic error; the schema knows
]
WITHOUT_CATALOGUE = {1: ("unknown_tool", "unknown-tool-text"), 2: ("unknown_tool", "unknown-tool-text"),
                     15: ("unknown_tool", "unknown-tool-text"), 16: None}
REJECTED = [("math/median", {"numbers": [1]}, ("unknown_tool", "unknown-tool-text")),    # not exposed
            ("math/absent", {}, ("unknown_tool", "catalogue"))]                         # unknown to the runner


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, list[dict], list[dict]]:
    """The servers config, and the calls of CASES and REJECTED as recorded through the real host and runner."""
    tmp = tmp_path_factory.mktemp("outcomes")
    modules = {"images": "rollout.servers.images", "math": "rollout.servers.mathstats",
               "excel": "rollout.servers.spreadsheet"}
    servers = {name: {"command": "python", "python": "host", "args": ["-m", module]}
               for name, module in modules.items()}
    servers["strict"] = {"command": "python", "python": "host", "args": [str(HERE / "strict_server.py")]}
    config = write_json(tmp / "servers.json", {"servers": servers})

    async def record() -> tuple[list[dict], list[dict]]:
        ws = Workspace.fresh(tmp / "ws", "task")
        async with MCPHost(read_servers_config(config), log_dir=tmp / "server_logs") as host:
            outcomes = await asyncio.gather(*(host.call(name, args, ws.root) for name, args, _ in CASES))
            runner = ToolRunner(host, RolloutCache(tmp / "cache", "live"), host.catalogue())
            exposed = {t.name for t in host.catalogue()} - {"math/median"}
            rejected = await runner.run_step([{"name": n, "arguments": a} for n, a, _ in REJECTED], exposed, ws, 1)
        calls = [{"name": n, "arguments": a, "result": o.text, "is_error": o.is_error}
                 for (n, a, _), o in zip(CASES, outcomes)]
        return calls, [r.to_output() for r in rejected]

    calls, rejected = asyncio.run(record())
    return config, calls, rejected


def _pair(decision) -> tuple[str, str] | None:
    return decision and (decision.label, decision.rule)


@pytest.mark.slow
def test_rules_on_recorded_shapes(recorded) -> None:
    config, calls, rejected = recorded
    catalogue = asyncio.run(load_catalogue(config))
    assert "strict/convert" in catalogue.tools and catalogue.unavailable == frozenset()
    assert "-32602" in calls[14]["result"] and "-32602" in calls[15]["result"] and calls[13]["is_error"] is False
    for i, (call, (_, _, expected)) in enumerate(zip(calls, CASES)):
        assert _pair(decide(call, catalogue)) == expected, (i, call)
        without = WITHOUT_CATALOGUE.get(i, expected)
        assert _pair(decide(call, None)) == without, (i, call)
        published = {k: v for k, v in call.items() if k != "is_error"}  # the published files have no flag
        assert _pair(decide(published, None)) == without, (i, published)
    for call, (_, _, expected) in zip(rejected, REJECTED):
        assert _pair(decide(call, catalogue)) == expected, call
        assert _pair(decide(call, None))[0] == "unknown_tool"


def test_shapes_the_published_files_hold() -> None:
    shapes = {"[Tool error] Invalid arguments": "invalid_arguments", "HTTP 404: Not Found": "resource_not_found",
              "Error: HTTP 400 Bad Request": "invalid_arguments", '{"items": [], "total": 0}': "success",
              "Error: MCP error -32602: Tool search_flights not found": "unknown_tool",
              '{"error": "No such file or directory: a.png"}': "resource_not_found"}
    for text, label in shapes.items():
        assert _pair(decide({"name": "s/t", "arguments": {}, "result": text}, None))[0] == label, text
    for text in ("No results found for this query.", "The request failed upstream.", ""):
        assert decide({"name": "s/t", "arguments": {}, "result": text}, None) is None, text


class _GarbledOnce:
    """Prose instead of tool-call JSON in task t1's first PROCESS reply; the plan otherwise."""

    def __init__(self, base) -> None:
        self.base = base

    def __call__(self, body: dict) -> str:
        texts = message_texts(body)
        if "## PROCESS (step 1" in texts[-1][1] and "Task t1:" in texts[1][1]:
            return "Sure! I will compute the mean now."
        return self.base(body)


@pytest.mark.slow
def test_illegal_format_of_a_real_rollout_and_the_published_shape(tmp_path, chat_server, servers_config) -> None:
    step = [[{"name": "math/mean", "arguments": {"numbers": [1, 3]}}]]
    tasks_file, reference = plan_tasks(tmp_path, {"t1": step, "t2": step}, image=False)
    server = chat_server(_GarbledOnce(plan_policy(reference)))
    assert run_rollout(compose(*local_overrides(server, tasks_file, tmp_path, servers_config("math"),
                                                "prepare=false"))) == 0
    records = json.loads(predictions_of(tmp_path).read_text())
    published = {"id": "p1", "steps": [], "dialogue": [{"role": "assistant", "work": {"tool_calls": []}},
                                                        {"role": "assistant", "work": {"tool_calls": []}}]}
    fine = {"id": "p2", "steps": [], "dialogue": [{"role": "assistant", "work": {"tool_calls": [{"name": "a/b"}]}}]}
    path = write_json(tmp_path / "mixed.json", [*records, published, fine])
    tasks = read_trajectories(path).tasks
    illegal = {tid: reason for tid, t in tasks.items() if (reason := illegal_format(t.raw))}
    assert set(illegal) == {"t1", "p1"} and "PROCESS reply" in illegal["t1"] and "work.tool_calls" in illegal["p1"]
    labels = [(tid, decide(call, None).label) for tid, t in tasks.items() for step in t.raw["steps"]
              for call in step["calls"]]
    assert labels == [("t1", "success"), ("t2", "success")]


@pytest.mark.slow
def test_calls_stage_asks_the_judge_only_what_no_rule_settles(recorded, tmp_path, chat_server) -> None:
    config, calls, rejected = recorded
    replies = {"math/mean": "2", "math/evaluate": "I think 2."}
    server = chat_server(lambda body: replies[json.loads(message_texts(body)[-1][1])["name"]]
                         if message_texts(body)[0][1] == OUTCOME.system else "?")
    preds = write_json(tmp_path / "m_test_mcp_fuzzy.json", [
        {"id": "a", "steps": [{"step": 1, "calls": calls[:9]}, {"step": 2, "calls": calls[9:]}]},
        {"id": "b", "steps": [{"step": 1, "calls": rejected}],
         "dialogue": [{"role": "assistant", "work": {"tool_calls": []}}]}])
    cfg = compose_judge(f"predictions={preds}", "stage=calls", f"evaluators.call_outcomes.catalogue={config}",
                        f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}",
                        "evaluators.call_outcomes.judge=loop")
    cfg.judges = judges_of({"max_requests": 4, "pool": {"loop": {
        "provider": "openai", "api_name": "loop", "base_url": server.base_url, "api_key_env": None, "params": {},
        "timeout": 10, "max_retries": 1, "backoff": {"initial": 0.01, "max": 0.02}}}})
    assert run_judge(cfg) == 0
    assert len(server.requests) == 2  # the two calls no rule settles
    document = json.loads((tmp_path / "m_test_mcp_fuzzy_callanalysis.json").read_text())
    expected = {"illegal_calling": 1, "unknown_tool": 5, "invalid_arguments": 9, "resource_not_found": 3,
                "success": 2, "undecided": 0}
    assert {k: document[k] for k in expected} == expected
    assert document["total_calls"] == len(CASES) + len(REJECTED) and document["num_samples"] == 2
    assert document["decided_by"] == {"rule": 17, "judge": 2, "undecided": 0}
    assert document["rates"]["invalid_arguments"] == 9 / 19 and document["rates"]["illegal_calling"] == 0.5
    by = {(c["id"], c["step"], c["call"]): c["by"] for c in document["calls"]}
    assert by["a", 1, 1] == "judge:loop" and by["a", 1, 7] == "rule:schema"
    assert by["b", 0, 0] == "rule:unknown-tool-text"
    assert read_callanalysis(tmp_path / "m_test_mcp_fuzzy_callanalysis.json").per_id["b"]["illegal_calling"] == 1
    assert run_judge(cfg) == 0 and len(server.requests) == 2  # a rerun reads the judge's replies from the cache


@pytest.mark.slow
def test_calls_never_made_are_illegal_format_calls_never_asked_about(tmp_path, chat_server) -> None:
    """Rules first: each call the rollout never made (``"made": false``, or an earlier record's not-made
    result) is an illegal-format call of its own, never sent to the judge and never "invalid arguments";
    the PROCESS reply that held them does not count its sample once more."""
    server = chat_server(lambda body: "4")
    text = "Error: Invalid arguments: tool_calls[1].arguments is not a JSON object (the call was not made)"
    unmade = {"name": "math/mean", "arguments": "{numbers: [1", "result": text, "is_error": True}
    reply = json.dumps({"tool_calls": [{"name": "math/mean", "arguments": {"numbers": [1, 3]}},
                                       {"name": "math/mean", "arguments": "{numbers: [1"},
                                       {"name": "math/mean", "arguments": "{numbers: [1"}]})
    preds = write_json(tmp_path / "m_test_mcp_fuzzy.json", [
        {"id": "u", "steps": [{"step": 1, "calls": [
            {"name": "math/mean", "arguments": {"numbers": [1, 3]}, "result": "2.0", "is_error": False},
            {**unmade, "made": False}, unmade]}], "illegal_calls": 2,
         "dialogue": [{"role": "assistant", "phase": "process", "content": reply}]},
        {"id": "v", "steps": [{"step": 1, "calls": [{"name": "math/mean", "arguments": {}, "result": "It failed."}]}]}])
    cfg = compose_judge(f"predictions={preds}", "stage=calls", f"cache_dir={tmp_path / 'cache'}",
                        f"run_dir={tmp_path / 'run'}", "evaluators.call_outcomes.judge=loop")
    cfg.judges = judges_of({"max_requests": 4, "pool": {"loop": {
        "provider": "openai", "api_name": "loop", "base_url": server.base_url, "api_key_env": None, "params": {},
        "timeout": 10, "max_retries": 1, "backoff": {"initial": 0.01, "max": 0.02}}}})
    assert run_judge(cfg) == 0
    assert len(server.requests) == 1  # task v's call alone
    document = json.loads((tmp_path / "m_test_mcp_fuzzy_callanalysis.json").read_text())
    assert {k: document[k] for k in ("illegal_calling", "unknown_tool", "invalid_arguments", "success")} == {
        "illegal_calling": 2, "unknown_tool": 0, "invalid_arguments": 0, "success": 2}
    assert document["illegal_calls"] == 2 and document["illegal"] == {} and document["total_calls"] == 4
    assert [(c["call"], c["label"], c["by"]) for c in document["calls"] if c["id"] == "u"][1:] == [
        (1, "illegal_calling", "rule:not-made"), (2, "illegal_calling", "rule:not-made")]
    assert read_callanalysis(tmp_path / "m_test_mcp_fuzzy_callanalysis.json").per_id["u"]["illegal_calling"] == 2
    assert run_judge(cfg) == 0 and len(server.requests) == 1  # the file resumes: its labels are read back
