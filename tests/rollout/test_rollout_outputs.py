"""Where servers write: two records of the same tasks are byte for byte the same (a server's own output folder
is left as it was found, its temp folder is the run's), a file is copied into the workspace once, where the
server saved it, writes outside the workspace are listed in the record, and a server printing on stdout at
start is tolerated with one warning."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

from rollout_helpers import (
    HERE,
    compose,
    local_overrides,
    plan_policy,
    plan_tasks,
    predictions_of,
    run_dir_of,
    write_json,
)

from rollout.mcp.config import read_servers_config
from rollout.mcp.host import MCPHost
from rollout.runner import run

OUTPUT_SERVER = HERE / "output_server.py"


def _servers(tmp_path: Path, **entry: object) -> Path:
    home = tmp_path / "server-home"
    (home / "media").mkdir(parents=True, exist_ok=True)
    return write_json(tmp_path / "servers.json", {"servers": {"out": {
        "command": "python", "python": "host", "args": [str(OUTPUT_SERVER)], "cwd": str(home), **entry}}})


def test_two_records_of_the_same_tasks_are_byte_identical(tmp_path, chat_server):
    elsewhere = tmp_path / "elsewhere" / "notes.txt"
    elsewhere.parent.mkdir()
    plans = {"o1": [[{"name": "out/save_deck", "arguments": {"file_path": "./media/deck.pptx", "title": "Prices"}},
                     {"name": "out/save_output", "arguments": {"file_path": "media/outputs/chart.txt", "text": "c"}}],
                    [{"name": "out/scratch", "arguments": {"name": "cache.bin", "text": "s", "tell": True}},
                     {"name": "out/write_at", "arguments": {"target": str(elsewhere), "text": "n"}}]]}
    tasks_file, ref = plan_tasks(tmp_path, plans)
    server = chat_server(plan_policy(ref))
    servers = _servers(tmp_path, paths={"mode": "workspace", "keep": ["./media"]})
    runs = {}
    cache = f"cache_dir={run_dir_of(tmp_path / 'b') / 'cache'}"
    for name, mode in (("a", "live"), ("b", "record"), ("c", "replay")):
        assert run(compose(*local_overrides(server, tasks_file, tmp_path / name, servers, f"mode={mode}",
                                            *([cache] if mode == "replay" else [])))) == 0
        runs[name] = predictions_of(tmp_path / name).read_bytes()
    # the second file is not deck-1.pptx, the run's temp folder (in each run's own results folder) is $TMPDIR, and a
    # replay agrees
    assert runs["a"] == runs["b"] == runs["c"]

    record = json.loads(runs["a"])[0]
    saved = [c["result"] for s in record["steps"] for c in s["calls"]]
    assert saved[0] == "Saved media/deck.pptx"
    assert saved[2] == "Noted in $TMPDIR/cache.bin.\n[$TMPDIR/cache.bin copied to media/cache.bin]"
    assert record["outside_writes"] == [
        {"step": 2, "tool": "out/scratch", "path": "$TMPDIR/cache.bin", "copied_to": "media/cache.bin"},
        {"step": 2, "tool": "out/write_at", "path": str(elsewhere), "copied_to": "media/notes.txt"}]
    media = run_dir_of(tmp_path / "a") / "workspace" / "o1" / "media"
    assert sorted(p.relative_to(media).as_posix() for p in media.rglob("*") if p.is_file()) == [
        "cache.bin", "deck.pptx", "notes.txt", "o1.png", "outputs/chart.txt"]  # chart.txt once, where it was saved
    home = tmp_path / "server-home" / "media"
    assert [p for p in home.rglob("*") if p.is_file()] == []  # the server's folder is as it was found
    assert not (run_dir_of(tmp_path / "a") / "workspace" / ".servers").exists()  # temp folders removed


def test_a_file_in_the_servers_folder_keeps_its_path_there(tmp_path, chat_server):
    chart = tmp_path / "server-home" / "media" / "outputs" / "chart.txt"
    plans = {"o2": [[{"name": "out/write_at", "arguments": {"target": str(chart), "text": "c"}}],
                    [{"name": "out/scratch", "arguments": {"name": "cache.bin", "text": "s", "tell": True}}]]}
    tasks_file, ref = plan_tasks(tmp_path, plans)
    server = chat_server(plan_policy(ref))
    assert run(compose(*local_overrides(server, tasks_file, tmp_path / "r", _servers(tmp_path)))) == 0
    record = json.loads(predictions_of(tmp_path / "r").read_text())[0]
    assert record["steps"][0]["calls"][0]["result"] == f"Written.\n[{chart} copied to media/outputs/chart.txt]"
    media = run_dir_of(tmp_path / "r") / "workspace" / "o2" / "media"
    assert not (media / "chart.txt").exists() and (media / "outputs" / "chart.txt").read_text() == "c"
    assert record["outside_writes"] == [
        {"step": 1, "tool": "out/write_at", "path": str(chart), "copied_to": "media/outputs/chart.txt"},
        {"step": 2, "tool": "out/scratch", "path": "$TMPDIR/cache.bin", "copied_to": "media/cache.bin"}]
    assert chart.read_text() == "c"  # not a kept folder: the server's file stays
    temp = (run_dir_of(tmp_path / "r") / "workspace" / ".servers" / "out").resolve()
    assert record["steps"][1]["calls"][0]["result"] == \
        "Noted in $TMPDIR/cache.bin.\n[$TMPDIR/cache.bin copied to media/cache.bin]"  # the run's own temp folder
    assert (media / "cache.bin").read_text() == "s" and not temp.exists()


def test_scratch_files_of_another_tasks_call_are_not_a_write(tmp_path, chat_server):
    # two tasks at once call a server that keeps a scratch file in its temp folder while it works; the short
    # call's step ends while the long one's file is still there: neither task wrote outside its workspace
    plans = {"w1": [[{"name": "out/work", "arguments": {"name": "tess_w1", "seconds": 0.5}}]],
             "w2": [[{"name": "out/work", "arguments": {"name": "tess_w2", "seconds": 2.5}}]]}
    tasks_file, ref = plan_tasks(tmp_path, plans)
    server = chat_server(plan_policy(ref))
    assert run(compose(*local_overrides(server, tasks_file, tmp_path / "r", _servers(tmp_path),
                                        "concurrency=2"))) == 0
    records = json.loads(predictions_of(tmp_path / "r").read_text())
    assert [(r["id"], r["steps"][0]["calls"][0]["result"], r.get("outside_writes")) for r in records] == [
        ("w1", "Worked.", None), ("w2", "Worked.", None)]


def test_a_server_printing_on_stdout_at_start(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    specs = read_servers_config(_servers(tmp_path, environment="whole"))

    async def go() -> tuple[dict[str, str], str]:
        async with MCPHost(specs, log_dir=tmp_path / "logs") as host:
            outcome = await host.call("out/scratch", {"name": "a", "text": "b"})
            return host.failures(), outcome.text

    with caplog.at_level(logging.WARNING):
        assert asyncio.run(go()) == ({}, "Noted.")
    assert [r for r in caplog.records if r.exc_info] == []  # no parse traceback
    warnings = [r.getMessage() for r in caplog.records if "stdout" in r.getMessage()]
    assert warnings == ["MCP server out printed a line that is no MCP message on stdout (skipped): "
                        "'output server: starting on stdio'"]
    assert "[stdout, no MCP message, skipped] output server: starting on stdio" in \
        (tmp_path / "logs" / "out.log").read_text()
