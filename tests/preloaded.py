"""Short runs of a script started from a process that has imported the project once: a test that starts
(and kills) many runs of an app pays Python's, torch's and Hydra's start-up once, while each run is still
a process of its own, killed and reaped as a run started from the shell would be.

`Preloaded` starts that process (this file run as a script). Each run is a fork of it that runs the script
as `python SCRIPT ARGS` would (its own working directory, `sys.argv`, stdout and stderr sent to /dev/null);
the forking process has run nothing yet (no thread, no Hydra state), so each fork starts as clean as a
new interpreter would, less the imports, and ends as it would (exit functions run, status reported)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[1]
PRELOAD = ("torch", "hydra", "matplotlib.figure", "sentence_transformers", "engine.apps.score")
"""What the forking process imports before its first fork (the score app and what it loads)."""


class Preloaded:
    """The forking process; `start` runs a script in a fork of it, `wait` gives the run's exit status."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
        assert self._reply() == {"ready": True}

    def _reply(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the forking process ended (status {self.proc.wait()})"
        return json.loads(line)

    def start(self, script: Path, args: list[str], cwd: Path, stderr: Path | None = None) -> int:
        """Run `python SCRIPT ARGS` in cwd as a fork (its stderr into the file stderr, if given); its pid
        (one run at a time)."""
        assert self.proc.stdin is not None
        request = {"argv": [str(script), *args], "cwd": str(cwd), "stderr": None if stderr is None else str(stderr)}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return int(self._reply()["pid"])

    def wait(self, pid: int) -> int:
        """The exit status of the run `start` gave pid (negative: the signal that ended it)."""
        reply = self._reply()
        assert reply["pid"] == pid, reply
        return int(reply["status"])

    @staticmethod
    def running(pid: int) -> bool:
        """Whether the run `start` gave pid is still running (the forking process reaps a run as it ends)."""
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    def run(self, script: Path, args: list[str], cwd: Path, stderr: Path | None = None) -> int:
        """Run `python SCRIPT ARGS` in cwd as a fork, to its end; its exit status."""
        return self.wait(self.start(script, args, cwd, stderr))

    def close(self) -> None:
        """End the forking process."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)

    def __enter__(self) -> Preloaded:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is None:
            self.close()
        else:
            self.proc.kill()
            self.proc.wait()


def _serve() -> None:
    """The forking process: import PRELOAD, then for each request line fork, run it, and report the pid
    and, once the run has ended, its exit status."""
    import atexit
    import importlib
    import runpy
    import traceback

    sys.path.insert(0, str(ROOT))
    for module in PRELOAD:
        importlib.import_module(module)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                os.chdir(request["cwd"])
                null = os.open(os.devnull, os.O_RDWR)
                err = null if request["stderr"] is None else os.open(request["stderr"], os.O_WRONLY | os.O_CREAT)
                for fd, to in ((0, null), (1, null), (2, err)):
                    os.dup2(to, fd)
                sys.argv = list(request["argv"])
                sys.path[0] = str(Path(sys.argv[0]).resolve().parent)
                runpy.run_path(sys.argv[0], run_name="__main__")
                status = 0
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                traceback.print_exc()
            finally:
                atexit._run_exitfuncs()  # what the interpreter's exit would run (logging's last flush, ...)
                sys.stderr.flush()
                os._exit(status)
        print(json.dumps({"pid": pid}), flush=True)
        _, raw = os.waitpid(pid, 0)
        print(json.dumps({"pid": pid, "status": os.waitstatus_to_exitcode(raw)}), flush=True)


if __name__ == "__main__":
    _serve()
