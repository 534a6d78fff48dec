"""The servers config beyond the shipped servers: the published shape, environments, the environment
policy, and path arguments between the model, the workspace and the servers."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from rollout_helpers import write_json

from rollout.mcp.config import read_servers_config
from rollout.mcp.environments import STAMP
from rollout.mcp.paths import (
    argument_paths,
    from_workspace,
    named_paths,
    path_key,
    to_workspace,
)
from rollout.mcp.process import redact


def _published_shape(tmp_path: Path) -> Path:
    """A config in the shape of the published mcp_servers.json: comments, autoApprove, empty keys, relative paths."""
    (tmp_path / "servers" / "tool-venv" / "bin").mkdir(parents=True)
    return write_json(tmp_path / "mcp_servers.json", {"servers": {
        "weather": {"_comment": "weather service", "command": "python", "args": ["servers/weather_mcp.py"], "env": {}},
        "own-venv": {"command": "servers/tool-venv/bin/python", "args": ["servers/server.py"], "env": {},
                     "disabled": True},
        "tmdb": {"command": "node", "args": ["servers/tmdb/dist/index.js"], "env": {}, "disabled": False,
                 "autoApprove": []},
        "food": {"command": "python", "args": ["servers/food.py"], "env": {"APP_ID": "", "APP_KEY": ""}},
        "excel": {"command": "uvx", "args": ["excel-mcp-server", "stdio"], "env": {"EXCEL_FILES_PATH": "media"}},
        "papers": {"command": "uv", "args": ["run", "--directory", "servers/paper-search", "-m", "papers.server"],
                   "env": {}},
        "local": {"command": "servers/tool-venv/bin/python", "args": ["-m", "tool"]},
    }})


def test_the_published_shape_loads_unchanged(tmp_path):
    path = _published_shape(tmp_path)
    specs = {s.name: s for s in read_servers_config(path, tmp_path / "envs")}
    assert list(specs) == ["weather", "own-venv", "tmdb", "food", "excel", "papers", "local"]
    assert specs["own-venv"].disabled and not any(s.disabled for n, s in specs.items() if n != "own-venv")
    assert not any(s.problem for s in specs.values())
    weather = specs["weather"]
    on_path = shutil.which("python", path=dict(weather.env)["PATH"]) or shutil.which("python3")
    assert weather.command == on_path and "from PATH" in weather.note  # the published meaning, and said so
    assert weather.cwd == str(tmp_path)  # relative paths of the published config point at its folder
    assert specs["excel"].command == "uvx" and specs["excel"].args == ("excel-mcp-server", "stdio")
    assert dict(specs["food"].env)["APP_KEY"] == "" and dict(specs["excel"].env)["EXCEL_FILES_PATH"] == "media"
    assert specs["local"].command == str(tmp_path / "servers" / "tool-venv" / "bin" / "python")
    assert specs["papers"].paths == "workspace"


def test_environment_policy(tmp_path, monkeypatch):
    for name, value in {"LANG": "C.UTF-8", "LC_TIME": "C", "SSL_CERT_FILE": "/certs/ca.pem", "HTTPS_PROXY": "http://p:3128",
                        "M3_SERVICE_KEY": "key-0123456789", "M3_OTHER_KEY": "other-0123456789",
                        "M3_DECLARED": "declared-0123456789"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("M3_UNSET", raising=False)
    path = write_json(tmp_path / "s.json", {"servers": {
        "a": {"command": "node", "env": {"KEY": "${M3_SERVICE_KEY}", "MODE": "${M3_UNSET:-fast}",
                                         "URL": "https://${M3_UNSET:-example.org}/v1"}, "inherit": ["M3_DECLARED"]},
        "b": {"command": "node", "env": {"KEY": "${M3_UNSET}"}},
        "c": {"command": "node"}}})
    a, b, c = read_servers_config(path, tmp_path / "envs")
    env = dict(a.env)
    assert env["KEY"] == "key-0123456789" and env["MODE"] == "fast" and env["URL"] == "https://example.org/v1"
    assert env["LANG"] == "C.UTF-8" and env["LC_TIME"] == "C" and env["SSL_CERT_FILE"] == "/certs/ca.pem"
    assert env["HTTPS_PROXY"] == "http://p:3128" and env["M3_DECLARED"] == "declared-0123456789"
    assert "M3_OTHER_KEY" not in env and "M3_SERVICE_KEY" not in env  # keys reach only servers that declare them
    assert "M3_DECLARED" not in dict(c.env) and "KEY" not in dict(c.env)
    assert set(a.secrets) == {"key-0123456789", "declared-0123456789"} and "key-0123456789" not in repr(a)
    assert b.problem == "environment variable M3_UNSET is not set (field servers.b.env)" and not c.problem
    assert redact("GET /?api_key=key-0123456789 failed", a.secrets) == "GET /?api_key=[redacted] failed"
    own = write_json(tmp_path / "own.json", {"inherit": ["LANG"], "servers": {"a": {"command": "node"}}})
    assert "SSL_CERT_FILE" not in dict(read_servers_config(own)[0].env)


def test_environments_and_how_commands_launch_from_them(tmp_path):
    install = {"requirements": ["excel-mcp-server==0.1.7"], "npm": ["@scope/tool@1.2.3"]}
    path = write_json(tmp_path / "s.json", {"environments": "envs", "servers": {
        "excel": {"command": "uvx", "args": ["excel-mcp-server@0.1.7", "stdio"], "install": install},
        "tool": {"command": "npx", "args": ["-y", "@scope/tool@1.2.3", "--flag"], "install": install},
        "py": {"command": "python", "args": ["-m", "x"], "install": install},
        "plain": {"command": "helper", "install": install},
        "venv": {"command": "python", "python": "venvs/own"},
        "gone": {"command": "python", "python": "venvs/gone"}}})
    first = {s.name: s for s in read_servers_config(path)}
    folder = Path(first["excel"].env_folder)
    assert folder.parent == tmp_path / "envs" and folder.name.startswith("excel-")
    assert "not installed" in first["excel"].problem and "scripts/servers.py install --config" in first["excel"].problem
    assert first["excel"].command == "uvx"  # nothing installed: run as written
    for server in ("excel", "tool", "py", "plain"):  # a fake environment, laid out as the installer lays it out
        env = Path(first[server].env_folder)
        bins = env / "venv" / "bin"
        bins.mkdir(parents=True)
        (env / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
        for script in ("python", "excel-mcp-server", "helper"):
            (bins / script).write_text("#!/bin/sh\n")
            (bins / script).chmod(0o755)
        package = env / "node_modules" / "@scope" / "tool"
        package.mkdir(parents=True)
        (package / "package.json").write_text(json.dumps({"name": "@scope/tool", "bin": {"tool-mcp": "cli.js"}}))
        (env / "node_modules" / ".bin").mkdir()
        (env / "node_modules" / ".bin" / "tool-mcp").write_text("")
        (env / STAMP).write_text("{}")
    (tmp_path / "venvs" / "own" / "bin").mkdir(parents=True)
    (tmp_path / "venvs" / "own" / "bin" / "python").write_text("")
    specs = {s.name: s for s in read_servers_config(path)}
    assert specs.pop("gone").problem == f"no interpreter at {tmp_path}/venvs/gone (field servers.gone.python)"
    assert not any(s.problem for s in specs.values())
    env = Path(specs["excel"].env_folder)
    assert (specs["excel"].command, specs["excel"].args) == (str(env / "venv" / "bin" / "excel-mcp-server"), ("stdio",))
    tool_env = Path(specs["tool"].env_folder)
    assert specs["tool"].command == str(tool_env / "node_modules" / ".bin" / "tool-mcp")
    assert specs["tool"].args == ("--flag",)
    assert specs["py"].command == str(Path(specs["py"].env_folder) / "venv" / "bin" / "python")
    assert specs["plain"].command.endswith("/venv/bin/helper")
    assert dict(specs["py"].env)["PATH"].startswith(str(Path(specs["py"].env_folder) / "venv" / "bin"))
    assert specs["venv"].command == str(tmp_path / "venvs" / "own" / "bin" / "python")
    assert "environment" in specs["excel"].note and "virtualenv" in specs["venv"].note
    assert Path(specs["py"].cwd) == tmp_path
    changed = write_json(tmp_path / "s.json", {"environments": "envs", "servers": {
        "excel": {"command": "uvx", "args": ["excel-mcp-server"], "install": {"requirements": ["excel-mcp-server"]}}}})
    assert read_servers_config(changed)[0].env_folder != str(env)  # another install block, another environment


def test_host_python_keeps_the_project_importable(tmp_path):
    path = write_json(tmp_path / "s.json", {"servers": {"own": {"command": "python", "python": "host", "args": []}}})
    spec = read_servers_config(path)[0]
    assert spec.command == sys.executable and "own interpreter" in spec.note
    assert dict(spec.env)["PYTHONPATH"].split(":")[0] == str(Path(__file__).resolve().parents[2])


def test_path_arguments_resolve_inside_the_workspace(tmp_path):
    root = (tmp_path / "ws").resolve()
    (root / "media").mkdir(parents=True)
    (root / "report.xlsx").write_text("")
    given = {"input_path": "./media/t1.png", "image": "media/t1.png", "imageFileUri": "shot.png",
             "image_paths": ["./media/a.png", "media/b.png"], "filepath": "new.xlsx", "note": "report.xlsx",
             "save_path": "./downloads/", "amazon_domain": "amazon.com", "keywords": "Pepsi 20 oz bottle",
             "output_format": "png", "direction": "left", "url": "https://example.org/x.png", "n": 3,
             "escape": "../outside.png", "absolute": "/tmp/x.xlsx", "text": "line one\n./media/x.png",
             "nested": {"file_path": "deep/out.csv"}}
    sent = to_workspace(given, root)
    assert sent["input_path"] == f"{root}/media/t1.png" and sent["image"] == f"{root}/media/t1.png"
    assert sent["imageFileUri"] == f"{root}/shot.png" and sent["filepath"] == f"{root}/new.xlsx"
    assert sent["image_paths"] == [f"{root}/media/a.png", f"{root}/media/b.png"]
    assert sent["note"] == f"{root}/report.xlsx" and sent["save_path"] == f"{root}/downloads/"
    assert sent["nested"] == {"file_path": f"{root}/deep/out.csv"}
    for unchanged in ("amazon_domain", "keywords", "output_format", "direction", "url", "n", "escape", "absolute",
                      "text"):
        assert sent[unchanged] == given[unchanged], unchanged
    assert given["input_path"] == "./media/t1.png"  # what the model wrote stays as written
    assert [k for k in ("fileName", "output_path", "dirPath", "name", "security") if path_key(k)] == \
        ["fileName", "output_path", "dirPath"]


def test_results_speak_of_workspace_paths(tmp_path):
    root = tmp_path / "ws"
    assert from_workspace(f"Created workbook at {root}/prices.xlsx; in {root}, not {root}2/x", root) == \
        f"Created workbook at prices.xlsx; in ., not {root}2/x"
    text = "Created workbook at /tmp/cold.xlsx. See media/a.png, amazon.com, 3.14 and /usr/lib/os.py:12."
    assert named_paths(text) == ["/tmp/cold.xlsx", "/usr/lib/os.py", "media/a.png", "amazon.com"]
    assert argument_paths({"a": "/tmp/x.xlsx", "b": ["/y/z.png", "rel.png"], "c": 1}) == ["/tmp/x.xlsx", "/y/z.png"]
