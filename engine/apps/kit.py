"""What every app shares: the config roots, the run folder, and the entry points.

Every command of the project is made here: `hydra_app` for the apps with a config root under
conf/ (score, calibrate, rollout, judge), `command_app` for the plain command lines (report,
servers: a folder or a servers file and a few switches, nothing to compose), and `compose_config`
gives the config a Hydra app's command line would run with. The console scripts (pyproject) and
scripts/*.py call the same `main` of each app.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import hydra
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONF_ROOT = PROJECT_ROOT / "conf"

# ${project_path:rollout/demo/reference.json}: a path inside the project, wherever it is installed.
OmegaConf.register_new_resolver("project_path", lambda rel: str(PROJECT_ROOT / rel), replace=True)


class BelowWarning(logging.Filter):
    """Passes only records below WARNING: stdout's filter, as warnings and errors go to stderr."""

    def filter(self, record: logging.LogRecord) -> bool:
        """True for DEBUG and INFO records."""
        return record.levelno < logging.WARNING


def output_folder(cfg: DictConfig) -> Path:
    """The run's output folder: Hydra's run (or multirun job) folder, else `output_dir`."""
    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    return Path(cfg.output_dir)


def exit_now(code: int) -> NoReturn:
    """End the process with `code` after the exit handlers (log flushing...) and a flush of stdout
    and stderr, skipping the rest of the interpreter's teardown (torch's alone takes about 0.4 s);
    every file of a run is closed by then. While other threads live (a launcher's executor, say),
    the interpreter ends normally, so they are shut down as usual."""
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def hydra_app(app: str, run: Callable[[DictConfig], int], quick_exit: bool = False) -> Callable[[], None]:
    """The entry point of an app whose config root is conf/<app>/: runs `run` (each job of a
    multirun) and exits with its status; with `quick_exit`, through exit_now."""

    @hydra.main(version_base="1.3", config_path=str(CONF_ROOT / app), config_name="config")
    def task(cfg: DictConfig) -> None:
        code = run(cfg)
        if code:
            sys.exit(code)

    def main() -> None:
        if not quick_exit:
            task()
            return
        try:
            task()
        except SystemExit as stop:
            code = stop.code
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
                code = 1
            exit_now(code or 0)
        exit_now(0)

    main.__doc__ = f"Entry point of m3bench-{app} (config root conf/{app}/)."
    return main


def command_app(app: str, run: Callable[[list[str] | None], int]) -> Callable[[], None]:
    """The entry point of a plain command line app: runs `run` on the process's arguments and exits
    with its status."""

    def main() -> None:
        sys.exit(run(None))

    main.__doc__ = f"Entry point of m3bench-{app} (a plain command line)."
    return main


def compose_config(app: str, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved config the command line of app (config root conf/<app>/) with these overrides
    would run with, as a plain dict."""
    with initialize_config_dir(config_dir=str(CONF_ROOT / app), version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]
