"""The servers config: ``{"servers": {name: {command, args, env, disabled, cwd}}}`` (the published shape).

``"python"``/``"python3"``/``"py"`` as a command means the running interpreter, and such servers get
the project on their PYTHONPATH (so ``-m rollout.servers.images`` is found). Environment values may
name variables of the host's environment as ``${VAR}``, so keys stay out of the file. A relative
``cwd`` is taken from the config file's folder.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from engine.contract import InputError, read_json

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The folder holding the rollout package (put on the PYTHONPATH of Python servers)."""

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


def _expand_env(value: str, where: str, path: Path) -> str:
    def repl(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise InputError(path, f"environment variable {name} is not set", field=where)
        return os.environ[name]

    return _ENV_REF.sub(repl, value)


def read_servers_config(path: str | Path) -> list[ServerSpec]:
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
