"""The servers' environment: ``declared`` (the default variables and each server's own) or ``whole`` (the
host's whole environment, as the published host ran its servers, with a warning); and a failed start
that names the variables the server read and did not get."""

from __future__ import annotations

import asyncio
import logging

import pytest
from rollout_helpers import HERE, write_json

from engine.contract import InputError
from rollout.mcp.config import read_servers_config
from rollout.mcp.envhints import read_in_files, read_in_stderr
from rollout.mcp.host import MCPHost

MEDIA_SERVER = HERE / "media_server.py"


def test_whole_environment_mode(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("M3_UNDECLARED_TOKEN", "token-0123456789")
    monkeypatch.setenv("M3_PLAIN", "plain-value-0123")
    servers = {"a": {"command": "node", "env": {"OWN": "1"}}, "b": {"command": "node", "environment": "declared"},
               "off": {"command": "node", "disabled": True}}
    declared = write_json(tmp_path / "declared.json", {"servers": servers})
    whole = write_json(tmp_path / "whole.json", {"environment": "whole", "servers": servers})
    caplog.set_level(logging.WARNING, "rollout.mcp.config")
    a, b, _ = read_servers_config(declared)
    assert "M3_UNDECLARED_TOKEN" not in dict(a.env) and a.environment == "declared" and not caplog.records
    a, b, _ = read_servers_config(whole)
    env = dict(a.env)
    assert env["M3_UNDECLARED_TOKEN"] == "token-0123456789" and env["M3_PLAIN"] == "plain-value-0123"
    assert env["OWN"] == "1" and "M3_UNDECLARED_TOKEN" not in dict(b.env)  # an entry's own mode wins
    assert "token-0123456789" in a.secrets and "plain-value-0123" not in a.secrets  # secret-like names redacted
    assert [r.getMessage().split(" get ")[0] for r in caplog.records] == ["MCP server(s) a"]
    caplog.clear()
    a, b, _ = read_servers_config(declared, environment="whole")  # the rollout's setting overrides every entry
    assert a.environment == b.environment == "whole" and "MCP server(s) a, b get the rollout's whole " \
        "environment" in caplog.records[0].getMessage()


@pytest.mark.parametrize(("config", "kwargs", "field"), [
    ({"environment": "all", "servers": {}}, {}, "environment"),
    ({"servers": {"a": {"command": "x", "environment": True}}}, {}, "servers.a.environment"),
    ({"servers": {}}, {"environment": "everything"}, "server_environment"),
])
def test_environment_mode_errors_name_the_field(tmp_path, config, kwargs, field):
    path = write_json(tmp_path / "s.json", config)
    with pytest.raises(InputError, match=f"field '{field}': must be one of declared, whole"):
        read_servers_config(path, **kwargs)


def test_variables_named_in_stderr_and_files(tmp_path):
    assert read_in_stderr("Traceback ...\n    key = os.environ['NASA_API_KEY']\nKeyError: 'NASA_API_KEY'\n"
                          "ValueError: TMDB_API_KEY environment variable is not set\n"
                          "Error: Missing required environment variable: MAPS_KEY\nKeyError: 'name'\n"
                          "Please set the SERPAPI_KEY environment variable | INFO started 3 tools") == \
        ["NASA_API_KEY", "TMDB_API_KEY", "MAPS_KEY", "SERPAPI_KEY"]
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text('KEY = os.getenv("A_KEY")\nB = os.environ["B_TOKEN"]\n'
                                           'C = os.environ.get("C_URL", "x")\nname = "NOT_READ"\n')
    (tmp_path / "src" / "b.ts").write_text("const k = process.env.D_SECRET ?? process.env['E_ID'];\n")
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / "i.js").write_text("process.env.VENDORED_KEY")
    assert read_in_files(tmp_path) == ["A_KEY", "B_TOKEN", "C_URL", "D_SECRET", "E_ID"]


def _server_needing(tmp_path, variable: str, how: str) -> dict:
    folder = tmp_path / "servers" / "needy"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text('[project]\nname = "needy"\n')
    (folder / "helpers.js").write_text("module.exports = () => process.env.M3_HELPER_SECRET;\n")
    script = folder / f"server_{variable.lower()}.py"
    script.write_text(f"import os, runpy, sys\n{how}\nrunpy.run_path({str(MEDIA_SERVER)!r}, run_name='__main__')\n")
    return {"command": "python", "python": "host", "args": [str(script)]}


def _start(config, log_dir, **kwargs) -> dict[str, str | None]:
    async def go():
        async with MCPHost(read_servers_config(config, **kwargs), start_timeout=20, log_dir=log_dir) as host:
            return {s.spec.name: s.error if s.session is None else None for s in host.servers}

    return asyncio.run(go())


def test_a_failed_start_names_the_variables_it_missed(tmp_path, monkeypatch):
    monkeypatch.setenv("M3_TEST_TOKEN", "token-abcdef-0123")
    monkeypatch.setenv("M3_OTHER_KEY", "other-abcdef-0123")
    monkeypatch.delenv("M3_HELPER_SECRET", raising=False)
    config = write_json(tmp_path / "s.json", {"servers": {
        "keyed": _server_needing(tmp_path, "M3_TEST_TOKEN", "os.environ['M3_TEST_TOKEN']"),
        "said": _server_needing(tmp_path, "M3_OTHER_KEY", "if not os.environ.get('M3_OTHER_KEY'):\n"
                                                          "    sys.exit('Error: M3_OTHER_KEY is not set')")}})
    errors = _start(config, tmp_path / "logs")
    folder = tmp_path / "servers" / "needy"
    assert "KeyError: 'M3_TEST_TOKEN'" in errors["keyed"]
    assert errors["keyed"].endswith(f"; environment variables it did not get: its stderr names M3_TEST_TOKEN; its "
                                    f"files ({folder}) read M3_HELPER_SECRET, M3_OTHER_KEY (give them in its env or "
                                    "inherit, or use environment: whole)"), errors["keyed"]
    assert "its stderr names M3_OTHER_KEY; its files" in errors["said"]
    assert _start(config, tmp_path / "logs", environment="whole") == {"keyed": None, "said": None}
