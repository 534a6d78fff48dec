"""Health of the servers of a config (``scripts/servers.py check``).

`check_servers` starts every enabled server at once, lists its tools and times one round trip: the
entry's ``check`` call when it has one, else a ping. A server that hangs is given up after the
start timeout, so the whole check ends within about start_timeout + call_timeout + 15 s. A server whose
build cannot succeed as written (the registry lacks a package it needs, found by ``install``) is not
started: its row says so. A server that started without a system package one of its tools needs is
warned about (`Health.warning`).
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path

from rollout.mcp.config import ServerSpec
from rollout.mcp.host import MCPHost
from rollout.mcp.process import ServerProcess
from rollout.mcp.requirements import missing_here, server_system_packages, system_package_uses

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
    skipped: bool = False
    warning: str = ""

    @property
    def status(self) -> str:
        """``started``, ``FAILED`` or ``skipped``."""
        return "skipped" if self.skipped else "started" if self.started else "FAILED"


SLOW = ("; it did not answer within the start timeout (slower on a loaded machine; a first start, which install "
        "makes for each server it builds, compiles its modules): check again, or give a longer --start-timeout")


def lacking_for_tools(spec: ServerSpec) -> str:
    """For a server that started: the system packages its Python distributions use that this machine lacks
    (a tool of it fails without them), with what needs each; "" when none is lacking."""
    uses = system_package_uses(spec.install.requirements if spec.install else (), spec.env_folder)
    lacking = missing_here(uses)
    return "; ".join(f"started without {p} (missing here), which {uses[p]} needs" for p in lacking)


def skipped_row(spec: ServerSpec) -> Health:
    """The row of a server whose build cannot succeed as written: not started, the build's reason."""
    why = (spec.problem or "").removeprefix("its build failed: ")
    return Health(spec.name, False, 0, None, None, "-",
                  f"not started: its build cannot succeed as written ({why}); python scripts/servers.py "
                  f"install --force --only {spec.name} tries again",
                  skipped=True)


async def _probe(host: MCPHost, server: ServerProcess, call_timeout: float) -> Health:
    spec = server.spec
    if server.session is None:
        error = server.error or "not running"
        if "'initialize' timed out" in error or error.startswith("no answer within"):
            error += SLOW
        return Health(spec.name, False, 0, None, None, "-", with_system_cause(spec, error))
    if spec.check is not None:
        tool, arguments = spec.check[0], json.loads(spec.check[1])
        began = time.perf_counter()
        outcome = await host.call(f"{spec.name}/{tool}", arguments)
        took = 1000 * (time.perf_counter() - began)
        detail = f"the check call failed: {outcome.text.splitlines()[0][:200]}" if outcome.is_error else ""
        return _warned(Health(spec.name, True, len(server.tools), server.started_in, took, tool, detail), spec)
    times = []
    for _ in range(PINGS):
        began = time.perf_counter()
        if not await server.answers(server.session, call_timeout):
            return _warned(Health(spec.name, True, len(server.tools), server.started_in, None, "ping",
                                  f"no answer to a ping within {call_timeout:g} s"), spec)
        times.append(1000 * (time.perf_counter() - began))
    return _warned(Health(spec.name, True, len(server.tools), server.started_in, statistics.median(times), "ping"),
                   spec)


def _warned(row: Health, spec: ServerSpec) -> Health:
    """A started server's row with the system packages its tools need and this machine lacks, in its detail."""
    warning = lacking_for_tools(spec)
    if not warning:
        return row
    return replace(row, warning=warning, detail="; ".join(filter(None, [row.detail, f"warning: {warning}"])))


_LIBRARY = re.compile(r"(?i)shared (?:library|object)|not installed|not in (?:your )?PATH|NotFoundError|"
                      r"libGL|No such file or directory: '(?:tesseract|pdftoppm)")


def with_system_cause(spec: ServerSpec, error: str) -> str:
    """A failed server's reason with the system packages it needs and this machine lacks: first, as the cause,
    when its error speaks of a missing library or program; else after the reason."""
    lacking = missing_here(server_system_packages(spec.install.requirements if spec.install else (),
                                                  spec.env_folder, spec.install.build_dir if spec.install else None))
    if not lacking:
        return error
    said = (f"needs system package(s) {' '.join(lacking)}, missing here (python scripts/servers.py system-deps "
            "lists them for your package manager)")
    return f"{said}: {error}" if _LIBRARY.search(error) else f"{error}; it also {said}"


async def check_servers(specs: list[ServerSpec], start_timeout: float = 20.0, call_timeout: float = 10.0,
                        log_dir: Path | None = None) -> list[Health]:
    """Start every enabled server, list its tools, time a round trip; one row per server, in config order (a
    server whose build cannot succeed as written is not started: `skipped_row`)."""
    started = [s for s in specs if s.unbuildable is None]
    host = MCPHost(started, start_timeout=start_timeout, call_timeout=call_timeout, max_restarts=0, log_dir=log_dir)
    await host.start()
    try:
        rows = {r.server: r for r in await asyncio.gather(*(_probe(host, s, call_timeout) for s in host.servers))}
    finally:
        await host.close()
    return [rows[s.name] if s.unbuildable is None else skipped_row(s) for s in specs]


def health_table(rows: list[Health]) -> str:
    """The health rows as a plain-text table."""
    header = ("server", "status", "tools", "start", "round trip", "detail")
    lines = [(r.server, r.status, str(r.tools) if r.started else "-",
              f"{r.start_s:.2f} s" if r.start_s is not None else "-",
              f"{r.round_trip_ms:.1f} ms ({r.probe})" if r.round_trip_ms is not None else "-", r.detail)
             for r in rows]
    widths = [max(len(x[i]) for x in [header, *lines]) for i in range(len(header) - 1)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
                     for row in [header, *lines]).rstrip()
