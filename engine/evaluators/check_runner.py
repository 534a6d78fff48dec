"""Runs one task's check module in its own process (started by `engine.evaluators.verifiers`).

    python check_runner.py INPUT.json OUTPUT.json

INPUT holds ``module`` (the check file), ``trajectory``, ``workspace`` (a folder path or null) and
``tool_log``. The module's ``check(trajectory, workspace, tool_log)`` is called (or, when INPUT names
``function`` and ``args``, that function with those arguments; with ``package`` true the module is
imported as ``<its folder>.<its name>``, so its relative imports work) and OUTPUT gets
``{"result": <what it returned>}`` when that is JSON, else ``{"error": "..."}`` with a one-line reason.
Only the standard library is imported here, so a check sees a plain interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def main() -> None:
    """Call the check of INPUT's module and write what it returned (or why it failed) to OUTPUT."""
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    job = json.loads(source.read_text(encoding="utf-8"))
    sys.path.insert(0, str(Path(job["module"]).parent))  # a check may import its helpers beside it
    try:
        if job.get("package"):
            sys.path.insert(0, str(Path(job["module"]).parent.parent))
            module = importlib.import_module(f"{Path(job['module']).parent.name}.{Path(job['module']).stem}")
        else:
            spec = importlib.util.spec_from_file_location("task_check", job["module"])
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {job['module']}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        name = job.get("function", "check")
        check = getattr(module, name, None)
        if not callable(check):
            raise AttributeError("the module defines no function check(trajectory, workspace, tool_log)"
                                 if name == "check" else f"the module defines no function {name}()")
        workspace = Path(job["workspace"]) if job["workspace"] is not None else None
        result = check(*job["args"]) if "args" in job else check(job["trajectory"], workspace, job["tool_log"])
        try:
            out = {"result": json.loads(json.dumps(result))}
        except (TypeError, ValueError):
            out = {"error": f"returned {type(result).__name__} {repr(result)[:80]}, not a list of 0/1"}
    except BaseException as exc:  # the check's own failure, reported as the evaluator's error
        out = {"error": _one_line(exc)[:300]}
    target.write_text(json.dumps(out), encoding="utf-8")


if __name__ == "__main__":
    main()
