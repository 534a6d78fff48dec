"""The trajectory contract: typed records of calls, steps, trajectories and tasks, one reader, one writer.

A trajectory file (reference or predicted, the published M3-Bench shape) is a JSON list of
objects, or an object mapping id -> object (the key is the id when the object has none). A
trajectory object has ``id``, optional ``type``, and ``steps``: a list of ``{"step": n, "calls":
[{"name": "server/tool", "arguments": ...}, ...]}``; other fields (``question``, ``image``,
``final_reply``, ``result``, ``dialogue``...) are carried in ``raw``. A task file (the prompts of a
run) has the same roots with ``{id, question | prompt, image, type}`` objects. Every problem is an
`InputError` naming the file, the task id and the field.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.contract.atomic import atomic_write_text
from engine.contract.errors import InputError, shown
from engine.contract.jsonio import (
    ValueProblem,
    checked_canonical_json,
    dumps_json,
    lenient_canonical_json,
    lone_surrogate,
    read_json,
)

log = logging.getLogger(__name__)

# Fields a written trajectory object puts before its steps (the published order).
_HEAD_FIELDS = ("image", "type", "question")
MAX_WARNINGS = 10
"""Calls of one file whose lenient reading is named in a warning; the rest are counted."""
MADE = "made"
"""A predicted call's field that is false when the rollout recorded the call without making it (its
arguments were not a JSON object: an illegal-format call); absent on the calls that were made."""
NOT_MADE_RESULT = ("Error: Invalid arguments: ", " (the call was not made)")
"""The start and end of the result text the rollout gives a call it did not make (what marks one in
records written before the ``made`` field)."""


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call: `name` is "server/tool" (whitespace-stripped), `arguments` any JSON value, and
    `text` the canonical JSON of the arguments (checked: strict JSON that UTF-8 can hold, or, read
    leniently, what the published scorer serializes, with the departure from strict JSON in `warning`);
    `made` is false for a predicted call the rollout never made (`call_made`)."""

    name: str
    arguments: Any
    text: str = field(compare=False, repr=False)
    warning: str | None = field(default=None, compare=False, repr=False)
    made: bool = True


@dataclass(frozen=True, slots=True)
class Step:
    """One step: its calls, run in parallel; `number` is the file's ``step`` field (not its position)."""

    calls: tuple[Call, ...]
    number: Any = None


@dataclass(frozen=True)
class Trajectory:
    """One trajectory: id, task family, steps, and the object it was read from (`raw`)."""

    id: str
    type: str | None
    steps: tuple[Step, ...]
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def calls(self) -> list[Call]:
        """All calls in global order (steps concatenated)."""
        return [c for step in self.steps for c in step.calls]

    @property
    def num_calls(self) -> int:
        """Number of calls over all steps."""
        return sum(len(s.calls) for s in self.steps)


@dataclass(frozen=True)
class TrajectoryFile:
    """The trajectories of one file keyed by id (last object wins for a repeated id)."""

    path: Path
    tasks: dict[str, Trajectory]
    duplicate_ids: tuple[str, ...]

    @property
    def stem(self) -> str:
        """File name without extension."""
        return self.path.stem


def _entries(path: Path, root: Any) -> list[tuple[str, dict]]:
    """(id, object) pairs of a list of objects or of an object mapping id -> object, in file order."""
    if isinstance(root, list):
        items: list[tuple[str | None, Any]] = [(None, obj) for obj in root]
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


def _last_of_each(path: Path, entries: list[tuple[str, dict]]) -> tuple[dict[str, dict], tuple[str, ...]]:
    """Keep the last object of a repeated id (the published scorer's behaviour) and say so."""
    kept: dict[str, dict] = {}
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


def call_made(obj: Mapping[str, Any]) -> bool:
    """Whether a call object was made: false for ``"made": false``, and for a call of an earlier record
    of the rollout with ``is_error`` true and the not-made result (NOT_MADE_RESULT); true otherwise.

    >>> call_made({"name": "a/b", "arguments": "{x", "made": False}), call_made({"name": "a/b"})
    (False, True)
    >>> call_made({"is_error": True, "result": "Error: Invalid arguments: bad (the call was not made)"})
    False
    """
    if MADE in obj:
        return obj[MADE] is not False
    result = obj.get("result")
    start, end = NOT_MADE_RESULT
    return not (obj.get("is_error") is True and isinstance(result, str) and result.startswith(start)
                and result.endswith(end))


def not_made_calls(record: Mapping[str, Any]) -> int:
    """How many calls of a trajectory object were never made (`call_made`): what the rollout counts in
    the record's ``illegal_calls``, read from the calls themselves so that any record is counted."""
    steps = record.get("steps")
    count = 0
    for step in steps if isinstance(steps, list) else []:
        calls = step.get("calls") if isinstance(step, dict) else None
        if isinstance(calls, list):
            count += sum(isinstance(call, dict) and not call_made(call) for call in calls)
    return count


def string_object(value: Any) -> dict[str, Any] | None:
    """The object a JSON string holds (OpenAI-style `arguments`, '{"city": "Paris"}'); None for any other value."""
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def parse_call(path: Path, task_id: str, where: str, obj: Any, lenient: bool = False,
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


VTB_ANSWER = "model_answer"
"""The reply field of VisualToolBench's model-response records (its scripts/run_model_response_*.py)."""


def _vtb_calls(path: Path, task_id: str, where: str, listed: Any) -> list[dict[str, Any]]:
    """The calls of a VisualToolBench ``tool_use_list`` ([{function_name, function_args, observation}]) as
    call objects; an observation that is an object with an ``error`` key (how its tool loop records a
    failed call) sets ``is_error``."""
    if listed in (None, {}):
        return []
    if not isinstance(listed, list):
        raise InputError(path, f"must be a list of tool uses, got {type(listed).__name__}", task_id=task_id,
                         field=where)
    calls = []
    for i, use in enumerate(listed):
        if not isinstance(use, dict):
            raise InputError(path, "a tool use must be an object", task_id=task_id, field=f"{where}[{i}]")
        observation = use.get("observation")
        calls.append({"name": use.get("function_name"), "arguments": use.get("function_args"),
                      "is_error": isinstance(observation, dict) and "error" in observation,
                      "result": observation if isinstance(observation, str) else dumps_json(observation)})
    return calls


def vtb_response(path: Path, task_id: str, obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """A VisualToolBench model-response record (single-turn: ``model_answer`` and ``tool_use_list`` at
    its top level; multi-turn: ``turns`` of such objects) as a trajectory object: one step per tool use,
    ``final_reply`` the last turn's answer and ``turns`` each turn's ``{"final_reply"}``; None for any
    other object."""
    turns = obj.get("turns")
    if VTB_ANSWER in obj:
        listed = [(obj, "")]
    elif isinstance(turns, list) and turns and all(isinstance(t, dict) and VTB_ANSWER in t for t in turns):
        listed = [(t, f"turns[{k}].") for k, t in enumerate(turns)]
    else:
        return None
    steps = [[call] for turn, where in listed
             for call in _vtb_calls(path, task_id, f"{where}tool_use_list", turn.get("tool_use_list"))]
    record = {k: v for k, v in obj.items() if k not in ("turns", VTB_ANSWER)}
    record["final_reply"] = listed[-1][0][VTB_ANSWER]
    if VTB_ANSWER not in obj:
        record["turns"] = [{"final_reply": turn[VTB_ANSWER]} for turn, _ in listed]
    return set_steps(record, steps)


STEPS_SHAPE = ('{"id": ..., "steps": [{"step": 1, "calls": [{"name": "server/tool", "arguments": {...}}]}], '
               '"final_reply": ...}')
"""The shape of a trajectory record, as the published files hold it."""


def _shape_hint(obj: dict) -> str:
    """What a record without steps looks like instead, when it is a known other shape (OpenAI's chat
    messages with tool_calls), with the shape expected; else nothing."""
    messages = obj.get("messages")
    if isinstance(messages, list) and any(isinstance(m, dict) and "role" in m for m in messages):
        calls = sum(len(m.get("tool_calls") or []) for m in messages if isinstance(m, dict)
                    and isinstance(m.get("tool_calls") or [], list))
        return (f" (it holds OpenAI-style chat 'messages' with {calls} tool_call(s); a prediction record puts "
                f"each step's calls in 'steps': {STEPS_SHAPE}, each call's function name and its arguments as "
                "an object)")
    return f" (expected {STEPS_SHAPE})"


def parse_trajectory(path: Path, task_id: str, obj: dict, lenient: bool = False,
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
        raise InputError(path, "task has no 'steps'" + _shape_hint(obj), task_id=task_id, field="steps")
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


def parse_trajectories(path: Path, root: Any, lenient: bool = False, parse_strings: bool = False) -> TrajectoryFile:
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


def file_objects(path: str | Path) -> dict[str, list[tuple[int, dict]]]:
    """id -> (position in the file, object) of every object of a trajectory file, repeated ids included,
    in file order (what `read_trajectories` keeps one of per id)."""
    path = Path(path)
    out: dict[str, list[tuple[int, dict]]] = {}
    for position, (task_id, obj) in enumerate(_entries(path, read_json(path, "trajectory file"))):
        out.setdefault(task_id, []).append((position, obj))
    return out


def set_steps(record: dict[str, Any], steps: Sequence[list[Any]]) -> dict[str, Any]:
    """Put `steps` (each a list of call objects) into a trajectory object, numbered from 1, with its
    derived `num_step` and `max_num_concurrent`; keys already present keep their place."""
    record["steps"] = [{"step": i, "calls": calls} for i, calls in enumerate(steps, 1)]
    record["num_step"] = len(steps)
    record["max_num_concurrent"] = max(map(len, steps), default=0)
    return record


def trajectory_record(task_id: str, steps: Iterable[Iterable[Mapping[str, Any]]], **fields: Any) -> dict[str, Any]:
    """A trajectory object in the published shape, with `num_step` and `max_num_concurrent` derived.

    `steps` holds each step's call objects (``{"name", "arguments", ...}``, copied); steps are
    numbered from 1. `fields` are the other fields (``image``, ``type``, ``question``,
    ``final_reply``, ...): ``image``, ``type`` and ``question`` come before the steps, the rest
    after the counts.
    """
    record = {"id": task_id, **{k: v for k, v in fields.items() if k in _HEAD_FIELDS}}
    set_steps(record, [[dict(call) for call in calls] for calls in steps])
    record.update((k, v) for k, v in fields.items() if k not in _HEAD_FIELDS)
    return record


def dumps_trajectories(records: Iterable[Mapping[str, Any]], indent: int | None = 2) -> str:
    """The text of a trajectory file (a JSON list), strict JSON."""
    return dumps_json(list(records), indent=indent) + "\n"


def write_trajectories(path: str | Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Write a trajectory file atomically."""
    atomic_write_text(Path(path), dumps_trajectories(records))


SAFE_NAME_CHARS = 100
"""The longest name safe_name gives (a tool log adds `.json`; file systems take 255 bytes)."""


def safe_name(task_id: str) -> str:
    """A file or folder name for a task id: the rollout's per-task workspace and tool log, which the
    judges read back. An id of other characters gets a short hash of itself appended, and one longer
    than SAFE_NAME_CHARS is cut to a readable prefix before it, so that any id (`/`, `..`, NUL,
    non-ASCII, hundreds of characters) makes a name the file system takes, distinct for distinct ids."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", task_id).strip(".") or "task"
    if name != task_id or len(name) > SAFE_NAME_CHARS:
        digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = f"{name[:SAFE_NAME_CHARS - len(digest) - 1].rstrip('.')}-{digest}"
    return name
