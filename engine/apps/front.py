"""The front door of the apps whose modules load torch (score, calibrate): their command lines, checked
before those modules are imported, so that a misspelt setting is answered in one line without importing
torch, matplotlib or the encoder (`check_line`, called by engine.apps.interrupt.run_app; this module
imports only the app kit, the shorthands and the apps' schemas)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from engine.apps.config import APPS, AppSpec
from engine.apps.kit import check_argv
from engine.apps.shorthands import score_shorthands


@dataclass(frozen=True)
class CommandLine:
    """What an app's command-line check needs: the app (its config root, the new keys it reads, the
    settings that name files: engine.apps.config.AppSpec) and the rewrite of its shorthands."""

    spec: AppSpec[object]
    rewrite: Callable[[list[str]], list[str]] | None = None

    def check(self) -> list[str]:
        """The process's command line checked (engine.apps.kit.check_argv), as Hydra is to run it: status 2
        with one line when bad."""
        return check_argv(self.spec.name, sys.argv[1:], self.spec.open_keys, self.spec.names, self.rewrite)


SCORE = CommandLine(APPS["score"], rewrite=score_shorthands)
"""m3bench-score."""

CALIBRATE = CommandLine(APPS["calibrate"])
"""m3bench-calibrate."""

LINES = {"engine.apps.score": SCORE, "engine.apps.calibrate": CALIBRATE}
"""The app modules whose command line is checked here first, by module."""


def check_line(module: str) -> list[str] | None:
    """The process's command line checked for the app module, if it is one of LINES (a bad one ends the
    process with status 2), as Hydra is to run it; None for another module."""
    line = LINES.get(module)
    return None if line is None else line.check()
