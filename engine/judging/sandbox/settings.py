"""The settings of the check sandbox (engine.judging.sandbox.runner): what a contained command may use
(`Limits`), how checks run (`SandboxSettings`, read from a check's config entry by `check_settings`), what
one did (`CheckRun`), whether bubblewrap can isolate it here (`bubblewrap`), and the environment it gets
with the secrets of this process kept out of what comes back (`check_environment`, `secret_values`, `scrub`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from engine.contract import InputError, config_int, is_number

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|COOKIE|PRIVATE|SESSION", re.IGNORECASE)
"""Names of environment variables whose values are never let out."""
BASE_ENV = ("PATH", "LANG", "HOME", "TMPDIR", "PYTHONDONTWRITEBYTECODE")
"""The variables every contained command gets (HOME and TMPDIR: folders of its scratch folder)."""
MIN_SECRET = 6  # shorter values are not scrubbed from the output (they would match ordinary text)
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Limits:
    """What a contained command may use: bytes of stdout and of stderr kept (each), the largest output
    file read back, its address space, the largest file it may write and the bytes all its files may add
    to its writable places (None: no limit)."""

    output: int = 64 * 1024
    result: int = 1024 * 1024
    memory: int | None = 4 * 1024**3
    file_size: int | None = 1024**3
    disk: int | None = 1024**3


@dataclass(frozen=True)
class CheckRun:
    """What a contained command did. ``status``: its exit status (negative: the signal that ended it;
    None when it timed out or could not start); ``stdout``/``stderr``: what was kept of them, scrubbed
    (a line marks the bytes dropped); ``leftovers``: processes it left running, killed; ``result``:
    what it wrote to its result descriptor, scrubbed (empty: nothing; None: over ``Limits.result``
    bytes); ``error``: why it could not run, else None; ``contained``: whether bubblewrap isolated it;
    ``over_disk``: whether its files went over ``Limits.disk`` (it was then ended); ``skipped``: the
    entries of the workspace not copied, each ``path (kind)`` (links, FIFOs, sockets, devices)."""

    status: int | None
    timed_out: bool
    stdout: str
    stderr: str
    stdout_dropped: int
    stderr_dropped: int
    leftovers: int
    result: bytes | None = b""
    error: str | None = None
    contained: bool = False
    over_disk: bool = False
    skipped: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class SandboxSettings:
    """How checks run: the time limit (s), the variables they get besides the base, their limits and
    whether bubblewrap isolates them (None: when it can)."""

    timeout: float = DEFAULT_TIMEOUT_S
    env: tuple[str, ...] = ()
    limits: Limits = Limits()
    isolate: bool | None = None


def _megabytes(options: Mapping[str, Any], key: str, default_bytes: int | None, where: str) -> int | None:
    """The bytes of the setting `key`, given in MiB (None: no limit), `default_bytes` when it is absent."""
    default = None if default_bytes is None else default_bytes // 1024**2
    if options.get(key, default) is None:
        return None
    return config_int(options, key, default=default, where=f"{where}.{key}") * 1024 * 1024


def check_settings(options: Mapping[str, Any], where: str) -> SandboxSettings:
    """The settings of a check's config entry (`where` names it): ``timeout``, ``env``, ``output_kb``,
    ``memory_mb``, ``file_mb``, ``disk_mb``, ``bubblewrap``; InputError naming a bad one."""
    timeout = options.get("timeout") or DEFAULT_TIMEOUT_S
    if not is_number(timeout) or timeout <= 0:
        raise InputError("config", f"must be a number of seconds > 0, got {timeout!r}", field=f"{where}.timeout")
    env = options.get("env") or []
    if not isinstance(env, (list, tuple)) or not all(isinstance(n, str) and n and "=" not in n for n in env):
        raise InputError("config", f"must be a list of environment variable names, got {env!r}", field=f"{where}.env")
    isolate = options.get("bubblewrap")
    if isolate not in (None, True, False):
        raise InputError("config", f"must be true, false or null, got {isolate!r}", field=f"{where}.bubblewrap")
    if isolate and bubblewrap()[0] is None:
        raise InputError("config", f"is true but {bubblewrap()[1]}", field=f"{where}.bubblewrap")
    output = config_int(options, "output_kb", default=Limits.output // 1024, where=f"{where}.output_kb")
    limits = Limits(output=output * 1024, memory=_megabytes(options, "memory_mb", Limits.memory, where),
                    file_size=_megabytes(options, "file_mb", Limits.file_size, where),
                    disk=_megabytes(options, "disk_mb", Limits.disk, where))
    return SandboxSettings(float(timeout), tuple(env), limits, isolate)


@cache
def bubblewrap() -> tuple[str | None, str]:
    """The bwrap program when it can start a sandbox here (tried once), and else why not."""
    path = shutil.which("bwrap")
    if path is None:
        return None, "bwrap is not installed (Debian package bubblewrap)"
    try:
        done = subprocess.run([path, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc",
                               "--dev", "/dev", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bwrap does not start: {exc}"
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines() or [f"status {done.returncode}"]
        return None, f"bwrap does not start here: {lines[-1][:200]}"
    return path, ""


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """The values of the variables whose names look secret, longest first (at least MIN_SECRET characters)."""
    found = {v for k, v in environ.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET}
    return sorted(found, key=len, reverse=True)


def scrub(data: bytes, secrets: Sequence[str]) -> bytes:
    """`data` with every secret replaced by ``***`` (as it is and as it reads inside a JSON string)."""
    for secret in secrets:
        for form in {secret, json.dumps(secret)[1:-1]}:
            data = data.replace(form.encode("utf-8", "surrogateescape"), b"***")
    return data


def check_environment(names: Sequence[str], home: Path, tmp: Path) -> dict[str, str]:
    """The environment of a contained command: the minimal base and the named variables that are set."""
    env = dict(zip(BASE_ENV, (os.environ.get("PATH") or os.defpath, os.environ.get("LANG") or "C.UTF-8", str(home),
                              str(tmp), "1")))
    env.update((name, os.environ[name]) for name in names if name in os.environ)
    return env
