"""Running the project's apps as a user would, for the end-to-end tests.

`run_script` calls the app's entry point in this process (its `main(argv)`, or `run(argv)` for the
plain command lines) with the arguments, working directory and standard streams a run of
`scripts/<name>.py` gets: the flows these tests check do not depend on a fresh interpreter, and each
new one would import torch and Hydra again. The tests about the process itself (exit status seen by
a shell, Ctrl-C, the console scripts' output) start a real one of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import logging
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from hydra.core.global_hydra import GlobalHydra

ROOT = Path(__file__).resolve().parents[1]
APPS = {"score": "engine.apps.score", "calibrate": "engine.apps.calibrate", "rollout": "rollout.cli",
        "judge": "rollout.judges.cli", "report": "engine.apps.report", "view": "engine.apps.view"}
"""Each app's module: `main(argv)` for the Hydra apps, `run(argv)` for the plain command lines."""
PLAIN = {"report", "view"}


@contextlib.contextmanager
def root_logger_kept() -> Iterator[None]:
    """The root logger's handlers and level as they were before, afterwards: an app run in this process adds
    Hydra's file handler, whose run folder a refused run removes (later logging would fail on it); the handlers
    it added are closed."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)


def call_app(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the app `name` in this process with these arguments in `cwd`, as scripts/<name>.py would run:
    its exit status (SystemExit's code), stdout and stderr; the working directory, the root logger's
    handlers and Hydra's global state are as before afterwards."""
    module = importlib.import_module(APPS[name])
    out, err = io.StringIO(), io.StringIO()
    before = Path.cwd()
    code: int | str | None = 0
    GlobalHydra.instance().clear()

    def invoke() -> int | str | None:
        try:
            return module.run(list(args)) if name in PLAIN else module.main(list(args))
        except SystemExit as stop:
            return stop.code

    try:
        os.chdir(cwd)
        with root_logger_kept(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = _outside_a_running_loop(invoke)
    finally:
        os.chdir(before)
        GlobalHydra.instance().clear()
    if code is not None and not isinstance(code, int):
        err.write(f"{code}\n")
        code = 1
    return subprocess.CompletedProcess([name, *args], code or 0, out.getvalue(), err.getvalue())


def _outside_a_running_loop(call: Callable[[], int | str | None]) -> int | str | None:
    """call(), in a thread of its own when this one runs an event loop (a test that drives the browser
    through Playwright's sync API does): the apps start their own with asyncio.run."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return call()
    codes: list[int | str | None] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            codes.append(call())
        except BaseException as exc:  # handed to the caller's thread
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return codes[0]


def run_script(name: str, *overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the app `name` in this process (call_app) with these overrides in `cwd`; it must exit 0
    without a traceback."""
    proc = call_app(name, *overrides, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc
