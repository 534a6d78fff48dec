"""What every app shares: the config roots, the run folder, and the entry points.

Every command of the project is made here: `hydra_app` for the apps with a config root under
conf/ (score, calibrate, rollout, judge), `command_app` for the plain command lines (report,
servers: a folder or a servers file and a few switches, nothing to compose); engine.apps.compose
composes every config (engine.apps.shorthands.spelt_out gives the command line an app runs with). The
console scripts (pyproject) and scripts/*.py call the same `main` of each app.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

import engine.apps.resolvers  # noqa: F401  (the configs' resolvers, registered once)
from engine.apps.check import check_command_line as check_command_line
from engine.apps.check import closest as closest
from engine.apps.compose import CONF_ROOT
from engine.apps.compose import config_groups as config_groups
from engine.apps.config import AppSpec, check_ranges, folder_problem, typed
from engine.apps.interrupt import interrupted
from engine.apps.overrides import CommandLineError as CommandLineError
from engine.contract import ConfigError


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


@dataclass
class Launch:
    """One launch of an app, shared by its entry point and its RunFolder callback (which Hydra makes): the
    app's check of an existing run folder, and the outermost folder the run created (None: none)."""

    check: Callable[[DictConfig, Path], None] | None = None
    created: Path | None = None


_LAUNCH: ContextVar[Launch | None] = ContextVar("m3bench_launch", default=None)
"""The launch under way, set by the entry point for the time of its run only (hydra_app's `main`)."""


@contextlib.contextmanager
def launched(launch: Launch) -> Iterator[Launch]:
    """`launch` as the launch under way for the block, and the one before it again afterwards."""
    token = _LAUNCH.set(launch)
    try:
        yield launch
    finally:
        _LAUNCH.reset(token)


@contextlib.contextmanager
def hydra_argv(argv: Sequence[str]) -> Iterator[None]:
    """The process's arguments as Hydra is to read them (`argv` after the program's name) for the block, and
    as they were afterwards: Hydra reads its command line from sys.argv and nowhere else."""
    given = sys.argv[1:]
    sys.argv[1:] = list(argv)
    try:
        yield
    finally:
        sys.argv[1:] = given


class RunFolder(Callback):
    """Hydra callback (hydra.callbacks.run_folder of every app): notes whether the run folder
    (hydra.run.dir) exists before Hydra creates it, so that a failed run can remove what it created (in the
    launch under way: Launch)."""

    def on_run_start(self, config: DictConfig, **kwargs: object) -> None:
        """Called before Hydra creates the run folder (or writes into it): a folder that cannot be made
        (engine.apps.config.folder_problem), or an existing folder the app refuses (`check`, raising a
        ValueError such as ConfigError, or an OSError), ends the run with one line and status 2 before
        Hydra writes `.hydra/` and the log into it."""
        folder = Path(str(OmegaConf.select(config, "hydra.run.dir"))).absolute()
        _check_folder("hydra.run.dir", folder)
        launch = _LAUNCH.get() or Launch()
        if launch.check is not None and folder.is_dir():
            try:
                launch.check(config, folder)
            except (ValueError, OSError) as exc:
                print(f"error: {exc}", file=sys.stderr)
                sys.exit(2)
        outermost = None
        for path in (folder, *folder.parents):
            if path.exists():
                break
            outermost = path
        launch.created = outermost

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        """Called before Hydra creates the multirun's folder: one that cannot be made ends it as above."""
        _check_folder("hydra.sweep.dir", Path(str(OmegaConf.select(config, "hydra.sweep.dir"))).absolute())


def _check_folder(key: str, folder: Path) -> None:
    """End the process with one line and status 2 when the run folder of `key` cannot be made."""
    problem = folder_problem(folder)
    if problem is not None:
        print(f"error: {key}={folder}: {problem}", file=sys.stderr)
        sys.exit(2)


def remove_failed_run_folder(created: Path | None) -> None:
    """After a run stopped by bad input: remove its run folder when this run created it (`created`: the
    outermost folder it created, RunFolder) and it holds nothing but Hydra's own files (`.hydra/`,
    `<job name>.log`), with the empty folders above it it created."""
    if created is None or not HydraConfig.initialized():
        return
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode != RunMode.RUN:
        return
    folder = Path(hydra_cfg.runtime.output_dir).absolute()
    own = {".hydra", f"{hydra_cfg.job.name}.log"}
    if not folder.is_dir() or not (folder == created or created in folder.parents):
        return
    if any(entry.name not in own for entry in folder.iterdir()):
        return
    shutil.rmtree(folder, ignore_errors=True)
    for parent in folder.parents:
        if parent != created and created not in parent.parents:
            break
        try:
            parent.rmdir()
        except OSError:
            break


def check_argv(app: str, argv: Sequence[str], open_keys: Sequence[str] = (), names: Sequence[str] = (),
               rewrite: Callable[[list[str]], list[str]] | None = None) -> list[str]:
    """A command line of the app checked (`rewrite` first: its shorthands spelt out; then check_command_line):
    the command line as Hydra is to run it; a CommandLineError ends the process with its one line and
    status 2."""
    try:
        return check_command_line(app, rewrite(list(argv)) if rewrite else list(argv), open_keys, names)
    except CommandLineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


def _remove_failed_run() -> None:
    """remove_failed_run_folder of the launch under way (a module function: a launcher that pickles the task,
    submitit's, pickles it by name, and a ContextVar cannot be pickled)."""
    launch = _LAUNCH.get()
    remove_failed_run_folder(launch.created if launch is not None else None)


def run_config(spec: AppSpec[object], run: Callable[..., int], cfg: DictConfig) -> int:
    """Run the app on a composed config: its ranges checked (what the command line's check could not see, a
    group option's own file), then ``run(typed(spec, cfg), run_folder)`` for an app with `spec.typed` (the
    config as the schema's objects, made once: engine.apps.config.typed), else ``run(cfg)``; a refused value
    is one line and status 2. Returns the status."""
    try:
        check_ranges(spec.name, cfg)
        settings = typed(spec, cfg, missing_as_none=spec.missing_as_none) if spec.typed else None
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return run(cfg) if settings is None else run(settings, output_folder(cfg))


def hydra_app(spec: AppSpec[object], run: Callable[..., int], quick_exit: bool = False,
              rewrite: Callable[[list[str]], list[str]] | None = None,
              check_folder: Callable[[DictConfig, Path], None] | None = None) -> Callable[..., None]:
    """The entry point of the app `spec` (config root conf/<spec.name>/): checks the command line
    (`rewrite` first, when given: the app's shorthands spelt out; then check_command_line, with the
    app's open_keys and names, before Hydra makes a run folder of them),
    then runs `run` (each job of a multirun: ``run(cfg)`` with the composed config, or, for an app with
    `spec.typed`, ``run(typed(spec, cfg), run_folder)``) and exits with its status; a run stopped by bad input
    (status 2) removes the run folder it created when that holds nothing but Hydra's own files
    (RunFolder); `check_folder(cfg, folder)`, when given, checks an existing run folder before Hydra
    writes into it (RunFolder, through the Launch under way). Ctrl-C ends it with one line and status 130
    (`interrupted`). With `quick_exit`, the process ends through exit_now. `main(checked=LINE)` runs the
    process's command line as already checked (check_argv: engine.apps.interrupt.run_app checks it before the
    app's modules load). sys.argv is Hydra's command line only while Hydra runs, and as it was afterwards."""

    app, open_keys, names = spec.name, spec.open_keys, spec.names

    @hydra.main(version_base="1.3", config_path=str(CONF_ROOT / app), config_name="config")
    def task(cfg: DictConfig) -> None:
        code = run_config(spec, run, cfg)
        if code == 2:  # bad input: the run stopped before doing anything
            _remove_failed_run()
        if code:
            sys.exit(code)

    def start(argv: Sequence[str], checked: bool = False) -> None:
        line = list(argv) if checked else check_argv(app, argv, open_keys, names, rewrite)
        try:
            with launched(Launch(check_folder)), hydra_argv(line):
                task()
        except KeyboardInterrupt as exc:
            sys.exit(interrupted(exc))

    def main(argv: Sequence[str] | None = None, checked: Sequence[str] | None = None) -> None:
        if argv is not None:  # called in-process: these arguments, and the process is not ended early
            start(argv)
            return
        line, given = (checked, True) if checked is not None else (sys.argv[1:], False)
        if not quick_exit:
            start(line, given)
            return
        try:
            start(line, given)
        except SystemExit as stop:
            code = stop.code
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
                code = 1
            exit_now(code or 0)
        exit_now(0)

    main.__doc__ = (f"Entry point of m3bench-{app} (config root conf/{app}/): the process's arguments (`checked`: "
                    "checked already), or argv when given (in-process: exits with SystemExit, never through exit_now).")
    return main


def command_app(app: str, run: Callable[[list[str] | None], int]) -> Callable[[], None]:
    """The entry point of a plain command line app: runs `run` on the process's arguments and exits
    with its status (130 after one line on Ctrl-C)."""

    def main() -> None:
        try:
            code = run(None)
        except KeyboardInterrupt as exc:
            code = interrupted(exc)
        sys.exit(code)

    main.__doc__ = f"Entry point of m3bench-{app} (a plain command line)."
    return main

