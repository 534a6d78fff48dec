"""Real third-party MCP servers, installed from PyPI and npm into their own environments by
scripts/servers.py: mcp 1.x servers beside the host's mcp 2.x, paths in the task workspace, files
into the record cache and back on replay, the environment policy, failed starts and frozen servers."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from openpyxl import load_workbook
from rollout_helpers import make_image, third_party_config

from rollout.mcp.config import read_servers_config
from rollout.mcp.host import MCPHost
from rollout.record import RolloutCache
from rollout.toolrunner import ToolRunner
from rollout.workspace import Workspace, is_image

pytestmark = pytest.mark.slow  # each test starts servers installed from the package registries


def _server_pids(marker: str) -> list[int]:
    """Processes whose parent is this process and whose command line contains `marker`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and marker in cmdline:
            pids.append(int(entry.name))
    return pids


def test_mcp1_servers_run_beside_the_host(tmp_path, python_servers, caplog):
    specs = read_servers_config(third_party_config(tmp_path / "s.json", python_servers, {"time": None, "excel": None}))
    assert importlib.metadata.version("mcp").startswith("2.")
    for spec in specs:
        python = Path(spec.env_folder) / "venv" / "bin" / "python"
        own = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
        assert own.startswith("1."), (spec.name, own)
        assert spec.command.startswith(str(spec.env_folder)) and not spec.problem

    async def go():
        async with MCPHost(specs, log_dir=tmp_path / "logs") as host:
            assert {t.server for t in host.catalogue()} == {"time", "excel"}
            return await host.call("time/get_current_time", {"timezone": "Etc/UTC"}, tmp_path)

    with caplog.at_level(logging.INFO, logger="rollout.mcp.host"):
        outcome = asyncio.run(go())
    assert not outcome.is_error and json.loads(outcome.text)["timezone"] == "Etc/UTC"
    assert f"uvx -> {specs[0].command} (the environment" in caplog.text  # the launch choice is logged
    assert (tmp_path / "logs" / "time.log").read_text().startswith("=== ")


STEP1 = [{"name": "excel/create_workbook", "arguments": {"filepath": "prices.xlsx"}},
         {"name": "filesystem/write_file", "arguments": {"path": "media/notes.txt", "content": "hello"}},
         {"name": "filesystem/read_media_file", "arguments": {"path": "./media/t1.png"}},
         {"name": "everything/get-tiny-image", "arguments": {}}]


def _step2(outside: Path) -> list[dict]:
    return [{"name": "excel/write_data_to_excel", "arguments": {"filepath": "./prices.xlsx", "sheet_name": "Prices",
                                                                "data": [["Apple", 1.2]]}},
            {"name": "excel/create_workbook", "arguments": {"filepath": str(outside / "cold.xlsx")}}]


def test_workspace_paths_files_and_replay(tmp_path, python_servers, node_servers):
    base, outside = (tmp_path / "workspaces").resolve(), (tmp_path / "elsewhere").resolve()
    outside.mkdir()
    make_image(tmp_path / "t1.png")
    # the config (the servers' working directory) in a folder of its own: "elsewhere" is outside the servers' folder
    config = third_party_config(tmp_path / "config" / "s.json", python_servers, {
        "excel": None, "everything": None,
        "filesystem": {"args": ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", str(base)]}})
    specs = read_servers_config(config)
    ws = Workspace.fresh(base, "t1")
    assert ws.add_input(tmp_path / "t1.png") == "media/t1.png"
    cache = RolloutCache(tmp_path / "cache", "record")
    steps = [STEP1, _step2(outside)]

    async def live():
        async with MCPHost(specs, log_dir=tmp_path / "logs") as host:
            runner = ToolRunner(host, cache, host.catalogue())
            exposed = {t.name for t in host.catalogue()}
            return [await runner.run_step(calls, exposed, ws, n) for n, calls in enumerate(steps, 1)], host.catalogue()

    (first, second), catalogue = asyncio.run(live())
    records = first + second
    assert not any(r.is_error for r in records), [r.result for r in records]
    assert [r.arguments for r in records] == [c["arguments"] for c in STEP1 + steps[1]]  # as the model wrote them
    assert not any(str(ws.root) in r.result for r in records)
    assert first[0].result == "Created workbook at prices.xlsx" and first[0].files == ["prices.xlsx"]
    assert first[1].files == ["media/notes.txt"] and (ws.root / "media" / "notes.txt").read_text() == "hello"
    assert all(len(r.files) == 1 and is_image(r.files[0]) for r in first[2:])  # images for the model's pool
    assert (ws.root / first[2].files[0]).read_bytes() == (tmp_path / "t1.png").read_bytes()
    rows = [list(r) for r in load_workbook(ws.root / "prices.xlsx")["Prices"].iter_rows(values_only=True)]
    assert rows == [["Apple", 1.2]]
    assert second[1].files == ["media/cold.xlsx"] and (ws.root / "media" / "cold.xlsx").is_file()
    assert second[1].result.endswith(f"[{outside / 'cold.xlsx'} copied to media/cold.xlsx]")

    replay_ws = Workspace.fresh(tmp_path / "replay", "t1")
    runner = ToolRunner(None, RolloutCache(tmp_path / "cache", "replay"), catalogue)
    exposed = {t.name for t in catalogue}
    replayed = [asyncio.run(runner.run_step(calls, exposed, replay_ws, n)) for n, calls in enumerate(steps, 1)]
    assert [(r.result, r.is_error, r.files) for r in replayed[0] + replayed[1]] == \
        [(r.result, r.is_error, r.files) for r in records]
    for rel in (f for r in records for f in r.files):
        assert (replay_ws.root / rel).read_bytes() == (ws.root / rel).read_bytes(), rel


def test_without_workspace_paths_the_server_resolves_them_itself(tmp_path, python_servers):
    config = third_party_config(tmp_path / "s.json", python_servers, {"excel": {"paths": "as-written"}})
    ws = Workspace.fresh(tmp_path / "ws", "t")

    async def go():
        async with MCPHost(read_servers_config(config)) as host:
            return await host.call("excel/create_workbook", {"filepath": "prices.xlsx"}, ws.root)

    assert "must be an absolute path" in asyncio.run(go()).text and not (ws.root / "prices.xlsx").exists()


def test_environment_policy_at_a_real_server(tmp_path, node_servers, monkeypatch, caplog):
    monkeypatch.setenv("M3_TEST_SERVICE_KEY", "service-key-0123456789")
    monkeypatch.setenv("M3_TEST_OTHER_KEY", "other-key-0123456789")
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    monkeypatch.delenv("M3_TEST_UNSET", raising=False)
    config = third_party_config(tmp_path / "s.json", node_servers, {"everything": {"env": {
        "SERVICE_KEY": "${M3_TEST_SERVICE_KEY}", "GREETING": "${M3_TEST_UNSET:-hello}"}}})
    spec = read_servers_config(config)[0]

    async def go():
        async with MCPHost([spec], log_dir=tmp_path / "logs") as host:
            return await host.call("everything/get-env", {}, tmp_path / "ws")

    with caplog.at_level(logging.DEBUG):
        outcome = asyncio.run(go())
    env = json.loads(outcome.text)
    assert env["SERVICE_KEY"] == "[redacted]" and "service-key-0123456789" not in outcome.text
    assert env["GREETING"] == "hello" and env["SSL_CERT_FILE"] == str(tmp_path / "ca.pem")
    assert "M3_TEST_OTHER_KEY" not in env and "M3_TEST_SERVICE_KEY" not in env
    assert env["PATH"].startswith(str(Path(spec.env_folder) / "node_modules" / ".bin"))
    logs = caplog.text + (tmp_path / "logs" / "everything.log").read_text()
    assert "service-key-0123456789" not in logs


def test_failed_start_is_reported_with_its_stderr(tmp_path, python_servers, monkeypatch, caplog):
    monkeypatch.delenv("M3_TEST_UNSET_KEY", raising=False)
    (clock,) = read_servers_config(third_party_config(tmp_path / "t.json", python_servers, {"time": None}))
    specs = read_servers_config(third_party_config(tmp_path / "s.json", python_servers, {
        "time": None,
        "broken": {"like": "time", "install": None, "python": f"{clock.env_folder}/venv", "command": "python",
                   "args": ["-m", "no_such_server_module"]},
        "keyless": {"like": "time", "env": {"API_KEY": "${M3_TEST_UNSET_KEY}"}}}))

    async def go():
        async with MCPHost(specs, log_dir=tmp_path / "logs") as host:
            runner = ToolRunner(host, RolloutCache(tmp_path / "cache", "live"), host.catalogue(), host.failures())
            calls = [{"name": n, "arguments": {"timezone": "Etc/UTC"}} for n in
                     ("broken/get_current_time", "keyless/get_current_time", "time/get_current_time")]
            return host.failures(), await runner.run_step(calls, {t.name for t in host.catalogue()},
                                                          Workspace.fresh(tmp_path / "ws", "t"), 1)

    with caplog.at_level(logging.WARNING, logger="rollout.mcp.host"):
        failures, (broken, keyless, fine) = asyncio.run(go())
    assert set(failures) == {"broken", "keyless"}
    assert "stderr:" in failures["broken"] and "No module named no_such_server_module" in failures["broken"]
    assert "MCP server broken failed to start" in caplog.text and "no_such_server_module" in caplog.text
    assert broken.is_error and broken.result.startswith("Error: MCP server 'broken' is not running (")
    assert "No module named no_such_server_module" in broken.result and "\n" not in broken.result
    assert keyless.result == ("Error: MCP server 'keyless' is not running (environment variable M3_TEST_UNSET_KEY "
                              "is not set (field servers.keyless.env))")
    assert not fine.is_error
    log = (tmp_path / "logs" / "broken.log").read_text()
    assert log.startswith("=== ") and "MCP server 'broken'" in log and "no_such_server_module" in log
    assert not (tmp_path / "logs" / "keyless.log").exists()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the server's process through /proc")
def test_a_frozen_server_is_restarted(tmp_path, python_servers):
    spec = read_servers_config(third_party_config(tmp_path / "s.json", python_servers, {"time": None}))[0]
    utc = {"timezone": "Etc/UTC"}

    async def go():
        async with MCPHost([spec], call_timeout=1, ping_timeout=1, max_restarts=1) as host:
            (pid,) = _server_pids(spec.command)
            os.kill(pid, signal.SIGSTOP)  # the process is there but answers nothing
            frozen = await host.call("time/get_current_time", utc)
            after = await host.call("time/get_current_time", utc)
            return pid, frozen, after, _server_pids(spec.command), host.servers[0].restarts

    pid, frozen, after, pids, restarts = asyncio.run(go())
    assert frozen.is_error and "timed out after 1 s" in frozen.text
    assert "stopped answering and is restarted for the next call" in frozen.text
    assert not after.is_error and json.loads(after.text)["timezone"] == "Etc/UTC"
    assert restarts == 1 and pid not in pids and len(pids) == 1


def test_demo_with_a_third_party_server_survives_kill_and_resume(tmp_path, python_servers):
    root = Path(__file__).resolve().parents[2]
    config = third_party_config(tmp_path / "s.json", python_servers, {"excel": None}, shipped=("images", "math"))
    results = tmp_path / "results"
    out = results / "scripted_test_mcp_fuzzy.json"
    command = [sys.executable, str(root / "scripts" / "rollout.py"), "model=scripted", "tasks=demo",
               f"servers={config}", f"results_dir={results}", "concurrency=1"]
    proc = subprocess.Popen([*command, "model.delay=0.4"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    written: list = []
    while len(written) < 1:
        assert proc.poll() is None, proc.stdout.read()
        written = json.loads(out.read_text()) if out.exists() else []
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert len(json.loads(out.read_text())) < 4, "the run must be killed while tasks remain"
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    preds = {p["id"]: p for p in json.loads(out.read_text())}
    reference = {r["id"]: r for r in json.loads((root / "rollout" / "demo" / "reference.json").read_text())}
    assert list(preds) == list(reference)
    for task_id, ref in reference.items():
        made = [c for s in preds[task_id]["steps"] for c in s["calls"]]
        assert [c["arguments"] for c in made] == [c["arguments"] for s in ref["steps"] for c in s["calls"]]
        assert not any(c["is_error"] for c in made), task_id  # no call lost or failed
    sheet = results / "rollout" / "scripted" / "workspace" / "demo-0004" / "prices.xlsx"
    assert next(load_workbook(sheet)["Prices"].iter_rows(values_only=True)) == ("Item", "Price")
    assert preds["demo-0004"]["steps"][0]["calls"][0]["result"] == "Created workbook at prices.xlsx"
