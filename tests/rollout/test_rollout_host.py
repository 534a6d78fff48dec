"""The MCP host over stdio against the shipped servers and a flaky test server (no mocks)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from openpyxl import load_workbook
from PIL import Image
from rollout_helpers import FLAKY_SERVER, make_image, write_json

from engine.contract import InputError
from rollout.mcp.config import ServerSpec, read_servers_config
from rollout.mcp.host import MCPHost

SHIPPED = Path(__file__).resolve().parents[2] / "rollout" / "servers.json"


def test_servers_config_resolves_python_and_env(tmp_path, monkeypatch):
    monkeypatch.setenv("M3_TEST_TOKEN", "secret-value")
    path = write_json(tmp_path / "s.json", {"servers": {
        "a": {"command": "python", "python": "host", "args": ["-m", "x"], "env": {"TOKEN": "${M3_TEST_TOKEN}"},
              "disabled": False},
        "b": {"command": "node", "args": [], "disabled": True}}})
    a, b = read_servers_config(path)
    assert a.command == sys.executable and a.args == ("-m", "x")
    env = dict(a.env)
    assert env["TOKEN"] == "secret-value" and str(Path(__file__).resolve().parents[2]) in env["PYTHONPATH"]
    assert b.disabled


@pytest.mark.parametrize("servers, field", [
    ({"a": {"args": []}}, "servers.a.command"),
    ({"a": {"command": "x", "args": "nope"}}, "servers.a.args"),
    ({"a/b": {"command": "x"}}, "servers.a/b"),
    ({"a": {"command": "x", "paths": "somewhere"}}, "servers.a.paths"),
    ({"a": {"command": "x", "inherit": "KEY"}}, "servers.a.inherit"),
    ({"a": {"command": "x", "install": {"requirements": "pkg"}}}, "servers.a.install.requirements"),
    ({"a": {"command": "x", "install": {"pip": ["pkg"]}}}, "servers.a.install"),
    ({"a": {"command": "x", "install": {"build": [["npm", "ci"]]}}}, "servers.a.install.dir"),
    ({"a": {"command": "python", "python": "host", "install": {"npm": ["x@1"]}}}, "servers.a.python"),
    ({"a": {"command": "x", "check": {"arguments": {}}}}, "servers.a.check"),
])
def test_servers_config_errors_name_the_field(tmp_path, servers, field):
    path = write_json(tmp_path / "s.json", {"servers": servers})
    with pytest.raises(InputError) as info:
        read_servers_config(path)
    message = str(info.value)
    assert str(path) in message and f"field '{field}'" in message and "\n" not in message


def test_shipped_servers_list_and_run_tools(tmp_path):
    ws = tmp_path / "ws"
    make_image(ws / "media" / "in.png", (80, 60))

    async def go():
        async with MCPHost(read_servers_config(SHIPPED)) as host:
            names = {t.name: t for t in host.catalogue()}
            for expected in ("images/crop", "images/blur", "images/draw_rectangles", "images/draw_texts",
                             "images/resize", "images/rotate", "math/mean", "math/evaluate",
                             "excel/write_data_to_excel"):
                assert expected in names
                assert names[expected].description and names[expected].input_schema["type"] == "object"
            calls = await asyncio.gather(
                host.call("images/crop", {"input_path": "media/in.png", "x1": 0, "y1": 0, "x2": 40, "y2": 30,
                                          "output_path": "media/crop.png"}, ws),
                host.call("images/rotate", {"input_path": "media/in.png", "angle": 90}, ws),
                host.call("images/blur", {"input_path": "media/in.png", "areas": [{"x1": 0, "y1": 0, "x2": 20,
                                                                                   "y2": 20}]}, ws),
                host.call("math/median", {"numbers": [5, 1, 3, 2]}, ws),
                host.call("math/evaluate", {"expression": "2 ** 10 - sqrt(16)"}, ws),
                host.call("excel/write_data_to_excel", {"filepath": "t.xlsx", "sheet_name": "S",
                                                        "data": [["a", 1], ["b", 2.5]]}, ws),
            )
            return calls, await host.call("images/crop", {"input_path": "../outside.png", "x1": 0, "y1": 0,
                                                          "x2": 1, "y2": 1}, ws)

    calls, escape = asyncio.run(go())
    assert not any(c.is_error for c in calls), [c.text for c in calls]
    assert json.loads(calls[0].text)["output_path"] == "media/crop.png"
    assert Image.open(ws / "media" / "crop.png").size == (40, 30)
    assert Image.open(ws / "media" / "in_rotate.png").size == (60, 80)
    assert (ws / "media" / "in_blur.png").is_file()
    assert json.loads(calls[3].text)["median"] == 2.5
    assert json.loads(calls[4].text)["result"] == 1020.0
    assert [list(r) for r in load_workbook(ws / "t.xlsx")["S"].iter_rows(values_only=True)] == [["a", 1], ["b", 2.5]]
    assert escape.is_error and "outside the task workspace" in escape.text


def test_unknown_tools_and_failed_servers_are_errors_not_exceptions(tmp_path):
    specs = read_servers_config(SHIPPED)[1:2] + [
        ServerSpec("missing", str(tmp_path / "no-such-command")),
        ServerSpec("dies", sys.executable, ("-c", "import sys; sys.exit(1)")),
    ]

    async def go():
        async with MCPHost(specs, start_timeout=10) as host:
            assert set(host.failures()) == {"missing", "dies"}
            assert {t.server for t in host.catalogue()} == {"math"}
            return [await host.call(n, {}, tmp_path) for n in
                    ("math/no_such_tool", "nowhere/tool", "missing/tool", "dies/tool")]

    outcomes = asyncio.run(go())
    assert all(o.is_error for o in outcomes)
    assert "no_such_tool" in outcomes[0].text
    assert "unknown MCP server 'nowhere'" in outcomes[1].text
    assert "'missing' is not running" in outcomes[2].text and "command not found" in outcomes[2].text
    assert "'dies' is not running" in outcomes[3].text


def test_crashed_server_is_an_error_then_restarts(tmp_path):
    spec = ServerSpec("flaky", sys.executable, (str(FLAKY_SERVER),),
                      (("PYTHONPATH", str(Path(__file__).resolve().parents[2])),))

    async def go():
        async with MCPHost([spec], call_timeout=1.0, max_restarts=1) as host:
            before = await host.call("flaky/echo", {"text": "hi"})
            crash = await host.call("flaky/crash", {})
            after = await host.call("flaky/echo", {"text": "again"})
            slow = await host.call("flaky/hang", {"seconds": 5})
            still = await host.call("flaky/echo", {"text": "still"})
            crash2 = await host.call("flaky/crash", {})
            gone = await host.call("flaky/echo", {"text": "gone"})
            return before, crash, after, slow, still, crash2, gone

    before, crash, after, slow, still, crash2, gone = asyncio.run(go())
    assert (before.text, before.is_error) == ("hi", False)
    assert crash.is_error and "exited during the call" in crash.text
    assert (after.text, after.is_error) == ("again", False)
    assert slow.is_error and "timed out after 1 s" in slow.text
    assert (still.text, still.is_error) == ("still", False)
    assert crash2.is_error
    assert gone.is_error and "not running" in gone.text
