"""The first process of a contained check (started by `engine.evaluators.check_runner`, inside the
bubblewrap sandbox when there is one): it runs the check's command under its resource limits, stops it
at the time limit, kills every process the command left behind, and reports on a file descriptor.

    python -I -S _check_supervisor.py SPEC_JSON COMMAND...

SPEC: ``{"timeout": seconds, "memory": bytes|null, "file_size": bytes|null, "report_fd": n}``. The
command gets its own process group, no core files, RLIMIT_AS = memory and RLIMIT_FSIZE = file_size;
its stdin is /dev/null, its stdout and stderr are this process's. This process is the command's child
subreaper (prctl PR_SET_CHILD_SUBREAPER): a descendant that leaves the session (setsid) or loses its
parent is re-parented here, not to init, so it is found and killed once the command has exited.
The report (one JSON line): ``{"status": exit status or null, "timed_out": bool, "leftovers": n,
"subreaper": bool}`` (status: negative for a signal, null when timed out), or ``{"error": "..."}``
when the command could not start. Only the standard library is imported.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
KILL_ROUNDS = 500  # rounds of kill-and-reap, 10 ms apart, before giving up on a process that forks on


def _become_subreaper() -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


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


def main() -> None:
    """Run the command, end it and its leftovers, and write the report."""
    spec, command = json.loads(sys.argv[1]), sys.argv[2:]
    subreaper = _become_subreaper()

    def limits() -> None:
        os.setpgid(0, 0)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        for limit, value in ((resource.RLIMIT_AS, spec["memory"]), (resource.RLIMIT_FSIZE, spec["file_size"])):
            if value is not None:
                resource.setrlimit(limit, (value, value))

    try:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, preexec_fn=limits)
    except (OSError, subprocess.SubprocessError) as exc:
        report = {"error": f"cannot start {command[0]}: {exc}"}
    else:
        try:
            status: int | None = proc.wait(spec["timeout"])
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            status = None
        leftovers = _kill_descendants() - {proc.pid}
        report = {"status": status, "timed_out": status is None, "leftovers": len(leftovers),
                  "subreaper": subreaper}
    os.write(spec["report_fd"], json.dumps(report).encode() + b"\n")


if __name__ == "__main__":
    main()
