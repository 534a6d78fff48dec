"""The tool catalogue the call outcome rules check calls against (engine.judging.call_rules.Catalogue),
for an evaluator that reads ``catalogue``, from one of three sources:

- a servers config (the published ``mcp_servers.json`` shape, ``{"servers": {...}}``): its servers are
  started, asked for their tools and stopped; servers that fail to start are named and left out of
  the catalogue rule;
- a rollout's recorded catalogue (``catalogue.json`` in a record-mode run's cache: ``{"tools": [...],
  "failures": {...}}``);
- a tools JSON: a list of ``{"name": "server/tool", "input_schema" | "inputSchema": {...}}``.

`run_catalogue` resolves an evaluator's ``catalogue`` setting (a file, ``auto`` or null) for a judge run.
"""

from __future__ import annotations

import logging
from pathlib import Path

from engine.contract import InputError, JsonObject, read_json
from engine.judging import Catalogue
from rollout.mcp.config import read_servers_config
from rollout.mcp.host import MCPHost

log = logging.getLogger(__name__)


def _tools(path: Path, items: object, where: str) -> dict[str, JsonObject | None]:
    if not isinstance(items, list):
        raise InputError(path, "must be a list of tools {name, input_schema}", field=where)
    tools: dict[str, JsonObject | None] = {}
    for i, tool in enumerate(items):
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or "/" not in name:
            raise InputError(path, "a tool needs a name \"server/tool\"", field=f"{where}[{i}].name")
        schema = tool.get("input_schema", tool.get("inputSchema"))
        tools[name.strip()] = schema if isinstance(schema, dict) else None
    return tools


async def _from_servers(path: Path, log_dir: Path | None, start_timeout: float) -> Catalogue:
    specs = read_servers_config(path)
    async with MCPHost(specs, start_timeout=start_timeout, log_dir=log_dir) as host:
        tools: dict[str, dict[str, object] | None] = {t.name: t.input_schema for t in host.catalogue()}
        failures = host.failures()
    for name, reason in failures.items():
        log.warning("MCP server %s did not start (%s): its calls are not judged by the catalogue", name, reason)
    disabled = {s.name for s in specs if s.disabled}
    return Catalogue(tools, frozenset(failures) | frozenset(disabled), f"servers config {path}")


async def load_catalogue(path: str | Path, log_dir: Path | None = None, start_timeout: float = 30.0) -> Catalogue:
    """The catalogue of a servers config (its servers' stderr logs go to log_dir), a recorded
    catalogue.json or a tools JSON (see the module)."""
    path = Path(path)
    root = read_json(path, "tool catalogue")
    if isinstance(root, dict) and isinstance(root.get("servers"), dict):
        return await _from_servers(path, log_dir, start_timeout)
    if isinstance(root, dict) and "tools" in root:
        failures = root.get("failures") or {}
        if not isinstance(failures, dict):
            raise InputError(path, "must be an object of server -> reason", field="failures")
        return Catalogue(_tools(path, root["tools"], "tools"), frozenset(failures), f"recorded catalogue {path}")
    if isinstance(root, list):
        return Catalogue(_tools(path, root, "tools"), source=f"tools file {path}")
    raise InputError(path, "not a servers config ({\"servers\": ...}), a recorded catalogue ({\"tools\": ...}) "
                           "or a list of tools")


async def run_catalogue(source: str | None, recorded: Path | None, log_dir: Path) -> Catalogue | None:
    """The catalogue an evaluator's ``catalogue`` setting names for a judge run: a file, ``auto`` (the
    rollout's recorded catalogue, `recorded`: <results_dir>/rollout/<model>/cache/catalogue.json, if any) or
    null (none)."""
    if source == "auto":
        source = str(recorded) if recorded is not None and recorded.is_file() else None
    if not source:
        log.info("no tool catalogue: unknown tools and schemas are judged from the results alone")
        return None
    return await load_catalogue(source, log_dir=log_dir)
