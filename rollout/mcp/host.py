"""MCPHost: the MCP servers of a run, started over stdio; their tool catalogue and calls.

A server that fails to start, crashes or times out never stops the run: its calls come back as
tool errors with a one-line reason (a failed start's reason includes the tail of the server's
stderr). A crashed server is restarted on its next call, and so is one that stops answering: after
a call times out the server is pinged, and without an answer it is given up and restarted (both
within `max_restarts`). Path arguments are made absolute in the task workspace for servers in the
``workspace`` path mode, and the workspace's absolute path in results is shown as relative paths.
With a `scratch_dir` (the rollout's: ``<workspace>/.servers``), each server gets a temp folder of its own
there (TMPDIR, TEMP and TMP: ``<scratch_dir>/<server>``, empty at start, removed when the host closes), so
what it writes to its temp folder stays in the run's workspace, at the same path in every run of the same
settings, and can be seen (rollout.toolrunner reports it in the task's record). The host counts each server's
calls in flight, so that the temp folder can be looked at once no call is writing there (`settled`).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, cast

from engine.contract import JsonObject
from engine.contract.staged import remove_if_empty
from rollout.mcp.config import ServerSpec
from rollout.mcp.paths import from_workspace, to_workspace
from rollout.mcp.process import ServerProcess, file_name, redact
from rollout.mcp.protocol import WORKSPACE_META_KEY, ToolInfo, ToolOutcome, describe_error, render_content

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import RequestParamsMeta

log = logging.getLogger(__name__)


class MCPHost:
    """The MCP servers of a run: start them, expose their tools, call them with a timeout."""

    def __init__(self, specs: list[ServerSpec], *, call_timeout: float = 60.0, start_timeout: float = 30.0,
                 max_restarts: int = 2, ping_timeout: float = 5.0, log_dir: str | Path | None = None,
                 scratch_dir: str | Path | None = None) -> None:
        self.scratch_dir = Path(scratch_dir) if scratch_dir else None
        self._servers = {s.name: ServerProcess(s, Path(log_dir) if log_dir else None)
                         for s in specs if not s.disabled}
        self.call_timeout = call_timeout
        self.start_timeout = start_timeout
        self.max_restarts = max_restarts
        self.ping_timeout = ping_timeout
        self._in_flight: dict[str, int] = {}
        self._idle: dict[str, asyncio.Event] = {}

    async def __aenter__(self) -> MCPHost:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def servers(self) -> list[ServerProcess]:
        """The enabled servers, in config order."""
        return list(self._servers.values())

    async def start(self) -> None:
        """Start every enabled server concurrently; failures are kept and logged, not raised."""
        for server in self._servers.values():
            log.info("MCP server %s: %s", server.spec.name, server.spec.note)
            if self.scratch_dir is not None and server.temp_dir is None:
                server.temp_dir = (self.scratch_dir / file_name(server.spec.name)).resolve()
                shutil.rmtree(server.temp_dir, ignore_errors=True)  # what a killed run left
                server.temp_dir.mkdir(parents=True)
        await asyncio.gather(*(s.start(self.start_timeout) for s in self._servers.values()))
        for server in self._servers.values():
            if server.error:
                log.warning("MCP server %s failed to start: %s", server.spec.name, server.error)
            else:
                log.info("MCP server %s: %d tools, started in %.2f s", server.spec.name, len(server.tools),
                         server.started_in)

    async def close(self) -> None:
        """Stop every server, then remove their temp folders (and scratch_dir, when that leaves it empty)."""
        await asyncio.gather(*(s.stop() for s in self._servers.values()))
        for server in self._servers.values():
            if server.temp_dir is not None:
                shutil.rmtree(server.temp_dir, ignore_errors=True)
                server.temp_dir = None
        if self.scratch_dir is not None:
            remove_if_empty(self.scratch_dir)

    def catalogue(self) -> list[ToolInfo]:
        """Tools of the servers that started, in config order then in each server's order."""
        return [tool for server in self._servers.values() for tool in server.tools]

    def failures(self) -> dict[str, str]:
        """Servers that are not running now, with the reason."""
        return {name: s.error or "not running" for name, s in self._servers.items() if s.session is None}

    def server_cwd(self, name: str) -> Path | None:
        """The working directory a server was started in (None for an unknown server)."""
        server = self._servers.get(name)
        return Path(server.spec.cwd or ".").resolve() if server is not None else None

    def temp_dir(self, name: str) -> Path | None:
        """The server's own temp folder (None without one, or for an unknown server)."""
        server = self._servers.get(name)
        return server.temp_dir if server is not None else None

    def kept_folders(self, name: str) -> tuple[str, ...]:
        """The server's own folders whose path arguments are sent as written (the config's ``paths.keep``)."""
        server = self._servers.get(name)
        return server.spec.keep_paths if server is not None else ()

    async def settled(self, name: str) -> None:
        """Return once no call to the server is in flight (at once when none is), or after `call_timeout` s
        of calls overlapping without a pause: what a call writes to its temp folder and removes before it
        answers (a tool's scratch files) is then gone, whichever task's call it was."""
        idle = self._idle.get(name)
        if idle is None or idle.is_set():
            return
        try:
            await asyncio.wait_for(idle.wait(), self.call_timeout)
        except TimeoutError:
            log.debug("MCP server %s had calls in flight for %g s; its temp folder is looked at now", name,
                      self.call_timeout)

    async def call(self, name: str, arguments: JsonObject, workspace: Path | None = None) -> ToolOutcome:
        """Call "server/tool" with the task workspace in the request's _meta; never raises for tool trouble."""
        server_name, _, tool = name.partition("/")
        server = self._servers.get(server_name)
        if server is None or not tool:
            return ToolOutcome(f"Error: unknown MCP server '{server_name}'", True)
        if server.session is None:
            await server.ensure(self.start_timeout, self.max_restarts)
        session = server.session
        if session is None:
            return ToolOutcome(f"Error: MCP server '{server_name}' is not running ({server.error})", True)
        meta: RequestParamsMeta | None = None
        if workspace is not None:
            # an open map of the SDK (extra keys of any value), which mypy's TypedDicts cannot express yet
            meta = cast("RequestParamsMeta", {WORKSPACE_META_KEY: str(workspace)})
            if server.spec.paths == "workspace":
                sent = to_workspace(arguments, workspace, keep=server.spec.keep_paths)
                arguments = sent if isinstance(sent, dict) else arguments  # an object's paths: an object
        idle = self._idle.setdefault(server_name, asyncio.Event())
        self._in_flight[server_name] = self._in_flight.get(server_name, 0) + 1
        idle.clear()
        try:
            outcome = await self._send(server, session, tool, arguments, meta)
        finally:
            self._in_flight[server_name] -= 1
            if not self._in_flight[server_name]:
                idle.set()
        text = from_workspace(outcome.text, workspace) if workspace is not None else outcome.text
        return ToolOutcome(redact(text, server.spec.secrets), outcome.is_error, outcome.images)

    async def _send(self, server: ServerProcess, session: ClientSession, tool: str, arguments: JsonObject,
                    meta: RequestParamsMeta | None) -> ToolOutcome:
        """One tools/call on a session; transport trouble, time-outs and frozen servers become error outcomes."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        name = server.spec.name
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=self.call_timeout, meta=meta)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                text = f"Error: the call timed out after {self.call_timeout:g} s"
                if not await server.answers(session, self.ping_timeout):
                    server.abandon(session, f"stopped answering (no reply to a ping {self.ping_timeout:g} s "
                                            f"after a call timed out)")
                    log.warning("MCP server %s stopped answering after a call to %s timed out", name, tool)
                    left = server.restarts < self.max_restarts
                    text += f"; MCP server '{name}' stopped answering" + (
                        " and is restarted for the next call" if left else " (no restarts left)")
                return ToolOutcome(text, True)
            if exc.code == CONNECTION_CLOSED:
                server.abandon(session, "the server exited")
                log.warning("MCP server %s exited during a call to %s", name, tool)
                return ToolOutcome(f"Error: MCP server '{name}' exited during the call", True)
            return ToolOutcome(f"Error: {exc.message}", True)
        except Exception as exc:  # boundary: transport trouble of any kind is the call's error
            return ToolOutcome(f"Error: {describe_error(exc)}", True)
        text, images = render_content(list(result.content), result.structured_content)
        return ToolOutcome(text, bool(result.is_error), images)
