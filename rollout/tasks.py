"""Task and reference-trajectory files: loading and validation."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollout.errors import RolloutInputError, read_json

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Task:
    """One task to roll out: its question and the image it comes with."""

    id: str
    question: str
    image: str | None
    image_path: Path | None
    type: str | None
    index: int


def _entries(path: Path, data: Any) -> list[tuple[str, dict[str, Any]]]:
    """(id, object) pairs of a JSON list of objects or of an object mapping id -> object."""
    if isinstance(data, dict):
        items = []
        for key, value in data.items():
            if not isinstance(value, dict):
                raise RolloutInputError(path, "expected an object", task_id=str(key))
            items.append((str(value.get("id", key)), value))
        return items
    if not isinstance(data, list):
        raise RolloutInputError(path, "the root must be a list of task objects or an object of id -> task")
    items = []
    for pos, value in enumerate(data):
        if not isinstance(value, dict):
            raise RolloutInputError(path, f"entry {pos} is not an object")
        if "id" not in value or not isinstance(value["id"], (str, int)) or isinstance(value["id"], bool):
            raise RolloutInputError(path, f"entry {pos} has no string id", field="id")
        items.append((str(value["id"]), value))
    return items


def _dedupe(path: Path, items: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Keep the last object of a repeated id (as the published scorer does) and say so."""
    out: dict[str, dict[str, Any]] = {}
    repeated: list[str] = []
    for task_id, obj in items:
        if task_id in out:
            repeated.append(task_id)
            del out[task_id]
        out[task_id] = obj
    if repeated:
        log.warning("%s: %d repeated id(s), the last object of each is used: %s",
                    path, len(repeated), ", ".join(sorted(set(repeated))))
    return out


def load_tasks(path: str | Path, images_dir: str | Path | None = None, question_field: str = "question",
               ids: list[str] | None = None) -> list[Task]:
    """Tasks of a file in the published shape ({id, image, type, question, ...}), in file order.

    `question_field` names the field given to the model ("question", or "prompt" for the explicit
    instructions of tasks_fuzzy.json). Images are resolved against `images_dir` (default: the
    directory of the tasks file) and must exist. `ids`, when given, keeps only those ids.
    """
    path = Path(path)
    data = read_json(path)
    tasks_by_id = _dedupe(path, _entries(path, data))
    base = Path(images_dir) if images_dir else path.parent
    wanted = {str(i) for i in ids} if ids else None
    if wanted is not None:
        unknown = sorted(wanted - set(tasks_by_id))
        if unknown:
            raise RolloutInputError(path, f"requested id(s) not in the file: {', '.join(unknown)}")
    tasks = []
    for index, (task_id, obj) in enumerate(tasks_by_id.items()):
        if wanted is not None and task_id not in wanted:
            continue
        question = obj.get(question_field)
        if not isinstance(question, str) or not question.strip():
            raise RolloutInputError(path, "missing or empty text", task_id=task_id, field=question_field)
        image = obj.get("image")
        image_path = None
        if image is not None:
            if not isinstance(image, str) or not image:
                raise RolloutInputError(path, "must be a path string or null", task_id=task_id, field="image")
            image_path = (base / image).resolve()
            if not image_path.is_file():
                raise RolloutInputError(path, f"image file {image_path} not found (set tasks.images_dir)",
                                        task_id=task_id, field="image")
        task_type = obj.get("type")
        if task_type is not None and not isinstance(task_type, str):
            raise RolloutInputError(path, "must be a string", task_id=task_id, field="type")
        tasks.append(Task(task_id, question, image, image_path, task_type, index))
    return tasks


def load_reference_tools(path: str | Path) -> dict[str, list[str]]:
    """Per id, the distinct "server/tool" names of a reference (GT) trajectory file, in order of use."""
    path = Path(path)
    out: dict[str, list[str]] = {}
    for task_id, obj in _dedupe(path, _entries(path, read_json(path))).items():
        steps = obj.get("steps")
        if not isinstance(steps, list):
            raise RolloutInputError(path, "must be a list", task_id=task_id, field="steps")
        names: list[str] = []
        for s, step in enumerate(steps):
            calls = step.get("calls") if isinstance(step, dict) else None
            if not isinstance(calls, list):
                raise RolloutInputError(path, "must be a list", task_id=task_id, field=f"steps[{s}].calls")
            for c, call in enumerate(calls):
                name = call.get("name") if isinstance(call, dict) else None
                if not isinstance(name, str) or "/" not in name:
                    raise RolloutInputError(path, "must be a 'server/tool' string", task_id=task_id,
                                            field=f"steps[{s}].calls[{c}].name")
                name = name.strip()
                if name not in names:
                    names.append(name)
        out[task_id] = names
    return out
