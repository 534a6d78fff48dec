"""The first process of a contained check (started by `engine.judging.sandbox.runner`, inside the
bubblewrap sandbox when there is one): it runs the check's command under its resource limits, stops it
at the time limit or when its files go over their size limit, kills every process the command left
behind, and reports on a file descriptor.

    python -I -S supervisor.py TIMEOUT MEMORY FILE_SIZE DISK REPORT_FD STAGE RESULT COMMAND...

Its working folder is the check's scratch folder. TIMEOUT in seconds, counted from this process's start
(the staging copy below is part of it); MEMORY, FILE_SIZE, DISK and RESULT in bytes, ``-`` for no
limit. STAGE, when not ``-``, is a folder copied into the scratch folder first (in the sandbox: the
job's inputs and the copy of the workspace, on their way into the size-capped tmpfs). The command runs
in the scratch folder's ``job`` folder, with its own process group, no core files, RLIMIT_AS = MEMORY
and RLIMIT_FSIZE = FILE_SIZE, no capabilities (its bounding set emptied, ``no_new_privs`` set: a check
run as root without bubblewrap has none either); its stdin is /dev/null, its stdout and stderr are this
process's. Its result descriptor is an anonymous file (memfd) open for it alone: ``{result}`` in the
command's arguments becomes its number.

What the command can reach of this process: nothing but signals. This process makes itself
non-dumpable (prctl PR_SET_DUMPABLE 0) before anything else, so a process without CAP_SYS_PTRACE (the
command has no capability) can neither open its descriptors through ``/proc/<pid>/fd``, nor take them
(pidfd_getfd), nor trace it or write its memory; its report descriptor is not inherited by the
command; the result descriptor is read back by its own descriptor, never by a path.

Every POLL_S the bytes the scratch folder holds are measured (its file system's use when STAGE is
given, the sizes of its files otherwise); once they exceed what they were at the start by DISK or
more, the command is ended as at the time limit.
This process is the command's child subreaper (prctl PR_SET_CHILD_SUBREAPER): a descendant that
leaves the session (setsid) or loses its parent is re-parented here, not to init, so it is found and
killed once the command has exited.
The report on REPORT_FD: a line ``STATUS TIMED_OUT LEFTOVERS OVER_DISK`` (STATUS: the exit status,
negative for a signal, ``-`` when ended; TIMED_OUT and OVER_DISK 0 or 1; LEFTOVERS the processes killed
after it), or ``error REASON`` when the command could not start; then a line ``result SIZE`` and the
SIZE bytes the command wrote to its result descriptor, or ``result -`` when they are over RESULT bytes.
Where the subreaper cannot be set (no prctl), the leftovers that left its process tree are not found
here. Only a few modules of the standard library are imported, so that it starts fast.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import stat
import sys
import time
from collections.abc import Callable

PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAP_VERSION_3 = 0x20080522
KILL_ROUNDS = 500  # rounds of kill-and-reap, 10 ms apart, before giving up on a process that forks on
POLL_S = 0.1  # how often the time and the scratch folder's size are looked at


def _prctl(*args: int) -> int:
    """prctl(2) with these arguments; -1 where it cannot be called."""
    try:
        return int(ctypes.CDLL(None).prctl(*args, *(0,) * (5 - len(args))))
    except (OSError, AttributeError):
        return -1


def _seal_off() -> None:
    """Make this process non-dumpable and its own subreaper (module docstring)."""
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities() -> None:
    """In the command's process before its exec: no way to gain privileges (no_new_privs), an empty
    bounding set (where this process may change it), no ambient, permitted or inheritable capability,
    so that what it execs has none, root or not."""
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    for cap in range(64):  # past the last capability, or without CAP_SETPCAP, it fails: nothing to drop
        _prctl(PR_CAPBSET_DROP, cap)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    try:
        ctypes.CDLL(None).capset(ctypes.byref(_CapHeader(CAP_VERSION_3, 0)), (_CapData * 2)())
    except (OSError, AttributeError):
        pass


def process_table() -> dict[int, tuple[bytes, int, int]]:
    """Every process of /proc: pid -> (state, parent pid, session id)."""
    table: dict[int, tuple[bytes, int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        table[int(entry)] = (fields[0], int(fields[1]), int(fields[3]))
    return table


def alive(state: bytes) -> bool:
    """Whether a process state of /proc/PID/stat is a running one (not a zombie, not dead)."""
    return state not in (b"Z", b"X")


def _live_descendants(root: int) -> set[int]:
    """Processes below `root` in the process tree, zombies left out."""
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, (_, parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            if pid not in found:
                found.add(pid)
                todo.append(pid)
    return {pid for pid in found if alive(table[pid][0])}


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_descendants() -> set[int]:
    """SIGKILL every live descendant, round after round (the orphans of each round come back here),
    until none is left; the pids killed."""
    killed: set[int] = set()
    for _ in range(KILL_ROUNDS):
        pids = _live_descendants(os.getpid())
        _reap()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed.add(pid)
        time.sleep(0.01)
        _reap()
    return killed


class _Expired(Exception):
    pass


class _OverDisk(Exception):
    pass


def _tree_bytes(folder: str) -> int:
    """The bytes the files below `folder` take (allocated blocks; links not followed)."""
    total = 0
    todo = [folder]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += info.st_blocks * 512
            if stat.S_ISDIR(info.st_mode):
                todo.append(entry.path)
    return total


def _fs_bytes(folder: str) -> int:
    """The bytes used on the file system of `folder` (the sandbox's tmpfs: all the check can write)."""
    info = os.statvfs(folder)
    return (info.f_blocks - info.f_bfree) * info.f_frsize

def _start(command: list[str], memory: int | None, file_size: int | None, result: int) -> int:
    """Fork and exec the command under its limits, its result descriptor `result` inherited; its pid.
    OSError with the reason when it cannot start."""
    failed_r, failed_w = os.pipe()  # closed on exec: nothing read means it started
    null = os.open(os.devnull, os.O_RDONLY)
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            os.dup2(null, 0)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            for limit, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_FSIZE, file_size)):
                if value is not None:
                    resource.setrlimit(limit, (value, value))
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            _drop_capabilities()
            os.set_inheritable(result, True)
            os.execvp(command[0], command)
        except BaseException as exc:
            os.write(failed_w, str(exc).encode("utf-8", "replace")[:300])
        os._exit(127)
    os.close(failed_w)
    os.close(null)
    reason = os.read(failed_r, 400)
    os.close(failed_r)
    if reason:
        os.waitpid(pid, 0)
        raise OSError(reason.decode("utf-8", "replace"))
    return pid


def _wait(pid: int, end: float, over: Callable[[], bool]) -> tuple[int | None, bool]:
    """The command's exit status (None after killing it at the time limit `end`, a time.monotonic(), or
    when `over` says its files are over their limit) and whether it was ended for its files."""
    waiting = [True]
    timeout = max(end - time.monotonic(), 0.001)

    def tick(signum: int, frame: object) -> None:
        if waiting[0] and time.monotonic() >= end:
            raise _Expired
        if waiting[0] and over():
            raise _OverDisk

    signal.signal(signal.SIGALRM, tick)
    signal.setitimer(signal.ITIMER_REAL, min(timeout, POLL_S), POLL_S)
    full = False
    try:
        try:
            status: int | None = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        finally:
            waiting[0] = False
    except (_Expired, _OverDisk) as exc:  # (or just as it ended: it is then already reaped)
        status, full = None, isinstance(exc, _OverDisk)
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    signal.setitimer(signal.ITIMER_REAL, 0)
    return status, full


def _result(fd: int, cap: int | None) -> bytes:
    """The report's part on what the command wrote to its result descriptor (read by that descriptor)."""
    size = os.fstat(fd).st_size
    if cap is not None and size > cap:
        return b"result -\n"
    data = b""
    while len(data) < size:
        block = os.pread(fd, size - len(data), len(data))
        if not block:
            break
        data += block
    return f"result {len(data)}\n".encode() + data


def main() -> None:
    """Stage the scratch folder, run the command, end it and its leftovers, and write the report."""
    started = time.monotonic()
    _seal_off()
    timeout, memory, file_size, disk, report_fd, stage, result = sys.argv[1:8]
    os.set_inheritable(int(report_fd), False)
    end = started + float(timeout)
    scratch = os.getcwd()
    result_fd = os.memfd_create("m3check-result", os.MFD_CLOEXEC)
    command = [a.replace("{result}", str(result_fd)) for a in sys.argv[8:]]
    used = _fs_bytes if stage != "-" else _tree_bytes
    cap = None if disk == "-" else int(disk)

    def over() -> bool:
        return cap is not None and used(scratch) - start >= cap

    report = ""
    if stage != "-":
        import shutil

        try:
            shutil.copytree(stage, scratch, symlinks=True, dirs_exist_ok=True)
        except (OSError, shutil.Error) as exc:
            report = f"error cannot copy its inputs into the sandbox: {str(exc)[:200]}"
    start = used(scratch)
    if not report and time.monotonic() >= end:  # its inputs took its time
        report = "- 1 0 0"
    if not report:
        os.chdir("job")
        try:
            pid = _start(command, None if memory == "-" else int(memory), None if file_size == "-" else int(file_size),
                         result_fd)
        except OSError as exc:
            report = f"error cannot start {command[0]}: {exc}"
    if not report:
        status, full = _wait(pid, end, over)
        leftovers = _kill_descendants() - {pid}
        full = full or over()
        report = f"{'-' if status is None else status} {int(status is None and not full)} {len(leftovers)} {int(full)}"
    line = " ".join(report.split()).encode("utf-8", "replace") + b"\n"
    data = line + _result(result_fd, None if result == "-" else int(result))
    while data:
        data = data[os.write(int(report_fd), data):]


if __name__ == "__main__":
    main()
