"""MCPVerse's published server config (``mcpverse/tool_full.json``) through ``servers.py init --complete``: its
``mcpServers``, ``${MCPVERSE_ROOT}`` paths, ``uv`` forms, remote servers and ``npx``/``uvx`` packages become a
config the reader loads; a ``tasks=mcpverse`` rollout pointed at it starts its servers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from rollout_helpers import HERE, ROOT, compose, predictions_of, write_json

from engine.contract import InputError
from rollout.mcp import published
from rollout.mcp.complete import complete_config
from rollout.mcp.config import read_servers_config
from rollout.runner import run


def _init(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "servers.py"), "init", *args], capture_output=True,
                          check=False, text=True, timeout=120)


def _checkout(root: Path, servers: dict) -> Path:
    """A checkout shaped like MCPVerse's: ``mcpverse/tool_full.json`` and ``mcpverse/servers/<folder>``."""
    folder = root / "mcpverse" / "servers" / "sqlite"
    (folder / "src" / "mcp_server_sqlite").mkdir(parents=True)
    (folder / "pyproject.toml").write_text('[project]\nname = "mcp-server-sqlite"\nversion = "0.6.2"\n'
                                           'dependencies = ["mcp>=1.0.0"]\n[project.scripts]\n'
                                           'mcp-server-sqlite = "mcp_server_sqlite:main"\n'
                                           '[build-system]\nrequires = ["hatchling"]\n'
                                           'build-backend = "hatchling.build"\n')
    (folder / "src" / "mcp_server_sqlite" / "__init__.py").write_text("def main():\n    pass\n")
    return write_json(root / "mcpverse" / "tool_full.json", {"mcpServers": servers})


PUBLISHED = {
    "sqlite": {"command": "uv", "args": ["--directory", "${MCPVERSE_ROOT}/mcpverse/servers/sqlite", "run",
                                         "mcp-server-sqlite", "--db-path", "${MCPVERSE_ROOT}/mcpverse/test_data/x.db"]},
    "arxiv": {"command": "uv", "args": ["tool", "run", "arxiv-mcp-server==0.8.2", "--storage-path",
                                        "${MCPVERSE_ROOT}/mcpverse/results"]},
    "bio": {"command": "uv", "args": ["run", "--with", "biomcp-python==0.7.3", "biomcp", "run"]},
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"],
               "env": {"MEMORY_FILE_PATH": "${MCPVERSE_ROOT}/mcpverse/test_data/memory.jsonl"}},
    "deepwiki": {"command": "npx", "args": ["-y", "mcp-deepwiki@latest"]},
    "weather": {"command": "npx", "args": ["-y", "@smithery/cli@4.11.1", "run", "@turkyden/weather", "--key",
                                           "${SMITHERY_API_KEY}"]},
    "exa": {"type": "http", "url": "https://mcp.exa.ai", "headers": {"X-Trace": "1"}},
    "shuidi": {"url": "https://mcp.shuidi.cn/sse", "prefer_sse": True},
}


def test_mcpverse_config_is_completed_into_one_the_reader_loads(tmp_path: Path, monkeypatch) -> None:
    config = _checkout(tmp_path, PUBLISHED)
    done = _init(str(tmp_path / "mcpverse" / "servers"), "--complete", str(config), "--offline")
    assert done.returncode == 0, done.stdout + done.stderr
    written = json.loads((config.parent / "tool_full.derived.json").read_text())
    assert "mcpServers" not in written and list(written["servers"]) == list(PUBLISHED)
    servers = {n: {k: v for k, v in e.items() if k != "_derived"} for n, e in written["servers"].items()}
    here = str(tmp_path)
    assert servers["sqlite"] == {
        "command": "mcp-server-sqlite", "args": ["--db-path", f"{here}/mcpverse/test_data/x.db"],
        "cwd": f"{here}/mcpverse/servers/sqlite", "install": {"requirements": ["./servers/sqlite"]}}
    assert servers["arxiv"] == {"command": "uvx", "args": ["arxiv-mcp-server==0.8.2", "--storage-path",
                                                           f"{here}/mcpverse/results"],
                                "install": {"requirements": ["arxiv-mcp-server==0.8.2"]}}
    assert servers["bio"] == {"command": "uvx", "args": ["--from", "biomcp-python==0.7.3", "biomcp", "run"],
                              "install": {"requirements": ["biomcp-python==0.7.3"]}}
    assert servers["memory"]["env"] == {"MEMORY_FILE_PATH": f"{here}/mcpverse/test_data/memory.jsonl"}
    assert servers["memory"]["install"] == {"npm": ["@modelcontextprotocol/server-memory@2026.8.31"]}
    assert servers["deepwiki"] == PUBLISHED["deepwiki"]  # @latest and --offline: fetched at start, as published
    assert servers["exa"] == {"command": "npx", "args": ["-y", "mcp-remote", "https://mcp.exa.ai", "--header",
                                                         "X-Trace:1"]}
    assert servers["shuidi"]["args"] == ["-y", "mcp-remote", "https://mcp.shuidi.cn/sse", "--transport", "sse-only"]
    assert "${MCPVERSE_ROOT} -> " + here + " (as its runner sets it)" in written["servers"]["sqlite"]["_derived"]
    assert "uv --directory D run -> uv run --directory D" in written["servers"]["sqlite"]["_derived"]
    assert "a remote server (https://mcp.exa.ai): npx mcp-remote" in written["servers"]["exa"]["_derived"]
    assert "8 of 8 entries covered (1 from their folders, 0 single files, 0 python -m of a distribution, " \
           "7 uvx/npx" in done.stdout

    monkeypatch.delenv("SMITHERY_API_KEY", raising=False)
    specs = {s.name: s for s in read_servers_config(config.parent / "tool_full.derived.json", tmp_path / "envs")}
    assert specs["weather"].problem == \
        "environment variable SMITHERY_API_KEY is not set (field servers.weather.args)"
    monkeypatch.setenv("SMITHERY_API_KEY", "placeholder-key")
    specs = {s.name: s for s in read_servers_config(config.parent / "tool_full.derived.json", tmp_path / "envs")}
    assert specs["weather"].args[-1] == "placeholder-key" and "placeholder-key" in specs["weather"].secrets
    assert "not installed" in specs["weather"].problem


class _Registry(BaseHTTPRequestHandler):
    """The npm registry's ``/<name>/latest`` for one package; 404 for the rest."""

    def do_GET(self) -> None:
        found = self.path == "/@scope%2Fmaps/latest"
        body = json.dumps({"version": "1.4.0"} if found else {"error": "Not found"}).encode()
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


def test_npx_packages_are_pinned_from_the_registry_and_one_it_lacks_is_named(tmp_path: Path, monkeypatch) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(published, "NPM_REGISTRY", f"http://127.0.0.1:{server.server_port}/{{name}}/latest")
    try:
        config = _checkout(tmp_path, {"maps": {"command": "npx", "args": ["-y", "@scope/maps@latest"]},
                                      "gone": {"command": "npx", "args": ["-y", "gone-mcp"]}})
        completed, how = complete_config(tmp_path / "mcpverse" / "servers", config)
    finally:
        server.shutdown()
    assert completed["servers"]["maps"]["install"] == {"npm": ["@scope/maps@1.4.0"]}
    assert "@scope/maps@1.4.0, the npm registry's latest" in completed["servers"]["maps"]["_derived"]
    gone = next(c for c in how if c.name == "gone")
    assert "install" not in completed["servers"]["gone"] and gone.missing == [
        "install: the npm registry has no gone-mcp (404), so npx cannot fetch it either"]


@pytest.mark.parametrize(("servers", "message"), [
    ([], "field 'mcpServers': expected an object with a 'mcpServers' object"),
    ({"exa": {"type": "http", "url": "ftp://mcp.exa.ai"}}, "field 'mcpServers.exa.url': must be an http(s) URL"),
    ({"exa": {"url": "https://mcp.exa.ai", "headers": {"X": 1}}}, "field 'mcpServers.exa.headers': must be"),
])
def test_a_bad_mcpverse_config_is_refused_in_one_line(tmp_path: Path, servers, message: str) -> None:
    config = write_json(tmp_path / "mcpverse" / "tool_full.json", {"mcpServers": servers})
    (tmp_path / "mcpverse" / "servers").mkdir()
    with pytest.raises(InputError) as caught:
        complete_config(tmp_path / "mcpverse" / "servers", config, registry=False)
    assert str(config) in str(caught.value) and message in str(caught.value)
    done = _init(str(tmp_path / "mcpverse" / "servers"), "--complete", str(config), "--offline")
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1, done.stderr


TASKS = ("question_id,question,MCP,tool,complexity,answer,eval_method,time-sensitive,get_answer_id\n"
         "Q1,Count once with the label a.,counter,tick,L1,a #1,llm_as_a_judge,No,\n")


def test_an_mcpverse_rollout_runs_against_the_servers_of_its_derived_config(tmp_path: Path) -> None:
    # a local stdio server stands in for MCPVerse's: an entry its completion keeps as written
    shutil.copy(HERE / "counter_server.py", tmp_path / "counter_server.py")
    config = _checkout(tmp_path, {"counter": {"command": sys.executable,
                                              "args": ["${MCPVERSE_ROOT}/counter_server.py"]}})
    (tmp_path / "mcpverse" / "data").mkdir()
    (tmp_path / "mcpverse" / "data" / "set.csv").write_text(TASKS, encoding="utf-8")
    done = _init(str(tmp_path / "mcpverse" / "servers"), "--complete", str(config), "--offline")
    derived = config.parent / "tool_full.derived.json"
    assert done.returncode == 1 and derived.is_file(), done.stdout + done.stderr  # the stand-in has no install
    plan = write_json(tmp_path / "plan.json", [{
        "id": "Q1", "image": None, "type": "L1", "question": "Count once with the label a.",
        "steps": [{"step": 1, "calls": [{"name": "counter/tick", "arguments": {"label": "a"}}]}],
        "final_reply": "a #1"}])
    results = tmp_path / "results"
    assert compose("tasks=mcpverse", f"tasks.root={tmp_path}").servers == str(ROOT / "rollout" / "servers.json")
    cfg = compose("model=scripted", f"model.script={plan}", "model.name=test-model", "tasks=mcpverse",
                  f"tasks.root={tmp_path}", f"servers={derived}", f"results_dir={results}")
    assert run(cfg) == 0
    (record,) = json.loads(predictions_of(results).read_text())
    (call,) = record["steps"][0]["calls"]
    assert call["name"] == "counter/tick" and not call["is_error"] and "a #1" in call["result"]
