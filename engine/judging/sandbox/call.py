"""Calls one task's check module (run by `engine.evaluators.verifiers` through the check runner).

    python call.py INPUT.json RESULT_FD [WORKSPACE]

INPUT holds ``module`` (the check file), ``trajectory`` and ``tool_log``; WORKSPACE is the folder the
check gets (the runner's copy of the task's workspace; absent: None). The module's
``check(trajectory, workspace, tool_log)`` is called (or, when INPUT names ``function`` and ``args``,
that function with those arguments, ``{workspace}`` at the start of a text argument becoming WORKSPACE;
with ``package`` true the module is imported as ``<its folder>.<its name>``, so its relative imports
work) and ``{"result": <what it returned>}`` is written to the descriptor RESULT_FD (the supervisor's
result descriptor) when that is JSON, else ``{"error": "..."}`` with a one-line reason.

Before the check is loaded this process makes itself non-dumpable and its result descriptor not
inheritable: a program the check starts (code of the agent's, say) can neither inherit it nor open it
through ``/proc/<pid>/fd``, take it (pidfd_getfd) or trace this process (it has no capability), so it
cannot write this process's result; a file it writes is never read as one. Only the standard library
is imported here, so a check sees a plain interpreter.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _load(path: Path, package: bool) -> ModuleType:
    """The module at `path`: as ``<its folder>.<its name>`` when `package`, else on its own."""
    if package:
        sys.path.insert(0, str(path.parent.parent))
        return importlib.import_module(f"{path.parent.name}.{path.stem}")
    spec = importlib.util.spec_from_file_location("task_check", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _placed(value: Any, workspace: Path | None) -> Any:
    """A text argument starting with ``{workspace}`` with that part replaced by the workspace copy."""
    if isinstance(value, str) and value.startswith("{workspace}") and workspace is not None:
        return str(workspace) + value[len("{workspace}"):]
    return value


PR_SET_DUMPABLE = 4


def _seal_off(result: int) -> None:
    """Non-dumpable, the result descriptor kept from the programs it starts (module docstring)."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    os.set_inheritable(result, False)


def main() -> None:
    """Call the check of INPUT's module and write what it returned (or why it failed) to RESULT_FD."""
    source, result_fd = Path(sys.argv[1]), int(sys.argv[2])
    _seal_off(result_fd)
    workspace = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    job = json.loads(source.read_text(encoding="utf-8"))
    sys.path.insert(0, str(Path(job["module"]).parent))  # a check may import its helpers beside it
    try:
        module = _load(Path(job["module"]), bool(job.get("package")))
        name = job.get("function", "check")
        check = getattr(module, name, None)
        if not callable(check):
            raise AttributeError("the module defines no function check(trajectory, workspace, tool_log)"
                                 if name == "check" else f"the module defines no function {name}()")
        if "args" in job:
            result = check(*(_placed(a, workspace) for a in job["args"]))
        else:
            result = check(job["trajectory"], workspace, job["tool_log"])
        try:
            out = {"result": json.loads(json.dumps(result))}
        except (TypeError, ValueError):
            out = {"error": f"returned {type(result).__name__} {repr(result)[:80]}, not a list of 0/1"}
    except BaseException as exc:  # the check's own failure, reported as the evaluator's error
        out = {"error": _one_line(exc)[:300]}
    data = memoryview(json.dumps(out).encode("utf-8"))
    while data:
        data = data[os.write(result_fd, data):]


if __name__ == "__main__":
    main()
