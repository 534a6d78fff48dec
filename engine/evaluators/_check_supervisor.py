"""The first process of a contained check (started by `engine.evaluators._check_runner`, inside the
bubblewrap sandbox when there is one): it runs the check's command under its resource limits, stops it
at the time limit, kills every process the command left behind, and reports on a file descriptor.

    python -I -S _check_supervisor.py TIMEOUT MEMORY FILE_SIZE REPORT_FD COMMAND...

TIMEOUT in seconds; MEMORY and FILE_SIZE in bytes, ``-`` for no limit. The command gets its own
process group, no core files, RLIMIT_AS = MEMORY and RLIMIT_FSIZE = FILE_SIZE; its stdin is /dev/null,
its stdout and stderr are this process's. This process is the command's child subreaper (prctl
PR_SET_CHILD_SUBREAPER): a descendant that leaves the session (setsid) or loses its parent is
re-parented here, not to init, so it is found and killed once the command has exited.
The report, one line on REPORT_FD: ``STATUS TIMED_OUT LEFTOVERS`` (STATUS: the exit status, negative
for a signal, ``-`` when timed out; TIMED_OUT 0 or 1; LEFTOVERS the processes killed after it), or
``error REASON`` when the command could not start. Where the subreaper cannot be set (no prctl), the
leftovers that left its process tree are not found here. Only a few modules of the standard library are imported, so that it starts fast.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
KILL_ROUNDS = 500  # rounds of kill-and-reap, 10 ms apart, before giving up on a process that forks on


def _become_subreaper() -> None:
    try:
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
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


def _start(command: list[str], memory: int | None, file_size: int | None) -> int:
    """Fork and exec the command under its limits; its pid. OSError with the reason when it cannot start."""
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
            os.execvp(command[0], command)
        except BaseException as exc:  # noqa: BLE001 - whatever stops the exec is reported, then the child ends
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


def _wait(pid: int, timeout: float) -> int | None:
    """The command's exit status, or None after killing it at the time limit."""
    waiting = [True]

    def expire(signum: int, frame: object) -> None:
        if waiting[0]:
            raise _Expired

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        status: int | None = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    except _Expired:  # (or just as it ended: it is then already reaped)
        status = None
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    waiting[0] = False
    signal.setitimer(signal.ITIMER_REAL, 0)
    return status


def main() -> None:
    """Run the command, end it and its leftovers, and write the report."""
    timeout, memory, file_size, report_fd = sys.argv[1:5]
    command = sys.argv[5:]
    os.set_inheritable(int(report_fd), False)
    _become_subreaper()
    try:
        pid = _start(command, *(None if v == "-" else int(v) for v in (memory, file_size)))
    except OSError as exc:
        report = f"error cannot start {command[0]}: {exc}"
    else:
        status = _wait(pid, float(timeout))
        leftovers = _kill_descendants() - {pid}
        report = f"{'-' if status is None else status} {int(status is None)} {len(leftovers)}"
    os.write(int(report_fd), " ".join(report.split()).encode("utf-8", "replace") + b"\n")


if __name__ == "__main__":
    main()
