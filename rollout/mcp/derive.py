"""A servers config derived from server folders (``python scripts/servers.py init DIR``), for review.

Each folder directly under DIR is one server. From its own files:

- install: ``pyproject.toml`` -> a virtualenv with the project itself installed (``./<folder>``); else
  ``requirements.txt`` -> a virtualenv with its requirements (its lines, or ``-r`` the file when it
  holds pip options); ``package.json`` with a ``build`` script -> ``npm install`` then ``npm run
  build`` in the folder (``build:stdio`` when it has one), with dependencies and no build -> ``npm install``;
- entry point: a ``[project.scripts]`` script of ``pyproject.toml`` (the one, or the one named like an
  MCP server); ``bin`` (the one, or the one named like an MCP server) or ``main`` of ``package.json``
  (run with ``node``); a lone ``*_mcp.py``, ``*-mcp.py``, ``mcp_*.py`` or ``server.py`` (run with
  ``python``);
- ``inherit``: the environment variables its source files read (``os.getenv("X")``, ``process.env.X``).

A Python server whose files import ``mcp.server.fastmcp`` (written for mcp 1.x; mcp 2 renamed FastMCP)
gets ``mcp<2`` beside its requirements.

Each server runs in its own folder (``cwd``). What could not be derived is listed, and a folder
without an entry point is left out of the config.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from engine.contract import JsonObject, JsonValue
from rollout.mcp.envhints import read_in_files

_MCP_LIKE = re.compile(r"mcp|server", re.IGNORECASE)
_MCP1 = re.compile(r"^\s*(?:from\s+mcp\.server\.fastmcp\s+import|import\s+mcp\.server\.fastmcp)", re.MULTILINE)
MCP1_PIN = "mcp<2"
_SKIPPED = {"node_modules", ".venv", "venv", ".git", "__pycache__", "site-packages", "build", "dist", "tests", "test"}
MAX_FILES = 400
MAX_BYTES = 1_000_000
_PY_ENTRY = re.compile(r"(?:.+[_-]mcp|mcp[_-].+|server)\.py")


@dataclass
class Derived:
    """One folder's entry (None: no entry point), where each part came from, and what could not be derived."""

    name: str
    entry: JsonObject | None
    sources: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _read_toml(path: Path) -> dict[str, object] | str:
    """The parsed file, or why it could not be read."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            return "no TOML reader (Python 3.10 without tomli)"
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"cannot be read ({exc})"


def read_package(path: Path) -> JsonObject | str:
    """The parsed ``package.json``, or why it could not be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"cannot be read ({exc})"
    return data if isinstance(data, dict) else "is not a JSON object"


def _one(names: list[str]) -> str | None:
    """The only name, else the only one named like an MCP server."""
    if len(names) == 1:
        return names[0]
    liked = [n for n in names if _MCP_LIKE.search(n)]
    return liked[0] if len(liked) == 1 else None


def local_path(rel: str) -> str:
    """A path relative to the config's folder as pip takes a local path (``./x``, ``../x``)."""
    return rel if rel.startswith("../") else f"./{rel}"


def _requirements(path: Path, rel: str) -> list[str]:
    lines = [line.split(" #", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if any(line.startswith("-") for line in lines):
        return ["-r", f"{local_path(rel)}/requirements.txt"]
    return lines


def python_files(folder: Path) -> list[Path]:
    """The Python files of a server folder (vendored, build and test folders skipped; at most MAX_FILES)."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED and not d.startswith("."))
        found += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py")]
        if len(found) >= MAX_FILES:
            return found[:MAX_FILES]
    return found


def mcp_pin(files: list[Path], out: Derived) -> list[str]:
    """``["mcp<2"]`` when a file imports ``mcp.server.fastmcp``: code written for mcp 1.x, which mcp 2 no
    longer runs (FastMCP was renamed there); else nothing."""
    for path in files:
        try:
            if path.stat().st_size <= MAX_BYTES and _MCP1.search(path.read_text(encoding="utf-8", errors="replace")):
                out.sources.append(f"{MCP1_PIN}: {path.name} imports mcp.server.fastmcp (mcp 1.x; mcp 2 renamed it)")
                return [MCP1_PIN]
        except OSError:
            continue
    return []


_OWN_OUTPUT = re.compile(r"""(?:os\.environ\.get|os\.getenv|getenv)\(\s*['"]([A-Z0-9_]*(?:OUTPUT|SAVE)[A-Z0-9_]*)['"]"""
                         r"""\s*,\s*['"](\./[A-Za-z0-9_-]+|[A-Za-z0-9_-]+)/?['"]\s*\)""")
_ENFORCED = re.compile(r"(?i)outside (?:the )?(?:enforced )?output dir|escapes (?:the )?enforced output")


def own_output_folder(files: list[Path]) -> tuple[str, str, str] | None:
    """(variable, default folder, file) when a server's code confines its saves to a folder relative to its
    working directory: it reads an ``*OUTPUT*``/``*SAVE*`` variable whose default is such a folder
    (``os.environ.get("PPT_OUTPUT_DIR", "./media")``) and refuses saves outside it; None otherwise."""
    found, enforced = None, False
    for path in files:
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        match = _OWN_OUTPUT.search(text)
        if match and found is None:
            found = (match.group(1), match.group(2), path.name)
        enforced = enforced or bool(_ENFORCED.search(text))
    return found if enforced else None


def python_install(folder: Path, rel: str, out: Derived) -> tuple[JsonObject | None, dict[str, object] | None]:
    """(install block, parsed pyproject.toml) of a Python server folder: the project itself when it has a
    readable ``pyproject.toml``, else its ``requirements.txt``; None where neither is there. ``mcp<2`` is
    added when its files are written for mcp 1.x (`mcp_pin`)."""
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        data = _read_toml(pyproject)
        if isinstance(data, str):
            out.missing.append(f"pyproject.toml {data}")
        else:
            out.sources.append("install: pyproject.toml (the project itself, into a virtualenv)")
            return {"requirements": [local_path(rel), *mcp_pin(python_files(folder), out)]}, data
    if (folder / "requirements.txt").is_file():
        out.sources.append("install: requirements.txt (into a virtualenv)")
        return {"requirements": [*_requirements(folder / "requirements.txt", rel),
                                 *mcp_pin(python_files(folder), out)]}, None
    return None, None


def _python(folder: Path, rel: str, out: Derived) -> tuple[JsonObject | None, list[str] | None]:
    """(install block, command + args) of a Python server folder."""
    install, data = python_install(folder, rel, out)
    command = None
    if data is not None:
        project = data.get("project")
        listed = project.get("scripts") if isinstance(project, dict) else None
        scripts = sorted(listed) if isinstance(listed, dict) else []
        script = _one(scripts)
        if script is not None:
            command = [script]
            out.sources.append(f"entry point: pyproject.toml [project.scripts] {script}")
        elif scripts:
            out.missing.append(f"entry point: pyproject.toml has several scripts ({', '.join(scripts)})")
    if command is None:
        candidates = sorted(p.name for p in folder.glob("*.py") if _PY_ENTRY.fullmatch(p.name))
        if len(candidates) == 1:
            command = ["python", candidates[0]]
            out.sources.append(f"entry point: {candidates[0]}")
        elif candidates:
            out.missing.append(f"entry point: several server scripts ({', '.join(candidates)})")
    return install, command


def node_install(data: JsonObject, rel: str, out: Derived) -> JsonObject | None:
    """The install block of a Node server folder from its parsed ``package.json`` (None: nothing to install): its
    ``build:stdio`` script when it has one (the server as an MCP host runs it, over stdio), else ``build``."""
    listed = data.get("scripts")
    scripts = listed if isinstance(listed, dict) else {}
    build = next((name for name in ("build:stdio", "build") if name in scripts), None)
    if build is not None:
        out.sources.append(f"install: package.json (npm install, npm run {build})")
        return {"build": [["npm", "install"], ["npm", "run", build]], "dir": rel}
    if data.get("dependencies"):
        out.sources.append("install: package.json (npm install)")
        return {"build": [["npm", "install"]], "dir": rel}
    return None


def _node(folder: Path, rel: str, out: Derived) -> tuple[JsonObject | None, list[str] | None]:
    """(install block, command + args) of a Node server folder."""
    data = read_package(folder / "package.json")
    if isinstance(data, str):
        out.missing.append(f"package.json {data}")
        return None, None
    install = node_install(data, rel, out)
    bins = data.get("bin")
    target: JsonValue = None
    if isinstance(bins, str):
        target, where = bins, "bin"
    elif isinstance(bins, dict) and bins:
        name = _one(sorted(bins))
        if name is None:
            out.missing.append(f"entry point: package.json has several bins ({', '.join(sorted(bins))})")
            return install, None
        target, where = bins[name], f"bin {name}"
    elif isinstance(data.get("main"), str):
        target, where = data["main"], "main"
    if target is None:
        out.missing.append("entry point: package.json has no bin or main")
        return install, None
    if not isinstance(target, str):
        out.missing.append(f"entry point: package.json {where} is not a path")
        return install, None
    out.sources.append(f"entry point: package.json {where} ({target})")
    return install, ["node", target.removeprefix("./")]


def derive_server(folder: Path, rel: str) -> Derived:
    """The entry of one server folder; `rel` is the folder relative to the config's folder."""
    out = Derived(re.sub(r"[^A-Za-z0-9._-]", "_", folder.name), None)
    python = (folder / "pyproject.toml").is_file() or (folder / "requirements.txt").is_file() or \
        any(folder.glob("*.py"))
    node = (folder / "package.json").is_file()
    if not python and not node:
        out.missing.append("no pyproject.toml, requirements.txt, package.json or Python script")
        return out
    install, command = _python(folder, rel, out) if python else (None, None)
    if command is None and node:
        kept = list(out.missing)
        install, command = _node(folder, rel, out)
        if command is not None:
            out.missing = [m for m in out.missing if m not in kept]
    if command is None:
        if not any(m.startswith("entry point") for m in out.missing):
            out.missing.append("entry point: no [project.scripts], package.json bin or main, or lone "
                               "*_mcp.py / server.py")
        return out
    if install is None and command[0] == "node" and node:
        out.sources.append("install: nothing (package.json has no dependencies or build)")
    elif install is None:
        out.missing.append("install: no pyproject.toml, requirements.txt or package.json to build from "
                           "(it runs on the python or node on PATH)")
    entry: JsonObject = {"command": command[0], "args": [*command[1:]], "cwd": rel}
    variables = read_in_files(folder)
    if variables:
        entry["inherit"] = [*variables]
        out.sources.append(f"inherit: the variables its files read ({', '.join(variables)})")
    if install is not None:
        entry["install"] = install
    entry["_derived"] = "; ".join(out.sources)
    out.entry = entry
    return out


def derive_config(root: Path, output: Path) -> tuple[JsonObject, list[Derived]]:
    """A servers config for the server folders directly under `root` (paths relative to `output`'s folder),
    and what was derived for each folder."""
    base = output.resolve().parent
    derived = []
    for folder in sorted(p for p in root.resolve().iterdir() if p.is_dir() and not p.name.startswith(".")):
        if folder.name in ("node_modules", "__pycache__"):
            continue
        derived.append(derive_server(folder, Path(os.path.relpath(folder, base)).as_posix()))
    servers: JsonObject = {d.name: d.entry for d in derived if d.entry is not None}
    config: JsonObject = {"_comment": f"derived by scripts/servers.py init from the folders under {root} (Python "
                          f"{sys.version_info.major}.{sys.version_info.minor}); review each entry before use",
              "servers": servers}
    return config, derived
