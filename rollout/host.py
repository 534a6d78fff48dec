"""MCP host: starts the configured servers over stdio, lists their tools and calls them.

The servers config has the published shape ``{"servers": {name: {command, args, env, disabled}}}``
(an optional ``cwd`` is accepted too). ``"python"``/``"python3"`` as a command means the running
interpreter, and such servers get the project on their PYTHONPATH. Environment values may name
variables of the host's environment as ``${VAR}``, so keys stay out of the file.

A server that fails to start, crashes or times out never stops the run: its calls come back as
tool errors with a one-line reason, and a crashed server is restarted on its next call (a bounded
number of times).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import re
import sys
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from engine.contract import InputError, read_json

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

log = logging.getLogger(__name__)

WORKSPACE_META_KEY = "m3bench/workspace"
"""Request ``_meta`` key carrying the task workspace; the shipped servers confine paths to it."""

PROJECT_ROOT = Path(__file__).resolve().parent.parent
_PYTHON_NAMES = {"python", "python3", "py"}
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class ServerSpec:
    """How to start one MCP server."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    disabled: bool = False


@dataclass(frozen=True)
class ToolInfo:
    """A tool as the model sees it: "server/tool", its description and its input schema."""

    name: str
    description: str
    input_schema: dict[str, Any]

    @property
    def server(self) -> str:
        """The server part of the name."""
        return self.name.split("/", 1)[0]

    @property
    def tool(self) -> str:
        """The tool part of the name."""
        return self.name.split("/", 1)[1]

    def to_json(self) -> dict[str, Any]:
        """A JSON object of this tool."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@dataclass
class ToolOutcome:
    """What one call gave back: its text rendering, whether it failed, and the images it returned."""

    text: str
    is_error: bool
    images: list[tuple[str, bytes]] = field(default_factory=list)


def _expand_env(value: str, where: str, path: Path) -> str:
    def repl(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise InputError(path, f"environment variable {name} is not set", field=where)
        return os.environ[name]

    return _ENV_REF.sub(repl, value)


def load_servers_config(path: str | Path) -> list[ServerSpec]:
    """Server specs of a servers config file, in file order (disabled ones included, marked)."""
    path = Path(path)
    data = read_json(path, "servers config")
    servers = data.get("servers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise InputError(path, "expected an object with a 'servers' object", field="servers")
    specs = []
    for name, entry in servers.items():
        where = f"servers.{name}"
        if "/" in name or not name.strip():
            raise InputError(path, "a server name must be non-empty and contain no '/'", field=where)
        if not isinstance(entry, dict):
            raise InputError(path, "expected an object", field=where)
        disabled = entry.get("disabled", False)
        if not isinstance(disabled, bool):
            raise InputError(path, "must be true or false", field=f"{where}.disabled")
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            raise InputError(path, "must be a non-empty string", field=f"{where}.command")
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise InputError(path, "must be a list of strings", field=f"{where}.args")
        env = entry.get("env") or {}
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise InputError(path, "must be an object of strings", field=f"{where}.env")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise InputError(path, "must be a string", field=f"{where}.cwd")
        if disabled:
            specs.append(ServerSpec(name, command, tuple(args), (), cwd, True))
            continue
        env = {k: _expand_env(v, f"{where}.env.{k}", path) for k, v in env.items()}
        if command in _PYTHON_NAMES:
            command = sys.executable
            extra = env.get("PYTHONPATH") or os.environ.get("PYTHONPATH")
            env["PYTHONPATH"] = os.pathsep.join([str(PROJECT_ROOT)] + ([extra] if extra else []))
        if cwd is not None:
            cwd = str((path.parent / cwd).resolve())
        specs.append(ServerSpec(name, command, tuple(args), tuple(sorted(env.items())), cwd, False))
    return specs


def render_content(blocks: list[Any], structured: Any) -> tuple[str, list[tuple[str, bytes]]]:
    """Text of an MCP result's content blocks, and the images among them as (mime type, bytes)."""
    parts: list[str] = []
    images: list[tuple[str, bytes]] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "image":
            images.append((block.mime_type, base64.b64decode(block.data)))
        elif kind == "audio":
            parts.append(f"[audio {block.mime_type}, {len(block.data) * 3 // 4} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[resource {resource.uri}, binary]")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    return "\n".join(parts), images


class _Server:
    """One server's process and session, run by a task that owns its async contexts."""

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
        """Start the process and the session; on failure, `error` says why."""
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
                self.error = _describe(exc)
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


def _describe(exc: BaseException) -> str:
    """One line for an exception from the SDK or the process."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class MCPHost:
    """The MCP servers of a run: start them, expose their tools, call them with a timeout."""

    def __init__(self, specs: list[ServerSpec], *, call_timeout: float = 60.0, start_timeout: float = 30.0,
                 max_restarts: int = 2, log_path: str | Path | None = None) -> None:
        self._servers = {s.name: _Server(s) for s in specs if not s.disabled}
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
        if self._log_path is not None:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            self._errlog = open(self._log_path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        else:
            self._errlog = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
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
                if server.session is session:
                    server.session = None
                    server.error = "the server exited"
                log.warning("MCP server %s exited during a call to %s", server_name, tool)
                return ToolOutcome(f"Error: MCP server '{server_name}' exited during the call", True)
            return ToolOutcome(f"Error: {exc.message}", True)
        except Exception as exc:  # boundary: transport trouble of any kind is the call's error
            return ToolOutcome(f"Error: {_describe(exc)}", True)
        text, images = render_content(list(result.content), result.structured_content)
        return ToolOutcome(text, bool(result.is_error), images)
