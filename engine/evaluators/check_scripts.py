"""A Python file a task names (a check module, an eval script, an answer template) and its contained run: the
file resolved inside the tasks folder (`task_script`), the files of the tasks folder it imports (`check_files`,
`script_imports`: their content is part of a verdict's input key), and `run_check`, which calls it in the check
sandbox (engine.judging: run_contained) and reads its answer back, or says in one line why there is none
(`CheckFailed`). Shared by the verifiers and answer equivalence."""

from __future__ import annotations

import ast
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from engine.contract import InputError, contained_path, is_number
from engine.judging import CHECK_CALL, CheckRun, SandboxSettings, run_contained

log = logging.getLogger(__name__)


def task_script(tasks_file: Path, task_id: str, value: object, field: str = "check") -> Path:
    """A Python file a task names in `field`, resolved against the tasks file's folder (the folder
    itself when `tasks_file` is one); InputError when it is not a relative path to a .py file inside it
    (the rule of every path a task names: `engine.contract.contained_path`)."""
    tasks_file = Path(tasks_file)
    base = tasks_file.resolve() if tasks_file.is_dir() else tasks_file.resolve().parent
    if not isinstance(value, str) or not value.strip():
        raise InputError(tasks_file, f"must be a path to a .py file or null, got {value!r}", task_id=task_id,
                         field=field)
    target = contained_path(base, value, file=tasks_file, task=task_id, field=field)
    if target.suffix != ".py" or not target.is_file():
        raise InputError(tasks_file, f"no Python file {target}", task_id=task_id, field=field)
    return target


def task_workspace(workspace: Path | None, task_id: str) -> Path | None:
    """A task's workspace folder (`workspace`, a folder of the workspace folder) resolved, None when there
    is none; InputError when it is, or passes through, a symbolic link leading out of the workspace
    folder (its copy would be made from there)."""
    if workspace is None or not workspace.is_dir():
        return None
    folder, target = workspace.parent.resolve(), workspace.resolve()
    if not target.is_relative_to(folder) or target == folder:
        raise InputError(workspace, f"is a symbolic link to {target}, out of the workspace folder {folder} (a "
                         "task's workspace is a folder inside it)", task_id=task_id)
    return target


def _imported(source: Path, roots: Sequence[Path], package: bool) -> Iterator[Path]:
    """The Python files an import statement of `source` may load from `roots` or, when `package`, from its
    own package (relative imports): each module of a dotted name and its packages' ``__init__.py``."""
    try:
        tree = ast.parse(source.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            wanted = [(roots, alias.name.split(".")) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if not package:
                    continue
                base = source.parent
                for _ in range(node.level - 1):
                    base = base.parent
                where: Sequence[Path] = (base,)
            else:
                where = roots
            parts = node.module.split(".") if node.module else []
            wanted = [(where, [*parts, alias.name]) for alias in node.names]
        else:
            continue
        for folders, dotted in wanted:
            for folder in folders:
                for depth in range(1, len(dotted) + 1):
                    stem = folder.joinpath(*dotted[:depth])
                    yield from (stem.with_name(stem.name + ".py"), stem / "__init__.py")


def check_files(module: Path, tasks_folder: Path, package: bool = False) -> list[Path]:
    """The files a check module needs besides the interpreter: itself and the Python files of the tasks
    folder it imports (read from its import statements, and theirs, in turn; its own folder, and its
    package's parent when `package`, are on its import path). Files outside the tasks folder, or reached
    through a link out of it, are left out."""
    base = tasks_folder.resolve()
    roots = (module.parent, module.parent.parent) if package else (module.parent,)
    found = [module]
    if package:
        found += [p for p in (module.parent / "__init__.py",) if p.is_file()]
    todo = list(found)
    while todo:
        for path in _imported(todo.pop(), roots, package):
            if path not in found and path.is_file() and path.resolve().is_relative_to(base):
                found.append(path)
                todo.append(path)
    return found


DYNAMIC = frozenset({"import_module", "__import__", "spec_from_file_location", "SourceFileLoader", "run_path",
                     "run_module", "load_source"})
"""The calls that load a module at run time (importlib, runpy): what they load is found by no import
statement, so it is neither in a check's sandbox nor in its verdict's input key."""


def dynamic_imports(source: Path) -> list[str]:
    """The calls of DYNAMIC in a Python file, each ``name (line N)``; none when it does not parse."""
    try:
        tree = ast.parse(source.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in DYNAMIC:
                found.append(f"{name} (line {node.lineno})")
    return found


@cache
def _warn_dynamic(script: Path, tasks_folder: Path, package: bool) -> None:
    for path in check_files(script, tasks_folder, package):
        calls = dynamic_imports(path)
        if calls:
            log.warning("%s loads modules at run time (%s): a module loaded so is neither in its check's sandbox "
                        "nor in its verdicts' input keys (a change to it judges nothing again)", path,
                        ", ".join(calls[:3]))


def script_imports(script: Path, tasks_folder: Path, package: bool = False) -> dict[str, Path]:
    """The Python files of the tasks folder a script imports (`check_files`, less the script itself), by
    their path relative to that folder; a warning, once per script, naming those of them (itself
    included) that also load modules at run time (`dynamic_imports`)."""
    _warn_dynamic(script, tasks_folder, package)
    base = tasks_folder.resolve()
    return {(p.relative_to(base) if p.is_relative_to(base) else p).as_posix(): p
            for p in check_files(script, tasks_folder, package)[1:]}


def check_module(tasks_file: Path, task_id: str, value: object) -> Path:
    """The check file a task names in ``check`` (`task_script`)."""
    return task_script(tasks_file, task_id, value, "check")


def checks_of(result: object) -> list[int]:
    """A check's return value as a list of 0/1; ValueError naming what it was otherwise."""
    if not isinstance(result, list) or not result:
        raise ValueError(f"returned {json.dumps(result)[:80]}, expected a non-empty list of 0/1")
    for value in result:
        if not (isinstance(value, bool) or (is_number(value) and value in (0, 1))):
            raise ValueError(f"returned {json.dumps(result)[:80]}: {json.dumps(value)[:20]} is not 0/1")
    return [int(v) for v in result]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


class CheckFailed(ValueError):
    """A check that gave no answer (it raised, died, ran past its limits): the one-line reason, and the
    entries of the workspace left out of its copy (``skipped``)."""

    def __init__(self, reason: str, skipped: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.skipped = tuple(skipped)


async def run_check(module: Path, tasks_folder: Path, trajectory: Any, workspace: Path | None, tool_log: Any,
                    settings: SandboxSettings, call: tuple[str, list[Any]] | None = None,
                    package: bool = False) -> tuple[Any, tuple[str, ...]]:
    """The checks of one module on one run, contained (engine.judging.sandbox.runner: a copy of the
    workspace, working folder a scratch folder, the module and the files of the tasks folder it imports
    readable, as copies read beneath the tasks folder: `check_files`), and the entries of the workspace
    left out of its copy (links, FIFOs, sockets, devices); CheckFailed with a one-line reason when it
    raises, dies, runs past the time limit, goes over its disk limit or returns anything but a non-empty
    list of 0/1. Its answer is what the check caller wrote to its result descriptor, taken only when the
    caller exited 0.

    `call` (function name, arguments) calls another function of the module with those arguments and
    returns what it returned, unchecked (MCPVerse's ``run_test(pred, path)`` and ``get_reference()``);
    `package`: the module is imported as ``<its folder>.<its name>`` (its relative imports work)."""
    job: dict[str, Any] = {"module": str(module), "trajectory": trajectory, "tool_log": tool_log}
    if call is not None:
        job.update(function=call[0], args=call[1], package=package)
    command = [sys.executable, str(CHECK_CALL), "input.json", "{result}", *(["{workspace}"] if workspace else [])]
    run = await run_contained(command, timeout=settings.timeout, inputs={"input.json": json.dumps(job).encode("utf-8")},
                              workspace=workspace, reads=(CHECK_CALL,),
                              copies=check_files(module, tasks_folder, package), copies_root=tasks_folder,
                              env=settings.env, limits=settings.limits, isolate=settings.isolate)
    return _answer(run, settings, call is not None), run.skipped


def _answer(run: CheckRun, settings: SandboxSettings, raw: bool) -> Any:
    """What a check run answered (its checks, or what the function returned when `raw`); CheckFailed."""
    def failed(reason: str) -> CheckFailed:
        return CheckFailed(reason, run.skipped)

    if run.error is not None:
        raise failed(run.error)
    if run.over_disk:
        raise failed(f"its files went over the disk limit of {settings.limits.disk // 1024**2} MB (disk_mb)"
                     if settings.limits.disk is not None else "its files went over the disk limit")
    if run.timed_out:
        raise failed(f"timed out after {settings.timeout:g} s")
    if run.status != 0 or run.result == b"":
        raise failed(f"the check process exited with status {run.status}"
                     f"{'' if run.status != 0 else ' and no result'}: {_last_line(run.stderr)}")
    if run.result is None:
        raise failed(f"its result is over {settings.limits.result} bytes")
    try:
        out = json.loads(run.result)
    except ValueError:
        raise failed("its result is not JSON") from None
    if not isinstance(out, dict) or not ("error" in out or "result" in out):
        raise failed("its result holds no result")
    if "error" in out:
        raise failed(str(out["error"]))
    if raw:
        return out["result"]
    try:
        return checks_of(out["result"])
    except ValueError as exc:
        raise failed(str(exc)) from None


def skipped_note(skipped: Sequence[str]) -> str:
    """The note on the entries of a workspace left out of a check's copy."""
    return (f"not in the workspace's copy: {', '.join(skipped[:10])}"
            + (f" and {len(skipped) - 10} more" if len(skipped) > 10 else "")
            + " (links, FIFOs, sockets and devices are never copied)")
