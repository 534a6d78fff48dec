"""The servers command (``scripts/servers.py``): build the servers' environments, check their health,
time the host's cost per call.

    python scripts/servers.py install --config FILE     # per-server environments (uv or venv+pip, npm)
    python scripts/servers.py check --config FILE       # start each server: a health table; exit 0 if all started
    python scripts/servers.py bench --config FILE --server NAME   # the host's cost per call of NAME's check call

Bad input is one line naming the file and the field, with exit status 2. This is the command line on
top of the rollout (it drives the ToolRunner too); nothing in rollout.mcp imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from engine.apps.kit import command_app
from engine.contract import InputError
from rollout.mcp.check import check_servers, health_table
from rollout.mcp.config import ServerSpec, read_servers_config
from rollout.mcp.host import MCPHost
from rollout.mcp.install import INSTALLERS, install_server
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="servers.py", description="Install, check and time the MCP servers of "
                                     "a servers config (the published mcp_servers.json shape, see rollout/README.md).")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("install", "build the per-server environments the config's install blocks ask for"),
                       ("check", "start each enabled server, list its tools, time a round trip; print a table"),
                       ("bench", "time one server's check call through the SDK, MCPHost and ToolRunner")):
        sub = commands.add_parser(name, help=text, description=text)
        sub.add_argument("--config", type=Path, required=True, help="the servers config (JSON)")
        sub.add_argument("--envs", type=Path, default=None, help="where per-server environments live (default: the "
                         "config's 'environments', else $M3BENCH_SERVER_ENVS or ~/.cache/m3bench/server-envs)")
        if name != "bench":
            sub.add_argument("--only", nargs="+", metavar="SERVER", help="only these servers")
    install = commands.choices["install"]
    install.add_argument("--installer", choices=INSTALLERS, default="auto",
                         help="uv, venv+pip, or auto (uv when found; default)")
    install.add_argument("--force", action="store_true", help="rebuild environments that are already there")
    check = commands.choices["check"]
    check.add_argument("--start-timeout", type=float, default=20.0, help="seconds for a server to start (default 20)")
    check.add_argument("--call-timeout", type=float, default=10.0, help="seconds for the round trip (default 10)")
    check.add_argument("--logs", type=Path, default=None, help="folder for the servers' stderr logs (default: a "
                       "temporary folder; failed starts show their stderr tail either way)")
    bench = commands.choices["bench"]
    bench.add_argument("--server", required=True, help="the server whose 'check' call is timed")
    bench.add_argument("-n", "--calls", type=int, default=200, help="calls per way (default 200)")
    return parser


def _selected(specs: list[ServerSpec], only: list[str] | None, config: Path) -> list[ServerSpec]:
    enabled = [s for s in specs if not s.disabled]
    if not only:
        return enabled
    unknown = sorted(set(only) - {s.name for s in enabled})
    if unknown:
        raise InputError(config, f"no enabled server named {', '.join(unknown)}", field="servers")
    return [s for s in enabled if s.name in only]


def _install(args: argparse.Namespace, specs: list[ServerSpec]) -> int:
    failed = 0
    for spec in specs:
        outcome = install_server(spec, args.installer, args.force)
        failed += outcome.status == "failed"
        print(f"{outcome.server:<24} {outcome.status:<18} {outcome.seconds:6.1f} s  {outcome.detail}", flush=True)
    return 1 if failed else 0


def _check(args: argparse.Namespace, specs: list[ServerSpec]) -> int:
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="m3bench-check-") as tmp:
        rows = asyncio.run(check_servers(specs, args.start_timeout, args.call_timeout, args.logs or Path(tmp)))
    print(health_table(rows))
    started = sum(r.started for r in rows)
    print(f"{started} of {len(rows)} server(s) started, {sum(r.tools for r in rows)} tools, "
          f"{time.monotonic() - began:.1f} s")
    return 0 if started == len(rows) else 1


def run(argv: list[str] | None = None) -> int:
    """Run a servers command; its exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    try:
        specs = read_servers_config(args.config, args.envs)
        if args.command == "bench":
            spec = next((s for s in specs if s.name == args.server and not s.disabled), None)
            if spec is None or spec.check is None:
                raise InputError(args.config, "needs an enabled server with a 'check' call",
                                 field=f"servers.{args.server}.check")
            print(asyncio.run(measure_overhead(spec, args.calls)).report(spec.name, spec.check[0]))
            return 0
        selected = _selected(specs, args.only, args.config)
        return _install(args, selected) if args.command == "install" else _check(args, selected)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


main = command_app("servers", run)
