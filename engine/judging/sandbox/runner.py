"""The one place where code a task supplies (a check module, a check script) runs: contained.

`run_contained(command, ...)` runs the command in a scratch folder of its own and returns a `CheckRun`
(exit status, timed out or not, the head and tail of stdout and stderr with the bytes dropped counted,
the processes it left behind and that were killed, what it wrote to its result descriptor, the entries
of the workspace not copied); `check_settings` reads a check's config entry
(engine.judging.sandbox.settings; the scratch folder and the copies: engine.judging.sandbox.files). What it promises
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
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from functools import cache, partial
from pathlib import Path
from typing import Any

from engine.judging.sandbox.files import CopyExpired, prepare_scratch, remove_scratch
from engine.judging.sandbox.settings import (
    CheckRun,
    Limits,
    bubblewrap,
    check_environment,
    scrub,
    secret_values,
)
from engine.judging.sandbox.supervisor import alive, process_table

log = logging.getLogger(__name__)

LIMITS = Limits()
"""The limits of a contained command unless it is given others."""

SUPERVISOR = Path(__file__).with_name("supervisor.py")
"""The first process of every contained command (run by path, `python -I -S`)."""
CHECK_CALL = Path(__file__).with_name("call.py")
"""The process a check module is called in (run by path inside the sandbox: engine.judging.sandbox.call)."""
DRAIN_S = 1.0  # how long the pipes are read after the command's processes are gone
BACKSTOP_S = 30.0  # beyond the time limit, when the supervisor itself does not end, it is killed
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



@cache
def _warn_uncontained(reason: str) -> None:
    log.warning("checks run without filesystem or network isolation (%s): a check can read and write what this "
                "user can and reach the network; its environment, output and processes are still contained",
                reason)


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


async def run_contained(command: Sequence[str], *, timeout: float, inputs: Mapping[str, bytes] | None = None,
                        workspace: Path | None = None, reads: Sequence[Path] = (), copies: Sequence[Path] = (),
                        copies_root: Path | None = None, env: Sequence[str] = (), limits: Limits = LIMITS,
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
            staged = await asyncio.to_thread(prepare_scratch, top, workspace, inputs or {}, copies,
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
        await asyncio.to_thread(remove_scratch, top)


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
