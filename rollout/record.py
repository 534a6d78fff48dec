"""Record/replay cache of tool results and model responses.

Layout of a cache directory:

- ``tools.jsonl``: one line per tool call, keyed by the task, the server, tool and canonical arguments, and
  how many identical calls the task made before it (so a task that repeats a call gets each result back);
- ``models.jsonl``: one line per model response, keyed by the request (scope, purpose, model,
  parameters, messages with images as workspace paths) and its occurrence within the scope;
- ``catalogue.json``: the tool catalogue of the recorded run, so a replay starts no server;
- ``timings.jsonl``: one line per task, its wall time in seconds, so a replay's tool log gives the recorded one;
- ``blobs/``: the files tools produced, by SHA-256, restored into the workspace on replay.

Modes: ``live`` uses no cache, ``record`` calls everything for real and writes what it got (a
later line wins over an earlier one with the same key), ``replay`` serves everything from the cache
and fails on a miss. Lines cut short by a killed process are ignored on load.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from engine.contract import (
    InputError,
    JsonObject,
    append_line,
    atomic_write_bytes,
    atomic_write_text,
    check_choice,
    digest,
    dumps_json,
    read_json,
    read_keyed_lines,
)
from engine.contract.settings import ModelConfig
from rollout.errors import CacheMiss
from rollout.mcp.protocol import ToolInfo
from rollout.models.base import Completion, ModelDriver, driver_settings
from rollout.models.errors import LOOPBACK_DOWN, loopback_down, on_loopback
from rollout.models.messages import Messages
from rollout.models.registry import build_driver

log = logging.getLogger(__name__)

RECORD_MODES = ("live", "record", "replay")


def tool_key(task: str, server: str, tool: str, arguments: object, occurrence: int) -> str:
    """Cache key of a tool call: the task, the call, and how many identical calls the task made before it."""
    return digest({"task": task, "server": server, "tool": tool, "arguments": arguments, "n": occurrence})


class Occurrences:
    """How many times each task has made each call so far, so identical calls get keys of their own."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], int] = {}

    def key(self, task: str, server: str, tool: str, arguments: object) -> str:
        """The next key of this call in this task (the first is occurrence 0)."""
        base = digest({"server": server, "tool": tool, "arguments": arguments})
        n = self._seen.get((task, base), 0)
        self._seen[(task, base)] = n + 1
        return tool_key(task, server, tool, arguments, n)


@dataclass
class RecordedCall:
    """A tool call's outcome as the cache recorded it: its result text, whether it failed, its duration, its
    writes outside the workspace, and the files it produced (workspace path, SHA-256 of the kept copy)."""

    result: str
    is_error: bool
    duration_s: float | None
    outside: list[dict[str, str]]
    files: list[tuple[str, str]]


def _strings(value: object, keys: tuple[str, ...]) -> dict[str, str] | None:
    """An object of strings holding `keys`, else None."""
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()) or \
            not all(k in value for k in keys):
        return None
    return {str(k): str(v) for k, v in value.items()}


def _recorded_call(record: object) -> RecordedCall | None:
    """The recorded outcome of a tools.jsonl line's ``record``; None when it is not of that shape."""
    if not isinstance(record, dict):
        return None
    result, is_error, duration = record.get("result"), record.get("is_error"), record.get("duration_s")
    listed_outside, listed_files = record.get("outside", []), record.get("files")
    if not isinstance(result, str) or not isinstance(is_error, bool) or \
            not (duration is None or isinstance(duration, (int, float))) or \
            not isinstance(listed_outside, list) or not isinstance(listed_files, list):
        return None
    outside = [_strings(w, ("path",)) for w in listed_outside]
    files = [_strings(f, ("path", "sha256")) for f in listed_files]
    if None in outside or None in files:
        return None
    return RecordedCall(result, is_error, duration, [w for w in outside if w is not None],
                        [(f["path"], f["sha256"]) for f in files if f is not None])


class RolloutCache:
    """The cache directory of a run, in one of the modes live, record or replay."""

    def __init__(self, directory: str | Path, mode: str) -> None:
        self.mode = check_choice(mode, RECORD_MODES, "mode", "mode")
        self.directory = Path(directory)
        self._tools: dict[str, Mapping[str, object]] = {}
        self._models: dict[str, Mapping[str, object]] = {}
        self._timings: dict[str, JsonObject] = {}
        if mode == "live":
            return
        if mode == "replay" and not self.directory.is_dir():
            raise InputError(self.directory, "cache directory not found (record a run first)",
                             field="cache_dir")
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "blobs").mkdir(exist_ok=True)
        self._tools = dict(read_keyed_lines(self.directory / "tools.jsonl"))
        self._models = dict(read_keyed_lines(self.directory / "models.jsonl"))
        self._timings = read_keyed_lines(self.directory / "timings.jsonl")

    @property
    def replaying(self) -> bool:
        """Whether everything comes from the cache."""
        return self.mode == "replay"

    @property
    def recording(self) -> bool:
        """Whether live results are written to the cache."""
        return self.mode == "record"

    def get_tool(self, key: str) -> RecordedCall | None:
        """The recorded outcome of a tool call; InputError naming the cache's file when it is not of its shape."""
        entry = self._tools.get(key)
        if not entry:
            return None
        recorded = _recorded_call(entry.get("record"))
        if recorded is None:
            raise InputError(self.directory / "tools.jsonl", "not a recorded tool call's outcome (result, is_error, "
                             "duration_s, files, outside)", field=f"{key}.record")
        return recorded

    def put_tool(self, key: str, task: str, server: str, tool: str, arguments: object,
                 record: Mapping[str, object]) -> None:
        """Record a tool call's outcome."""
        entry = {"key": key, "task": task, "server": server, "tool": tool, "arguments": arguments, "record": record}
        self._tools[key] = entry
        append_line(self.directory / "tools.jsonl", entry)

    def get_model(self, key: str) -> Completion | None:
        """The recorded model response of a request key; InputError naming the cache's file when it is not one."""
        entry = self._models.get(key)
        if not entry:
            return None
        response = entry.get("response")
        try:
            if not isinstance(response, dict):
                raise ValueError("not an object")
            return Completion.from_json(response)
        except (KeyError, ValueError):
            raise InputError(self.directory / "models.jsonl", "not a recorded model response (content, usage, "
                             "model, finish_reason)", field=f"{key}.response") from None

    def put_model(self, key: str, response: Mapping[str, object]) -> None:
        """Record a model response."""
        entry = {"key": key, "response": response}
        self._models[key] = entry
        append_line(self.directory / "models.jsonl", entry)

    def wall_time(self, task: str, measured: float) -> float | None:
        """A task's wall seconds as its tool log records them: `measured` (written to the cache when recording),
        the recorded one when replaying (None when the cache has none: a cache recorded before timings were)."""
        if self.replaying:
            entry = self._timings.get(task)
            wall = entry.get("wall_s") if entry else None
            return wall if isinstance(wall, (int, float)) else None
        if self.recording:
            line: JsonObject = {"key": task, "wall_s": measured}
            self._timings[task] = line
            append_line(self.directory / "timings.jsonl", line)
        return measured

    def put_catalogue(self, tools: Sequence[Mapping[str, object]], failures: dict[str, str]) -> None:
        """Record the tool catalogue (key order kept: it is shown to the model) and the servers that failed."""
        text = dumps_json({"tools": tools, "failures": failures}, indent=1)
        atomic_write_text(self.directory / "catalogue.json", text)

    def get_catalogue(self) -> tuple[list[ToolInfo], dict[str, str]]:
        """The recorded tool catalogue and server failures."""
        path = self.directory / "catalogue.json"
        if not path.exists():
            raise InputError(path, "no recorded tool catalogue (record a run first)", field="cache_dir")
        data = read_json(path, "recorded tool catalogue")
        try:
            return [ToolInfo.from_json(t) for t in data["tools"]], data["failures"]
        except ValueError as exc:
            raise InputError(path, str(exc), field="tools") from None

    def store_blob(self, path: Path) -> str:
        """Keep a copy of a file by content; returns its SHA-256."""
        data = path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        blob = self.directory / "blobs" / sha
        if not blob.exists():
            atomic_write_bytes(blob, data)
        return sha

    def restore_blob(self, sha: str, dest: Path) -> bool:
        """Write a kept file to dest; False when the blob is missing."""
        blob = self.directory / "blobs" / sha
        if not blob.exists():
            return False
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(blob, dest)
        return True


class CachedModel:
    """A model driver behind the cache: record writes responses, replay serves them (driver may be None).

    A request's key holds its scope (the task id, or "curate:<id>"), the model name, parameters,
    JSON mode and messages (role and content, images as workspace paths), and how many identical
    requests the scope made before it, so a replay gives back the recorded responses in order.
    """

    def __init__(self, driver: ModelDriver | None, cache: RolloutCache, name: str,
                 params: Mapping[str, object] | None = None) -> None:
        if driver is None and not cache.replaying:
            raise ValueError("a model driver is needed unless the run is replayed")
        self.driver = driver
        self.cache = cache
        self.name = name
        self.params = params or {}
        self._seen: dict[tuple[str, str], int] = {}

    async def complete(self, messages: Messages, *, scope: str, workspace: Path | None = None,
                       json_mode: bool = False) -> Completion:
        """The response to messages: from the cache when replaying, else from the driver."""
        if self.cache.mode == "live":
            assert self.driver is not None
            return await self.driver.complete(messages, workspace=workspace, json_mode=json_mode)
        base = digest({"scope": scope, "model": self.name, "params": self.params, "json": json_mode,
                       "messages": [{"role": m["role"], "content": m["content"]} for m in messages]})
        n = self._seen.get((scope, base), 0)
        self._seen[(scope, base)] = n + 1
        key = digest({"request": base, "n": n})
        if self.cache.replaying:
            response = self.cache.get_model(key)
            if response is None:
                raise CacheMiss(f"no recorded model response for a {scope} request (the run diverged "
                                "from the recorded one, or it was never recorded)")
            return response
        assert self.driver is not None
        completion = await self.driver.complete(messages, workspace=workspace, json_mode=json_mode)
        self.cache.put_model(key, completion.to_json())
        return completion


@asynccontextmanager
async def open_model(model: ModelConfig, cache: RolloutCache) -> AsyncIterator[CachedModel]:
    """The model of a config behind the cache; a replay builds no driver (and needs no key). A model on this
    machine (the scripted one, a local server) that cannot be reached because the loopback interface is down
    is an InputError saying so, before any task runs."""
    settings = driver_settings(model)
    driver = None if cache.replaying else build_driver(model)
    try:
        if driver is not None and on_loopback(driver.settings.base_url) and loopback_down():
            raise InputError("config", f"{LOOPBACK_DOWN}: the model's API at {driver.settings.base_url} cannot be "
                             "reached, so no task was run", field="model")
        yield CachedModel(driver, cache, settings.name, settings.params)
    finally:
        if driver is not None:
            await driver.aclose()
