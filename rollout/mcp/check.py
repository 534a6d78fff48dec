"""Health of the servers of a config (``scripts/servers.py check``) and the host's own cost per call
(``scripts/servers.py bench``).

`check_servers` starts every enabled server at once, lists its tools and times one round trip: the
entry's ``check`` call when it has one, else a ping. A server that hangs is given up after the
start timeout, so the whole check ends within about start_timeout + call_timeout + 15 s.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rollout.mcp.config import ServerSpec
from rollout.mcp.host import MCPHost
from rollout.mcp.process import ServerProcess

PINGS = 5


@dataclass(frozen=True)
class Health:
    """One server's row of the health table."""

    server: str
    started: bool
    tools: int
    start_s: float | None
    round_trip_ms: float | None
    probe: str
    detail: str = ""


async def _probe(host: MCPHost, server: ServerProcess, call_timeout: float) -> Health:
    spec = server.spec
    if server.session is None:
        return Health(spec.name, False, 0, None, None, "-", server.error or "not running")
    if spec.check is not None:
        tool, arguments = spec.check[0], json.loads(spec.check[1])
        began = time.perf_counter()
        outcome = await host.call(f"{spec.name}/{tool}", arguments)
        took = 1000 * (time.perf_counter() - began)
        detail = f"the check call failed: {outcome.text.splitlines()[0][:200]}" if outcome.is_error else ""
        return Health(spec.name, True, len(server.tools), server.started_in, took, tool, detail)
    times = []
    for _ in range(PINGS):
        began = time.perf_counter()
        if not await server.answers(server.session, call_timeout):
            return Health(spec.name, True, len(server.tools), server.started_in, None, "ping",
                          f"no answer to a ping within {call_timeout:g} s")
        times.append(1000 * (time.perf_counter() - began))
    return Health(spec.name, True, len(server.tools), server.started_in, statistics.median(times), "ping")


async def check_servers(specs: list[ServerSpec], start_timeout: float = 20.0, call_timeout: float = 10.0,
                        log_dir: Path | None = None) -> list[Health]:
    """Start every enabled server, list its tools, time a round trip; one row per server, in config order."""
    host = MCPHost(specs, start_timeout=start_timeout, call_timeout=call_timeout, max_restarts=0, log_dir=log_dir)
    await host.start()
    try:
        return list(await asyncio.gather(*(_probe(host, s, call_timeout) for s in host.servers)))
    finally:
        await host.close()


def health_table(rows: list[Health]) -> str:
    """The health rows as a plain-text table."""
    header = ("server", "status", "tools", "start", "round trip", "detail")
    lines = [(r.server, "started" if r.started else "FAILED", str(r.tools) if r.started else "-",
              f"{r.start_s:.2f} s" if r.start_s is not None else "-",
              f"{r.round_trip_ms:.1f} ms ({r.probe})" if r.round_trip_ms is not None else "-", r.detail)
             for r in rows]
    widths = [max(len(x[i]) for x in [header, *lines]) for i in range(len(header) - 1)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
                     for row in [header, *lines]).rstrip()


@dataclass(frozen=True)
class Overhead:
    """Medians in milliseconds of one call made three ways, and the host's share."""

    calls: int
    sdk_ms: float
    host_ms: float
    runner_ms: float

    def report(self, server: str, tool: str) -> str:
        """A few lines for the terminal."""
        return (f"{server}/{tool}, {self.calls} calls each, medians:\n"
                f"  MCP SDK session.call_tool     {self.sdk_ms:7.2f} ms  (the server's own time and the transport)\n"
                f"  MCPHost.call                  {self.host_ms:7.2f} ms  (+{self.host_ms - self.sdk_ms:.2f} ms)\n"
                f"  ToolRunner.run_step, 1 call   {self.runner_ms:7.2f} ms  (+{self.runner_ms - self.sdk_ms:.2f} ms: "
                "paths, workspace snapshot, files)")


async def measure_overhead(spec: ServerSpec, calls: int = 200) -> Overhead:
    """Time the entry's check call through the bare SDK session, MCPHost.call and ToolRunner.run_step."""
    from rollout.record import RolloutCache
    from rollout.toolrunner import ToolRunner
    from rollout.workspace import Workspace

    if spec.check is None:
        raise ValueError(f"server {spec.name} has no check call to time")
    tool, arguments = spec.check[0], json.loads(spec.check[1])
    name = f"{spec.name}/{tool}"
    async with MCPHost([spec], start_timeout=60) as host:
        server = host.servers[0]
        if server.session is None:
            raise RuntimeError(f"server {spec.name} did not start: {server.error}")
        with tempfile.TemporaryDirectory() as tmp:
            ws = Workspace.fresh(Path(tmp), "bench")
            runner = ToolRunner(host, RolloutCache(tmp, "live"), host.catalogue())
            ways = {"sdk": lambda: server.session.call_tool(tool, arguments),
                    "host": lambda: host.call(name, arguments, ws.root),
                    "runner": lambda: runner.run_step([{"name": name, "arguments": arguments}], {name}, ws, 1)}
            times: dict[str, list[float]] = {k: [] for k in ways}
            for _ in range(10):
                await ways["sdk"]()
            for _ in range(calls):
                for key, way in ways.items():
                    began = time.perf_counter()
                    await way()
                    times[key].append(1000 * (time.perf_counter() - began))
    return Overhead(calls, *(statistics.median(times[k]) for k in ("sdk", "host", "runner")))
