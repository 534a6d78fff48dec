"""One MCP server's process and client session over stdio: start, stop, restart, and its stderr log.

Each server runs in a task that owns the SDK's async contexts (the stdio client and the session),
so the process can be stopped from any other task. A server that fails to start keeps the reason in
`error`, with the tail of what it wrote to stderr and the environment variables it read and did not
get (`rollout.mcp.envhints`), instead of raising. Each server's stderr goes to
its own log file (``<log_dir>/<server>.log``), a header line before each start. A line a server prints on
stdout that is no MCP message (``print("Starting server")`` with ``PYTHONUNBUFFERED=1``) is skipped with
one warning naming the server and the line, in the rollout's log and the server's, instead of the SDK's
parse traceback.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import AsyncIterable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import anyio

from rollout.mcp.config import ServerSpec
from rollout.mcp.envhints import missing_variables_hint
from rollout.mcp.protocol import ToolInfo, describe_error

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp import ClientSession
    from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)

TAIL_LINES = 6
TAIL_CHARS = 600
STDERR_CHARS = 65536
"""The end of a failed start's stderr searched for the environment variables it missed."""
_STACK_FRAME = re.compile(r"\s+at \S")
"""JavaScript stack frames, left out of stderr tails so the error line stays in them."""
TEMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")
"""The variables that name the temp folder (Python's tempfile, Node's os.tmpdir(), most C libraries)."""
STRAY_CHARS = 200
"""How much of a stray stdout line a warning shows."""
_SDK_PARSE_FAILURE = "Failed to parse JSONRPC message from server"


class _NoParseTraceback(logging.Filter):
    """Leaves out the MCP client's traceback for a stdout line that is no MCP message: `ServerProcess`
    reports each such line in one warning that names the server."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != _SDK_PARSE_FAILURE


logging.getLogger("mcp.client.stdio").addFilter(_NoParseTraceback())


def stray_line(exc: Exception) -> str:
    """The stdout line behind the MCP client's parse error (its validation input), else the error's first line."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            value = errors()[0].get("input")
        except (IndexError, TypeError, AttributeError, ValueError):
            value = None
        if isinstance(value, (str, bytes)):
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            return text if len(text) <= STRAY_CHARS else text[:STRAY_CHARS] + "..."
    return describe_error(exc)


def file_name(server: str) -> str:
    """A server's name as a file or folder name."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", server)


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """The text with every secret value replaced by ``[redacted]``."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "[redacted]")
    return text


class ServerProcess:
    """One server's process and session; `session` is None while it is not running."""

    def __init__(self, spec: ServerSpec, log_dir: Path | None = None) -> None:
        self.spec = spec
        self.session: ClientSession | None = None
        self.tools: list[ToolInfo] = []
        self.error: str | None = None
        self.restarts = 0
        self.generation = 0
        self.started_in: float | None = None
        self.log_path = log_dir / f"{file_name(spec.name)}.log" if log_dir else None
        self.temp_dir: Path | None = None
        """The server's own temp folder (its TMPDIR, TEMP and TMP), when the host gives it one."""
        self._log_offset = 0
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def _open_log(self) -> TextIO:
        """The file this start's stderr goes to, after a header line (the null device without a log folder)."""
        if self.log_path is None:
            return open(os.devnull, "w", encoding="utf-8")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.log_path, "a", encoding="utf-8")
        handle.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} MCP server '{self.spec.name}', start "
                     f"{self.restarts + 1}: {os.path.basename(self.spec.command)}\n")
        handle.flush()
        self._log_offset = handle.tell()
        return handle

    def _stderr(self) -> str:
        """What the current (or last) process wrote to stderr (its last STDERR_CHARS characters)."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as fh:
            fh.seek(max(self._log_offset, fh.seek(0, os.SEEK_END) - STDERR_CHARS))
            return fh.read().decode("utf-8", "replace")

    def stderr_tail(self) -> str:
        """The last lines the current (or last) process wrote to stderr (JavaScript stack frames left out), on one
        line, secrets redacted."""
        text = self._stderr()
        lines = [line.strip() for line in text.splitlines() if line.strip() and not _STACK_FRAME.match(line)]
        lines = lines[-TAIL_LINES:]
        tail = redact(" | ".join(lines), self.spec.secrets)
        return tail if len(tail) <= TAIL_CHARS else "..." + tail[-TAIL_CHARS:]

    def _with_tail(self, reason: str) -> str:
        tail = self.stderr_tail()
        return f"{reason}; stderr: {tail}" if tail else reason

    async def start(self, start_timeout: float) -> None:
        """Start the process and the session and list the tools; on failure, `error` says why."""
        from mcp import ClientSession, StdioServerParameters, stdio_client

        self.session, self.error, self.started_in = None, None, None
        if self.spec.problem:
            self.error = self.spec.problem
            return
        ready = asyncio.Event()
        self._stop = asyncio.Event()
        env = dict(self.spec.env)
        if self.temp_dir is not None:
            env.update(dict.fromkeys(TEMP_VARIABLES, str(self.temp_dir)))
        params = StdioServerParameters(command=self.spec.command, args=list(self.spec.args), env=env,
                                       cwd=self.spec.cwd)
        errlog = self._open_log()
        began = time.monotonic()

        async def run(stop: asyncio.Event) -> None:
            try:
                async with AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
                    read = await self._messages_only(stack, read, errlog)
                    session = await stack.enter_async_context(
                        ClientSession(read, write, read_timeout_seconds=start_timeout))
                    await session.initialize()
                    self.tools = await self._list_tools(session)
                    self.session, self.started_in = session, time.monotonic() - began
                    self.generation += 1
                    ready.set()
                    await stop.wait()
            except Exception as exc:  # boundary: any start failure becomes the server's error
                if not ready.is_set():
                    self.error = describe_error(exc)
            finally:
                self.session = None
                errlog.close()
                ready.set()

        self._task = asyncio.create_task(run(self._stop), name=f"mcp-server-{self.spec.name}")
        try:
            await asyncio.wait_for(ready.wait(), start_timeout + 5)
        except asyncio.TimeoutError:
            self.error = f"no answer within {start_timeout:g} s"
        if self.session is None:
            reason = self.error or "exited during start"
            await self.stop()
            self.error = self._with_tail(reason)
            hint = missing_variables_hint(self._stderr(), dict(self.spec.env), self.spec.command, self.spec.args,
                                          self.spec.cwd, exited="timed out" not in reason and "no answer" not in reason)
            if hint:
                self.error += f"; {hint}"

    async def _messages_only(self, stack: AsyncExitStack, read: AsyncIterable[SessionMessage | Exception],
                             errlog: TextIO) -> MemoryObjectReceiveStream[SessionMessage]:
        """A stream of the MCP messages of `read`; each stdout line that is no MCP message is warned about (in
        the rollout's log and the server's) and skipped."""
        send: MemoryObjectSendStream[SessionMessage]
        receive: MemoryObjectReceiveStream[SessionMessage]
        send, receive = anyio.create_memory_object_stream(0)
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)

        async def forward() -> None:
            async with send:
                try:
                    async for item in read:
                        if isinstance(item, Exception):
                            line = redact(stray_line(item), self.spec.secrets)
                            log.warning("MCP server %s printed a line that is no MCP message on stdout (skipped): "
                                        "%r", self.spec.name, line)
                            if not errlog.closed:
                                errlog.write(f"[stdout, no MCP message, skipped] {line}\n")
                                errlog.flush()
                            continue
                        await send.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return  # the session or the transport is gone

        group.start_soon(forward)
        return receive

    async def _list_tools(self, session: ClientSession) -> list[ToolInfo]:
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

    async def answers(self, session: ClientSession, timeout: float) -> bool:
        """Whether the server behind `session` answers a ping within `timeout` seconds."""
        try:
            await asyncio.wait_for(session.send_ping(), timeout)
        except Exception:  # boundary: no answer of any kind means no
            return False
        return True

    def abandon(self, session: ClientSession, reason: str) -> None:
        """Give up the process behind `session` (it died or froze); a later session is left alone."""
        if self.session is session:
            self.session = None
            self.error = self._with_tail(reason)

    async def ensure(self, start_timeout: float, max_restarts: int) -> None:
        """Restart a server that crashed or froze after starting, while restarts remain."""
        async with self._lock:
            if self.session is not None or self.generation == 0 or self.restarts >= max_restarts:
                return
            self.restarts += 1
            log.warning("restarting MCP server %s (restart %d of %d): %s", self.spec.name, self.restarts,
                        max_restarts, self.error)
            await self.stop()
            await self.start(start_timeout)
