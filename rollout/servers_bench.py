"""The cost of the rollout's host per tool call (``python scripts/servers.py bench --server NAME``): a server's
check call timed through the bare MCP SDK session, MCPHost.call and ToolRunner.run_step (`measure_overhead`)."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rollout.mcp.config import ServerSpec
from rollout.mcp.host import MCPHost
from rollout.record import RolloutCache
from rollout.toolrunner import ToolRunner
from rollout.workspace import Workspace


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
    if spec.check is None:
        raise ValueError(f"server {spec.name} has no check call to time")
    tool, arguments = spec.check[0], json.loads(spec.check[1])
    name = f"{spec.name}/{tool}"
    async with MCPHost([spec], start_timeout=60) as host:
        server = host.servers[0]
        session = server.session
        if session is None:
            raise RuntimeError(f"server {spec.name} did not start: {server.error}")
        with tempfile.TemporaryDirectory() as tmp:
            ws = Workspace.fresh(Path(tmp), "bench")
            runner = ToolRunner(host, RolloutCache(tmp, "live"), host.catalogue())
            ways = {"sdk": lambda: session.call_tool(tool, arguments),
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
