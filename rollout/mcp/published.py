"""Published servers configs in other shapes than M3-Bench's ``mcp_servers.json``, read as the completion
(``python scripts/servers.py init DIR --complete CONFIG``) reads M3-Bench's. MCPVerse's
``mcpverse/tool_full.json`` is one:

- its entries are under ``mcpServers`` (the Claude Desktop key), not ``servers`` (`servers_of`);
- its paths are written ``${MCPVERSE_ROOT}/mcpverse/...``, the folder above the config's, which MCPVerse's
  runner substitutes before reading it: the completion writes that folder in their place (`root_variables`);
- it runs ``uv`` with its options before ``run`` (``uv --directory D run X``), as ``uv tool run X`` and as
  ``uv run --with P X``: rewritten to ``uv run --directory D X``, ``uvx X`` and ``uvx --from P X``
  (`plain_entry`);
- its remote servers (``{"type": "http", "url": U}``, ``{"url": U, "prefer_sse": true}``) have no command:
  they are reached over stdio through ``mcp-remote``, as its own ``berlin-transport`` entry is;
- its ``npx PKG`` and ``uvx PKG`` entries fetch their package at every start: `npm_pin` names the version
  the npm registry has now, so that ``install`` fetches it once and the server starts offline.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from engine.contract import InputError, JsonObject, JsonValue

SERVER_KEYS = ("servers", "mcpServers")
"""Where a config keeps its entries: M3-Bench's ``servers``, MCPVerse's (and Claude Desktop's) ``mcpServers``."""

ROOT_VARIABLES = {"MCPVERSE_ROOT": 1}
"""Variables a published runner sets to a folder above its config before reading it, by how many levels above
the config's folder (MCPVerse's ``mcp_agent_runner.py``: the folder above ``mcpverse/``)."""

NPM_REGISTRY = "https://registry.npmjs.org/{name}/latest"
BRIDGE = "mcp-remote"
"""The npm package that serves a remote MCP server (streamable HTTP or SSE) over stdio."""


def servers_of(data: object, path: Path) -> tuple[str, JsonObject]:
    """(the key, the entries) of a servers config: ``servers``, else ``mcpServers``; InputError for neither."""
    if isinstance(data, dict):
        for key in SERVER_KEYS:
            if key in data:
                if not isinstance(data[key], dict):
                    raise InputError(path, f"expected an object with a '{key}' object", field=key)
                return key, data[key]
    raise InputError(path, "expected an object with a 'servers' object (or MCPVerse's 'mcpServers')", field="servers")


def root_variables(config: Path) -> dict[str, str]:
    """``${NAME}`` -> the folder a published runner gives NAME, for the root variables `config`'s text uses."""
    text = config.read_text(encoding="utf-8", errors="replace")
    return {f"${{{name}}}": str(config.resolve().parents[levels])
            for name, levels in ROOT_VARIABLES.items() if f"${{{name}}}" in text}


def _substituted(value: object, variables: dict[str, str]) -> object:
    """Strings (in lists and objects too) with each variable written out."""
    if isinstance(value, str):
        for name, folder in variables.items():
            value = value.replace(name, folder)
        return value
    if isinstance(value, list):
        return [_substituted(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _substituted(v, variables) for k, v in value.items()}
    return value


def _uv(args: list[str]) -> tuple[str, list[str], str] | None:
    """(command, args, what was done) for ``uv`` forms the completion does not read; None for the others."""
    if args[:2] == ["tool", "run"] and len(args) > 2:
        return "uvx", args[2:], "uv tool run -> uvx"
    if args[:1] == ["--directory"] and len(args) > 3 and args[2] == "run":
        return "uv", ["run", "--directory", args[1], *args[3:]], "uv --directory D run -> uv run --directory D"
    if args[:2] == ["run", "--with"] and len(args) > 3 and not args[3].startswith("-"):
        return "uvx", ["--from", args[2], *args[3:]], "uv run --with P -> uvx --from P"
    return None


def _bridged(entry: JsonObject, path: Path, where: str) -> tuple[JsonObject, str]:
    """A remote server's entry as a stdio entry running ``mcp-remote URL`` (SSE only where it prefers SSE)."""
    url, headers = entry.get("url"), entry.get("headers") or {}
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise InputError(path, "must be an http(s) URL (an entry with no command is a remote server)",
                         field=f"{where}.url")
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise InputError(path, "must be an object of strings", field=f"{where}.headers")
    sse = entry.get("prefer_sse") is True or entry.get("type") == "sse"
    args: list[JsonValue] = ["-y", BRIDGE, url, *(["--transport", "sse-only"] if sse else [])]
    for key, value in headers.items():
        args += ["--header", f"{key}:{value}"]
    kept = {k: v for k, v in entry.items() if k not in ("url", "headers", "type", "prefer_sse", "transport")}
    return {"command": "npx", "args": args, **kept}, f"a remote server ({url}): npx {BRIDGE} serves it over stdio"


def plain_entry(where: str, entry: JsonValue, variables: dict[str, str], path: Path) -> tuple[JsonValue, list[str]]:
    """An entry (at `where` in the config at `path`) in the forms the completion reads (a new object), and a
    note per change; other values as given."""
    if not isinstance(entry, dict):
        return entry, []
    plain: JsonObject = entry
    notes = []
    if variables and (text := json.dumps(plain)) != (done := json.dumps(_substituted(plain, variables))):
        plain = json.loads(done)
        notes.append(", ".join(f"{v} -> {f}" for v, f in variables.items() if v in text) + " (as its runner sets it)")
    if "command" not in plain and ("url" in plain or plain.get("type") in ("http", "sse", "streamable-http")):
        plain, note = _bridged(plain, path, where)
        notes.append(note)
    args = plain.get("args")
    words = [a for a in args if isinstance(a, str)] if isinstance(args, list) else None
    if plain.get("command") == "uv" and isinstance(args, list) and words is not None and len(words) == len(args):
        rewritten = _uv(words)
        if rewritten is not None:
            plain = {**plain, "command": rewritten[0], "args": [*rewritten[1]]}
            notes.append(rewritten[2])
    return plain, notes


def npm_package(spec: str) -> tuple[str, str | None]:
    """(name, version or None) of an npm package spec: ``@scope/name@1.2`` -> (``@scope/name``, ``1.2``)."""
    at = spec.find("@", 1)
    if at == -1:
        return spec, None
    return spec[:at], spec[at + 1:] or None


def npm_pin(spec: str, registry: bool, timeout: float = 10.0) -> tuple[str, str] | str:
    """(``name@version``, where the version came from) for an ``npx`` package spec: the version it names, else
    (``latest`` or none) the npm registry's latest; else why neither is known."""
    name, version = npm_package(spec)
    if version is not None and version != "latest" and not version.startswith(("^", "~", ">", "<")):
        return f"{name}@{version}", "the version it names"
    if not registry:
        return "the registry was not asked"
    url = NPM_REGISTRY.format(name=urllib.parse.quote(name, safe="@"))
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            latest = json.load(response).get("version")
    except urllib.error.HTTPError as exc:
        return f"the npm registry has no {name} ({exc.code})" if exc.code == 404 else \
            f"the npm registry answered {exc.code} for {name}"
    except (OSError, ValueError, AttributeError) as exc:
        return f"the npm registry could not be reached ({exc})"
    return (f"{name}@{latest}", "the npm registry's latest") if isinstance(latest, str) else \
        f"the npm registry gives no version of {name}"
