"""Reading and writing trajectory files: every object checked (one-line `InputError`s naming the file, the
task id and the field), a repeated id keeping its last object, model output read leniently; written
atomically as strict JSON."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

from engine.contract.atomic import atomic_write_text
from engine.contract.errors import InputError, shown
from engine.contract.jsonio import (
    JsonMapping,
    JsonObject,
    JsonValue,
    ValueProblem,
    checked_canonical_json,
    dumps_json,
    lenient_canonical_json,
    lone_surrogate,
    read_json,
)
from engine.contract.trajectory import MADE, Call, Step, Trajectory, TrajectoryFile, call_made
from engine.contract.trajectory_shapes import shape_hint, vtb_response

log = logging.getLogger(__name__)

MAX_WARNINGS = 10
"""Calls of one file whose lenient reading is named in a warning; the rest are counted."""


def _entries(path: Path, root: object) -> list[tuple[str, JsonObject]]:
    """(id, object) pairs of a list of objects or of an object mapping id -> object, in file order."""
    if isinstance(root, list):
        items: list[tuple[str | None, object]] = [(None, obj) for obj in root]
    elif isinstance(root, dict):
        items = list(root.items())
    else:
        raise InputError(path, f"the root must be a list of tasks or an object of id -> task, "
                               f"got {type(root).__name__}")
    out = []
    for position, (key, obj) in enumerate(items):
        label = key if key is not None else f"#{position}"
        if not isinstance(obj, dict):
            wrapped = (f"; the file must be a list of task objects (or an object of id -> task), and the list "
                       f"under {shown(str(key))!r} looks like one" if key is not None and isinstance(obj, list)
                       and obj and all(isinstance(o, dict) for o in obj) else "")
            raise InputError(path, f"a task must be an object, got {type(obj).__name__}{wrapped}", task_id=label)
        value = obj.get("id")
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise InputError(path, f"id must be a string or an integer, got {type(value).__name__}",
                                 task_id=label, field="id")
            task_id = str(value)
        elif key is not None:
            task_id = key
        else:
            raise InputError(path, "task has no id", task_id=label, field="id")
        check_text(path, task_id, "id", task_id)
        out.append((task_id, obj))
    return out


def check_text(path: Path, task_id: str, where: str, text: str) -> None:
    """Raise InputError when a string the outputs echo holds a lone surrogate (UTF-8 cannot hold it)."""
    problem = lone_surrogate(text)
    if problem is not None:
        raise InputError(path, problem, task_id=task_id, field=where)


def _last_of_each(path: Path, entries: list[tuple[str, JsonObject]]) -> tuple[dict[str, JsonObject], tuple[str, ...]]:
    """Keep the last object of a repeated id (the published scorer's behaviour) and say so."""
    kept: dict[str, JsonObject] = {}
    repeated: dict[str, None] = {}
    for task_id, obj in entries:
        if task_id in kept:
            repeated[task_id] = None
            del kept[task_id]  # keep the order of the last occurrence
        kept[task_id] = obj
    if repeated:
        log.warning("%s: %d repeated id(s), keeping the last object of each: %s",
                    path, len(repeated), ", ".join(repeated))
    return kept, tuple(repeated)


def string_object(value: JsonValue) -> JsonObject | None:
    """The object a JSON string holds (OpenAI-style `arguments`, '{"city": "Paris"}'); None for any other value."""
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def parse_call(path: Path, task_id: str, where: str, obj: object, lenient: bool = False,
               parse_strings: bool = False) -> Call:
    """Validate one call object: a non-empty string name, and arguments (default null) that strict
    UTF-8 JSON can hold, nested at most MAX_DEPTH levels; `lenient` (model output): arguments the
    published scorer scores (NaN, infinities, deeper nesting) are kept, the departure in `warning`;
    `parse_strings`: arguments given as a JSON string of an object are scored as that object."""
    if not isinstance(obj, dict):
        raise InputError(path, f"a call must be an object, got {type(obj).__name__}",
                         task_id=task_id, field=where)
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InputError(path, "a call needs a non-empty string 'name'", task_id=task_id,
                         field=f"{where}.name")
    check_text(path, task_id, f"{where}.name", name)
    if MADE in obj and not isinstance(obj[MADE], bool):
        raise InputError(path, f"must be true or false, got {obj[MADE]!r}", task_id=task_id, field=f"{where}.{MADE}")
    arguments = obj.get("arguments")
    if parse_strings and (parsed := string_object(arguments)) is not None:
        arguments = parsed
    departure = None
    try:
        if lenient:
            text, departure = lenient_canonical_json(arguments)
        else:
            text = checked_canonical_json(arguments)
    except ValueProblem as exc:
        raise InputError(path, exc.problem, task_id=task_id, field=f"{where}.arguments{exc.where}") from None
    warning = None
    if departure is not None:
        warning = str(InputError(path, f"{departure[1]}; scored as the published scorer reads and serializes it",
                                 task_id=task_id, field=f"{where}.arguments{departure[0]}"))
    return Call(name=name.strip(), arguments=arguments, text=text, warning=warning, made=call_made(obj))


def parse_trajectory(path: Path, task_id: str, obj: JsonObject, lenient: bool = False,
                     parse_strings: bool = False) -> Trajectory:
    """Validate one trajectory object and build a Trajectory (`lenient`, `parse_strings`: see `parse_call`)."""
    family = obj.get("type")
    if family is not None and not isinstance(family, str):
        raise InputError(path, f"type must be a string, got {type(family).__name__}",
                         task_id=task_id, field="type")
    if family is not None:
        check_text(path, task_id, "type", family)
    if "steps" not in obj and (response := vtb_response(path, task_id, obj)) is not None:
        obj = response
    if "steps" not in obj:
        raise InputError(path, "task has no 'steps'" + shape_hint(obj), task_id=task_id, field="steps")
    raw_steps = obj["steps"]
    if raw_steps is None:
        raw_steps = []
    if not isinstance(raw_steps, list):
        raise InputError(path, f"steps must be a list, got {type(raw_steps).__name__}",
                         task_id=task_id, field="steps")
    steps = []
    for si, step in enumerate(raw_steps):
        if not isinstance(step, dict):
            raise InputError(path, f"a step must be an object, got {type(step).__name__}",
                             task_id=task_id, field=f"steps[{si}]")
        calls = step.get("calls", [])
        if calls is None:
            calls = []
        if not isinstance(calls, list):
            raise InputError(path, f"calls must be a list, got {type(calls).__name__}",
                             task_id=task_id, field=f"steps[{si}].calls")
        steps.append(Step(tuple(parse_call(path, task_id, f"steps[{si}].calls[{ci}]", c, lenient,
                                           parse_strings) for ci, c in enumerate(calls)), step.get("step")))
    return Trajectory(id=task_id, type=family, steps=tuple(steps), raw=obj)


def parse_trajectories(path: Path, root: object, lenient: bool = False,
                       parse_strings: bool = False) -> TrajectoryFile:
    """Validate a parsed trajectory file's root (a list of tasks or an object of id -> task).

    `path` names the source in errors and warnings; a repeated id keeps its last object. `lenient`
    (for model output) scores call arguments the published scorer scores, with a warning per call
    (the first `MAX_WARNINGS`, then their count), and one warning for the calls whose arguments are a
    JSON string of an object, scored as that string unless `parse_strings`.
    """
    kept, repeated = _last_of_each(path, _entries(path, root))
    tasks = {task_id: parse_trajectory(path, task_id, obj, lenient, parse_strings) for task_id, obj in kept.items()}
    if lenient and not parse_strings:
        strings = sum(1 for t in tasks.values() for c in t.calls if string_object(c.arguments) is not None)
        if strings:
            log.warning("%s: %d call(s) give their arguments as a JSON string (OpenAI-style); they are scored as "
                        "strings, as the published scorer scores what it is given: set "
                        "parse_string_arguments=true to score them as objects", path, strings)
    if lenient:
        warnings = [c.warning for t in tasks.values() for c in t.calls if c.warning is not None]
        for warning in warnings[:MAX_WARNINGS]:
            log.warning("%s", warning)
        if len(warnings) > MAX_WARNINGS:
            log.warning("%s: %d more call(s) with arguments beyond strict JSON, scored likewise", path,
                        len(warnings) - MAX_WARNINGS)
    return TrajectoryFile(path=path, tasks=tasks, duplicate_ids=repeated)


def _json_lines(path: Path) -> bool:
    """Whether a file that is not one JSON document holds JSON Lines (its first line an object)."""
    try:
        first = path.read_text(encoding="utf-8-sig").lstrip().split("\n", 1)[0]
        return first.startswith("{") and isinstance(json.loads(first), dict)
    except (OSError, ValueError, RecursionError):
        return False


def read_trajectories(path: str | Path, lenient: bool = False, parse_strings: bool = False) -> TrajectoryFile:
    """Read a trajectory file (reference or predicted); a repeated id keeps its last object.

    `lenient`, `parse_strings`: the file is model output (predictions), read as `parse_trajectories` says.
    A JSON Lines file is an InputError saying the shape expected.
    """
    path = Path(path)
    try:
        root = read_json(path, "trajectory file")
    except InputError:
        if not _json_lines(path):
            raise
        raise InputError(path, "one JSON object a line (JSON Lines): a trajectory file is one JSON document, a "
                         "list of task objects (or an object of id -> task); wrap the lines in [ ... ] with "
                         "commas") from None
    return parse_trajectories(path, root, lenient, parse_strings)


def file_objects(path: str | Path) -> dict[str, list[tuple[int, JsonObject]]]:
    """id -> (position in the file, object) of every object of a trajectory file, repeated ids included,
    in file order (what `read_trajectories` keeps one of per id)."""
    path = Path(path)
    out: dict[str, list[tuple[int, JsonObject]]] = {}
    for position, (task_id, obj) in enumerate(_entries(path, read_json(path, "trajectory file"))):
        out.setdefault(task_id, []).append((position, obj))
    return out


def dumps_trajectories(records: Iterable[JsonMapping], indent: int | None = 2) -> str:
    """The text of a trajectory file (a JSON list), strict JSON."""
    return dumps_json(list(records), indent=indent) + "\n"


def write_trajectories(path: str | Path, records: Iterable[JsonMapping]) -> None:
    """Write a trajectory file atomically."""
    atomic_write_text(Path(path), dumps_trajectories(records))
