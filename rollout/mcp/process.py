"""One MCP server's process and client session over stdio: start, stop, restart; and the stderr log.

Each server runs in a task that owns the SDK's async contexts (the stdio client and the session),
so the process can be stopped from any other task. A server that fails to start keeps the reason in
`error` instead of raising.
"""

from __future__ import annotations

import asyncio
import logging
import os
from contextlib import AsyncExitStack
from pathlib import Path
from typing import IO, Any

from rollout.mcp.config import ServerSpec
from rollout.mcp.protocol import ToolInfo, describe_error

log = logging.getLogger(__name__)


def open_server_log(path: Path | None) -> IO[str]:
    """The file the servers' stderr goes to (appended), or the null device when no path is given."""
    if path is None:
        return open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (the caller closes it)
    path.parent.mkdir(parents=True, exist_ok=True)
    return open(path, "a", encoding="utf-8")  # noqa: SIM115 (the caller closes it)


class ServerProcess:
    """One server's process and session; `session` is None while it is not running."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.session: Any = None
        self.tools: list[ToolInfo] = []
        self.error: str | None = None
        self.restarts = 0
        self.generation = 0
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def start(self, start_timeout: float, errlog: IO[str]) -> None:
        """Start the process and the session and list the tools; on failure, `error` says why."""
        from mcp import ClientSession, StdioServerParameters, stdio_client

        ready = asyncio.Event()
        self._stop = asyncio.Event()
        self.session, self.error = None, None
        params = StdioServerParameters(command=self.spec.command, args=list(self.spec.args),
                                       env=dict(self.spec.env), cwd=self.spec.cwd)

        async def run(stop: asyncio.Event) -> None:
            try:
                async with AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
                    session = await stack.enter_async_context(
                        ClientSession(read, write, read_timeout_seconds=start_timeout))
                    await session.initialize()
                    self.tools = await self._list_tools(session)
                    self.session = session
                    self.generation += 1
                    ready.set()
                    await stop.wait()
            except Exception as exc:  # boundary: any start failure becomes the server's error
                self.error = describe_error(exc)
            finally:
                self.session = None
                ready.set()

        self._task = asyncio.create_task(run(self._stop), name=f"mcp-server-{self.spec.name}")
        try:
            await asyncio.wait_for(ready.wait(), start_timeout + 5)
        except asyncio.TimeoutError:
            self.error = f"no answer within {start_timeout:g} s"
            await self.stop()
        if self.session is None and self.error is None:
            self.error = "exited during start"

    async def _list_tools(self, session: Any) -> list[ToolInfo]:
        tools: list[ToolInfo] = []
        cursor = None
        while True:
            if cursor is None:
                result = await session.list_tools()
            else:
                from mcp.types import PaginatedRequestParams

                result = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
            for tool in result.tools:
                tools.append(ToolInfo(f"{self.spec.name}/{tool.name}", (tool.description or "").strip(),
                                      dict(tool.input_schema or {"type": "object"})))
            cursor = result.next_cursor
            if not cursor:
                return tools

    async def stop(self) -> None:
        """Stop the session and the process (the SDK closes stdin, then terminates the tree)."""
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 10)
            except asyncio.TimeoutError:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self.session = None

    def exited(self, session: Any) -> None:
        """Note that the process died under `session` (a later session is left alone)."""
        if self.session is session:
            self.session = None
            self.error = "the server exited"

    async def ensure(self, start_timeout: float, errlog: IO[str], max_restarts: int) -> None:
        """Restart a server that crashed after starting, while restarts remain."""
        async with self._lock:
            if self.session is not None or self.generation == 0 or self.restarts >= max_restarts:
                return
            self.restarts += 1
            log.warning("restarting MCP server %s (restart %d of %d)", self.spec.name, self.restarts,
                        max_restarts)
            await self.stop()
            await self.start(start_timeout, errlog)
