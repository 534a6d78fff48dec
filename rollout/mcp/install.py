"""Building the per-server environments a servers config asks for (``python scripts/servers.py install``).

Python requirements go into a virtualenv made with uv when it is found (on PATH, beside the running
interpreter, or as the ``uv`` package), else with ``venv`` and pip; npm packages are installed under
the environment folder; a Node build runs its commands in its source folder. A finished environment
gets a stamp, so installing again is quick; one without a stamp (an interrupted build) is built anew.
Concurrent installs of one environment wait for each other (a file lock, for at most `LOCK_WAIT_S`).
Every command of a build and its whole output can go to a log file of the server's own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from filelock import FileLock, Timeout

from rollout.mcp.config import ServerSpec
from rollout.mcp.environments import (
    STAMP,
    BuildFailure,
    InstallSpec,
    failure_path,
    read_failure,
    venv_python,
    write_failure,
)
from rollout.mcp.requirements import node_headers_prefix

INSTALLERS = ("auto", "uv", "pip")
STEP_TIMEOUT = 1800.0
LOCK_WAIT_S = 2 * STEP_TIMEOUT
"""How long an install waits for another install of the same environment (a build of a few steps) to end."""


class InstallFailed(RuntimeError):
    """A step of an environment's build failed; the message holds the command and its output's tail, `missing`
    the package the registry did not have when that was the cause."""

    def __init__(self, message: str, missing: str | None = None) -> None:
        super().__init__(message)
        self.missing = missing


@dataclass(frozen=True)
class InstallOutcome:
    """One server's install: ``installed``, ``up to date``, ``nothing to install``, ``failed`` or ``skipped`` (an
    earlier build found that the registry lacks a package it needs; `registry_lacks` names it then, and when a
    build fails on it now)."""

    server: str
    status: str
    seconds: float
    detail: str = ""
    registry_lacks: str | None = None


def find_uv() -> str | None:
    """The uv executable: on PATH, beside the running interpreter, or from the ``uv`` package."""
    found = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if found:
        return found
    try:
        from uv import find_uv_bin
    except ImportError:
        return None
    try:
        return find_uv_bin()
    except FileNotFoundError:
        return None


BUILD_ENVIRONMENT = {"npm_config_yes": "true"}
"""Set for every build command unless the environment sets it: a build script's ``npx`` installs what it
needs instead of asking (a build has no terminal to answer on, so npx would cancel)."""


def build_environment_variables() -> dict[str, str]:
    """The variables every build command runs with: `BUILD_ENVIRONMENT`, ``npm_config_nodedir`` from the local
    node when it has its headers, and this process's environment (which wins)."""
    nodedir = node_headers_prefix()
    return {**BUILD_ENVIRONMENT, **({"npm_config_nodedir": nodedir} if nodedir else {}), **os.environ}


_RESOLVE_FAILURE = re.compile(r"getaddrinfo (?:ENOTFOUND|EAI_AGAIN) [\w.-]+|connect (?:ECONNREFUSED|ENETUNREACH|"
                              r"ETIMEDOUT) [\w.:\[\]-]+")
_HEADERS_FETCH = re.compile(r"gyp http GET (\S+)")
_GYP_STACK = re.compile(r"gyp ERR! stack (\w*Error: .*)")
_NPM_PATH = re.compile(r"npm (?:error|ERR!) path \S*node_modules/((?:@[^/\s]+/)?[^/\s]+)\s*$", re.MULTILINE)
_NPM_LOG = re.compile(r"A complete log of this run can be found in:\s*(\S+)")
_UNREACHABLE = re.compile(r"NewConnectionError|Failed to establish a new connection|Temporary failure in name "
                          r"resolution|Name or service not known|Network is unreachable|Connection refused|"
                          r"getaddrinfo|ECONNREFUSED|ECONNRESET|ENETUNREACH|ETIMEDOUT|EAI_AGAIN|ConnectTimeout|"
                          r"ReadTimeout|timed out", re.IGNORECASE)


def build_cause(output: str) -> str | None:
    """The real cause of a failed npm/node-gyp build, in a few words, when its output says it: the package whose
    native build failed and the host it could not reach (``getaddrinfo ENOTFOUND nodejs.org``), the headers
    node-gyp could not download, or node-gyp's error; None when it says none of these."""
    fetch = _HEADERS_FETCH.search(output)
    after = output[fetch.end():] if fetch else output
    unreachable = _RESOLVE_FAILURE.findall(after)
    if fetch and (unreachable or "network connectivity" in after):
        host = re.sub(r"^\w+://([^/]+).*", r"\1", fetch.group(1))
        cause = (f"{unreachable[-1]}: node-gyp could not download node's headers ({fetch.group(1)})" if unreachable
                 else f"node-gyp could not download node's headers ({fetch.group(1)}): no network to {host}")
    elif unreachable or _RESOLVE_FAILURE.search(output):
        cause = (unreachable or _RESOLVE_FAILURE.findall(output))[-1]
    elif stack := _GYP_STACK.search(output):
        cause = f"node-gyp: {stack.group(1).strip()}"
    else:
        return None
    package = _NPM_PATH.search(output)
    return f"{package.group(1)}'s native build failed: {cause}" if package else cause


def _run(argv: list[str], cwd: Path | None = None, log: IO[str] | None = None) -> None:
    if log is not None:
        log.write(f"$ {' '.join(argv)}" + (f"   (in {cwd})" if cwd else "") + "\n")
        log.flush()
    env = build_environment_variables()
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=STEP_TIMEOUT, env=env,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise InstallFailed(f"command not found: {argv[0]}") from None
    except subprocess.TimeoutExpired:
        raise InstallFailed(f"{' '.join(argv)}: no result within {STEP_TIMEOUT:g} s") from None
    if log is not None:
        log.write(done.stdout + done.stderr + f"[exit status {done.returncode}]\n")
        log.flush()
    if done.returncode != 0:
        output = done.stderr or done.stdout
        # pip says "No matching distribution" offline too: a package is missing only where the registry answered
        missing = None if _UNREACHABLE.search(done.stdout + done.stderr) else registry_missing(output)
        cause = build_cause(output)
        if missing:
            reason = f"the registry has no {missing} (404)"
        elif cause:
            full_log = getattr(log, "name", None) if log is not None else None
            npm_log = _NPM_LOG.search(output)
            reason = cause + (f"; full log: {full_log}" if isinstance(full_log, str) else
                              f"; full log: {npm_log.group(1)}" if npm_log else "")
        else:
            reason = " | ".join(output.strip().splitlines()[-6:])
        raise InstallFailed(f"{' '.join(argv)} exited with {done.returncode}: {reason}", missing)


_REGISTRY_MISS = re.compile(r"(?:The requested resource '|No matching version found for |"
                            r"No matching distribution found for )([^'\s]+)")


def registry_missing(output: str) -> str | None:
    """The package (and version) a build's output says the package registry does not have, if it says so."""
    match = _REGISTRY_MISS.search(output)
    if match is None:
        return None
    name, _, url = match.group(1).rstrip(".").partition("@http")
    version = re.search(r"-(\d[^/]*)\.tgz$", url)
    return f"{name}@{version.group(1)}" if version else match.group(1).rstrip(".")


def _build_step(argv: list[str], cwd: Path, log: IO[str] | None) -> None:
    """One build command; an ``npm install``/``npm ci`` that failed on a version its lockfile pins and the
    registry lacks (a 404, no matching version) is run again as ``npm install --no-package-lock``, said in the
    log and, when that fails too, in the reason."""
    try:
        _run(argv, cwd=cwd, log=log)
    except InstallFailed as exc:
        pinned = exc.missing
        if argv[:2] not in (["npm", "install"], ["npm", "ci"]) or not (cwd / "package-lock.json").is_file() or \
                pinned is None:
            raise
        note = (f"{' '.join(argv)} failed: package-lock.json pins {pinned}, which the registry lacks; retrying "
                "with npm install --no-package-lock (the versions package.json allows)")
        if log is not None:
            log.write(note + "\n")
            log.flush()
        try:
            _run(["npm", "install", "--no-package-lock", *argv[2:]], cwd=cwd, log=log)
        except InstallFailed as again:
            raise InstallFailed(f"{again} (after {' '.join(argv)} failed on {pinned}, which package-lock.json "
                                "pins)", again.missing) from None


def _base_python(wanted: str | None) -> str:
    """An interpreter for a plain venv: the one named (path or version), else the running one."""
    if wanted is None:
        return sys.executable
    if Path(wanted).exists():
        return wanted
    found = shutil.which(f"python{wanted}") or shutil.which(wanted)
    if not found:
        raise InstallFailed(f"no interpreter python{wanted} on PATH (install uv to let it find one)")
    return found


def _python_env(spec: InstallSpec, venv: Path, uv: str | None, log: IO[str] | None) -> None:
    if uv is not None:
        _run([uv, "venv", "--quiet", "--python", spec.python or sys.executable, str(venv)], log=log)
        _run([uv, "pip", "install", "--quiet", "--python", venv_python(venv), *spec.requirements], log=log)
        return
    _run([_base_python(spec.python), "-m", "venv", str(venv)], log=log)
    _run([venv_python(venv), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *spec.requirements],
         log=log)


def build_environment(spec: InstallSpec, folder: Path, installer: str = "auto", log: IO[str] | None = None) -> None:
    """Build one environment folder from scratch (what was there without a stamp is removed); each command
    and its output go to `log` when given."""
    if installer not in INSTALLERS:
        raise ValueError(f"installer must be one of {', '.join(INSTALLERS)}")
    uv = find_uv() if installer != "pip" else None
    if installer == "uv" and uv is None:
        raise InstallFailed("uv not found (pip install uv, or use --installer pip)")
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    if spec.requirements:
        _python_env(spec, folder / "venv", uv, log)
    if spec.npm:
        (folder / "package.json").write_text('{"private": true}\n', encoding="utf-8")
        _run(["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--omit=dev",
              "--loglevel=error", *spec.npm], log=log)
    for step in spec.build:
        _build_step(list(step), Path(spec.build_dir or "."), log)
    stamp = {"requirements": spec.requirements, "python": spec.python, "npm": spec.npm,
             "build": spec.build, "dir": spec.build_dir, "installer": "uv" if uv else "pip",
             "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
    (folder / STAMP).write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")


def _one_line(reason: str) -> str:
    return " ".join(reason.split())[:400]


def install_server(spec: ServerSpec, installer: str = "auto", force: bool = False,
                   log_path: Path | None = None) -> InstallOutcome:
    """Build a server's environment unless it is there already, or an earlier build found that the package
    registry lacks a package it needs (``skipped``, with that build's reason; `force` builds it again); never
    raises for a failed build.

    The build's commands and their output are appended to `log_path` when given (a header line first).
    """
    if spec.install is None or spec.env_folder is None:
        return InstallOutcome(spec.name, "nothing to install", 0.0)
    folder = Path(spec.env_folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    lock = FileLock(str(folder.with_name(f".{folder.name}.lock")))
    try:
        held = lock.acquire(timeout=LOCK_WAIT_S)  # released when the block below ends
    except Timeout:
        return InstallOutcome(spec.name, "failed", time.monotonic() - start,
                              f"{lock.lock_file} held by another install for {LOCK_WAIT_S:g} s: install again once it "
                              "has ended")
    with held:
        if (folder / STAMP).is_file() and not force:
            return InstallOutcome(spec.name, "up to date", time.monotonic() - start, str(folder))
        known = read_failure(folder)
        if known is not None and known.registry_lacks and not force:
            return InstallOutcome(spec.name, "skipped", time.monotonic() - start, known.reason, known.registry_lacks)
        try:
            if log_path is None:
                build_environment(spec.install, folder, installer)
            else:
                log_path.parent.mkdir(parents=True, exist_ok=True)
                with log_path.open("a", encoding="utf-8") as log:
                    log.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} install of MCP server '{spec.name}' "
                              f"into {folder}\n")
                    try:
                        build_environment(spec.install, folder, installer, log)
                    except InstallFailed as exc:
                        log.write(f"FAILED: {exc}\n")
                        raise
                    log.write("installed\n")
        except InstallFailed as exc:
            write_failure(folder, BuildFailure(_one_line(str(exc)), exc.missing, time.strftime("%Y-%m-%d %H:%M:%S")))
            return InstallOutcome(spec.name, "failed", time.monotonic() - start, str(exc), exc.missing)
        failure_path(folder).unlink(missing_ok=True)
    return InstallOutcome(spec.name, "installed", time.monotonic() - start, str(folder))
