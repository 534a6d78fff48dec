"""Task records of a neighbour benchmark's own files: MCPVerse's repository as published, and a folder of
TOBench task files; ``read_task_dir`` tells them apart.

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

``read_tobench(root)`` reads every ``*.json`` under `root` holding a TOBench task (an object, or a list
of them, with the fields of the paper's section 3.2: ``task_name``, ``task_difficulty``, ``turn_mode``,
``required_mcp``, ``agent_config``, ``user_request``, ``input_files``): ``id`` = ``task_name``;
``question`` = ``user_request``; ``type`` = its ``task_family`` (or ``category``) field, else the first
folder under `root` it lies in (the family folders); ``image`` = the first input file with an image
suffix; ``check`` = its ``check`` field, else ``<task file stem>.py`` beside a one-task file when there
is one (TOBench publishes no verifier code: a check module follows engine.evaluators.verifiers).
A file some task names in ``input_files`` is that task's data, never read as a task; another ``*.json``
that is not valid JSON is left out with a warning naming it (the tasks of the other files run).

Script and input file paths are relative to `root`, as the evaluators resolve them against the tasks
"file" (here the folder), and must stay inside it (`engine.contract.contained_path`: no '..' or absolute
path leading out, no symlink out), checked when the folder is read. Bad input (no task, a missing column
or field, a repeated id, an unknown eval_method, a missing check script, a CSV that is not UTF-8 or
leaves a quote open) is an InputError naming the file, the id and the field (and the line of a CSV).
"""

from __future__ import annotations

import csv
import io
import logging
import os
from pathlib import Path

from engine.contract import InputError, JsonObject, JsonValue, Task, contained_path, read_json
from engine.contract.beneath import Refused, open_beneath

REQUIRED = ("question_id", "question", "complexity", "answer", "eval_method")
METHODS = ("llm_as_a_judge", "eval_script", "test_case")
"""``test_case``: the earlier releases' state checks, ``test_cases/<answer>.py`` (else ``eval_scripts/``)."""
NO_TEMPLATE = ("", "-")
"""``get_answer_id`` values of the earlier releases that name no template."""
OUTPUT_FOLDER = "./outputs/{OUTPUT_SUB_FOLDER}/task_outputs"

log = logging.getLogger(__name__)


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


def _record(path: Path, row: dict[str, str], folder: Path, prefix: str) -> tuple[str, JsonObject] | None:
    """A row's id and task record; None for a row of empty fields (the earlier releases' separator rows)."""
    if not any((v or "").strip() for v in row.values()):
        return None
    tid = (row.get("question_id") or "").strip()
    if not tid:
        raise InputError(path, "missing or empty id", field="question_id")
    method = (row.get("eval_method") or "").strip() or "llm_as_a_judge"
    if method not in METHODS:
        raise InputError(path, f"must be one of {', '.join(METHODS)}, got {method!r}", task_id=tid,
                         field="eval_method")
    answer = (row.get("answer") or "").strip()
    record: JsonObject = {
        "id": tid, "question": (row.get("question") or "").replace(OUTPUT_FOLDER, "."),
        "level": (row.get("complexity") or "").strip() or None, "ground_truth": answer or None,
        "eval_method": method, "required_mcps": [*_split(row.get("MCP") or "")],
        "required_tools": (row.get("tool") or "").strip() or None,
        "time_sensitive": (row.get("time-sensitive") or "No").strip() != "No"}
    if method == "eval_script":
        script = contained_path(folder / "eval_scripts", f"{tid}.py", file=path, task=tid, field="question_id",
                                folder="check scripts' folder")
        if not script.is_file():
            raise InputError(path, f"no check script {script}", task_id=tid, field="eval_method")
        record["eval_script"] = f"{prefix}eval_scripts/{tid}.py"
    elif method == "test_case":  # the answer names the module; its run_test(pred, "") checks paths itself
        where = "test_cases" if (folder / "test_cases" / f"{answer}.py").is_file() else "eval_scripts"
        script = contained_path(folder / where, f"{answer}.py", file=path, task=tid, field="answer",
                                folder="check scripts' folder")
        if not answer or not script.is_file():
            raise InputError(path, f"no check script {answer!r} under test_cases/ or eval_scripts/", task_id=tid,
                             field="answer")
        record.update(eval_script=f"{prefix}{where}/{answer}.py", ground_truth=None)
    template = (row.get("get_answer_id") or "").strip()
    if template not in NO_TEMPLATE:
        script = contained_path(folder / "templates", f"{template}.py", file=path, task=tid, field="get_answer_id",
                                folder="answer templates' folder")
        if script.is_file():
            record["answer_template"] = f"{prefix}templates/{template}.py"
        else:  # the published runner's import fails too: the row keeps its answer
            record["missing_template"] = template
    return tid, record


def read_mcpverse(root: str | Path) -> dict[str, JsonObject]:
    """id -> task record of every row of an MCPVerse checkout's data/*.csv (files in name order)."""
    root = Path(root)
    folder = mcpverse_folder(root)
    prefix = "" if folder == root else f"{folder.relative_to(root).as_posix()}/"
    out: dict[str, JsonObject] = {}
    for path in sorted((folder / "data").glob("*.csv")):
        blank, missing = 0, []
        for row in csv_rows(path):
            read = _record(path, row, folder, prefix)
            if read is None:
                blank += 1
                continue
            tid, record = read
            if "missing_template" in record:
                missing.append(f"{tid} ({record.pop('missing_template')})")
            if tid in out:
                raise InputError(path, "repeated id (in this or an earlier file of data/)", task_id=tid,
                                 field="question_id")
            out[tid] = record
        if blank:
            log.warning("%s: %d row(s) of empty fields left out", path, blank)
        if missing:
            log.warning("%s: %d task(s) name an answer template that is not under templates/ and are judged "
                        "against their answer column, as the published runner falls back: %s", path, len(missing),
                        ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""))
    return out


def _line_id(data: bytes, line: int) -> str | None:
    """The first field of a line of raw CSV bytes (its question id, where it is one), or None."""
    lines = data.split(b"\n")
    first = lines[line - 1].split(b",")[0].strip(b'"\r ') if 0 < line <= len(lines) else b""
    text = first.decode("utf-8", "replace")
    return text if text and text.isprintable() and "\ufffd" not in text and len(text) <= 40 else None


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of an MCPVerse CSV (UTF-8, a BOM allowed), checked: invalid UTF-8, a quote left open (it
    would swallow the rows after it), a stray quote, a row spanning lines with more or fewer fields than
    the header and a missing column are InputErrors naming the file, the line and the task where known.
    A long field is read whole (the csv module's 131,072-character limit is lifted to the file's size)."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(path, f"line {line}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})",
                         task_id=_line_id(data, line)) from None
    csv.field_size_limit(max(csv.field_size_limit(), len(text) + 1))
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[dict[str, str]] = []
    header: list[str] = []
    start = 1
    while True:
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(path, f"line {start}: {exc} (a quote opened on this line is not closed where it "
                             f"should be; the rows after it would be read as its text)",
                             task_id=_line_id(data, start)) from None
        end, first = reader.line_num, start
        start = end + 1
        if not values:
            continue  # a blank line
        if not header:
            header = values
            missing = [c for c in REQUIRED if c not in header]
            if missing:
                raise InputError(path, "missing column(s) " + ", ".join(missing), field=missing[0])
            continue
        if end > first and len(values) != len(header):
            raise InputError(path, f"lines {first}-{end}: one row of {len(values)} field(s) for the header's "
                             f"{len(header)} (a quote left open swallows the rows after it)",
                             task_id=_line_id(data, first))
        rows.append(dict(zip(header, values)))
    if not header:
        raise InputError(path, "missing column(s) " + ", ".join(REQUIRED), field=REQUIRED[0])
    return rows


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")


def _tobench_record(root: Path, path: Path, obj: JsonObject, alone: bool) -> tuple[str, JsonObject]:
    tid = obj.get("task_name")
    if not isinstance(tid, str) or not tid.strip():
        raise InputError(path, "missing or empty task name", field="task_name")
    request = obj.get("user_request")
    if not isinstance(request, str) or not request.strip():
        raise InputError(path, "missing or empty text", task_id=tid, field="user_request")
    given = obj.get("input_files") or []
    files = [f for f in given if isinstance(f, str)] if isinstance(given, list) else []
    if not isinstance(given, list) or len(files) != len(given):
        raise InputError(path, "must be a list of paths", task_id=tid, field="input_files")
    relative = path.parent.relative_to(root)
    for k, name in enumerate(files):
        contained_path(root, (relative / name).as_posix(), file=path, task=tid, field=f"input_files[{k}]",
                       folder="task folder (tasks.root)")
    family = obj.get("task_family") or obj.get("category") or (relative.parts[0] if relative.parts else None)
    if family is not None and not isinstance(family, str):
        raise InputError(path, f"must be a text, got {family!r}", task_id=tid,
                         field="task_family" if obj.get("task_family") else "category")
    image = next((f for f in files if Path(f).suffix.lower() in IMAGE_SUFFIXES), None)
    check = obj.get("check")
    if check is None and alone and path.with_suffix(".py").is_file():
        check = path.with_suffix(".py").relative_to(root).as_posix()
    elif isinstance(check, str):
        check = (relative / check).as_posix()
        contained_path(root, check, file=path, task=tid, field="check", folder="task folder (tasks.root)")
    return tid, {**obj, "id": tid, "question": request, "type": family, "check": check,
                 "image": None if image is None else (relative / image).as_posix()}


def _listed(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []


def read_tobench(root: str | Path) -> dict[str, JsonObject]:
    """id -> task record of every TOBench task file under `root` (paths in sorted order)."""
    root = Path(root)
    parsed: dict[Path, list[JsonObject]] = {}
    broken: dict[Path, InputError] = {}
    for path in sorted(root.rglob("*.json")):
        try:
            data = read_json(path, "task file")
        except InputError as exc:
            broken[path] = exc
            continue
        items = data if isinstance(data, list) else [data]
        if all(isinstance(o, dict) and "task_name" in o for o in items):
            parsed[path] = items  # else not a task file (a fixture, a task's data)
    inputs = {(path.parent / name).resolve() for path, items in parsed.items() for obj in items
              for name in _listed(obj.get("input_files")) if isinstance(name, str)}
    for path, error in broken.items():
        if path.resolve() not in inputs:
            log.warning("%s (not read as a task file; any task it holds is left out)", error)
    out: dict[str, JsonObject] = {}
    for path, items in parsed.items():
        if path.resolve() in inputs:
            continue  # a task's input file is its data, never a task description
        for obj in items:
            tid, record = _tobench_record(root, path, obj, len(items) == 1)
            if tid in out:
                raise InputError(path, "repeated task name (in this or an earlier task file)", task_id=tid,
                                 field="task_name")
            out[tid] = record
    if not out:
        why = f" ({len(broken)} *.json not valid JSON, first: {next(iter(broken.values()))})" if broken else ""
        raise InputError(root, "no TOBench task file (*.json objects with task_name and user_request) and no "
                         f"mcpverse/data/*.csv{why}", field="tasks.root")
    return out


def read_task_dir(root: str | Path) -> dict[str, JsonObject]:
    """The task records of a neighbour's folder: an MCPVerse checkout (data/*.csv), else TOBench task files."""
    root = Path(root)
    if any(sorted((folder / "data").glob("*.csv")) for folder in (root / "mcpverse", root)):
        return read_mcpverse(root)
    return read_tobench(root)


def task_dir_tasks(root: str | Path, ids: list[str] | None = None) -> list[Task]:
    """The rollout's tasks of a neighbour's folder (every task, or those `ids`), in file order; an image
    resolved against `root` must be a regular file there (a FIFO is refused, never opened to wait on)."""
    records = read_task_dir(root)
    if ids:
        unknown = sorted({str(i) for i in ids} - set(records))
        if unknown:
            raise InputError(root, f"requested id(s) not in the checkout: {', '.join(unknown)}", field="tasks.ids")
    wanted = {str(i) for i in ids} if ids else None
    tasks = []
    for index, (tid, r) in enumerate(records.items()):
        if wanted is not None and tid not in wanted:
            continue
        question, image, family = r["question"], r.get("image"), r.get("type") or r.get("level")
        assert isinstance(question, str) and isinstance(image, str | None) and isinstance(family, str | None)
        image_path = contained_path(root, image, file=root, task=tid, field="input_files",
                                    folder="task folder (tasks.root)") if image else None
        if image_path is not None:
            try:
                os.close(open_beneath(root, image_path))  # a FIFO is refused, never waited on
            except Refused as exc:
                raise InputError(root, f"input file {image_path}: {exc}", task_id=tid, field="input_files") from None
        tasks.append(Task(tid, question, image, image_path, family, index))
    return tasks
