"""Load and validate trajectory files (reference or predicted) in the published M3-Bench format."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import InputError, read_json

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Call:
    """One tool call: `name` is "server/tool" (whitespace-stripped), `arguments` any JSON value."""

    name: str
    arguments: Any


@dataclass(frozen=True)
class Task:
    """One trajectory: its id, task family and steps (each a tuple of calls)."""

    id: str
    type: str | None
    steps: tuple[tuple[Call, ...], ...]
    raw: dict = field(repr=False, compare=False)

    @property
    def calls(self) -> list[Call]:
        """All calls in global order (steps concatenated)."""
        return [c for step in self.steps for c in step]

    @property
    def num_calls(self) -> int:
        """Number of calls over all steps."""
        return sum(len(s) for s in self.steps)


@dataclass(frozen=True)
class TrajectoryFile:
    """The tasks of one file keyed by id (last object wins for a repeated id)."""

    path: Path
    tasks: dict[str, Task]
    duplicate_ids: tuple[str, ...]

    @property
    def stem(self) -> str:
        """File name without extension."""
        return self.path.stem


def _task_id(path: Path, obj: dict, key: str | None, position: int) -> str:
    if "id" in obj and obj["id"] is not None:
        value = obj["id"]
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise InputError(path, f"id must be a string or an integer, got {type(value).__name__}",
                             task_id=f"#{position}", field="id")
        return str(value)
    if key is not None:
        return key
    raise InputError(path, "task has no id", task_id=f"#{position}", field="id")


def parse_call(path: Path, task_id: str, where: str, obj: Any) -> Call:
    """Validate one call object (a non-empty string name; arguments default to null)."""
    if not isinstance(obj, dict):
        raise InputError(path, f"a call must be an object, got {type(obj).__name__}",
                         task_id=task_id, field=where)
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InputError(path, "a call needs a non-empty string 'name'", task_id=task_id,
                         field=f"{where}.name")
    return Call(name=name.strip(), arguments=obj.get("arguments"))


def parse_task(path: Path, obj: Any, key: str | None, position: int) -> Task:
    """Validate one task object and build a Task."""
    if not isinstance(obj, dict):
        label = key if key is not None else f"#{position}"
        raise InputError(path, f"a task must be an object, got {type(obj).__name__}", task_id=label)
    task_id = _task_id(path, obj, key, position)
    family = obj.get("type")
    if family is not None and not isinstance(family, str):
        raise InputError(path, f"type must be a string, got {type(family).__name__}",
                         task_id=task_id, field="type")
    if "steps" not in obj:
        raise InputError(path, "task has no 'steps'", task_id=task_id, field="steps")
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
        steps.append(tuple(parse_call(path, task_id, f"steps[{si}].calls[{ci}]", c)
                           for ci, c in enumerate(calls)))
    return Task(id=task_id, type=family, steps=tuple(steps), raw=obj)


def load_trajectories(path: str | Path) -> TrajectoryFile:
    """Read a trajectory file whose root is a list of tasks or an object mapping id -> task.

    A repeated id keeps the last object (the published scorer's behaviour) and is
    reported with a warning naming the ids.
    """
    path = Path(path)
    return parse_trajectories(path, read_json(path))


def parse_trajectories(path: Path, root: Any) -> TrajectoryFile:
    """Validate a parsed trajectory file's root (a list of tasks or an object of id -> task).

    `path` names the source in errors and warnings; a repeated id keeps its last object.
    """
    if isinstance(root, list):
        items = [(None, obj) for obj in root]
    elif isinstance(root, dict):
        items = list(root.items())
    else:
        raise InputError(path, f"the root must be a list of tasks or an object of id -> task, "
                               f"got {type(root).__name__}")
    tasks: dict[str, Task] = {}
    duplicates: dict[str, None] = {}
    for position, (key, obj) in enumerate(items):
        task = parse_task(path, obj, key, position)
        if task.id in tasks:
            duplicates[task.id] = None
            del tasks[task.id]  # keep insertion order of the last occurrence
        tasks[task.id] = task
    if duplicates:
        log.warning("%s: %d repeated id(s), keeping the last object of each: %s",
                    path, len(duplicates), ", ".join(duplicates))
    return TrajectoryFile(path=path, tasks=tasks, duplicate_ids=tuple(duplicates))
