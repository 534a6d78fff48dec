"""The one place where code a task supplies (a check module, a check script) runs: contained.

`run_contained(command, ...)` runs the command in a scratch folder of its own and returns a `CheckRun`
(exit status, timed out or not, the head and tail of stdout and stderr with the bytes dropped counted,
the processes it left behind and that were killed, what it wrote to its result descriptor, the entries
of the workspace not copied); `check_settings` reads a check's config entry. What it promises
(docs/reliability.md, "What the check sandbox does"):

- environment: `BASE_ENV` and the variables the config names, nothing else; the value of every variable
  of this process whose name looks secret (`SECRET_NAME`) becomes ``***`` in all that comes back;
- output: stdout and stderr read as they come, ``Limits.output`` bytes of each kept, the rest counted;
- processes: the command runs under `supervisor` (engine.judging.sandbox.supervisor), which ends it at
  the time limit and kills every process it left (setsid ones included) once it exits; a leftover
  holding a pipe delays nothing; RLIMIT_AS and RLIMIT_FSIZE apply; it has no capabilities, and cannot
  reach its supervisor (which is non-dumpable) nor the runner's end of the report (a socket, which no
  path reopens);
- time: the time limit counts from the start of the copy of its workspace and files;
- files: a copy of the workspace made from descriptors (`copy_folder`: no link followed, no FIFO,
  socket or device opened; those entries are left out and named in ``CheckRun.skipped``), a scratch
  working folder, both removed afterwards; what its files add to the scratch folder is capped
  (``Limits.disk``); its result comes back through its result descriptor (``{result}``) and the
  supervisor's report, never through a file;
- with bubblewrap (`bubblewrap()`): no network, a PID namespace that dies whole, no capabilities, and a
  file system of its own holding only the system folders (`SYSTEM`), a few files of /etc (`ETC`), the
  Python installation, the trusted files it reads (`reads`, each bound alone, read-only), copies of the
  task's files it reads (`copies`: read beneath their folder from descriptors, no link followed, each
  shown read-only at its own path) and, as /tmp, a tmpfs of ``Limits.disk`` bytes (beyond its inputs)
  that holds its scratch folder: no home, no /run, no socket of the host. Without it, a warning (once
  per process) says checks run without filesystem and network isolation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import json
import logging
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

from engine.contract import InputError, config_int, is_number
from engine.contract.beneath import Refused, read_beneath
from engine.judging.sandbox.supervisor import alive, process_table

log = logging.getLogger(__name__)

SUPERVISOR = Path(__file__).with_name("supervisor.py")
"""The first process of every contained command (run by path, `python -I -S`)."""
CHECK_CALL = Path(__file__).with_name("call.py")
"""The process a check module is called in (run by path inside the sandbox: engine.judging.sandbox.call)."""
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|COOKIE|PRIVATE|SESSION", re.IGNORECASE)
"""Names of environment variables whose values are never let out."""
BASE_ENV = ("PATH", "LANG", "HOME", "TMPDIR", "PYTHONDONTWRITEBYTECODE")
"""The variables every contained command gets (HOME and TMPDIR: folders of its scratch folder)."""
MIN_SECRET = 6  # shorter values are not scrubbed from the output (they would match ordinary text)
DRAIN_S = 1.0  # how long the pipes are read after the command's processes are gone
BACKSTOP_S = 30.0  # beyond the time limit, when the supervisor itself does not end, it is killed
DEFAULT_TIMEOUT_S = 60.0
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""The system folders a sandbox holds (read-only; kept as the links they are on merged-/usr systems)."""
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf", "mime.types",
       "fonts")
"""The files and folders of /etc a sandbox holds (read-only): the dynamic linker's, the time zone, the
user and group names, the MIME types and the font configuration; nothing of /etc's keys or secrets."""
INSIDE = Path("/tmp")
"""The check's scratch folder inside the sandbox: a tmpfs of its own (its job, home, tmp and workspace)."""
STAGE = "/.m3check-stage"
"""Where the sandbox sees the host's scratch folder (read-only) until the supervisor has copied it in."""
TMPFS_SLACK = 1024 * 1024  # room of the sandbox's tmpfs beyond the cap and the inputs (its own bookkeeping)


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


@cache
def _warn_uncontained(reason: str) -> None:
    log.warning("checks run without filesystem or network isolation (%s): a check can read and write what this "
                "user can and reach the network; its environment, output and processes are still contained",
                reason)


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


def _bind(path: Path) -> list[str]:
    """bwrap arguments showing `path` read-only at its own name and at its resolved one."""
    args: list[str] = []
    for name in sorted({str(path.absolute()), str(path.resolve())}):
        args += ["--ro-bind", str(path.resolve()), name]
    return args


def _sandbox(bwrap: str, scratch: Path, reads: Sequence[Path], copied: Sequence[tuple[Path, Sequence[str]]],
             size: int | None) -> list[str]:
    """The bwrap command line: no network, its own PID namespace, no capabilities, and a root of its own
    holding the system folders, a few files of /etc, the Python installation, the files it reads and the
    `copied` files (a copy, the names it is shown at), all read-only, the host's scratch folder at STAGE
    (read-only) and, at INSIDE, a tmpfs of `size` bytes."""
    args = [bwrap, "--die-with-parent", "--unshare-all", "--cap-drop", "ALL", "--dev", "/dev", "--proc", "/proc"]
    args += [*(["--size", str(size)] if size is not None else []), "--tmpfs", str(INSIDE)]
    for folder in SYSTEM:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    args += [a for name in ETC if os.path.exists(f"/etc/{name}") for a in _bind(Path("/etc", name))]
    python = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    python.add(Path(sys.executable).resolve().parent)
    for path in sorted(python) + sorted({Path(r) for r in (*reads, SUPERVISOR)}):
        if not any(path.resolve().is_relative_to(s) for s in SYSTEM if not os.path.islink(s)):
            args += _bind(path)
    for copy, names in copied:
        for name in names:
            args += ["--ro-bind", str(copy), name]
    return args + ["--ro-bind", str(scratch), STAGE, "--remount-ro", "/", "--remount-ro", "/dev",
                   "--chdir", str(INSIDE)]


class _Capture(asyncio.Protocol):
    """A pipe read as it comes: the first and the last bytes kept (``cap`` in all), the rest counted."""

    def __init__(self, cap: int, tail: bool = True) -> None:
        self.head_cap, self.tail_cap = (cap // 2, cap - cap // 2) if tail else (cap, 0)
        self.head, self.tail = bytearray(), bytearray()
        self.total = 0
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.total += len(data)
        room = max(0, self.head_cap - len(self.head))
        self.head += data[:room]
        self.tail += data[room:]
        if len(self.tail) > self.tail_cap:
            del self.tail[:len(self.tail) - self.tail_cap]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def dropped(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self, secrets: Sequence[str]) -> str:
        middle = f"\n[... {self.dropped()} bytes dropped ...]\n".encode() if self.dropped() else b""
        return scrub(bytes(self.head) + middle + bytes(self.tail), secrets).decode("utf-8", "replace")


def _sweep_session(session: int) -> int:
    """Kill what is left of a session (the supervisor's, should it have been killed itself); how many."""
    killed = 0
    for pid, (state, _, sid) in process_table().items():
        if sid == session and alive(state):
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


def _result(data: bytes, secrets: Sequence[str]) -> bytes | None:
    """The result the supervisor's report carries after its first line (see `supervisor`),
    scrubbed; None when it was over its limit, empty when the report does not carry it whole."""
    header, newline, data = data.partition(b"\n")
    name, _, size = header.decode("utf-8", "replace").partition(" ")
    if not newline or name != "result" or not (size == "-" or size.isdigit()):
        return b""
    if size == "-":
        return None
    return scrub(data[:int(size)], secrets) if len(data) >= int(size) else b""


def _unlock(folder: str) -> None:
    os.chmod(folder, 0o700)
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            _unlock(entry.path)


def _remove(folder: Path) -> None:
    """Remove the scratch folder, whatever modes the command left in it."""
    try:
        shutil.rmtree(folder)
    except OSError:
        try:
            _unlock(str(folder))
        except OSError:
            pass
        shutil.rmtree(folder, ignore_errors=True)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
COPY_BLOCK = 8 << 20


class CopyExpired(Exception):
    """The copy of a check's inputs ran past its time limit."""


def _in_time(deadline: float) -> None:
    if time.monotonic() >= deadline:
        raise CopyExpired


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "a special file"


def _copy_file(source: int, target: int, deadline: float) -> None:
    """The bytes of the descriptor `source` written to `target`, a block at a time (in the kernel,
    sendfile, where it can), in time."""
    kernel = True
    while True:
        _in_time(deadline)
        if kernel:
            try:
                if os.sendfile(target, source, None, COPY_BLOCK) == 0:
                    return
                continue
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise
                kernel = False
        block = os.read(source, COPY_BLOCK)
        if not block:
            return
        view = memoryview(block)
        while view:
            view = view[os.write(target, view):]


def _copy_entries(folder: int, target: Path, where: str, deadline: float, skipped: list[str]) -> None:
    """Copy the entries of the open folder `folder` into `target` (made here), each opened from the
    folder's descriptor with O_NOFOLLOW; `where`: its path in the copy, for `skipped`."""
    info = os.fstat(folder)
    target.mkdir(mode=0o700)
    with os.scandir(folder) as listing:
        names = sorted(entry.name for entry in listing)
    for name in names:
        _in_time(deadline)
        shown = f"{where}{name}"
        try:
            mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                child = os.open(name, _DIR_FLAGS, dir_fd=folder)
                try:
                    _copy_entries(child, target / name, f"{shown}/", deadline, skipped)
                finally:
                    os.close(child)
                continue
            if not stat.S_ISREG(mode):  # a link, FIFO, socket or device: never opened
                skipped.append(f"{shown} ({_kind(mode)})")
                continue
            source = os.open(name, _FILE_FLAGS, dir_fd=folder)
        except FileNotFoundError:
            continue
        except OSError as exc:  # e.g. swapped for a link since it was listed (ELOOP)
            skipped.append(f"{shown} ({exc.strerror or type(exc).__name__})")
            continue
        try:
            found = os.fstat(source)
            if not stat.S_ISREG(found.st_mode):  # swapped for a FIFO since: opened without waiting, not read
                skipped.append(f"{shown} ({_kind(found.st_mode)})")
                continue
            copy = os.open(target / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                _copy_file(source, copy, deadline)
                os.fchmod(copy, stat.S_IMODE(found.st_mode))
                os.utime(copy, ns=(found.st_atime_ns, found.st_mtime_ns))
            finally:
                os.close(copy)
        finally:
            os.close(source)
    os.chmod(target, stat.S_IMODE(info.st_mode) | stat.S_IRWXU)
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))


def copy_folder(source: Path, target: Path, deadline: float) -> list[str]:
    """Copy the folder `source` to `target` from file descriptors: `source` opened with O_NOFOLLOW (OSError
    when it is a link), each folder below from its parent's descriptor with O_NOFOLLOW, each regular file
    with O_NOFOLLOW and O_NONBLOCK, its mode and times kept. Symbolic links, FIFOs, sockets and devices
    are left out without being opened (a file swapped for one while it is copied too): the entries left
    out, each ``path (kind)``. CopyExpired once `deadline` (a time.monotonic()) has passed."""
    skipped: list[str] = []
    folder = os.open(source, _DIR_FLAGS)
    try:
        _copy_entries(folder, target, "", deadline, skipped)
    finally:
        os.close(folder)
    return skipped


def _copies(top: Path, root: Path, files: Sequence[Path], deadline: float) -> list[tuple[Path, list[str]]]:
    """Copies of `files` under `top`, each read beneath `root` from descriptors (its path resolved once,
    then opened component by component with no link followed: `engine.contract.beneath`), with the
    names each is shown at (its own and its resolved path); OSError naming a file that cannot be read
    so (a link out of `root`, one swapped in since, a FIFO, ...)."""
    top.mkdir()
    base = root.resolve()
    out = []
    for n, path in enumerate(files):
        _in_time(deadline)
        resolved = path.resolve()
        try:
            data = read_beneath(base, resolved.relative_to(base) if resolved.is_relative_to(base) else resolved)
        except Refused as exc:
            raise OSError(f"{path}: {exc}") from None
        copy = top / f"{n}{path.suffix}"
        copy.write_bytes(data)
        out.append((copy, sorted({str(path.absolute()), str(resolved)})))
    return out


@dataclass
class _Staged:
    """What `_prepare` made: the bytes of the scratch folder on a tmpfs, the workspace's entries left
    out and the copies of the files read."""

    size: int
    skipped: list[str]
    copied: list[tuple[Path, list[str]]]


def _prepare(top: Path, workspace: Path | None, inputs: Mapping[str, bytes], copies: Sequence[Path],
             root: Path | None, deadline: float) -> _Staged:
    """Under `top`: the scratch folder's job (holding the inputs), home, tmp and copy of the workspace
    (`copy_folder`), and the copies of `copies` (read beneath `root`; none without `root`); the bytes
    the scratch folder takes on a tmpfs (whole pages)."""
    scratch = top / "scratch"
    scratch.mkdir()
    for name in ("job", "home", "tmp"):
        (scratch / name).mkdir()
    skipped = copy_folder(workspace, scratch / "workspace", deadline) if workspace is not None else []
    for name, data in inputs.items():
        (scratch / "job" / name).write_bytes(data)
    copied = _copies(top / "code", root, copies, deadline) if root is not None else []
    size = sum(-(-os.lstat(os.path.join(folder, n)).st_size // 4096) * 4096
               for folder, dirs, files in os.walk(scratch) for n in (*dirs, *files))
    return _Staged(size, skipped, copied)


async def run_contained(command: Sequence[str], *, timeout: float, inputs: Mapping[str, bytes] | None = None,
                        workspace: Path | None = None, reads: Sequence[Path] = (), copies: Sequence[Path] = (),
                        copies_root: Path | None = None, env: Sequence[str] = (), limits: Limits = Limits(),
                        isolate: bool | None = None) -> CheckRun:
    """Run `command` contained (see the module's docstring) for at most `timeout` seconds, counted from
    the start of the copy of its workspace and files.

    Its working folder is a fresh job folder holding `inputs` (name -> bytes); ``{job}`` and
    ``{workspace}`` in its arguments become the job folder and the copy of `workspace`, ``{result}`` the
    number of its result descriptor (what it writes there is ``CheckRun.result``). `reads`: trusted
    files and folders it reads (bound as they are under bubblewrap); `copies`: files of the folder
    `copies_root` it reads (under bubblewrap, copies read beneath that folder with no link followed,
    shown at their paths; without it, read where they are); `env`: names of variables it gets besides
    the base; `isolate`: bubblewrap always (RuntimeError when it cannot start), never, or when it can
    (None)."""
    if any("/" in n or n in ("", ".", "..") for n in inputs or {}):
        raise ValueError("inputs are plain file names")
    deadline = time.monotonic() + timeout
    bwrap, reason = bubblewrap() if isolate is not False else (None, "bubblewrap turned off")
    if isolate and bwrap is None:
        raise RuntimeError(reason)
    if bwrap is None:
        _warn_uncontained(reason)
    secrets = secret_values(os.environ)
    top = Path(tempfile.mkdtemp(prefix="m3check-")).resolve()
    scratch = top / "scratch"
    try:
        try:
            staged = await asyncio.to_thread(_prepare, top, workspace, inputs or {}, copies,
                                             copies_root if bwrap else None, deadline)
        except CopyExpired:
            return CheckRun(None, True, "", "", 0, 0, 0)
        except OSError as exc:
            return CheckRun(None, False, "", "", 0, 0, 0, error=f"cannot copy its inputs: {exc}")
        seen = INSIDE if bwrap else scratch  # the scratch folder where the command sees it
        argv = [a.replace("{job}", str(seen / "job")).replace("{workspace}", str(seen / "workspace")) for a in command]
        size = None if limits.disk is None else limits.disk + staged.size + TMPFS_SLACK
        prefix = _sandbox(bwrap, scratch, reads, staged.copied, size) if bwrap else []
        left = deadline - time.monotonic()
        if left <= 0:
            return CheckRun(None, True, "", "", 0, 0, 0, skipped=tuple(staged.skipped))
        run = await _run(prefix, argv, scratch, seen, left, env, limits, secrets)
        return dataclasses.replace(run, skipped=tuple(staged.skipped))
    finally:
        await asyncio.to_thread(_remove, top)


async def _run(prefix: list[str], argv: list[str], scratch: Path, seen: Path, timeout: float,
               env: Sequence[str], limits: Limits, secrets: Sequence[str]) -> CheckRun:
    """Start the supervisor (after `prefix`, the sandbox's command line, when there is one) with the
    command, read its pipes and its report (a socket: no path to it reopens it), end it all."""
    loop = asyncio.get_running_loop()
    report_r, report_w = (s.detach() for s in socket.socketpair())
    pipes = [os.pipe(), os.pipe()]
    limit = [str(v) if v is not None else "-" for v in (timeout, limits.memory, limits.file_size, limits.disk, report_w,
                                                        STAGE if prefix else None, limits.result)]
    try:
        proc = await asyncio.create_subprocess_exec(
            *prefix, sys.executable, "-I", "-S", str(SUPERVISOR), *limit, *argv,
            stdin=subprocess.DEVNULL, stdout=pipes[0][1], stderr=pipes[1][1], pass_fds=(report_w,),
            cwd=scratch, env=check_environment(env, seen / "home", seen / "tmp"), start_new_session=True)
    except OSError as exc:
        for fd in (report_r, *pipes[0], *pipes[1]):
            os.close(fd)
        return CheckRun(None, False, "", "", 0, 0, 0, error=f"cannot start the check: {exc}")
    finally:
        os.close(report_w)
    for _, w in pipes:
        os.close(w)
    captures: list[_Capture] = []
    transports: list[asyncio.BaseTransport] = []
    report_cap = 4096 + (limits.result or 0) + 300
    for r, cap, tail in ((pipes[0][0], limits.output, True), (pipes[1][0], limits.output, True),
                         (report_r, report_cap, False)):
        pipe, capture = await loop.connect_read_pipe(partial(_Capture, cap, tail), os.fdopen(r, "rb", buffering=0))
        captures.append(capture)
        transports.append(pipe)
    stopped = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout + BACKSTOP_S)
        except asyncio.TimeoutError:
            stopped = True
    finally:
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await proc.wait()
        swept = _sweep_session(proc.pid)
        await asyncio.wait([c.closed for c in captures], timeout=DRAIN_S)
        for transport in transports:
            transport.close()
    out, err, raw = captures
    line, _, rest = bytes(raw.head).partition(b"\n")
    report = _report(line.decode("utf-8", "replace"), None if stopped else proc.returncode)
    return CheckRun(status=report["status"], timed_out=stopped or report["timed_out"],
                    stdout=out.text(secrets), stderr=err.text(secrets), stdout_dropped=out.dropped(),
                    stderr_dropped=err.dropped(),
                    leftovers=swept if report["leftovers"] is None else report["leftovers"],
                    result=_result(rest, secrets) if report["error"] is None else b"",
                    error=report["error"], contained=bool(prefix), over_disk=report["over_disk"])


def _report(line: str, returncode: int | None) -> dict[str, Any]:
    """The supervisor's report (see `supervisor`); when it gave none, the status it ended with (and
    the leftovers are those of its session swept afterwards: bubblewrap's own exiting processes are
    swept too, not counted, when there is a report)."""
    if line.startswith("error "):
        return {"status": None, "timed_out": False, "leftovers": 0, "error": line[6:].strip(), "over_disk": False}
    fields = line.split()
    if len(fields) == 4 and all(f.lstrip("-").isdigit() or f == "-" for f in fields):
        return {"status": None if fields[0] == "-" else int(fields[0]), "timed_out": fields[1] == "1",
                "leftovers": int(fields[2]), "error": None, "over_disk": fields[3] == "1"}
    return {"status": returncode, "timed_out": returncode is None, "leftovers": None, "error": None,
            "over_disk": False}
