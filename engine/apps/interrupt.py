"""Ctrl-C in an app: one line on stderr and exit status 130, whenever it comes.

This module imports the standard library only, so the scripts (scripts/*.py) and the console scripts
(`m3bench-*`) start every app through `run_app`, which covers a Ctrl-C while the app's modules load, and
checks the command line of the apps that load torch before their modules load (engine.apps.front).
"""

from __future__ import annotations

import importlib
import sys

INTERRUPTED = 130
"""The exit status of a run stopped by Ctrl-C (128 + SIGINT, as a shell gives)."""


def interrupted(exc: KeyboardInterrupt) -> int:
    """Say in one line on stderr that Ctrl-C stopped the run (with what was kept, when the run says:
    engine.contract.Interrupted carries that line); the exit status to end with."""
    print(f"interrupted: {exc}" if str(exc) else
          "interrupted (Ctrl-C): the run stopped before its outputs were written", file=sys.stderr)
    return INTERRUPTED


FRONT = "engine.apps.front"
"""The module that checks an app's command line before the app's own modules load (its `check_line`)."""


def run_app(module: str) -> None:
    """Check the command line where engine.apps.front knows the app, then import the app's module and run
    its `main`; a Ctrl-C while the modules load ends as one later would: one line, status 130."""
    try:
        checked = importlib.import_module(FRONT).check_line(module)
        main = importlib.import_module(module).main
    except KeyboardInterrupt as exc:
        sys.exit(interrupted(exc))
    if checked is not None:
        main(checked=checked)
    else:
        main()


def score() -> None:
    """`m3bench-score`."""
    run_app("engine.apps.score")


def report() -> None:
    """`m3bench-report`."""
    run_app("engine.apps.report")


def view() -> None:
    """`m3bench-view`."""
    run_app("engine.apps.view")


def calibrate() -> None:
    """`m3bench-calibrate`."""
    run_app("engine.apps.calibrate")


def rollout() -> None:
    """`m3bench-rollout`."""
    run_app("rollout.cli")


def judge() -> None:
    """`m3bench-judge`."""
    run_app("rollout.judges.cli")


def servers() -> None:
    """`m3bench-servers`."""
    run_app("rollout.servers_command")
