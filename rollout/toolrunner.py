"""Running one step's tool calls: exposure checks, concurrent calls, workspace files, record/replay.

Files a step creates or changes in the workspace are given to the call whose arguments or result
name them (by workspace path or file name), else to the step's last call; images returned inline
are saved under media/ and belong to their call. Files a call wrote outside the workspace during the
step, named by an absolute path in its arguments or result or by a relative one under the server's
working directory, are copied in once (a file under the server's working directory at its path there,
however it is named; another, or one in the server's temp folder, at media/<name>) and belong to that
call. Workspace files a call names inside its server's own folders (``paths.keep``) are copied there
before the call; after the step, those copies and the files the step wrote there are removed from the
server's folder, so each task starts from the same folder. Every other write outside the workspace that
the step shows (a file copied in from elsewhere, a new file in the server's temp folder) is one of the
call's `outside` writes, which the task's record lists; its result shows the server's temp folder as ``$TMPDIR``
(the folder is in the run's workspace, which no record names). When recording, each call's outcome and files go
to the cache; a replay restores them without starting any server. A call to a server that failed to
start is an error naming the reason. Each call's duration is measured when it runs live and kept in the
cache, so a replay logs the recorded one.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine.contract import MADE, JsonObject, JsonValue, canonical_json
from rollout.errors import CacheMiss
from rollout.mcp.host import MCPHost
from rollout.mcp.paths import argument_paths, kept_paths, named_paths, under_kept
from rollout.mcp.protocol import ToolInfo, ToolOutcome
from rollout.record import Occurrences, RolloutCache
from rollout.workspace import MEDIA, Workspace, same_file_bytes

log = logging.getLogger(__name__)

MAX_BROUGHT_IN = 256 * 1024 * 1024
"""Files larger than this (bytes) written outside the workspace are not copied in."""
MTIME_SLACK_NS = 50_000_000
"""File times lag the clock by up to a tick: a file this much older than the step still counts as new."""


@dataclass
class CallRecord:
    """One call, with its result text, whether it failed, and the workspace files it produced; `made`
    is false for an illegal-format call, recorded as written and never run."""

    name: str
    arguments: JsonValue
    result: str
    is_error: bool
    files: list[str] = field(default_factory=list)
    duration_s: float | None = None
    made: bool = True
    outside: list[dict[str, str]] = field(default_factory=list)
    """Writes outside the workspace: ``{"path"}`` (a temp folder's file as ``$TMPDIR/<name>``), with
    ``"copied_to"`` when the file was copied in."""

    @classmethod
    def of(cls, call: JsonObject) -> CallRecord:
        """The record of a call as the PROCESS reply's parser gives it (engine.contract.parse_tool_calls:
        ``{"name", "arguments"}``, the name a string), before it runs; ValueError for another shape."""
        name = call.get("name")
        if not isinstance(name, str):
            raise ValueError(f"a tool call's name must be a string, got {name!r}")
        return cls(name, call.get("arguments"), "", False)

    def add_note(self, note: str) -> None:
        """Append a line of the host's own to the result text."""
        self.result = f"{self.result}\n{note}" if self.result else note

    def to_output(self) -> dict[str, object]:
        """The call in the published prediction format (plus is_error, and ``"made": false`` for a call
        that was not made)."""
        out: dict[str, object] = {"name": self.name, "arguments": self.arguments, "result": self.result,
                                  "is_error": self.is_error}
        return out if self.made else {**out, MADE: False}

    def to_log(self, step: int, index: int) -> dict[str, object]:
        """The call's line of the task's tool log (rollout/README.md, "Final workspace and tool log")."""
        server, _, tool = self.name.partition("/")
        line = {"step": step, "index": index, "server": server, "tool": tool, "arguments": self.arguments,
                "result": self.result, "is_error": self.is_error, "files": list(self.files),
                "duration_s": self.duration_s}
        return line if self.made else {**line, MADE: False}


def _written_since(path: Path, since_ns: int) -> bool:
    """Whether `path` is a file changed at or after `since_ns` (False when it is gone)."""
    try:
        return path.is_file() and path.stat().st_mtime_ns >= since_ns
    except OSError:
        return False


def _stem(name: str, step: int, index: int) -> str:
    tool = re.sub(r"[^A-Za-z0-9_-]", "_", name.split("/", 1)[-1])
    return f"{tool}_s{step}c{index}"


class ToolRunner:
    """Runs tool calls for the executor, live (through the host) or from the cache."""

    def __init__(self, host: MCPHost | None, cache: RolloutCache, catalogue: list[ToolInfo],
                 failures: dict[str, str] | None = None) -> None:
        if host is None and not cache.replaying:
            raise ValueError("an MCP host is needed unless the run is replayed")
        self.host = host
        self.cache = cache
        self.known = {t.name for t in catalogue}
        self.failures = dict(failures or {})
        self.occurrences = Occurrences()

    def _rejection(self, name: str, exposed: set[str]) -> str | None:
        if name in exposed:
            return None
        if name in self.known:
            return f"Error: tool '{name}' is not available in this task"
        server = name.partition("/")[0]
        if server in self.failures:
            return f"Error: MCP server '{server}' is not running ({self.failures[server]})"
        return f"Error: unknown tool '{name}'"

    async def run_step(self, calls: list[JsonObject], exposed: set[str], ws: Workspace,
                       step: int) -> list[CallRecord]:
        """Run a step's calls concurrently; results come back in the order of the calls."""
        records = [CallRecord.of(c) for c in calls]
        runnable = []
        for i, record in enumerate(records):
            rejection = self._rejection(record.name, exposed)
            if rejection:
                record.result, record.is_error, record.duration_s = rejection, True, 0.0
            else:
                runnable.append(i)
        if not runnable:
            return records
        keys = {i: self.occurrences.key(ws.task_id, *records[i].name.partition("/")[::2], records[i].arguments)
                for i in runnable} if self.cache.mode != "live" else {}
        if self.cache.replaying:
            for i in runnable:
                self._replay(records[i], ws, keys[i])
            return records
        assert self.host is not None
        staged = [target for i in runnable for target in self._stage_in(records[i], ws)]
        before, began = ws.snapshot(), time.time_ns() - MTIME_SLACK_NS
        host = self.host

        async def timed(record: CallRecord) -> ToolOutcome:
            start = time.perf_counter()
            arguments = record.arguments if isinstance(record.arguments, dict) else {}  # a run call's: an object
            outcome = await host.call(record.name, arguments, ws.root)
            record.duration_s = round(time.perf_counter() - start, 6)
            return outcome

        outcomes: list[ToolOutcome] = await asyncio.gather(*(timed(records[i]) for i in runnable))
        inline: set[str] = set()
        for i, outcome in zip(runnable, outcomes, strict=True):
            record = records[i]
            record.result, record.is_error = outcome.text, outcome.is_error
            for k, (mime, data) in enumerate(outcome.images, 1):
                rel = ws.save_image(data, mime, _stem(record.name, step, i + 1) + ("" if k == 1 else f"_{k}"))
                record.files.append(rel)
                inline.add(rel)
                record.add_note(f"[image saved to {rel}]")
        self._attribute([f for f in ws.changed_since(before) if f not in inline], records, runnable)
        moved: set[Path] = set()
        for i in runnable:
            self._bring_in(records[i], ws, began, moved)
        await self._temp_writes(records, runnable, began)
        for i in runnable:
            self._show_temp(records[i])
        for path in sorted(moved | set(staged)):
            path.unlink(missing_ok=True)
        if self.cache.recording:
            for i in runnable:
                self._record(records[i], ws, keys[i])
        return records

    @staticmethod
    def _attribute(files: list[str], records: list[CallRecord], runnable: list[int]) -> None:
        texts = {i: canonical_json(records[i].arguments) + "\n" + records[i].result for i in runnable}
        for rel in files:
            base = rel.rsplit("/", 1)[-1]
            owner = next((i for i in runnable if rel in texts[i]), None)
            if owner is None:
                owner = next((i for i in runnable if base in texts[i]), runnable[-1])
            records[owner].files.append(rel)

    def _stage_in(self, record: CallRecord, ws: Workspace) -> list[Path]:
        """Copy the workspace files a call names inside its server's own folders (``paths.keep``) there, when the
        server's copy is missing or differs, so the server reads the task's file (its time kept: not new); the
        copies that were new files there (removed after the step)."""
        assert self.host is not None
        server = record.name.partition("/")[0]
        keep = self.host.kept_folders(server)
        cwd = self.host.server_cwd(server) if keep else None
        if cwd is None or cwd == ws.root:
            return []
        created = []
        for named in kept_paths(record.arguments, keep):
            target = cwd / named
            try:
                source = ws.inside(named)
                if source is None or not source.is_file() or same_file_bytes(target, source):
                    continue
                new = not target.exists()
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
            except (OSError, ValueError):  # not a path the file system takes, or the folder is not writable
                continue
            if new:
                created.append(target.resolve())
        return created

    def _bring_in(self, record: CallRecord, ws: Workspace, since_ns: int, moved: set[Path]) -> None:
        """Copy into the workspace, once each, the files outside it that the call named and that changed during the
        step; those in the server's own folders (``paths.keep``) join `moved`, the others its `outside` writes."""
        assert self.host is not None
        server = record.name.partition("/")[0]
        cwd = self.host.server_cwd(server)
        keep = self.host.kept_folders(server)
        own = kept_paths(record.arguments, keep)
        served = cwd if cwd is not None and cwd != ws.root else None
        seen: set[Path] = set()
        for named in named_paths(record.result) + argument_paths(record.arguments) + own:
            if named.startswith("/"):
                source = Path(named)
            elif served is not None:
                source = served / named
            else:
                continue
            try:
                stat = source.stat()
                full = source.resolve()
                if not source.is_file() or stat.st_mtime_ns < since_ns or stat.st_size > MAX_BROUGHT_IN or \
                        full.is_relative_to(ws.root) or full in seen:
                    continue
            except (OSError, ValueError):  # not a path the file system takes (too long, a NUL byte)
                continue
            seen.add(full)
            temp = self.host.temp_dir(server)
            rel, in_served = f"{MEDIA}/{full.name}", False
            if served is not None and full.is_relative_to(served) and not (temp and full.is_relative_to(temp)):
                rel, in_served = full.relative_to(served).as_posix(), True
            kept = ws.bring_in(source, rel)
            if in_served and under_kept(rel, keep):
                moved.add(full)
            else:
                record.outside.append({"path": self._shown(server, full), "copied_to": kept})
            if kept not in record.files:
                record.files.append(kept)
                if kept != rel or named.startswith("/"):
                    record.add_note(f"[{named} copied to {kept}]")

    def _shown(self, server: str, path: Path) -> str:
        """A path outside the workspace as the record shows it: in the server's temp folder, ``$TMPDIR/<rel>``."""
        assert self.host is not None
        temp = self.host.temp_dir(server)
        return f"$TMPDIR/{path.relative_to(temp).as_posix()}" if temp and path.is_relative_to(temp) else str(path)

    def _show_temp(self, record: CallRecord) -> None:
        """Show the server's temp folder in the call's result as ``$TMPDIR``, as its `outside` writes show it: the
        folder is in the run's workspace, and a record names no folder of the run."""
        assert self.host is not None
        temp = self.host.temp_dir(record.name.partition("/")[0])
        if temp is not None and str(temp) in record.result:
            record.result = re.sub(re.escape(str(temp)) + r"(?![\w.-])", "$TMPDIR", record.result)

    async def _temp_writes(self, records: list[CallRecord], runnable: list[int], since_ns: int) -> None:
        """Add the files new or changed in a server's temp folder during the step to the `outside` writes of the
        step's first call to that server (unless a call of the step already reports them), looked at once no
        call to the server is in flight: the scratch files a call of another task has not removed yet are not
        this step's."""
        assert self.host is not None
        first: dict[str, int] = {}
        for i in runnable:
            first.setdefault(records[i].name.partition("/")[0], i)
        reported = {w["path"] for i in runnable for w in records[i].outside}
        for server, i in first.items():
            temp = self.host.temp_dir(server)
            if temp is None:
                continue
            await self.host.settled(server)
            for path in sorted(p for p in temp.rglob("*") if _written_since(p, since_ns)):
                shown = self._shown(server, path)
                if shown not in reported:
                    records[i].outside.append({"path": shown})

    def _record(self, record: CallRecord, ws: Workspace, key: str) -> None:
        server, _, tool = record.name.partition("/")
        files = [{"path": rel, "sha256": self.cache.store_blob(ws.path(rel))}
                 for rel in record.files if ws.path(rel).is_file()]
        self.cache.put_tool(key, ws.task_id, server, tool, record.arguments,
                            {"result": record.result, "is_error": record.is_error, "files": files,
                             "duration_s": record.duration_s,
                             **({"outside": record.outside} if record.outside else {})})

    def _replay(self, record: CallRecord, ws: Workspace, key: str) -> None:
        cached = self.cache.get_tool(key)
        if cached is None:
            raise CacheMiss(f"no recorded result for this call to {record.name} with these arguments in task "
                            f"{ws.task_id} (the run diverged from the recorded one, or it was never recorded)")
        record.result, record.is_error = cached.result, cached.is_error
        record.duration_s = cached.duration_s
        record.outside = list(cached.outside)
        for path, sha in cached.files:
            dest = ws.inside(path)
            if dest is None:
                continue
            if not self.cache.restore_blob(sha, dest):
                log.warning("cache blob %s of %s is missing; the file is not restored", sha, path)
            record.files.append(path)
