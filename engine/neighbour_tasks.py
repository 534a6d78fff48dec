"""Task records of a neighbour benchmark's own checkout: MCPVerse's repository as published.

``read_mcpverse(root)`` reads ``<root>/mcpverse/data/*.csv`` (or ``<root>/data/*.csv`` when `root` is
the ``mcpverse`` folder itself), one task per row, in the shape the judge app's evaluators read:

- ``id`` = ``question_id``; ``question`` (the published runner's output folder
  ``./outputs/{OUTPUT_SUB_FOLDER}/task_outputs`` becomes ``.``, the task's workspace);
- ``level`` = ``complexity`` (null when empty: its own group in the published macro mean);
- ``ground_truth`` = ``answer`` (null when empty);
- ``eval_method`` ``llm_as_a_judge`` (judged against the answer) or ``eval_script``: ``eval_script`` =
  ``eval_scripts/<question_id>.py`` (``run_test(pred, path)``, the answer being the path it checks);
- ``get_answer_id`` (a column of the time-sensitive sets): ``answer_template`` =
  ``templates/<get_answer_id>.py`` (``get_reference()``, run at scoring time);
- ``required_mcps`` (``MCP`` split on ``+`` or ``;``), ``required_tools`` (``tool``), ``time_sensitive``
  (``time-sensitive`` other than ``No``).

Script paths are relative to `root`, as the evaluators resolve them against the tasks "file" (here
the folder). Bad input (no CSV, a missing column, a repeated id, an unknown eval_method, a missing
check script) is an InputError naming the file, the id and the field.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from engine.contract import InputError, Task

REQUIRED = ("question_id", "question", "complexity", "answer", "eval_method")
METHODS = ("llm_as_a_judge", "eval_script")
OUTPUT_FOLDER = "./outputs/{OUTPUT_SUB_FOLDER}/task_outputs"


def mcpverse_folder(root: Path) -> Path:
    """The ``mcpverse`` folder of a checkout (or `root` itself); InputError when it has no data/*.csv."""
    root = Path(root)
    for folder in (root / "mcpverse", root):
        if sorted((folder / "data").glob("*.csv")):
            return folder
    raise InputError(root, "no mcpverse/data/*.csv (expected a checkout of the MCPVerse repository)",
                     field="tasks.root")


def _split(value: str) -> list[str]:
    for separator in ("+", ";"):
        if separator in value:
            return [m.strip() for m in value.split(separator) if m.strip()]
    return [value.strip()] if value.strip() else []


def _record(path: Path, row: dict[str, str], folder: Path, prefix: str) -> dict[str, Any]:
    tid = (row.get("question_id") or "").strip()
    if not tid:
        raise InputError(path, "missing or empty id", field="question_id")
    method = (row.get("eval_method") or "").strip() or "llm_as_a_judge"
    if method not in METHODS:
        raise InputError(path, f"must be one of {', '.join(METHODS)}, got {method!r}", task_id=tid,
                         field="eval_method")
    answer = (row.get("answer") or "").strip()
    record: dict[str, Any] = {
        "id": tid, "question": (row.get("question") or "").replace(OUTPUT_FOLDER, "."),
        "level": (row.get("complexity") or "").strip() or None, "ground_truth": answer or None,
        "eval_method": method, "required_mcps": _split(row.get("MCP") or ""),
        "required_tools": (row.get("tool") or "").strip() or None,
        "time_sensitive": (row.get("time-sensitive") or "No").strip() != "No"}
    if method == "eval_script":
        if not (folder / "eval_scripts" / f"{tid}.py").is_file():
            raise InputError(path, f"no check script {folder / 'eval_scripts' / f'{tid}.py'}", task_id=tid,
                             field="eval_method")
        record["eval_script"] = f"{prefix}eval_scripts/{tid}.py"
    template = (row.get("get_answer_id") or "").strip()
    if template:
        if not (folder / "templates" / f"{template}.py").is_file():
            raise InputError(path, f"no answer template {folder / 'templates' / f'{template}.py'}", task_id=tid,
                             field="get_answer_id")
        record["answer_template"] = f"{prefix}templates/{template}.py"
    return record


def read_mcpverse(root: str | Path) -> dict[str, dict[str, Any]]:
    """id -> task record of every row of an MCPVerse checkout's data/*.csv (files in name order)."""
    root = Path(root)
    folder = mcpverse_folder(root)
    prefix = "" if folder == root else f"{folder.relative_to(root).as_posix()}/"
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((folder / "data").glob("*.csv")):
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(path, "missing column(s) " + ", ".join(missing), field=missing[0])
            for row in reader:
                record = _record(path, row, folder, prefix)
                if record["id"] in out:
                    raise InputError(path, "repeated id (in this or an earlier file of data/)", task_id=record["id"],
                                     field="question_id")
                out[record["id"]] = record
    return out


def mcpverse_tasks(root: str | Path, ids: list[str] | None = None) -> list[Task]:
    """The rollout's tasks of an MCPVerse checkout (every row, or those `ids`), in file order."""
    records = read_mcpverse(root)
    if ids:
        unknown = sorted({str(i) for i in ids} - set(records))
        if unknown:
            raise InputError(root, f"requested id(s) not in the checkout: {', '.join(unknown)}", field="tasks.ids")
    wanted = {str(i) for i in ids} if ids else None
    return [Task(tid, r["question"], None, None, r["level"], index) for index, (tid, r) in enumerate(records.items())
            if wanted is None or tid in wanted]
