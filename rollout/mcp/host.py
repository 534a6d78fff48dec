"""MCPHost: the MCP servers of a run, started over stdio; their tool catalogue and calls.

A server that fails to start, crashes or times out never stops the run: its calls come back as
tool errors with a one-line reason, and a crashed server is restarted on its next call (a bounded
number of times).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import IO, Any

from rollout.mcp.config import ServerSpec
from rollout.mcp.process import ServerProcess, open_server_log
from rollout.mcp.protocol import WORKSPACE_META_KEY, ToolInfo, ToolOutcome, describe_error, render_content

log = logging.getLogger(__name__)


class MCPHost:
    """The MCP servers of a run: start them, expose their tools, call them with a timeout."""

    def __init__(self, specs: list[ServerSpec], *, call_timeout: float = 60.0, start_timeout: float = 30.0,
                 max_restarts: int = 2, log_path: str | Path | None = None) -> None:
        self._servers = {s.name: ServerProcess(s) for s in specs if not s.disabled}
        self.call_timeout = call_timeout
        self.start_timeout = start_timeout
        self.max_restarts = max_restarts
        self._log_path = Path(log_path) if log_path else None
        self._errlog: IO[str] | None = None

    async def __aenter__(self) -> MCPHost:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Start every enabled server concurrently; failures are kept, not raised."""
        self._errlog = open_server_log(self._log_path)
        await asyncio.gather(*(s.start(self.start_timeout, self._errlog) for s in self._servers.values()))
        for server in self._servers.values():
            if server.error:
                log.warning("MCP server %s failed to start: %s", server.spec.name, server.error)
            else:
                log.info("MCP server %s: %d tools", server.spec.name, len(server.tools))

    async def close(self) -> None:
        """Stop every server."""
        await asyncio.gather(*(s.stop() for s in self._servers.values()))
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    def catalogue(self) -> list[ToolInfo]:
        """Tools of the servers that started, in config order then in each server's order."""
        return [tool for server in self._servers.values() for tool in server.tools]

    def failures(self) -> dict[str, str]:
        """Servers that are not running now, with the reason."""
        return {name: s.error or "not running" for name, s in self._servers.items() if s.session is None}

    async def call(self, name: str, arguments: dict[str, Any], workspace: Path | None = None) -> ToolOutcome:
        """Call "server/tool" with the task workspace in the request's _meta; never raises for tool trouble."""
        server_name, _, tool = name.partition("/")
        server = self._servers.get(server_name)
        if server is None or not tool:
            return ToolOutcome(f"Error: unknown MCP server '{server_name}'", True)
        assert self._errlog is not None, "call() before start()"
        if server.session is None:
            await server.ensure(self.start_timeout, self._errlog, self.max_restarts)
        session = server.session
        if session is None:
            return ToolOutcome(f"Error: MCP server '{server_name}' is not running ({server.error})", True)
        meta = {WORKSPACE_META_KEY: str(workspace)} if workspace is not None else None
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=self.call_timeout, meta=meta)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                return ToolOutcome(f"Error: the call timed out after {self.call_timeout:g} s", True)
            if exc.code == CONNECTION_CLOSED:
                server.exited(session)
                log.warning("MCP server %s exited during a call to %s", server_name, tool)
                return ToolOutcome(f"Error: MCP server '{server_name}' exited during the call", True)
            return ToolOutcome(f"Error: {exc.message}", True)
        except Exception as exc:  # boundary: transport trouble of any kind is the call's error
            return ToolOutcome(f"Error: {describe_error(exc)}", True)
        text, images = render_content(list(result.content), result.structured_content)
        return ToolOutcome(text, bool(result.is_error), images)
