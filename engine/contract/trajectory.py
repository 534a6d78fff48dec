"""The trajectory contract: typed records of calls, steps and trajectories, and the objects a trajectory file holds.

A trajectory file (reference or predicted, the published M3-Bench shape) is a JSON list of
objects, or an object mapping id -> object (the key is the id when the object has none). A
trajectory object has ``id``, optional ``type``, and ``steps``: a list of ``{"step": n, "calls":
[{"name": "server/tool", "arguments": ...}, ...]}``; other fields (``question``, ``image``,
``final_reply``, ``result``, ``dialogue``...) are carried in ``raw``. A task file (the prompts of a
run) has the same roots with ``{id, question | prompt, image, type}`` objects. Reading and writing the
files is `engine.contract.trajectory_io`; the other shapes a record may arrive in, `trajectory_shapes`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from engine.contract.jsonio import JsonMapping, JsonObject, JsonValue

# Fields a written trajectory object puts before its steps (the published order).
_HEAD_FIELDS = ("image", "type", "question")
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
    arguments: JsonValue
    text: str = field(compare=False, repr=False)
    warning: str | None = field(default=None, compare=False, repr=False)
    made: bool = True


@dataclass(frozen=True, slots=True)
class Step:
    """One step: its calls, run in parallel; `number` is the file's ``step`` field (not its position)."""

    calls: tuple[Call, ...]
    number: JsonValue = None


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


def call_made(obj: JsonMapping) -> bool:
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


def not_made_calls(record: JsonMapping) -> int:
    """How many calls of a trajectory object were never made (`call_made`): what the rollout counts in
    the record's ``illegal_calls``, read from the calls themselves so that any record is counted."""
    steps = record.get("steps")
    count = 0
    for step in steps if isinstance(steps, list) else []:
        calls = step.get("calls") if isinstance(step, dict) else None
        if isinstance(calls, list):
            count += sum(isinstance(call, dict) and not call_made(call) for call in calls)
    return count


def set_steps(record: JsonObject, steps: Sequence[list[JsonValue]]) -> JsonObject:
    """Put `steps` (each a list of call objects) into a trajectory object, numbered from 1, with its
    derived `num_step` and `max_num_concurrent`; keys already present keep their place."""
    record["steps"] = [{"step": i, "calls": calls} for i, calls in enumerate(steps, 1)]
    record["num_step"] = len(steps)
    record["max_num_concurrent"] = max(map(len, steps), default=0)
    return record


def trajectory_record(task_id: str, steps: Iterable[Iterable[Mapping[str, object]]], **fields: object) -> JsonObject:
    """A trajectory object in the published shape, with `num_step` and `max_num_concurrent` derived.

    `steps` holds each step's call objects (``{"name", "arguments", ...}``, copied); steps are
    numbered from 1. `fields` are the other fields (``image``, ``type``, ``question``,
    ``final_reply``, ...): ``image``, ``type`` and ``question`` come before the steps, the rest
    after the counts.
    """
    values = cast(JsonObject, fields)  # what the caller builds from JSON values (a record's fields, a reply's)
    record: JsonObject = {"id": task_id, **{k: v for k, v in values.items() if k in _HEAD_FIELDS}}
    set_steps(record, [[cast(JsonObject, dict(call)) for call in calls] for calls in steps])
    record.update((k, v) for k, v in values.items() if k not in _HEAD_FIELDS)
    return record


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
