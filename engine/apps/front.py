"""The front door of the apps whose modules load torch (score, calibrate): their command lines, checked
before those modules are imported, so that a misspelt setting is answered in one line without importing
torch, matplotlib or the encoder (`check_line`, called by engine.apps.interrupt.run_app; this module
imports only the app kit, the shorthands and the evaluators' names)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.apps.kit import check_argv
from engine.apps.shorthands import score_shorthands
from engine.evaluators import evaluators


@dataclass(frozen=True)
class CommandLine:
    """What an app's command-line check needs: its config root, the new keys it reads, the settings that
    name files, and the rewrite of its shorthands."""

    app: str
    open_keys: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    rewrite: Callable[[list[str]], list[str]] | None = None

    def check(self) -> None:
        """Check the process's command line (engine.apps.kit.check_argv): status 2 with one line when bad."""
        check_argv(self.app, self.open_keys, self.names, self.rewrite)


SCORE = CommandLine("score", open_keys=tuple(f"model.{e.option}" for e in evaluators()),
                    names=("model.name", "sweep.models"), rewrite=score_shorthands)
"""m3bench-score: new keys it reads are an evaluator's file, `+model.<option>=PATH`; model.name and
sweep.models become part of file and folder names (engine.contract.check_name)."""

CALIBRATE = CommandLine("calibrate")
"""m3bench-calibrate."""

APPS = {"engine.apps.score": SCORE, "engine.apps.calibrate": CALIBRATE}
"""The app modules whose command line is checked here first, by module."""


def check_line(module: str) -> bool:
    """Check the process's command line for the app module, if it is one of APPS (a bad one ends the process
    with status 2); whether it was checked."""
    line = APPS.get(module)
    if line is None:
        return False
    line.check()
    return True
