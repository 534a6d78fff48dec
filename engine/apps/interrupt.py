"""Ctrl-C in an app: one line on stderr and exit status 130, whenever it comes.

This module imports the standard library only, so a script (scripts/*.py) imports it before the app's
own modules and covers a Ctrl-C while they load as well.
"""

from __future__ import annotations

import sys

INTERRUPTED = 130
"""The exit status of a run stopped by Ctrl-C (128 + SIGINT, as a shell gives)."""


def interrupted(exc: KeyboardInterrupt) -> int:
    """Say in one line on stderr that Ctrl-C stopped the run (with what was kept, when the run says:
    engine.contract.Interrupted carries that line); the exit status to end with."""
    print(f"interrupted: {exc}" if str(exc) else
          "interrupted (Ctrl-C): the run stopped before its outputs were written", file=sys.stderr)
    return INTERRUPTED
