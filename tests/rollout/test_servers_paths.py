"""Path arguments that are no paths (long texts, NUL bytes) never fail a call, and a server that keeps its
own output folder (``"paths": {"keep": ["./media"]}``) gets its own paths as written, its outputs
collected into the task workspace."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from rollout_helpers import HERE, write_json

from engine.contract import InputError
from rollout.mcp.config import read_servers_config
from rollout.mcp.host import MCPHost
from rollout.mcp.paths import kept_paths, to_workspace
from rollout.record import RolloutCache
from rollout.toolrunner import ToolRunner
from rollout.workspace import Workspace

MEDIA_SERVER = HERE / "media_server.py"
NOT_PATHS = {"text": "x" * 5000, "segment": "y" * 1000, "deep": "a/" * 400 + "b" * 600, "nul": "media/a\x00b.png",
             "explicit": "./a\x00", "file_path": "out\x00.xlsx", "absolute": "/tmp/a\x00b.png",
             "long_file": "z" * 5000 + ".xlsx", "long_absolute": "/" + "q" * 5000}


def test_strings_the_file_system_cannot_take_are_no_paths(tmp_path):
    root = (tmp_path / "ws").resolve()
    (root / "media").mkdir(parents=True)
    sent = to_workspace(NOT_PATHS, root)
    assert {k: v for k, v in sent.items() if k != "file_path"} == {k: v for k, v in NOT_PATHS.items()
                                                                    if k != "file_path"}
    assert sent["file_path"] == NOT_PATHS["file_path"]  # a keyed path with a NUL byte is sent as written too


def _config(tmp_path: Path, keep: list[str] | None) -> Path:
    home = tmp_path / "server-home"
    (home / "media").mkdir(parents=True, exist_ok=True)
    entry = {"command": "python", "python": "host", "args": [str(MEDIA_SERVER)], "cwd": str(home)}
    if keep is not None:
        entry["paths"] = {"mode": "workspace", "keep": keep}
    return write_json(tmp_path / "servers.json", {"servers": {"deck": entry}})


def _run(config: Path, workspace: Workspace, calls: list[dict]) -> list:
    async def go():
        async with MCPHost(read_servers_config(config)) as host:
            runner = ToolRunner(host, RolloutCache(workspace.root.parent / "cache", "live"), host.catalogue())
            return await runner.run_step(calls, {c["name"] for c in calls}, workspace, 1)

    return asyncio.run(go())


def test_long_and_nul_arguments_reach_a_real_server(tmp_path):
    ws = Workspace.fresh(tmp_path / "workspaces", "t1")
    records = _run(_config(tmp_path, None), ws, [{"name": "deck/measure", "arguments": {k: v}}
                                                 for k, v in NOT_PATHS.items()])
    assert [r.is_error for r in records] == [False] * len(NOT_PATHS), [r.result for r in records]
    assert [r.result.split(",")[0] for r in records] == [f"{len(v)} characters" for v in NOT_PATHS.values()]
    assert "NUL: True" in records[3].result


@pytest.mark.parametrize("keep", [["./media"], ["media/"]])
def test_a_server_keeping_its_own_folder(tmp_path, keep):
    ws = Workspace.fresh(tmp_path / "workspaces", "t1")
    calls = [{"name": "deck/save_deck", "arguments": {"file_path": "./media/deck.pptx", "title": "Prices"}},
             {"name": "deck/save_deck", "arguments": {"file_path": "media/sub/other.pptx", "title": "Sub"}}]
    refused = _run(_config(tmp_path, None), ws, calls[:1])[0]
    assert refused.is_error and "confined to ./media" in refused.result  # the workspace rewrite leaves ./media
    records = _run(_config(tmp_path, keep), ws, calls)
    assert [r.is_error for r in records] == [False, False], [r.result for r in records]
    assert (ws.root / "media" / "deck.pptx").read_text() == "deck: Prices"  # collected into the workspace
    assert not (tmp_path / "server-home" / "media" / "deck.pptx").exists()  # and gone from the server's folder
    assert (ws.root / "media" / "sub" / "other.pptx").read_text() == "deck: Sub"
    assert records[0].files == ["media/deck.pptx"] and records[1].files == ["media/sub/other.pptx"]
    assert records[0].arguments["file_path"] == "./media/deck.pptx"  # the record keeps what the model wrote


def test_workspace_files_named_in_a_kept_folder_are_copied_there(tmp_path):
    ws = Workspace.fresh(tmp_path / "workspaces", "t1")
    (ws.root / "media" / "t1.png").write_bytes(b"x" * 321)
    home = tmp_path / "server-home" / "media"
    home.mkdir(parents=True)
    (home / "old.png").write_bytes(b"y" * 5)
    calls = [{"name": "deck/save_deck", "arguments": {"file_path": "media/deck.pptx", "title": "T",
                                                      "picture": "./media/t1.png"}},
             {"name": "deck/save_deck", "arguments": {"file_path": "media/b.pptx", "title": "B",
                                                      "picture": "media/old.png"}}]
    records = _run(_config(tmp_path, ["./media"]), ws, calls)
    assert [r.is_error for r in records] == [False, False], [r.result for r in records]
    assert (ws.root / "media" / "deck.pptx").read_text() == "deck: T, picture of 321 bytes"
    assert not (home / "t1.png").exists()  # the task's image, copied for the server to read, is removed after
    assert (home / "old.png").read_bytes() == b"y" * 5  # the server's own file stays
    assert (ws.root / "media" / "b.pptx").read_text() == "deck: B, picture of 5 bytes"  # the server's own file
    assert records[0].files == ["media/deck.pptx"] and records[1].files == ["media/b.pptx"]
    assert not (ws.root / "media" / "old.png").exists()


def test_kept_folders_and_other_paths(tmp_path):
    root = (tmp_path / "ws").resolve()
    (root / "media").mkdir(parents=True)
    keep = ("media",)
    given = {"file_path": "./media/a.pptx", "image": "media/in.png", "other": "./out/x.png", "up": "media/../x.png",
             "mediaX": "mediaX/y.png", "image_paths": ["media/b.pptx", "c.png"]}
    sent = to_workspace(given, root, keep=keep)
    assert sent["file_path"] == "./media/a.pptx" and sent["image"] == "media/in.png"
    assert sent["image_paths"] == ["media/b.pptx", f"{root}/c.png"] and sent["other"] == f"{root}/out/x.png"
    assert sent["up"] == f"{root}/x.png"
    assert kept_paths(given, keep) == ["./media/a.pptx", "media/in.png", "media/b.pptx"]


@pytest.mark.parametrize(("paths", "field"), [
    ({"mode": "workspace", "keep": ["../elsewhere"]}, "servers.deck.paths.keep[0]"),
    ({"mode": "workspace", "keep": ["/abs/media"]}, "servers.deck.paths.keep[0]"),
    ({"mode": "workspace", "keep": "./media"}, "servers.deck.paths.keep"),
    ({"mode": "somewhere"}, "servers.deck.paths.mode"),
    ({"keep": ["./media"], "policy": "x"}, "servers.deck.paths"),
])
def test_path_policy_errors_name_the_field(tmp_path, paths, field):
    config = write_json(tmp_path / "s.json", {"servers": {"deck": {"command": "x", "paths": paths}}})
    with pytest.raises(InputError, match=f"field '{field.replace('[', '.').replace(']', '.')}'"):
        read_servers_config(config)


def test_path_policy_defaults(tmp_path):
    config = write_json(tmp_path / "s.json", {"servers": {"a": {"command": "x", "paths": {"keep": ["./media/"]}},
                                                          "b": {"command": "x", "paths": "as-written"}}})
    a, b = read_servers_config(config)
    assert (a.paths, a.keep_paths) == ("workspace", ("media",)) and (b.paths, b.keep_paths) == ("as-written", ())
