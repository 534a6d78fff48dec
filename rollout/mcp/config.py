"""The servers config: the published shape ``{"servers": {name: {command, args, env, disabled}}}``, which
loads unchanged, plus optional keys (see rollout/README.md, "The servers config").

Per server: ``cwd`` (default: the config file's folder, where the published config's relative paths
point; the project's folder for ``"python": "host"``), ``python`` (``"host"``: the rollout's own
interpreter, with the project on PYTHONPATH, for the project's own servers; or a
virtualenv folder or interpreter), ``install`` (a per-server environment built by
``scripts/servers.py install``), ``inherit`` (more variables to pass on), ``paths`` (``"workspace"``,
the default, or ``"as-written"``; or ``{"mode": ..., "keep": ["./media"]}``, folders of the server's
own whose paths are sent as written), ``check`` (the call ``scripts/servers.py check`` times) and
``environment`` (``"declared"``, the default: the inherited and declared variables; ``"whole"``: the
host's whole environment, as the published host ran its servers). At the top: ``environments`` (where
per-server environments go), ``inherit`` (what every server inherits) and ``environment``.

A bare ``python`` in an entry that names no environment keeps its published meaning: the first
``python`` on PATH. Environment values may use ``${VAR}`` and ``${VAR:-default}``; a variable that is
unset (without default) makes that server fail to start with the reason, not the whole run; so may its
arguments (``"--key", "${SMITHERY_API_KEY}"``).
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine.contract import InputError, read_json
from rollout.mcp.environments import (
    STAMP,
    InstallSpec,
    Runtime,
    default_env_root,
    launch,
    parse_install,
    read_failure,
)
from rollout.mcp.paths import kept_folder

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The folder holding the rollout package (put on the PYTHONPATH of servers run with ``"python": "host"``)."""

DEFAULT_INHERIT = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TZ",
                   "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                   "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy",
                   "all_proxy")
"""Variables (names or shell patterns) every server inherits unless the config's ``inherit`` says otherwise."""

PATH_MODES = ("workspace", "as-written")
ENVIRONMENT_MODES = ("declared", "whole")
"""What a server's environment holds: the inherited and declared variables, or the host's whole environment."""
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
WHOLE_ENVIRONMENT_WARNING = ("MCP server(s) {names} get the rollout's whole environment (environment: whole, as the "
                             "published host ran them): every variable, API keys of other services included, "
                             "reaches them; values of variables named like secrets are redacted from results")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_MIN_SECRET = 6
PLACEHOLDER_PREFIX = "m3bench-placeholder-"
"""How the placeholder keys begin (``python scripts/servers.py placeholders``): a value so made is no secret."""


def looks_secret(name: str) -> bool:
    """Whether a variable is named like a secret (``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``AUTH``, ...)."""
    return _SECRET_NAME.search(name) is not None


def _secret(value: str) -> bool:
    """Whether a value is redacted from results: long enough to be a secret, and no placeholder key."""
    return len(value) >= _MIN_SECRET and not value.startswith(PLACEHOLDER_PREFIX)


@dataclass(frozen=True)
class ServerSpec:
    """How to start one MCP server, and why it cannot be started (`problem`) when that is known beforehand;
    `unbuildable` names the package the registry lacks when its environment's build cannot succeed as written."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    cwd: str | None = None
    disabled: bool = False
    paths: str = "workspace"
    problem: str | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)
    note: str = ""
    check: tuple[str, str] | None = None
    install: InstallSpec | None = None
    env_folder: str | None = None
    keep_paths: tuple[str, ...] = ()
    environment: str = "declared"
    unbuildable: str | None = None


def inherited(patterns: list[str] | tuple[str, ...]) -> dict[str, str]:
    """The host's variables matching names or shell patterns (``LC_*``)."""
    return {k: v for k, v in os.environ.items() if any(fnmatch.fnmatchcase(k, p) for p in patterns)}


def _expand(value: str, missing: list[str], secrets: list[str]) -> str:
    """``${VAR}`` and ``${VAR:-default}`` from the host's environment; unset names go to `missing`."""
    def repl(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = os.environ.get(name)
        if value and _secret(value):
            secrets.append(value)
        if value or (value is not None and default is None):
            return value
        if default is None:
            missing.append(name)
            return ""
        return default

    return _ENV_REF.sub(repl, value)


def _names(value: object, path: Path, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InputError(path, "must be a list of variable names or patterns", field=where)
    return value


def _check_call(value: object, path: Path, where: str) -> tuple[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("tool"), str) or \
            not isinstance(value.get("arguments", {}), dict):
        raise InputError(path, 'must be {"tool": NAME, "arguments": {...}}', field=where)
    return value["tool"], json.dumps(value.get("arguments", {}))


def _path_policy(value: object, path: Path, where: str) -> tuple[str, tuple[str, ...]]:
    """(mode, the server's own folders) of an entry's ``paths``: a mode, or ``{"mode": ..., "keep": [...]}``."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"mode", "keep"})
        if unknown:
            raise InputError(path, f"unknown key(s) {', '.join(unknown)} (expected mode, keep)", field=where)
        mode, keep = value.get("mode", "workspace"), value.get("keep", [])
        if not isinstance(keep, list) or not all(isinstance(k, str) for k in keep):
            raise InputError(path, "must be a list of folders relative to the server's working directory",
                             field=f"{where}.keep")
        folders = []
        for i, folder in enumerate(keep):
            kept = kept_folder(folder)
            if kept is None:
                raise InputError(path, "must be a folder relative to the server's working directory, inside it "
                                 "(like ./media)", field=f"{where}.keep[{i}]")
            folders.append(kept)
        where = f"{where}.mode"
    else:
        mode, folders = value, []
    if mode not in PATH_MODES:
        raise InputError(path, f"must be one of {', '.join(PATH_MODES)}", field=where)
    return mode, tuple(dict.fromkeys(folders))


def not_installed(folder: Path, path: Path) -> str:
    """Why a server's environment is not there: its last build failed (the reason kept beside it), or it was
    never built."""
    failed = read_failure(folder)
    if failed is None:
        return f"its environment is not installed ({folder}): run python scripts/servers.py install --config {path}"
    return f"its build failed: {failed.reason}"


def _runtime(entry: Mapping[str, object], install: InstallSpec | None, folder: Path | None, path: Path,
             where: str) -> Runtime | None:
    """What the entry names as its environment (None: it names none)."""
    python = entry.get("python")
    if python is not None and (not isinstance(python, str) or not python):
        raise InputError(path, 'must be "host", a virtualenv folder or an interpreter', field=f"{where}.python")
    if install is not None and python is not None:
        raise InputError(path, "give either python or install, not both", field=f"{where}.python")
    if python == "host":
        return Runtime(sys.executable, (), "the rollout's own interpreter")
    if python is not None:
        return Runtime.of_python((path.parent / python).resolve())
    if install is not None and folder is not None:
        return Runtime.of_folder(folder, f"the environment {folder}")
    return None


def _environment_mode(value: object, path: Path, where: str) -> str:
    if value not in ENVIRONMENT_MODES:
        raise InputError(path, f"must be one of {', '.join(ENVIRONMENT_MODES)}", field=where)
    return value


def _entry(name: str, entry: object, path: Path, env_root: Path, base_inherit: list[str], mode: str,
           forced: bool) -> ServerSpec:
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
    paths, keep = _path_policy(entry.get("paths", "workspace"), path, f"{where}.paths")
    extra = _names(entry.get("inherit", []), path, f"{where}.inherit")
    if "environment" in entry:
        own_mode = _environment_mode(entry["environment"], path, f"{where}.environment")
        mode = mode if forced else own_mode
    install = parse_install(entry["install"], path, f"{where}.install") if "install" in entry else None
    check = _check_call(entry.get("check"), path, f"{where}.check")
    if disabled:
        return ServerSpec(name, command, tuple(args), disabled=True)
    folder = install.folder(env_root, name) if install is not None else None
    runtime = _runtime(entry, install, folder, path, where)

    missing: list[str] = []
    secrets = [v for v in inherited(extra).values() if _secret(v)]
    own = {k: _expand(v, missing, secrets) for k, v in env.items()}
    in_args: list[str] = []
    args = [_expand(a, in_args, secrets) for a in args]
    if mode == "whole":
        secrets += [v for k, v in os.environ.items() if looks_secret(k) and _secret(v)]
        full = {**os.environ, **own}
    else:
        full = {**inherited(base_inherit), **inherited(extra), **own}
    if runtime is not None and runtime.bins:
        full["PATH"] = os.pathsep.join([*runtime.bins, *([full["PATH"]] if full.get("PATH") else [])])
    if entry.get("python") == "host":
        extra_path = own.get("PYTHONPATH") or os.environ.get("PYTHONPATH")
        full["PYTHONPATH"] = os.pathsep.join([str(PROJECT_ROOT)] + ([extra_path] if extra_path else []))
    command, args, note = launch(command, list(args), runtime, folder, path.parent, full.get("PATH", ""))
    problem = unbuildable = None
    if missing:
        problem = f"environment variable {', '.join(dict.fromkeys(missing))} is not set (field {where}.env)"
    elif in_args:
        problem = f"environment variable {', '.join(dict.fromkeys(in_args))} is not set (field {where}.args)"
    elif folder is not None and not (folder / STAMP).is_file():
        problem = not_installed(folder, path)
        known = read_failure(folder)
        unbuildable = known.registry_lacks if known is not None else None
    elif entry.get("python") not in (None, "host") and runtime is not None and not Path(runtime.python or "").exists():
        problem = f"no interpreter at {runtime.python} (field {where}.python)"
    home = PROJECT_ROOT if entry.get("python") == "host" else path.parent
    return ServerSpec(name, command, tuple(args), tuple(sorted(full.items())),
                      str((path.parent / cwd).resolve() if cwd else home), False, paths, problem,
                      tuple(sorted(set(secrets), key=len, reverse=True)), note, check, install,
                      str(folder) if folder is not None else None, keep, mode, unbuildable)


def read_servers_config(path: str | Path, env_root: str | Path | None = None,
                        environment: str | None = None) -> list[ServerSpec]:
    """Server specs of a servers config file, in file order (disabled ones included, marked).

    `env_root` (where per-server environments live) overrides the file's ``environments`` key, whose
    default is $M3BENCH_SERVER_ENVS or ~/.cache/m3bench/server-envs. `environment` (``declared`` or
    ``whole``) overrides the file's ``environment`` key and its entries' (default ``declared``); servers
    given the whole environment are named in a warning.
    """
    path = Path(path).resolve()
    data = read_json(path, "servers config")
    servers = data.get("servers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise InputError(path, "expected an object with a 'servers' object", field="servers")
    if env_root is None:
        given = data.get("environments")
        if given is not None and not isinstance(given, str):
            raise InputError(path, "must be a folder", field="environments")
        env_root = (path.parent / given) if given else default_env_root()
    base_inherit = _names(data.get("inherit", list(DEFAULT_INHERIT)), path, "inherit")
    if environment is not None:
        mode = _environment_mode(environment, Path("config"), "server_environment")
    else:
        mode = _environment_mode(data.get("environment", "declared"), path, "environment")
    specs = []
    for name, entry in servers.items():
        specs.append(_entry(name, entry, path, Path(env_root).resolve(), base_inherit, mode, environment is not None))
    whole = [s.name for s in specs if not s.disabled and s.environment == "whole"]
    if whole:
        log.warning(WHOLE_ENVIRONMENT_WARNING.format(names=", ".join(whole)))
    return specs

