"""Runs of the project's scripts started from a process that has imported the project once: a test that
starts many short runs (and kills some) pays Python's, torch's and Hydra's start-up once, while each run is
still a process of its own, with its own working directory, environment, arguments and standard streams,
killed and reaped as a run started from a shell would be.

`Preloaded` starts the forking process (this file run as a script), which listens on a UNIX socket. A run
is asked for by connecting to it and sending the run's arguments, working directory and environment
with its three standard streams (their file descriptors); the forking process forks a keeper, which forks
the run (`python SCRIPT ARGS` as runpy runs a script) and reports its pid, then its exit status (negative:
the signal that ended it). The forking process has run nothing but imports (no thread, no Hydra state),
so a run starts as clean as a new interpreter would, less the imports, and ends as it would (exit
functions run).

`preloaded()` is the one forking process of a test process (started on first use, ended at exit).
`run_python` is `subprocess.run([sys.executable, SCRIPT, ...], capture_output=True, text=True)` as a run
of it. `python_shim` writes an executable named `python` that
asks for a run of each `python SCRIPT.py ...` command line it gets and passes any other (`python -c ...`,
`python -m ...`) to the interpreter itself: put its folder first on PATH and a shell's
`python scripts/score.py ...` runs preloaded."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRELOAD = ("torch", "hydra", "matplotlib.figure", "sentence_transformers", "engine.apps.score", "engine.apps.report",
           "engine.apps.view", "rollout.cli", "rollout.judges.cli")
"""What the forking process imports before its first fork (the apps and what they load)."""
SOCKET_ENV = "M3BENCH_TEST_PRELOADED"
"""The environment variable naming the forking process's socket (for the `python` shim)."""


class Run:
    """A run asked of the forking process: its pid, and its exit status once it has ended."""

    def __init__(self, connection: socket.socket) -> None:
        self._connection = connection
        self._replies = connection.makefile("r", encoding="utf-8")
        self.pid = int(json.loads(self._replies.readline())["pid"])

    def wait(self, timeout: float | None = None) -> int:
        """The run's exit status (negative: the signal that ended it), once it has ended; TimeoutError when it
        has not ended within timeout seconds (None: no limit)."""
        self._connection.settimeout(timeout)
        line = self._replies.readline()
        self._replies.close()
        self._connection.close()
        assert line, f"the keeper of run {self.pid} ended without its status"
        return int(json.loads(line)["status"])

    def running(self) -> bool:
        """Whether the run is still running (its keeper reaps it as it ends)."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True


def ask(path: str, argv: list[str], cwd: str, env: dict[str, str], streams: tuple[int, int, int]) -> Run:
    """Ask the forking process listening at path for a run of `python ARGV` with these file descriptors as
    its stdin, stdout and stderr."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    request = json.dumps({"argv": argv, "cwd": cwd, "env": env}).encode() + b"\n"
    socket.send_fds(connection, [request], list(streams))
    return Run(connection)


class Preloaded:
    """The forking process; `start` runs a script in a fork of it, `run` runs one to its end."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="m3bench-preloaded-"))  # short: a socket's path is at most ~100
        self.socket = str(self.folder / "socket")
        self.proc = subprocess.Popen([sys.executable, __file__, self.socket], stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready", \
            f"the forking process did not start (status {self.proc.poll()})"

    def start(self, script: Path, args: list[str], cwd: Path, stderr: Path | None = None,
              env: dict[str, str] | None = None) -> Run:
        """`python SCRIPT ARGS` in cwd as a fork (its stdout to /dev/null, its stderr into the file stderr
        if given, else to /dev/null), with env (default: this process's environment)."""
        null = os.open(os.devnull, os.O_RDWR)
        err = null if stderr is None else os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            return ask(self.socket, [str(script), *args], str(cwd), dict(os.environ if env is None else env),
                       (null, null, err))
        finally:
            os.close(null)
            if err != null:
                os.close(err)

    def run(self, script: Path, args: list[str], cwd: Path, stderr: Path | None = None) -> int:
        """`python SCRIPT ARGS` in cwd as a fork, to its end; its exit status."""
        return self.start(script, args, cwd, stderr).wait()

    def python_shim(self, folder: Path) -> Path:
        """Write `folder/python`, the shim that runs `python SCRIPT.py ...` preloaded (see the module's
        docstring); the folder."""
        folder.mkdir(parents=True, exist_ok=True)
        shim = folder / "python"
        shim.write_text(f'#!/bin/sh\n{SOCKET_ENV}="{self.socket}" exec "{sys.executable}" -S "{__file__}" '
                        f'--shim "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
        return folder

    def close(self) -> None:
        """End the forking process (runs still under way go on to their end)."""
        self.proc.terminate()
        self.proc.wait(timeout=60)
        shutil.rmtree(self.folder, ignore_errors=True)


_SHARED: list[Preloaded] = []


def preloaded() -> Preloaded:
    """This test process's one forking process, started on first use and ended at exit."""
    if not _SHARED:
        _SHARED.append(Preloaded())
        atexit.register(_SHARED[0].close)
    return _SHARED[0]


def run_python(argv: list[str], *, cwd: str | Path | None = None, env: dict[str, str] | None = None,
               timeout: float = 600, capture_output: bool = True, text: bool = True) -> subprocess.CompletedProcess:
    """`subprocess.run([sys.executable, *argv], capture_output=True, text=True, ...)` for a script (argv[0] a
    `.py` file) as a run of this process's forking process (`preloaded`): its exit
    status, stdout and stderr; TimeoutExpired (the run killed) past timeout."""
    assert capture_output and text, "run_python captures its run's output as text"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            run = ask(preloaded().socket, [str(a) for a in argv], str(Path.cwd() if cwd is None else cwd),
                      dict(os.environ if env is None else env), (null, out.fileno(), err.fileno()))
        finally:
            os.close(null)
        try:
            status = run.wait(timeout)
        except TimeoutError:
            os.kill(run.pid, signal.SIGKILL)
            raise subprocess.TimeoutExpired([sys.executable, *map(str, argv)], timeout) from None
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess([sys.executable, *map(str, argv)], status,
                                           out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"))


def _run_script(request: dict, streams: list[int]) -> None:
    """In the run's process: its streams, directory, environment and arguments, then the script; never returns."""
    import runpy
    import threading
    import traceback

    status = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for fd, stream in zip((0, 1, 2), streams):
            os.dup2(stream, fd)
        for stream in streams:
            os.close(stream)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        sys.path[0] = str(Path(sys.argv[0]).resolve().parent)
        runpy.run_path(sys.argv[0], run_name="__main__")
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int) and exc.code is not None:
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        threading._shutdown()  # as the interpreter's exit does: join the threads,
        atexit._run_exitfuncs()  # run what executors registered (loky's workers told to stop), then atexit
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(status)


def _keep(connection: socket.socket) -> None:
    """In a keeper: receive the request and its streams, fork the run, report its pid and its status."""
    data, streams, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    request = json.loads(data.decode())
    pid = os.fork()
    if pid == 0:
        connection.close()
        _run_script(request, streams)
    for stream in streams:
        os.close(stream)
    connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _, raw = os.waitpid(pid, 0)
    connection.sendall(json.dumps({"status": os.waitstatus_to_exitcode(raw)}).encode() + b"\n")


def _serve(path: str) -> None:
    """The forking process: import PRELOAD, then fork a keeper for each connection (reaping the keepers
    that have ended), until terminated."""
    import importlib
    import select

    sys.path[0] = str(ROOT)  # this file's folder (tests/) is no folder of a run's path
    for module in PRELOAD:
        importlib.import_module(module)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    while True:
        if select.select([listener], [], [], 1.0)[0]:
            connection, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                status = 0
                try:
                    _keep(connection)
                except BaseException:
                    status = 1
                finally:
                    os._exit(status)
            connection.close()
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass


def _shim(args: list[str]) -> None:
    """The `python` shim: `python SCRIPT.py ...` as a preloaded run (its exit status, or its signal, as
    this process's), any other command line by the interpreter itself."""
    if not args or not args[0].endswith(".py") or not os.path.isfile(args[0]):
        os.execv(sys.executable, [sys.executable, *args])
    run = ask(os.environ.pop(SOCKET_ENV), args, os.getcwd(), dict(os.environ), (0, 1, 2))
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda number, _: os.kill(run.pid, number))
    status = run.wait()
    if status < 0:  # ended by a signal: end by it too
        if -status not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--shim"]:
        _shim(sys.argv[2:])
    else:
        _serve(sys.argv[1])
